"""SqliteSessionStore: protocol conformance, exact schema, idempotency, mtime, helpers,
corrupt files, and several processes sharing one sessions.db."""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from claude_agent_sdk.testing import run_session_store_conformance

from flower.stores.prune import PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore, StoreCorruptError
from flower.stores.trim import TrimmingSessionStore

from .conftest import Chain

KEY = {"project_key": "-home-u-proj", "session_id": "sess-1"}
SUB = {**KEY, "subpath": "subagents/agent-abc"}


@pytest.mark.parametrize("kind", ["sqlite", "trim", "prune"])
async def test_conformance_with_all_optional_methods(tmp_path: Path, kind: str) -> None:
    made: list[SqliteSessionStore] = []

    def make() -> SqliteSessionStore:
        path = tmp_path / f"{len(made)}.db"
        store = {
            "sqlite": lambda: SqliteSessionStore(path),
            "trim": lambda: TrimmingSessionStore(path, tmp_path),
            "prune": lambda: PruningSessionStore(path, tmp_path),
        }[kind]()
        made.append(store)
        return store

    await run_session_store_conformance(make)  # skip_optional empty: all 14 contracts
    assert len(made) >= 14
    for s in made:
        s.close()


def test_schema_is_the_seed_schema_plus_the_mtime_index(db: Path) -> None:
    SqliteSessionStore(db).close()
    rows = sqlite3.connect(db).execute(
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()
    norm = {name: " ".join(sql.split()) for _, name, sql in rows}
    assert norm == {
        "entries": "CREATE TABLE entries ( store_key TEXT NOT NULL, seq INTEGER NOT NULL, "
                   "uid TEXT, payload TEXT NOT NULL, PRIMARY KEY (store_key, seq) )",
        "entries_uid": "CREATE UNIQUE INDEX entries_uid ON entries(store_key, uid) "
                       "WHERE uid IS NOT NULL",
        "meta": "CREATE TABLE meta ( store_key TEXT PRIMARY KEY, mtime INTEGER NOT NULL, "
                "next_seq INTEGER NOT NULL )",
        "meta_mtime": "CREATE INDEX meta_mtime ON meta(mtime)",
        "summaries": "CREATE TABLE summaries ( project_key TEXT NOT NULL, session_id TEXT "
                     "NOT NULL, mtime INTEGER NOT NULL, data TEXT NOT NULL, "
                     "PRIMARY KEY (project_key, session_id) )",
    }
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone() == ("wal",)


SEED_SCHEMA = """
CREATE TABLE entries (store_key TEXT NOT NULL, seq INTEGER NOT NULL, uid TEXT,
                      payload TEXT NOT NULL, PRIMARY KEY (store_key, seq));
CREATE UNIQUE INDEX entries_uid ON entries(store_key, uid) WHERE uid IS NOT NULL;
CREATE TABLE meta (store_key TEXT PRIMARY KEY, mtime INTEGER NOT NULL,
                   next_seq INTEGER NOT NULL);
CREATE TABLE summaries (project_key TEXT NOT NULL, session_id TEXT NOT NULL,
                        mtime INTEGER NOT NULL, data TEXT NOT NULL,
                        PRIMARY KEY (project_key, session_id));
"""


def _plan(con: sqlite3.Connection, query: str) -> str:
    return " ".join(row[-1] for row in con.execute(f"EXPLAIN QUERY PLAN {query}"))


async def test_a_file_made_before_the_index_gains_it_and_nothing_else(db: Path) -> None:
    """Each append asks for the file's newest mtime: with the index that is one lookup,
    not a scan of every transcript's meta row. An older file gets the index when a store
    opens it; its tables and rows stay exactly as the original flower wrote and reads them,
    and the next append still goes above every stored mtime."""
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript(SEED_SCHEMA)
    con.executemany("INSERT INTO meta VALUES (?, ?, ?)",
                    [(f"p/s{n}", 4_000_000_000_000 + n, 1) for n in range(300)])
    con.commit()
    tables = con.execute("SELECT name, sql FROM sqlite_master WHERE type='table'").fetchall()
    rows = con.execute("SELECT * FROM meta ORDER BY rowid").fetchall()
    assert "meta_mtime" not in _plan(con, "SELECT max(mtime) FROM meta")
    con.close()

    store = SqliteSessionStore(db)
    await store.append(KEY, [{"type": "user", "uuid": "x", "message": {"content": "hi"}}])
    store.close()
    con = sqlite3.connect(db)
    assert con.execute("SELECT name, sql FROM sqlite_master WHERE type='table'"
                       ).fetchall() == tables
    assert con.execute("SELECT * FROM meta ORDER BY rowid").fetchall()[:300] == rows
    (mtime,) = con.execute("SELECT mtime FROM meta WHERE store_key = ?",
                           ("-home-u-proj/sess-1",)).fetchone()
    assert mtime == 4_000_000_000_000 + 300  # above every stored one, as before
    assert "USING COVERING INDEX meta_mtime" in _plan(con, "SELECT max(mtime) FROM meta")
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
    SqliteSessionStore(db).close()  # opening it again changes nothing more


async def test_rows_are_verbatim_and_keyed(db: Path) -> None:
    c = Chain()
    c.prompt("héllo ✓")
    c.bash("ls", "a\nb")
    store = SqliteSessionStore(db)
    await store.append(KEY, c.entries)
    await store.append(SUB, [{"type": "agent_metadata", "agentType": "general-purpose"}])
    rows = sqlite3.connect(db).execute(
        "SELECT store_key, seq, uid, payload FROM entries ORDER BY store_key, seq").fetchall()
    assert [r[0] for r in rows] == ["-home-u-proj/sess-1"] * 3 + [
        "-home-u-proj/sess-1/subagents/agent-abc"]
    assert [r[1] for r in rows] == [0, 1, 2, 0]
    assert [r[2] for r in rows[:3]] == [e["uuid"] for e in c.entries] and rows[3][2] is None
    assert [json.loads(r[3]) for r in rows[:3]] == c.entries
    assert await store.load(KEY) == c.entries
    assert await store.list_subkeys(KEY) == ["subagents/agent-abc"]


async def test_replayed_batch_changes_nothing_not_even_mtime(db: Path) -> None:
    c = Chain()
    c.prompt("first")
    c.say("ok")
    store = SqliteSessionStore(db)
    await store.append(KEY, c.entries)
    conn = sqlite3.connect(db)
    before = conn.execute("SELECT * FROM entries").fetchall(), conn.execute(
        "SELECT * FROM meta").fetchall(), conn.execute("SELECT * FROM summaries").fetchall()
    await store.append(KEY, c.entries)  # the SDK retries a batch that may have landed
    await store.append(KEY, c.entries[1:])
    after = conn.execute("SELECT * FROM entries").fetchall(), conn.execute(
        "SELECT * FROM meta").fetchall(), conn.execute("SELECT * FROM summaries").fetchall()
    assert after == before


async def test_partial_replay_and_in_batch_duplicates_keep_first(db: Path) -> None:
    store = SqliteSessionStore(db)
    a = {"type": "user", "uuid": "a", "message": {"content": "one"}}
    b = {"type": "user", "uuid": "b", "message": {"content": "two"}}
    b2 = {"type": "user", "uuid": "b", "message": {"content": "two again"}}
    tag = {"type": "tag", "tag": "x"}  # no uuid: never deduplicated
    await store.append(KEY, [a, tag])
    await store.append(KEY, [a, b, b2, tag])
    assert await store.load(KEY) == [a, tag, b, tag]


async def test_mtime_strictly_increases_and_is_epoch_ms(db: Path) -> None:
    store = SqliteSessionStore(db)
    seen = []
    for i in range(30):
        await store.append(KEY, [{"type": "user", "uuid": f"x{i}"}])
        (entry,) = await store.list_sessions(KEY["project_key"])
        seen.append(entry["mtime"])
    assert all(b > a for a, b in itertools.pairwise(seen)) and seen[0] > 1e12
    (summary,) = await store.list_session_summaries(KEY["project_key"])
    assert summary["mtime"] == seen[-1]
    # a second store on the same file (another process) continues above the stored clock
    other = SqliteSessionStore(db)
    other._last_mtime = 0
    await other.append({**KEY, "session_id": "s2"}, [{"type": "user", "uuid": "y"}])
    mt = {e["session_id"]: e["mtime"] for e in await other.list_sessions(KEY["project_key"])}
    assert mt["s2"] > seen[-1]


async def test_subagent_appends_do_not_touch_summary_and_delete_cascades(db: Path) -> None:
    store = SqliteSessionStore(db)
    await store.append(KEY, [{"type": "user", "uuid": "p", "message": {"content": "task"},
                              "timestamp": "2026-01-01T00:00:00.000Z"}])
    (before,) = await store.list_session_summaries(KEY["project_key"])
    await store.append(SUB, [{"type": "user", "uuid": "q", "isSidechain": True}])
    assert await store.list_session_summaries(KEY["project_key"]) == [before]
    assert [s["session_id"] for s in await store.list_sessions(KEY["project_key"])] == ["sess-1"]
    await store.delete(KEY)
    assert await store.load(KEY) is None and await store.load(SUB) is None
    assert await store.list_session_summaries(KEY["project_key"]) == []
    assert sqlite3.connect(db).execute("SELECT count(*) FROM meta").fetchone() == (0,)


async def test_prefix_keys_do_not_leak_between_projects(db: Path) -> None:
    store = SqliteSessionStore(db)
    await store.append({"project_key": "a_b", "session_id": "s"}, [{"type": "x"}])
    await store.append({"project_key": "aXb", "session_id": "s"}, [{"type": "x"}])
    await store.append({"project_key": "a_b", "session_id": "s2"}, [{"type": "x"}])
    assert sorted(s["session_id"] for s in await store.list_sessions("a_b")) == ["s", "s2"]
    await store.delete({"project_key": "a_b", "session_id": "s"})
    assert await store.load({"project_key": "aXb", "session_id": "s"}) == [{"type": "x"}]
    assert await store.list_subkeys({"project_key": "a_b", "session_id": "s"}) == []


def test_invalid_keys_are_rejected(db: Path) -> None:
    store = SqliteSessionStore(db)
    import anyio

    for bad in ({"project_key": "a/b", "session_id": "s"},
                {"project_key": "a", "session_id": "s", "subpath": ""}):
        with pytest.raises(ValueError):
            anyio.run(store.load, bad)


async def test_sync_helpers(db: Path) -> None:
    c = Chain()
    c.prompt("go")
    c.say("first")
    last = c.say("second")
    c.raw({"type": "assistant", "isApiErrorMessage": True, "message": {
        "model": "<synthetic>", "content": [], "usage": {"input_tokens": 0}}})
    c.bookkeeping()
    store = SqliteSessionStore(db)
    assert store.projects() == [] and not store.has_session(*KEY.values())
    await store.append(KEY, c.entries)
    await store.append({"project_key": "-other", "session_id": "z"}, [{"type": "x"}])
    assert store.projects() == ["-home-u-proj", "-other"]
    assert store.has_session("-home-u-proj", "sess-1")
    assert not store.has_session("-home-u-proj", "nope")
    u = last["message"]["usage"]
    want = u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
    assert store.last_context("-home-u-proj", "sess-1") == want  # synthetic error skipped
    assert store.last_context("-home-u-proj", "sess-1", scan=2) == 0  # beyond the scan window
    assert store.last_context("-home-u-proj", "nope") == 0
    store.close()
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.has_session("-home-u-proj", "sess-1")


async def test_sdk_work_runs_off_the_event_loop(db: Path) -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    class Probe(SqliteSessionStore):
        def _rewrite(self, key, entries):  # type: ignore[no-untyped-def]
            seen.append(threading.get_ident())
            return entries

    store = Probe(db)
    await store.append(KEY, [{"type": "x", "uuid": "1"}])
    await store.load(KEY)
    assert seen and seen[0] != loop_thread


# ------------------------------------------------------------------ corrupt / foreign files


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _valid_db_bytes(tmp: Path) -> bytes:
    p = tmp / "donor.db"
    s = SqliteSessionStore(p)
    import anyio

    anyio.run(s.append, KEY, [{"type": "user", "uuid": str(i), "pad": "x" * 3000}
                              for i in range(40)])
    s.close()
    return p.read_bytes()


@pytest.mark.parametrize("case", ["garbage", "short", "truncated", "foreign", "bad_header"])
def test_corrupt_or_foreign_file_is_refused_and_left_untouched(tmp_path: Path,
                                                               case: str) -> None:
    path = tmp_path / "sessions.db"
    if case == "garbage":
        path.write_bytes(b"\x00\x01not a database at all" * 500)
    elif case == "short":
        path.write_bytes(b"SQLite format 3\x00partial")
    elif case == "truncated":
        path.write_bytes(_valid_db_bytes(tmp_path)[:8192])
    elif case == "bad_header":
        data = bytearray(_valid_db_bytes(tmp_path))
        data[16:18] = (1000).to_bytes(2, "big")
        path.write_bytes(bytes(data))
    else:
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE invoices (id INTEGER)")
        conn.commit()
        conn.close()
    before = _digest(path)
    with pytest.raises(StoreCorruptError) as info:
        SqliteSessionStore(path)
    msg = str(info.value)
    assert str(path) in msg and "move it aside or delete it" in msg
    assert isinstance(info.value, RuntimeError)
    assert _digest(path) == before
    assert not path.with_name("sessions.db-journal").exists()


def test_empty_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.touch()
    SqliteSessionStore(path).close()
    assert sqlite3.connect(path).execute("SELECT count(*) FROM entries").fetchone() == (0,)


def test_reopening_a_valid_store_keeps_its_rows(db: Path) -> None:
    import anyio

    s = SqliteSessionStore(db)
    anyio.run(s.append, KEY, [{"type": "x", "uuid": "1"}])
    s.close()
    s2 = SqliteSessionStore(db)
    assert anyio.run(s2.load, KEY) == [{"type": "x", "uuid": "1"}]


# ------------------------------------------------------------------ several processes

_WRITER = textwrap.dedent("""
    import sys, anyio
    from flower.stores.sqlite import SqliteSessionStore
    path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = SqliteSessionStore(path)
    async def main():
        for i in range(n):
            batch = [{"type": "user", "uuid": f"{tag}-{i}-{j}", "n": i} for j in range(5)]
            batch.append({"type": "tag", "by": tag})
            await store.append({"project_key": "p", "session_id": "shared"}, batch)
            await store.append({"project_key": "p", "session_id": tag}, batch[:1])
    anyio.run(main)
""")


def test_two_processes_appending_to_one_file_lose_nothing(db: Path) -> None:
    SqliteSessionStore(db).close()
    n = 150
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(db), tag, str(n)])
             for tag in ("A", "B")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    import anyio

    store = SqliteSessionStore(db)
    shared = anyio.run(store.load, {"project_key": "p", "session_id": "shared"})
    assert len(shared) == 2 * n * 6
    uuids = [e["uuid"] for e in shared if "uuid" in e]
    assert len(set(uuids)) == len(uuids) == 2 * n * 5
    for tag in ("A", "B"):  # each writer's own order is preserved
        mine = [e["n"] for e in shared if e.get("uuid", "").startswith(tag)]
        assert mine == sorted(mine)
    seqs = sqlite3.connect(db).execute(
        "SELECT seq FROM entries WHERE store_key='p/shared' ORDER BY seq").fetchall()
    assert [s for (s,) in seqs] == list(range(2 * n * 6))
    assert sorted(s["session_id"] for s in anyio.run(store.list_sessions, "p")) == [
        "A", "B", "shared"]


def _open_fresh(path: str, barrier: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    SqliteSessionStore(path).close()


def test_many_processes_creating_one_fresh_database_all_succeed(tmp_path: Path) -> None:
    """Eight flower processes started together on an empty run dir: switching to WAL and
    creating the schema can answer SQLITE_BUSY at once — that is busy, not corrupt, and no
    process may give up with "not a readable flower session database"."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for round_ in range(10):
        path = tmp_path / f"sessions-{round_}.db"
        barrier = ctx.Barrier(12)
        procs = [ctx.Process(target=_open_fresh, args=(str(path), barrier)) for _ in range(12)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0] * 12

"""PostgresSessionStore against a real server: conformance (bare and layered), idempotent
appends, concurrent appenders on several connections and processes, bounded load memory,
bad input (wrong URL, missing tables, newer schema)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import anyio
import psycopg
import pytest
from claude_agent_sdk.testing import run_session_store_conformance
from stores.conftest import Chain

from flower.stores.layered import LayeredSessionStore
from flower.stores.postgres import (
    SCHEMA_VERSION,
    PostgresSessionStore,
    StoreUnavailable,
    StoreVersionError,
)
from flower.stores.prune import PruningSessionStore
from flower.stores.trim import EphemeralPolicy, TrimPolicy
from flower.testing.postgres import TempPostgres

KEY = {"project_key": "-home-u-proj", "session_id": "sess-1"}
SUB = {**KEY, "subpath": "subagents/agent-abc"}


@pytest.mark.parametrize("layered", [False, True])
async def test_conformance(pg_url: str, schema: str, tmp_path: Path, layered: bool) -> None:
    made: list = []

    def make():
        base = PostgresSessionStore(pg_url, schema=f"{schema}_{len(made)}")
        store = LayeredSessionStore(base, tmp_path) if layered else base
        made.append(store)
        return store

    await run_session_store_conformance(make)  # all 14 contracts
    assert len(made) >= 14
    for s in made:
        s.close()


async def test_tables_keys_dedup_and_helpers(pg_url: str, schema: str) -> None:
    c = Chain()
    c.prompt("héllo ✓")
    c.bash("ls", "a\nb")
    c.say("done")
    store = PostgresSessionStore(pg_url, schema=schema)
    await store.append(KEY, c.entries)
    await store.append(KEY, c.entries)  # an SDK retry: nothing changes
    await store.append(KEY, c.entries[1:])
    await store.append(SUB, [{"type": "agent_metadata", "agentType": "general-purpose"}])
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(f"SELECT store_key, seq, uid, payload FROM {schema}.entries "
                            "ORDER BY store_key, seq").fetchall()
        meta = conn.execute(f"SELECT store_key, next_seq FROM {schema}.meta "
                            "ORDER BY store_key").fetchall()
        version = conn.execute(f"SELECT version FROM {schema}.version").fetchall()
    assert [r[0] for r in rows] == [f"{KEY['project_key']}/sess-1"] * 4 + [
        f"{KEY['project_key']}/sess-1/subagents/agent-abc"]
    assert [r[1] for r in rows] == [0, 1, 2, 3, 0]
    assert [json.loads(r[3]) for r in rows[:4]] == c.entries
    assert "héllo ✓" in rows[0][3]  # the same verbatim text as sessions.db
    assert meta == [("-home-u-proj/sess-1", 4), ("-home-u-proj/sess-1/subagents/agent-abc", 1)]
    assert version == [(SCHEMA_VERSION,)]
    assert await store.load(KEY) == c.entries
    assert await store.list_subkeys(KEY) == ["subagents/agent-abc"]
    assert store.projects() == ["-home-u-proj"] and store.has_session(*KEY.values())
    assert store.last_context(*KEY.values()) > 0
    # prefix ranges are byte-wise ("C"), whatever the database's locale: no leaking
    await store.append({"project_key": "a_b", "session_id": "s"}, [{"type": "x"}])
    await store.append({"project_key": "aXb", "session_id": "s"}, [{"type": "x"}])
    await store.append({"project_key": "a-b", "session_id": "s"}, [{"type": "x"}])
    assert [s["session_id"] for s in await store.list_sessions("a_b")] == ["s"]
    await store.delete(KEY)
    assert await store.load(KEY) is None and await store.load(SUB) is None
    store.close()


async def test_layered_postgres_loads_what_the_sqlite_layers_load(
        pg_url: str, schema: str, tmp_path: Path) -> None:
    c = Chain()
    c.prompt("go")
    c.looks_and_reads(10)
    c.denied()
    c.api_error()
    c.call("Read", {"file_path": "/never/answered"})
    kw = {"policy": TrimPolicy(keep_recent=2), "ephemeral": EphemeralPolicy(keep_recent=3)}
    sqlite = PruningSessionStore(tmp_path / "s.db", tmp_path / "ws", **kw)
    pgs = LayeredSessionStore(PostgresSessionStore(pg_url, schema=schema), tmp_path / "ws", **kw)
    for s in (sqlite, pgs):
        await s.append(KEY, copy.deepcopy(c.entries))
    assert await pgs.load(KEY) == await sqlite.load(KEY)
    assert pgs.last_report == sqlite.last_report and pgs.pruned == sqlite.pruned > 0
    assert await pgs.backend.load(KEY) == c.entries  # the archive is verbatim
    sqlite.close()
    pgs.close()


async def test_lone_surrogates_and_unstorable_entries(pg_url: str, schema: str) -> None:
    store = PostgresSessionStore(pg_url, schema=schema)
    batch = [{"type": "user", "uuid": "a", "message": {"content": "cut \ud83d"}},
             {"type": "user", "uuid": "b", "message": {"content": {1}}},  # not JSON
             {"type": "user", "uuid": "c\udc00", "message": {"content": "ok"}},
             {"type": "tag", "t": "\x00 nul"}]
    await store.append(KEY, batch)
    assert await store.load(KEY) == [batch[0], batch[2], batch[3]]
    assert [r.uid for r in store.rejected] == ["b"]
    await store.append(KEY, batch[:3])
    assert len(await store.load(KEY)) == 3
    store.close()


async def test_concurrent_appends_on_several_connections(pg_url: str, schema: str) -> None:
    store = PostgresSessionStore(pg_url, schema=schema, max_size=6)

    async def writer(tag: str) -> None:
        for i in range(40):
            batch = [{"type": "user", "uuid": f"{tag}-{i}-{j}", "n": i} for j in range(3)]
            await store.append(KEY, batch)
            await store.append(KEY, batch)  # retried batch racing the others

    async with anyio.create_task_group() as tg:
        for tag in "ABCDEF":
            tg.start_soon(writer, tag)
    got = await store.load(KEY)
    uuids = [e["uuid"] for e in got]
    assert len(uuids) == len(set(uuids)) == 6 * 40 * 3
    for tag in "ABCDEF":
        mine = [e["n"] for e in got if e["uuid"].startswith(tag)]
        assert mine == sorted(mine)
    store.close()


_WRITER = textwrap.dedent("""
    import sys, anyio
    from flower.stores.postgres import PostgresSessionStore
    url, schema, tag, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store = PostgresSessionStore(url, schema=schema)
    async def main():
        for i in range(n):
            batch = [{"type": "user", "uuid": f"{tag}-{i}-{j}", "n": i} for j in range(5)]
            batch.append({"type": "tag", "by": tag, "n": i})
            await store.append({"project_key": "p", "session_id": tag}, batch)
            await store.append({"project_key": "p", "session_id": tag}, batch[:5])  # retry
            await store.append({"project_key": "p", "session_id": "shared"}, batch[:2])
    anyio.run(main)
    store.close()
""")


def test_eight_processes_append_to_eight_sessions(pg_url: str, schema: str) -> None:
    PostgresSessionStore(pg_url, schema=schema).close()
    n = 40
    tags = [f"w{i}" for i in range(8)]
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, pg_url, schema, tag, str(n)],
                              stderr=subprocess.PIPE, text=True) for tag in tags]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    store = PostgresSessionStore(pg_url, schema=schema)
    for tag in tags:
        got = anyio.run(store.load, {"project_key": "p", "session_id": tag})
        assert len(got) == n * 6  # nothing lost, nothing doubled
        assert [e["n"] for e in got] == [i for i in range(n) for _ in range(6)]
    shared = anyio.run(store.load, {"project_key": "p", "session_id": "shared"})
    uuids = [e["uuid"] for e in shared]
    assert len(uuids) == len(set(uuids)) == 8 * n * 2
    sessions = anyio.run(store.list_sessions, "p")
    assert sorted(s["session_id"] for s in sessions) == sorted([*tags, "shared"])
    with psycopg.connect(pg_url) as conn:
        seqs = [s for (s,) in conn.execute(
            f"SELECT seq FROM {schema}.entries WHERE store_key='p/shared' ORDER BY seq")]
    assert seqs == list(range(8 * n * 2))
    store.close()


def test_load_of_50k_entries_is_batched(pg_url: str, schema: str) -> None:
    store = PostgresSessionStore(pg_url, schema=schema)
    n = 50_000
    pad = "x" * 400
    entries = [{"type": "user", "uuid": f"{i:08d}", "pad": pad} for i in range(n)]

    async def fill(rows: list[dict]) -> None:
        for i in range(0, n, 1000):
            await store.append(KEY, rows[i:i + 1000])

    anyio.run(fill, entries)
    raw = sum(len(json.dumps(e)) for e in entries)
    del entries
    tracemalloc.start()
    got = store.read_entries(KEY)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(got) == n and got[-1]["uuid"] == f"{n - 1:08d}"
    # beyond the result itself, at most a few batches of raw rows were ever held at once
    assert peak - held < raw / 5, (peak, held, raw)
    store.close()


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("url", [
    "postgresql://postgres@127.0.0.1:1/postgres",  # nothing listens there
    "mysql://u@h/db",
    "postgresql://postgres@127.0.0.1:{port}/no_such_db",
    "postgresql://u:s3cret@127.0.0.1:{port}/x?sslmode=bogus",
])
def test_a_wrong_url_is_one_clear_line(pg: TempPostgres, url: str) -> None:
    url = url.format(port=pg.port)
    with pytest.raises(StoreUnavailable) as info:
        PostgresSessionStore(url, connect_timeout=3)
    msg = str(info.value)
    assert "\n" not in msg and "s3cret" not in msg
    assert msg.startswith(("连不上会话库", "会话库地址不对"))


def test_a_database_without_the_tables_gets_them(pg: TempPostgres) -> None:
    url = pg.createdb("fresh_db")
    PostgresSessionStore(url).close()
    with psycopg.connect(url) as conn:
        tables = {t for (t,) in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema='flower'")}
    assert {"entries", "meta", "summaries", "version"} <= tables


def test_a_newer_schema_is_refused_untouched(pg_url: str, schema: str) -> None:
    PostgresSessionStore(pg_url, schema=schema).close()
    with psycopg.connect(pg_url) as conn:
        conn.execute(f"UPDATE {schema}.version SET version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreVersionError) as info:
        PostgresSessionStore(pg_url, schema=schema)
    assert "更新的版本" in str(info.value) and "\n" not in str(info.value)


async def test_adopt_copies_a_session_under_a_new_project_key(pg_url: str, schema: str) -> None:
    store = PostgresSessionStore(pg_url, schema=schema)
    main = [{"type": "user", "uuid": "a", "message": {"content": "go"},
             "timestamp": "2026-01-01T00:00:00.000Z"}]
    await store.append(KEY, main)
    await store.append(SUB, [{"type": "agent_metadata"}])
    moved = {"project_key": "-other-copy", "session_id": "sess-1"}
    assert store.adopt("-other-copy", "sess-1")
    assert await store.load(moved) == main
    assert await store.list_subkeys(moved) == ["subagents/agent-abc"]
    assert [s["session_id"] for s in await store.list_session_summaries("-other-copy")] == [
        "sess-1"]
    assert await store.load(KEY) == main  # the original stays
    assert store.adopt("-other-copy", "sess-1")  # already there: nothing to do
    # ambiguous (two other owners) or unknown: nothing adopted
    assert not store.adopt("-third", "sess-1") and not store.adopt("-x", "nope")
    store.close()


async def test_sessions_are_found_under_any_project_key_through_the_index(
        pg_url: str, schema: str) -> None:
    """``flower log`` on a shared store finds a session under whichever project key holds
    it: the keys named are what ``candidates`` names per session, and the session-id lookup
    (owners, adopt) reads the ``meta_session`` index instead of every transcript's row."""
    from flower.stores.readers import KeyFinder, PgReader

    store = PostgresSessionStore(pg_url, schema=schema)
    entry = [{"type": "user", "uuid": "a", "message": {"content": "go"}}]
    for pk, sid in [("here", "s-live"), ("old", "s-moved"), ("a", "s-two"), ("b", "s-two"),
                    ("here", "s-both"), ("old", "s-both")]:
        await store.append({"project_key": pk, "session_id": sid}, entry)
    await store.append({"project_key": "x", "session_id": "s-sub",
                        "subpath": "subagents/agent-1"}, entry)
    store.close()
    status, reader = PgReader.open(pg_url, schema=schema)
    assert status == "ok" and reader is not None
    try:
        find = KeyFinder(reader, "here")
        for sid in ["s-live", "s-moved", "s-two", "s-both", "s-sub", "s-nowhere"]:
            assert list(find(sid)) == reader.candidates("here", sid), sid
        with psycopg.connect(pg_url) as conn:
            conn.execute("SET enable_seqscan = off")
            plan = "\n".join(r for (r,) in conn.execute(
                f"EXPLAIN SELECT store_key, mtime FROM {schema}.meta "
                "WHERE split_part(store_key, '/', 2) = 's-two' "
                "AND split_part(store_key, '/', 3) = ''"))
        assert "meta_session" in plan
    finally:
        reader.close()

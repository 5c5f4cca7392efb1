"""A warm load replays what the last load of the same rows decided (``Layers`` keeps the
plan): the copy must be exactly what a fresh store loads from the same file, and any write
the plan cannot have seen — this store's, another store object's, another process's, a
spill file deleted, a policy changed — must make the next load decide again."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower.stores.prune import PrunePolicy, PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.trim import EphemeralPolicy, TrimPolicy

from .conftest import Chain

KEY = {"project_key": "-p", "session_id": "sess-1"}
ROOT = Path(__file__).resolve().parents[2]
KW: dict[str, Any] = {"policy": TrimPolicy(keep_recent=2, min_chars=500),
                      "ephemeral": EphemeralPolicy(keep_recent=2),
                      "prune": PrunePolicy(keep_denials=1)}


def transcript(rounds: int, tag: str = "", start: int = 0) -> list[dict[str, Any]]:
    """Glances, big results, denials, an API error, an orphan, a last-prompt: every layer
    has something to do. ``tag`` makes uuids (and bodies) of another generation."""
    c = Chain()
    c._n = start
    c.prompt(f"go {tag}")
    for i in range(rounds):
        c.bash("git status", f"clean {tag}{i}")
        c.bash("make build", (tag or "z") * 900 + str(i))
        if i % 3 == 1:
            c.denied()
        if i % 4 == 2:
            c.api_error()
    c.call("Read", {"file_path": "/never/answered"})
    c.bookkeeping()
    for e in c.entries:
        if "uuid" in e:
            e["uuid"] = f"{tag}{e['uuid']}"
        if e.get("parentUuid"):
            e["parentUuid"] = f"{tag}{e['parentUuid']}"
        if "leafUuid" in e:
            e["leafUuid"] = f"{tag}{e['leafUuid']}"
    return c.entries


def load(store: Any) -> tuple[bytes, dict[str, int], tuple[int, ...]]:
    """The copy (as bytes: byte-identical, not merely equal) and what the layers reported."""
    out = anyio.run(store.load, KEY)
    return orjson.dumps(out), dict(store.last_report), (
        store.pruned, store.denials_dropped, store.neutralized, store.healed)


def fresh(db: Path, ws: Path, **kw: Any) -> tuple[bytes, dict[str, int], tuple[int, ...]]:
    """What a store that never loaded before gives for the file as it is now."""
    with PruningSessionStore(db, ws, **{**KW, **kw}) as other:
        return load(other)


def append(store: Any, entries: list[dict[str, Any]]) -> None:
    anyio.run(store.append, KEY, copy.deepcopy(entries))


def age_spill_dir(ws: Path) -> None:
    """Make the spill directory's listing one the memo trusts (written seconds ago)."""
    spill = ws / ".flower" / "spill"
    if spill.is_dir():
        past = time.time() - 60
        os.utime(spill, (past, past))


def warm(db: Path, ws: Path, scans: list[int]) -> PruningSessionStore:
    """A store whose next load of KEY is replayed (checked)."""
    store = PruningSessionStore(db, ws, **KW)
    load(store)
    age_spill_dir(ws)
    load(store)
    before = len(scans)
    assert load(store) == fresh(db, ws)
    assert len(scans) == before + 1  # only the fresh store scanned
    return store


def test_a_warm_load_of_unchanged_rows_is_replayed_and_identical(db: Path, ws: Path,
                                                                 scans: list[int]) -> None:
    with SqliteSessionStore(db) as raw:
        append(raw, transcript(12))
    store = warm(db, ws, scans)
    first = load(store)
    assert load(store) == first
    assert store.last_report["cleared"] > 0 and store.denials_dropped > 0
    assert store.pruned > 0 and store.healed == 1
    store.close()


def test_an_append_by_the_same_store_is_seen(db: Path, ws: Path, scans: list[int]) -> None:
    entries = transcript(12)
    with SqliteSessionStore(db) as raw:
        append(raw, entries[:30])
    store = warm(db, ws, scans)
    append(store, entries[30:])
    assert load(store) == fresh(db, ws)
    store.close()


def test_a_rewrite_by_another_store_object_is_seen(db: Path, ws: Path,
                                                   scans: list[int]) -> None:
    """Deleted and written again with as many rows: the same seq and rowid range, other rows."""
    old = transcript(12)
    new = transcript(12, tag="q")
    assert len(old) == len(new)
    with SqliteSessionStore(db) as raw:
        append(raw, old)
    store = warm(db, ws, scans)
    with SqliteSessionStore(db) as other:
        anyio.run(other.delete, KEY)
        append(other, new)
    got = load(store)
    assert got == fresh(db, ws)
    assert b'"uuid":"qu0' in got[0] and b'"uuid":"u0' not in got[0]
    store.close()


def test_a_write_by_another_process_is_seen(db: Path, ws: Path, scans: list[int]) -> None:
    with SqliteSessionStore(db) as raw:
        append(raw, transcript(12))
    store = warm(db, ws, scans)
    extra = orjson.dumps(transcript(3, tag="x")).decode()
    code = ("import anyio, json, sys\n"
            "from flower.stores.sqlite import SqliteSessionStore\n"
            "s = SqliteSessionStore(sys.argv[1])\n"
            f"anyio.run(s.append, {KEY!r}, json.loads(sys.argv[2]))\n"
            "s.close()\n")
    subprocess.run([sys.executable, "-c", code, str(db), extra], check=True, timeout=60,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    got = load(store)
    assert got == fresh(db, ws)
    assert b"xu0" in got[0]
    store.close()


def test_a_deleted_spill_file_is_written_again(db: Path, ws: Path, scans: list[int]) -> None:
    with SqliteSessionStore(db) as raw:
        append(raw, transcript(12))
    store = warm(db, ws, scans)
    spill = ws / ".flower" / "spill"
    victims = sorted(p for p in spill.iterdir() if p.suffix == ".txt")
    victims[0].unlink()
    got = load(store)
    assert victims[0].exists()  # written again by this load (a fresh store would, too)
    assert got == fresh(db, ws)
    store.close()


def test_a_changed_policy_takes_effect_at_the_next_load(db: Path, ws: Path,
                                                        scans: list[int]) -> None:
    with SqliteSessionStore(db) as raw:
        append(raw, transcript(12))
    store = warm(db, ws, scans)
    store.policy.keep_recent = 5  # edited in place, as a caller may
    store.ephemeral = EphemeralPolicy(keep_recent=0)
    store.prune_policy.keep_denials = 0
    got = load(store)
    assert got == fresh(db, ws, policy=TrimPolicy(keep_recent=5, min_chars=500),
                        ephemeral=EphemeralPolicy(keep_recent=0),
                        prune=PrunePolicy(keep_denials=0))
    assert store.last_report["kept"] == 5
    store.close()


# --------------------------------------------------------------------------- any sequence

OPS = st.lists(st.sampled_from(["load", "load", "age", "append", "other-append",
                                "rewrite", "delete"]), min_size=1, max_size=10)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, size=st.integers(1, 8))
def test_every_load_is_a_fresh_stores_load(ops: list[str], size: int) -> None:
    """Whatever happened to the file in between, a store that loaded before gives what a
    store that never did gives."""
    with tempfile.TemporaryDirectory() as tmp:
        db, ws = Path(tmp) / "sessions.db", Path(tmp) / "ws"
        ws.mkdir()
        store = PruningSessionStore(db, ws, **KW)
        generation, start = 0, 0

        def more() -> list[dict[str, Any]]:
            nonlocal start
            start += 1000
            return transcript(size, tag=f"g{generation}-", start=start)

        append(store, more())
        for op in ops:
            if op == "load":
                assert load(store) == fresh(db, ws)
            elif op == "age":
                age_spill_dir(ws)
            elif op == "append":
                append(store, more())
            elif op == "other-append":
                with SqliteSessionStore(db) as other:
                    append(other, more())
            elif op in ("rewrite", "delete"):
                generation += 1
                target = store if op == "delete" else SqliteSessionStore(db)
                anyio.run(target.delete, KEY)
                append(target, more())
                if target is not store:
                    target.close()
        assert load(store) == fresh(db, ws)
        store.close()

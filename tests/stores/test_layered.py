"""The load layers as pure transforms over any backend: LayeredSessionStore around SQLite (or
any SDK store) gives exactly what the built-in SQLite layers give."""

from __future__ import annotations

import copy
from pathlib import Path

from claude_agent_sdk import InMemorySessionStore
from claude_agent_sdk.testing import run_session_store_conformance

from flower.stores.layered import LayeredSessionStore, Layers
from flower.stores.prune import PrunePolicy, PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.trim import EphemeralPolicy, TrimPolicy, trim_report

from .conftest import Chain

KEY = {"project_key": "-p", "session_id": "sess-1"}


def _transcript() -> list[dict]:
    c = Chain()
    c.prompt("go")
    c.looks_and_reads(8)
    c.denied()
    c.api_error()
    c.denied()
    c.call("Read", {"file_path": "/never/answered"})
    c.bookkeeping()
    return c.entries


async def test_layered_sqlite_equals_pruning_store(tmp_path: Path) -> None:
    entries = _transcript()
    kw = {"policy": TrimPolicy(keep_recent=2), "ephemeral": EphemeralPolicy(keep_recent=3),
          "prune": PrunePolicy(keep_denials=1)}
    old = PruningSessionStore(tmp_path / "a.db", tmp_path / "ws", **kw)
    new = LayeredSessionStore(SqliteSessionStore(tmp_path / "b.db"), tmp_path / "ws", **kw)
    mem = LayeredSessionStore(InMemorySessionStore(), tmp_path / "ws", **kw)
    for s in (old, new, mem):
        await s.append(KEY, copy.deepcopy(entries))
    want = await old.load(KEY)
    assert await new.load(KEY) == want
    assert await mem.load(KEY) == want
    assert await mem.load(KEY) == want  # the in-memory rows were not edited in place
    for s in (new, mem):
        assert s.last_report == old.last_report and trim_report(s) == trim_report(old)
        assert (s.pruned, s.denials_dropped, s.healed) == (old.pruned, old.denials_dropped,
                                                           old.healed)
    assert await new.load({**KEY, "session_id": "nope"}) is None
    old.close()
    new.close()


async def test_layers_are_a_pure_function_of_the_entries(tmp_path: Path) -> None:
    entries = _transcript()
    layers = Layers(tmp_path, TrimPolicy(keep_recent=2), EphemeralPolicy(keep_recent=3),
                    PrunePolicy())
    a = layers.apply(KEY, copy.deepcopy(entries))
    b = layers.apply(KEY, copy.deepcopy(entries))
    assert a == b and len(a) < len(entries) and layers.pruned
    no_prune = Layers(tmp_path, TrimPolicy(keep_recent=2), EphemeralPolicy(keep_recent=3))
    assert len(no_prune.apply(KEY, copy.deepcopy(entries))) == len(entries)


async def test_layered_conformance(tmp_path: Path) -> None:
    made: list[LayeredSessionStore] = []

    def make() -> LayeredSessionStore:
        s = LayeredSessionStore(SqliteSessionStore(tmp_path / f"{len(made)}.db"), tmp_path)
        made.append(s)
        return s

    await run_session_store_conformance(make)
    for s in made:
        s.close()

"""``session_since``: what reconciliation reads of a killed session — its main and subagent
transcripts under any project key, only the newest part — the same on SQLite and
PostgreSQL, through the stores' real append path."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from flower.stores.postgres import PostgresSessionStore
from flower.stores.readers import SINCE_SLACK_S
from flower.stores.sqlite import SqliteSessionStore
from tests.core.test_reconcile import reply


async def _fill(store) -> float:
    now = time.time()
    old = now - 10 * SINCE_SLACK_S
    main = {"project_key": "-elsewhere", "session_id": "S"}
    sub = {**main, "subpath": "subagents/agent-a1"}
    entries = [*reply("old1", old, 10), *reply("old2", old + 1, 10),
               {"type": "user", "timestamp": "x", "message": {"content": "hi"}},
               *reply("new1", now, 10, parts=2)]
    for i, e in enumerate(entries):
        e["uuid"] = f"u{i}"
    await store.append(main, entries)
    await store.append(sub, [{**reply("w1", now + 1, 5)[0], "uuid": "w"}])
    await store.append({"project_key": "-p", "session_id": "T"},
                       [{**reply("other", now, 5)[0], "uuid": "o"}])
    return now


def _ids(entries) -> list[str]:
    return sorted({e["message"]["id"] for e in entries})


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_session_since_reads_the_newest_replies_of_main_and_subagents(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if backend == "sqlite":
        store = SqliteSessionStore(tmp_path / "sessions.db")
    else:
        store = PostgresSessionStore(request.getfixturevalue("pg_url"),
                                     schema=request.getfixturevalue("schema"))
    try:
        now = await _fill(store)
        got = store.session_since("S", now - 1)
        # the old ones are left unread; no user entry; nothing of session T
        assert _ids(got) == ["new1", "w1"]
        assert len(got) == 3  # both entries of the split response
        assert _ids(store.session_since("S", now - 20 * SINCE_SLACK_S)) == \
            ["new1", "old1", "old2", "w1"]
        assert store.session_since("nope", 0.0) == []
    finally:
        store.close()

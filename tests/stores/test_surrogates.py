"""Issue 12: an entry holding a lone surrogate (the CLI cut an emoji in half) must be stored
losslessly, and one bad entry must never cost the rest of its batch."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from flower.stores.prune import PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore

KEY = {"project_key": "-home-u-proj", "session_id": "sess-1"}
CUT = "half an emoji: \ud83d"  # a lone high surrogate, as json.loads gives for "\\ud83d"


def _batch() -> list[dict]:
    return [
        {"type": "user", "uuid": "a", "parentUuid": None, "message": {"content": "first ✓"}},
        {"type": "assistant", "uuid": "b", "parentUuid": "a",
         "message": {"content": [{"type": "text", "text": CUT}]}},
        {"type": "user", "uuid": "c", "parentUuid": "b", "message": {"content": "low \udc00 too"}},
        {"type": "tag", "tag": "no uuid \udfff"},
        {"type": "user", "uuid": "d", "parentUuid": "c", "message": {"content": "after"}},
    ]


@pytest.mark.parametrize("cls", [SqliteSessionStore, PruningSessionStore])
async def test_lone_surrogates_are_stored_losslessly(tmp_path: Path, cls: type) -> None:
    db = tmp_path / "sessions.db"
    store = cls(db) if cls is SqliteSessionStore else cls(db, tmp_path)
    batch = _batch()
    await store.append(KEY, batch)
    assert await store.load(KEY) == batch  # every entry, the exact strings
    rows = sqlite3.connect(db).execute(
        "SELECT uid, payload FROM entries ORDER BY seq").fetchall()
    assert [u for u, _ in rows] == ["a", "b", "c", None, "d"]
    for _, payload in rows:
        payload.encode("utf-8")  # valid UTF-8 on disk
    assert "first ✓" in rows[0][1]  # ordinary entries keep their readable text
    assert json.loads(rows[1][1]) == batch[1]
    await store.append(KEY, batch)  # an SDK retry of the same batch: nothing doubled
    assert len(await store.load(KEY)) == 5 + 1  # only the uuid-less tag is appended again
    store.close()


async def test_surrogate_in_the_first_prompt_does_not_break_the_summary(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    first = {"type": "user", "uuid": "p", "timestamp": "2026-01-01T00:00:00.000Z",
             "message": {"role": "user", "content": "go \ud83d"}}
    await store.append(KEY, [first])
    assert await store.load(KEY) == [first]
    (summary,) = await store.list_session_summaries(KEY["project_key"])
    assert summary["session_id"] == "sess-1"
    store.close()


async def test_surrogate_in_a_uuid_still_dedups(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    odd = {"type": "user", "uuid": "u-\ud83d", "message": {"content": "x"}}
    await store.append(KEY, [odd])
    await store.append(KEY, [odd])
    assert await store.load(KEY) == [odd]
    store.close()


async def test_an_unstorable_entry_costs_only_itself(tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    good1 = {"type": "user", "uuid": "g1", "message": {"content": "one"}}
    bad = {"type": "user", "uuid": "bad", "message": {"content": {1, 2}}}  # a set: no JSON
    good2 = {"type": "user", "uuid": "g2", "parentUuid": "bad", "message": {"content": "two"}}
    with caplog.at_level(logging.WARNING):
        await store.append(KEY, [good1, bad, good2])  # does not raise: a retry would
        # append the batch's uuid-less entries a second time
    assert await store.load(KEY) == [good1, good2]
    assert [(r.uid, r.position) for r in store.rejected] == [("bad", 1)]
    assert "bad" in caplog.text
    store.close()


def test_rows_written_before_the_fix_still_load(tmp_path: Path) -> None:
    import anyio

    db = tmp_path / "s.db"
    SqliteSessionStore(db).close()
    old = {"type": "user", "uuid": "o", "message": {"content": "旧的 ✓"}}
    con = sqlite3.connect(db)
    con.execute("INSERT INTO entries VALUES (?, 0, 'o', ?)",
                ("-home-u-proj/sess-1", json.dumps(old, ensure_ascii=False)))
    con.execute("INSERT INTO meta VALUES ('-home-u-proj/sess-1', 1700000000000, 1)")
    con.commit()
    store = SqliteSessionStore(db)
    assert anyio.run(store.load, KEY) == [old]
    store.close()

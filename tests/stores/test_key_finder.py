"""``KeyFinder``: ``flower log`` / ``flower analyze`` look up every session of a run folder;
the finder must name the same transcript keys, in the same order, as asking the reader's
``candidates`` once per session (which scanned ``meta`` every time) — and read ``meta``
whole at most once, only when some session is not under this workspace's project key."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from flower.stores.readers import KeyFinder, SqliteReader

from .conftest import Chain  # noqa: F401  (the stores test package's builders)

KEYS = [
    "here/s-live", "here/s-live/subagents/agent-1", "here/s-live/subagents/agent-2",
    "old/s-moved", "old/s-moved/subagents/agent-1",
    "a/s-two", "b/s-two", "here/s-both", "old/s-both",
    "x/s-sub-only/subagents/agent-1",  # a subagent transcript alone is no session
]
SIDS = ["s-live", "s-moved", "s-two", "s-both", "s-sub-only", "s-nowhere"]

class Counting(SqliteReader):
    def __init__(self, con: sqlite3.Connection) -> None:
        super().__init__(con)
        self.maps = 0

    def owner_map(self) -> dict[str, list[str]]:
        self.maps += 1
        return super().owner_map()

def _reader(tmp_path: Path, keys: list[str]) -> Counting:
    con = sqlite3.connect(tmp_path / "sessions.db")
    con.execute("CREATE TABLE meta (store_key TEXT PRIMARY KEY, mtime INTEGER NOT NULL, "
                "next_seq INTEGER NOT NULL)")
    con.executemany("INSERT INTO meta VALUES (?, ?, 1)",
                    [(k, 1000 - n) for n, k in enumerate(keys)])
    return Counting(con)

def test_same_keys_in_the_same_order_as_candidates(tmp_path: Path) -> None:
    reader = _reader(tmp_path, KEYS)
    find = KeyFinder(reader, "here")
    for sid in SIDS:
        assert list(find(sid)) == reader.candidates("here", sid), sid
    assert reader.maps == 1

def test_meta_is_not_read_whole_while_every_session_is_here(tmp_path: Path) -> None:
    reader = _reader(tmp_path, KEYS)
    find = KeyFinder(reader, "here")
    for sid in ("s-live", "s-both"):
        assert next(find(sid)) == f"here/{sid}"  # the caller found it under the exact key
    assert reader.maps == 0

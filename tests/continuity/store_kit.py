"""Build a realistic ``sessions.db``: the store schema of seed 003 and transcript entries
shaped like the ones sdk-notes §4.4 recorded."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

# The schema of seed 003 (stores/sqlite.py), byte for byte in meaning.
SCHEMA = """
CREATE TABLE entries (
    store_key TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    uid       TEXT,
    payload   TEXT NOT NULL,
    PRIMARY KEY (store_key, seq)
);
CREATE UNIQUE INDEX entries_uid
    ON entries(store_key, uid) WHERE uid IS NOT NULL;
CREATE TABLE meta (
    store_key TEXT PRIMARY KEY,
    mtime     INTEGER NOT NULL,
    next_seq  INTEGER NOT NULL
);
CREATE TABLE summaries (
    project_key TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    mtime       INTEGER NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
"""


def user(uid: str, parent: str | None, text: str) -> dict:
    return {"type": "user", "uuid": uid, "parentUuid": parent, "isSidechain": False,
            "message": {"role": "user", "content": text}, "sessionId": "s"}


def assistant(uid: str, parent: str, *, inp: int, read: int = 0, create: int = 0,
              text: str = "ok") -> dict:
    """A real API call's assistant entry (sdk-notes §4.4)."""
    return {"type": "assistant", "uuid": uid, "parentUuid": parent, "isSidechain": False,
            "requestId": f"req_{uid}",
            "message": {"id": f"msg_{uid}", "type": "message", "role": "assistant",
                        "model": "claude-opus-5-5",
                        "content": [{"type": "text", "text": text}],
                        "stop_reason": "end_turn", "stop_sequence": None,
                        "usage": {"input_tokens": inp, "cache_creation_input_tokens": create,
                                  "cache_read_input_tokens": read, "output_tokens": 41}}}


def synthetic_error(uid: str, parent: str) -> dict:
    """The harness's outage message: zero usage, must not count as the context."""
    return {"type": "assistant", "uuid": uid, "parentUuid": parent, "isApiErrorMessage": True,
            "apiErrorStatus": 500, "error": "server_error",
            "message": {"id": "0b7c-not-msg", "model": "<synthetic>", "role": "assistant",
                        "type": "message",
                        "content": [{"type": "text", "text": "API Error: 500 fake error"}],
                        "stop_reason": "stop_sequence", "stop_sequence": "",
                        "usage": {"input_tokens": 0, "output_tokens": 0}}}


def write_store(db: Path, transcripts: dict[str, list[dict]], *, wal: bool = True,
                mtimes: dict[str, int] | None = None) -> None:
    """Create ``db`` with the store schema; ``transcripts`` maps store_key → entries."""
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
    con.executescript(SCHEMA)
    for n, (key, entries) in enumerate(transcripts.items()):
        for seq, e in enumerate(entries):
            con.execute("INSERT INTO entries VALUES (?, ?, ?, ?)",
                        (key, seq, e.get("uuid"), json.dumps(e, ensure_ascii=False)))
        mtime = (mtimes or {}).get(key, 1_700_000_000_000 + n)
        con.execute("INSERT INTO meta VALUES (?, ?, ?)", (key, mtime, len(entries)))
    con.commit()
    con.close()



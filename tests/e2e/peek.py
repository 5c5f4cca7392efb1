"""Read-only peeks into a run dir's ``sessions.db`` for end-to-end tests."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from flower.core.paths import project_key


def assistant_stored(run_dir: Path, workspace: Path, sid: str, saying: str = "") -> bool:
    """The session has an assistant entry in sessions.db (read-only peek), one whose
    content contains ``saying`` if given. A fork's transcript opens with a copy of its
    source's entries, so only ``saying`` tells whether the fork's *own* answer is stored."""
    db = run_dir / "sessions.db"
    if not db.exists():
        return False
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
    try:
        rows = con.execute("select payload from entries where store_key = ?",
                           (f"{project_key(workspace)}/{sid}",)).fetchall()
    except sqlite3.Error:
        return False
    finally:
        con.close()
    entries = [json.loads(p) for (p,) in rows]
    return any(e.get("type") == "assistant" and saying in json.dumps(
        e.get("message"), ensure_ascii=False) for e in entries)

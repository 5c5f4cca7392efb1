"""Read-only peeks into a run dir's ``sessions.db`` for end-to-end tests."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from flower.core.paths import project_key


def assistant_stored(run_dir: Path, workspace: Path, sid: str) -> bool:
    """The session has an assistant entry in sessions.db (read-only peek)."""
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
    return any(json.loads(p).get("type") == "assistant" for (p,) in rows)

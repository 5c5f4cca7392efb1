"""``sessions.db``, strictly read-only: for probes and reports that must leave no trace.

``wake_state`` (before the user decided anything) and ``flower log`` (a report) read the
store without importing the SDK and without creating anything — not the file, not
``-wal``/``-shm`` side files. :class:`~flower.stores.sqlite.SqliteSessionStore` opens the
file read-write (WAL mode, schema) and is the wrong tool for them.
"""

from __future__ import annotations

import datetime as _dt
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from flower.usage import entry_context

__all__ = ["NoSessions", "Round", "connect_ro", "last_context", "main_rounds",
           "parse_timestamp", "rounds_from"]

_MAGIC = b"SQLite format 3\0"
SYNTHETIC_MODEL = "<synthetic>"  # the CLI's own messages (outage notes), not API calls


class NoSessions(Exception):
    """``sessions.db`` is empty or not a SQLite file: nothing in it can be resumed."""


def connect_ro(db: Path) -> sqlite3.Connection | None:
    """Open ``db`` without creating anything — not the file, not ``-wal``/``-shm``.

    ``None`` when it cannot be read right now; :class:`NoSessions` when it holds none.

    A read-only connection to a WAL database creates the side files when they are absent
    and leaves them behind, so a cleanly closed WAL database is opened ``immutable``
    (everything is in the main file then). With a live ``-wal`` the side files exist
    already and ``mode=ro`` reads the newest data.
    """
    try:
        with open(db, "rb") as f:
            header = f.read(100)
    except OSError:
        return None
    if len(header) < 100 or not header.startswith(_MAGIC):
        raise NoSessions(db)
    wal = header[18] == 2 or header[19] == 2
    live = Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()
    mode = "mode=ro" if (live or not wal) else "immutable=1"
    try:
        return sqlite3.connect(f"{db.resolve().as_uri()}?{mode}", uri=True, timeout=1.0)
    except sqlite3.Error:
        return None


def last_context(con: sqlite3.Connection, key: str, *, scan: int = 500) -> int | None:
    """Context size of the latest real API call among the last ``scan`` entries of ``key``."""
    rows = con.execute(
        "SELECT payload FROM entries WHERE store_key = ? ORDER BY seq DESC LIMIT ?",
        (key, scan),
    )
    for (payload,) in rows:
        try:
            size = entry_context(json.loads(payload))
        except (TypeError, ValueError):
            continue
        if size:
            return size
    return None


@dataclass(frozen=True)
class Round:
    """One main-thread API call: when it was answered (unix time, None if unknown) and the
    context size the model saw."""

    at: float | None
    context: int


def _timestamp(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    try:
        stamp = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=_dt.timezone.utc)
    return stamp.timestamp()


def parse_timestamp(value: object) -> float | None:
    """Unix time of a transcript entry's ISO ``timestamp``; None when absent or malformed."""
    return _timestamp(value)


def main_rounds(con: sqlite3.Connection, key: str) -> list[Round]:
    """Every main-thread API call of the transcript ``key`` (``<project_key>/<session_id>``),
    in order: one :class:`Round` per assistant message id.

    The CLI writes one entry per content block, all carrying the same message id and usage,
    so entries are folded by id. Subagents live under their own keys and are not read;
    sidechain entries, the CLI's synthetic messages and zero-usage entries are skipped.
    """
    # "assistant" appears in every assistant entry; the filter only saves parsing the big
    # user/tool_result rows, the real test is below.
    rows = con.execute(
        "SELECT payload FROM entries WHERE store_key = ? AND instr(payload, '\"assistant\"') > 0 "
        "ORDER BY seq",
        (key,),
    )
    return rounds_from(p for (p,) in rows)


def rounds_from(payloads: Iterable[str | bytes]) -> list[Round]:
    """:func:`main_rounds` over stored payload texts in seq order (any backend)."""
    found: dict[str, Round] = {}
    for n, payload in enumerate(payloads):
        try:
            entry = json.loads(payload)
        except (TypeError, ValueError):
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain") is True:
            continue
        size = entry_context(entry)
        message = entry.get("message")
        if not size or not isinstance(message, dict) or message.get("model") == SYNTHETIC_MODEL:
            continue
        mid = message.get("id")
        ident = mid if isinstance(mid, str) and mid else f"#{n}"
        seen = found.get(ident)
        if seen is None:
            found[ident] = Round(_timestamp(entry.get("timestamp")), size)
        elif size > seen.context:  # streamed blocks of one message: keep the fullest reading
            found[ident] = Round(seen.at, size)
    return list(found.values())

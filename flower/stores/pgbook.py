"""The run book in PostgreSQL: ``lineage`` and ``manifest`` tables beside the transcripts.

::

    lineage(name, workspace, woke, steps, mtime)   one row per run name; steps is JSON text
    manifest(name, run_id, seq, row)               the manifest rows of each process (run id)

:class:`PostgresBook` writes from one background thread: ``put_lineage``/``put_manifest``
only record the latest state and return, so a hook called inside the event loop never
waits on the network. Writes coalesce (the newest lineage document, the newest rows of
each run id) and every write carries the whole state, so a write lost to an outage is
healed by the next one; while the server is away the thread retries with backoff and says
so once. ``close`` waits (bounded) for the last state to land.

The reads are :class:`~flower.stores.readers.PgReader`'s, the same ones the strictly
read-only :class:`~flower.stores.readers.RunProbe` of ``wake_state`` runs.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from flower import texts
from flower.errors import one_line
from flower.stores.readers import PgReader

__all__ = ["BookStore", "PostgresBook"]

log = logging.getLogger("flower.stores")
_READ_RETRY = 5.0  # seconds a lineage read waits for a server that is away


def _row_text(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=True, default=str)  # ASCII: lone surrogates are safe


class BookStore(Protocol):
    """What a book needs of the store it writes beside: its schema, its SQL with the schema
    filled in and its transactions (retried while the server is away).
    ``PostgresSessionStore`` is one; this module never imports it, so the store can import
    the book at its top."""

    schema: str

    def _q(self, text: str) -> Any:
        """``text`` with ``{s}`` replaced by the quoted schema."""

    def _tx(self, fn: Callable[[Any], Any], *, retry: float | None = None) -> Any:
        """``fn(cursor)`` in one committed transaction."""


class PostgresBook:
    """Lineage and manifest rows of run ``name`` in ``store``'s schema."""

    def __init__(self, store: BookStore, name: str) -> None:
        self.store = store
        self.name = name
        self._cond = threading.Condition()
        self._lineage: dict[str, Any] | None = None
        self._manifest: dict[str, list[str]] = {}
        self._busy = False
        self._closed = False
        self._failing = False
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"PostgresBook({self.name!r}, {self.store!r})"

    # -- reads (sync)

    def lineage(self) -> dict[str, Any] | None:
        return self.store._tx(lambda cur: PgReader(cur, self.store.schema).lineage(self.name),
                              retry=_READ_RETRY)

    def manifest(self) -> list[dict[str, Any]]:
        """Every manifest row under this run name (all machines), by run id then order."""
        return self.store._tx(lambda cur: PgReader(cur, self.store.schema).manifest(self.name),
                              retry=_READ_RETRY)

    # -- writes (background)

    def put_lineage(self, doc: dict[str, Any]) -> None:
        with self._cond:
            self._lineage = {"workspace": str(doc.get("workspace", "")),
                             "woke": int(doc.get("woke", 0) or 0),
                             "steps": dict(doc.get("steps") or {})}
            self._kick()

    def put_manifest(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        texts_ = [_row_text(r) for r in rows]
        with self._cond:
            self._manifest[run_id] = texts_
            self._kick()

    def _kick(self) -> None:  # under self._cond
        if self._closed:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"flower-book-{self.name}",
                                            daemon=True)
            self._thread.start()
        self._cond.notify_all()

    def _pending(self) -> bool:
        return self._lineage is not None or bool(self._manifest)

    def _loop(self) -> None:
        delay = 0.5
        while True:
            with self._cond:
                while not self._pending() and not self._closed:
                    self._cond.wait()
                if not self._pending():
                    return
                lineage, manifest = self._lineage, self._manifest
                self._lineage, self._manifest, self._busy = None, {}, True
            try:
                self.store._tx(lambda cur, lin=lineage, man=manifest:
                               self._write(cur, lin, man), retry=0)
            except Exception as exc:
                with self._cond:
                    if self._lineage is None:
                        self._lineage = lineage
                    for run_id, rows in manifest.items():
                        self._manifest.setdefault(run_id, rows)
                    self._busy = False
                    self._cond.notify_all()
                    if self._closed:
                        return
                if not self._failing:
                    self._failing = True
                    log.warning(texts.BOOK_FAILED.format(name=self.name, reason=one_line(exc)))
                with self._cond:
                    self._cond.wait(timeout=delay)
                delay = min(delay * 2, 5.0)
                continue
            with self._cond:
                self._busy = False
                self._cond.notify_all()
            if self._failing:
                self._failing = False
                log.warning(texts.BOOK_BACK.format(name=self.name))
            delay = 0.5

    def _write(self, cur: Any, lineage: dict[str, Any] | None,
               manifest: dict[str, list[str]]) -> None:
        q = self.store._q
        if lineage is not None:
            cur.execute(q(
                "INSERT INTO {s}.lineage (name, workspace, woke, steps, mtime) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET "
                "workspace=excluded.workspace, woke=excluded.woke, steps=excluded.steps, "
                "mtime=excluded.mtime"),
                (self.name, lineage["workspace"], lineage["woke"],
                 json.dumps(lineage["steps"], ensure_ascii=True), int(time.time() * 1000)))
        for run_id, rows in manifest.items():
            cur.execute(q("DELETE FROM {s}.manifest WHERE name=%s AND run_id=%s"),
                        (self.name, run_id))
            if rows:
                cur.executemany(q("INSERT INTO {s}.manifest (name, run_id, seq, row) "
                                  "VALUES (%s, %s, %s, %s)"),
                                [(self.name, run_id, i, r) for i, r in enumerate(rows)])

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything put so far is written; False when ``timeout`` ran out."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending() or self._busy:
                if self._thread is None:
                    return not self._pending()
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(timeout=min(left, 0.2))
        return True

    def close(self, *, wait: float = 10.0) -> None:
        """Write what is pending (waiting at most ``wait`` seconds), then stop the thread."""
        done = self.flush(wait)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=max(wait, 1.0))
        if not done:
            log.warning(texts.BOOK_LOST_AT_CLOSE.format(name=self.name))

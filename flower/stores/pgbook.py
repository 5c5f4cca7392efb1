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

:class:`RunProbe` is the strictly read-only look ``wake_state`` takes before anything is
decided: one connection, no DDL, nothing written.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.errors import one_line
from flower.stores.codec import decode
from flower.usage import entry_context

if TYPE_CHECKING:
    from flower.stores.postgres import PostgresSessionStore

__all__ = ["PostgresBook", "RunProbe"]

log = logging.getLogger("flower.stores")
_READ_RETRY = 5.0  # seconds a lineage read waits for a server that is away
_SCAN = 500  # entries walked back looking for the last real API call (as wake.py)


def _row_text(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=True, default=str)  # ASCII: lone surrogates are safe


class PostgresBook:
    """Lineage and manifest rows of run ``name`` in ``store``'s schema."""

    def __init__(self, store: PostgresSessionStore, name: str) -> None:
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
        q = self.store._q

        def read(cur: Any) -> Any:
            cur.execute(q("SELECT workspace, woke, steps FROM {s}.lineage WHERE name=%s"),
                        (self.name,))
            return cur.fetchone()

        row = self.store._tx(read, retry=_READ_RETRY)
        if row is None:
            return None
        return {"workspace": row[0], "woke": row[1], "steps": json.loads(row[2])}

    def manifest(self) -> list[dict[str, Any]]:
        """Every manifest row under this run name (all machines), by run id then order."""
        q = self.store._q
        rows = self.store._tx(lambda cur: cur.execute(q(
            "SELECT row FROM {s}.manifest WHERE name=%s ORDER BY run_id, seq"),
            (self.name,)).fetchall(), retry=_READ_RETRY)
        return [json.loads(r) for (r,) in rows]

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


class RunProbe:
    """Read-only: the run book and the sessions of run ``name`` in a PostgreSQL store.

    ``RunProbe.open`` returns None when the store cannot be read (no driver, server away,
    no v2 tables yet): the wake probe then knows only what the files say."""

    def __init__(self, conn: Any, schema: str, name: str) -> None:
        from psycopg import sql

        self.conn = conn
        self.name = name
        self._s = sql.Identifier(schema)
        self._sql = sql

    @classmethod
    def open(cls, url: str, name: str, *, schema: str = "flower",
             timeout: float = 3.0) -> RunProbe | None:
        try:
            import psycopg

            conn = psycopg.connect(url, connect_timeout=max(int(timeout), 1), autocommit=True,
                                   application_name="flower-probe")
        except Exception:
            return None
        try:
            conn.read_only = True
            row = conn.execute("SELECT to_regclass(%s), to_regclass(%s)",
                               (f'"{schema}".lineage', f'"{schema}".meta')).fetchone()
            if not row or row[0] is None or row[1] is None:
                conn.close()
                return None
        except Exception:
            conn.close()
            return None
        return cls(conn, schema, name)

    def _q(self, text: str) -> Any:
        return self._sql.SQL(text).format(s=self._s)

    def lineage(self) -> dict[str, Any] | None:
        row = self.conn.execute(self._q(
            "SELECT workspace, woke, steps FROM {s}.lineage WHERE name=%s"), (self.name,)
        ).fetchone()
        if row is None:
            return None
        return {"workspace": row[0], "woke": row[1], "steps": json.loads(row[2])}

    def put_lineage(self, doc: dict[str, Any]) -> None:  # read-only: never writes
        return None

    def put_manifest(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        return None

    def session_info(self, workspace: Path, steps: dict[str, str], work_step: str,
                     project_key: str) -> tuple[dict[str, str], str | None, int | None]:
        """``(live steps, step measured, its last context)`` — as wake.py's SQLite probe,
        with the adoption rule: a session lives when this project key holds it, or exactly
        one other project key does (Runtime adopts it before resuming)."""
        try:
            live: dict[str, str] = {}
            keys: dict[str, str] = {}
            mtimes: dict[str, int] = {}
            for step, sid in steps.items():
                rows = self.conn.execute(self._q(
                    "SELECT store_key, mtime FROM {s}.meta WHERE split_part(store_key, '/', 2)"
                    " = %s AND split_part(store_key, '/', 3) = ''"), (sid,)).fetchall()
                mine = [r for r in rows if r[0] == f"{project_key}/{sid}"]
                pick = mine or (rows if len(rows) == 1 else [])
                if pick:
                    live[step], keys[step], mtimes[step] = sid, pick[0][0], int(pick[0][1])
            if not live:
                return {}, None, None
            step = work_step if work_step in live else max(live, key=lambda s: mtimes[s])
            context = 0
            for (payload,) in self.conn.execute(self._q(
                    "SELECT payload FROM {s}.entries WHERE store_key=%s ORDER BY seq DESC "
                    "LIMIT %s"), (keys[step], _SCAN)):
                try:
                    context = entry_context(decode(payload))
                except ValueError:
                    continue
                if context:
                    break
            return live, step, context or None
        except Exception:
            return dict(steps), None, None

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:
            pass

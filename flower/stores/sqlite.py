"""SQLite session store: the full, verbatim transcript of every session in one file.

Implements the whole ``claude_agent_sdk.SessionStore`` protocol (the SDK's conformance suite
``claude_agent_sdk.testing.run_session_store_conformance`` checks it). ``append`` stores every
mirrored entry unchanged; the subclasses in ``trim.py`` / ``prune.py`` only rewrite the copy
that ``load`` hands back, so the rows here are the archive and never change.

Concurrency: WAL + ``busy_timeout`` so several flower processes can share ``runs/sessions.db``;
every write is one ``BEGIN IMMEDIATE`` transaction, so uuid dedup, ``next_seq`` and the mtime
clock are decided under the database write lock rather than per process.

Event loop: every protocol method runs its SQLite work in a worker thread. Even a tiny append
can wait up to ``busy_timeout`` for another process's write lock, and ``load`` of a long run
parses ~100 MB of JSON; neither may freeze the SDK's read loop (which also serves hooks and
permission callbacks of sibling sessions in the same process).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
from claude_agent_sdk import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
    fold_session_summary,
)

from flower.errors import StoreCorruptError
from flower.stores.codec import decode_many, encode
from flower.stores.readers import SqliteReader
from flower.stores.rows import Rejected, plan_append

__all__ = ["SCHEMA", "SqliteSessionStore", "StoreCorruptError", "gc_paused", "store_key"]

T = TypeVar("T")

# The exact on-disk layout; other tools (``sqlite3 runs/sessions.db``, tools/analyze_run.py)
# read it directly, so it is part of the public contract. ``meta_mtime`` came later: every
# append asks for ``max(mtime)``, a scan of ``meta`` without it (one row per transcript, so
# it grew with the run). Opening a file made before creates it — an index only, tables and
# rows untouched, so the original flower still reads and writes the file as before.
SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    store_key TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    uid       TEXT,
    payload   TEXT NOT NULL,
    PRIMARY KEY (store_key, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uid
    ON entries(store_key, uid) WHERE uid IS NOT NULL;
CREATE TABLE IF NOT EXISTS meta (
    store_key TEXT PRIMARY KEY,
    mtime     INTEGER NOT NULL,
    next_seq  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS meta_mtime ON meta(mtime);
CREATE TABLE IF NOT EXISTS summaries (
    project_key TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    mtime       INTEGER NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
"""

_COLUMNS = {
    "entries": ["store_key", "seq", "uid", "payload"],
    "meta": ["store_key", "mtime", "next_seq"],
    "summaries": ["project_key", "session_id", "mtime", "data"],
}
_MAGIC = b"SQLite format 3\x00"
_BUSY_TIMEOUT_MS = 30_000
_IN_CHUNK = 500  # uuids per "IN (...)" lookup; well under SQLite's variable limit


def store_key(key: SessionKey | SessionListSubkeysKey) -> str:
    """``<project_key>/<session_id>[/<subpath>]`` — the ``store_key`` column."""
    project, sid = key["project_key"], key["session_id"]
    if not project or not sid or "/" in project or "/" in sid:
        # A slash here would make two different keys collide in one store_key.
        raise ValueError(f"invalid session key {dict(key)!r}")
    sub = key.get("subpath")
    if sub is None:
        return f"{project}/{sid}"
    if not sub:
        raise ValueError("subpath must be omitted (not empty) for the main transcript")
    return f"{project}/{sid}/{sub}"


def _prefix_range(prefix: str) -> tuple[str, str]:
    """Bounds for ``store_key >= lo AND store_key < hi`` matching keys under ``prefix/``.

    A range on the primary key instead of LIKE: no escaping of ``_``/``%``, and it uses the
    index. ``'0'`` is the character right after ``'/'``.
    """
    return prefix + "/", prefix + "0"


def _validate_existing(path: Path) -> None:
    """Refuse anything that is not an empty file or a flower session database.

    Runs before the read-write connection exists, so SQLite never gets the chance to roll
    back a journal, switch the file to WAL or add tables to somebody else's file.
    """
    size = path.stat().st_size
    if size == 0:
        return  # an empty file is an empty database (e.g. created by mkstemp/touch)
    with path.open("rb") as fh:
        header = fh.read(100)
    if len(header) < 100 or not header.startswith(_MAGIC):
        raise StoreCorruptError(path, "no SQLite header")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise StoreCorruptError(path, "damaged SQLite header")
    pages = int.from_bytes(header[28:32], "big")
    size_valid = header[24:28] == header[92:96]
    # Another process may be closing the file meanwhile: its checkpoint copies the WAL into
    # the file, then deletes the WAL. So the WAL is looked at after the header was read, the
    # file's size once more after that, and a WAL gone in between is simply no WAL.
    try:
        wal_busy = path.with_name(path.name + "-wal").stat().st_size > 0
    except FileNotFoundError:
        wal_busy = False
    size = path.stat().st_size
    if size_valid and not wal_busy and size < pages * page_size:
        raise StoreCorruptError(path, f"truncated: {size} of {pages * page_size} bytes")
    try:
        ro = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreCorruptError(path, str(exc)) from exc
    try:
        ro.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        tables = {
            name for (name,) in ro.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        ours = tables & set(_COLUMNS)
        if tables and not ours:
            raise StoreCorruptError(path, "a SQLite database of something else")
        for table in ours:
            cols = [row[1] for row in ro.execute(f"PRAGMA table_info({table})")]
            if cols != _COLUMNS[table]:
                raise StoreCorruptError(path, f"table {table} has columns {cols}")
        if "entries" in ours:
            ro.execute("SELECT store_key, seq FROM entries ORDER BY rowid DESC LIMIT 1").fetchall()
    except sqlite3.Error as exc:
        raise StoreCorruptError(path, str(exc)) from exc
    finally:
        ro.close()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off CPython's cyclic GC while a transcript is parsed and rewritten.

    ``load()`` of a long run allocates millions of dicts/lists that form no cycles; the
    generational collector would rescan them over and over (measured: ~30% of load time).
    Re-enabled afterwards only if it was enabled before.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SqliteSessionStore(SessionStore):
    """Every transcript entry, verbatim, in one SQLite file shared by all flower processes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._last_mtime = 0
        self._writes = 0  # write transactions of this connection (see ``read_versioned``)
        self.rejected: list[Rejected] = []  # entries append could not store (see rows.py)
        if self.path.exists():
            _validate_existing(self.path)
        else:  # created 0600 (SQLite gives -wal/-shm the same mode): it holds transcripts
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):  # sqlite3 reports what really went wrong
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                conn = self._open()
                break
            except sqlite3.Error as exc:
                # Several processes creating one fresh database at once can get SQLITE_BUSY
                # at once (switching to WAL, the schema) — busy, not corrupt: try again.
                if not _busy(exc) or time.monotonic() >= deadline:
                    raise StoreCorruptError(self.path, str(exc)) from exc
                time.sleep(0.05)
        self._conn: sqlite3.Connection | None = conn
        (encoding,) = conn.execute("PRAGMA encoding").fetchone()
        # A load asks for the stored UTF-8 bytes: the JSON parser reads them as they are,
        # where a str would be built from them first (~10% of a long run's load). A file
        # keeping its text in UTF-16 (not one flower made) is read as text.
        self._select = ("SELECT CAST(payload AS BLOB) FROM entries WHERE store_key=? "
                        "ORDER BY seq" if encoding == "UTF-8" else
                        "SELECT payload FROM entries WHERE store_key=? ORDER BY seq")

    def _open(self) -> sqlite3.Connection:
        """Connect, set the pragmas and make sure the schema exists (one transaction)."""
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # Checkpoint in ~40 MB steps instead of 4 MB: a long run appends ~100 MB, and
            # every checkpoint costs an fsync. The WAL file is capped once checkpointed.
            conn.execute("PRAGMA wal_autocheckpoint=10000")
            conn.execute(f"PRAGMA journal_size_limit={64 * 1024 * 1024}")
            conn.execute("BEGIN IMMEDIATE")
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            conn.close()
            raise
        return conn

    # ----------------------------------------------------------------- plumbing

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"session store {self.path} is closed")
        return self._conn

    def _locked(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            return fn(self._db())

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._locked, fn)

    async def _run_write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def write(conn: sqlite3.Connection) -> T:
            self._writes += 1  # before: a failed write may still have changed something
            return self._write(conn, fn)

        return await anyio.to_thread.run_sync(self._locked, write)

    @staticmethod
    def _write(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` inside one ``BEGIN IMMEDIATE`` transaction (caller holds the lock)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    def _next_mtime(self, conn: sqlite3.Connection) -> int:
        """Epoch ms, strictly greater than every mtime already in the file.

        Read under the write lock, so it is monotonic across processes too; the SDK's
        summary staleness fast-path compares these values.
        """
        (latest,) = conn.execute("SELECT max(mtime) FROM meta").fetchone()
        floor = max(self._last_mtime, latest or 0)
        now = max(int(time.time() * 1000), floor + 1)
        self._last_mtime = now
        return now

    # ----------------------------------------------------------------- protocol

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Store new entries in call order; entries whose uuid is already stored are skipped.

        A batch that was fully stored before (the SDK retries failed batches) changes
        nothing — not the rows, not mtime, not the summary.
        """
        if not entries:
            return
        skey = store_key(key)
        await self._run_write(lambda c: self._append_rows(c, key, skey, entries))

    def _append_rows(
        self,
        conn: sqlite3.Connection,
        key: SessionKey,
        skey: str,
        entries: list[SessionStoreEntry],
    ) -> None:
        fresh, values = plan_append(self, key, entries,
                                    lambda uids: self._stored_uids(conn, skey, uids))
        if not values:
            return
        row = conn.execute("SELECT next_seq FROM meta WHERE store_key=?", (skey,)).fetchone()
        start = row[0] if row else 0
        conn.executemany(
            "INSERT INTO entries(store_key, seq, uid, payload) VALUES (?, ?, ?, ?)",
            [(skey, start + i, u, p) for i, (u, p) in enumerate(values)],
        )
        mtime = self._next_mtime(conn)
        conn.execute(
            "INSERT INTO meta(store_key, mtime, next_seq) VALUES (?, ?, ?) "
            "ON CONFLICT(store_key) DO UPDATE SET mtime=excluded.mtime, "
            "next_seq=excluded.next_seq",
            (skey, mtime, start + len(values)),
        )
        if key.get("subpath") is None:
            self._fold_summary(conn, key, fresh, mtime)

    @staticmethod
    def _stored_uids(conn: sqlite3.Connection, skey: str, uids: list[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(uids), _IN_CHUNK):
            chunk = uids[i : i + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            found.update(
                u for (u,) in conn.execute(
                    f"SELECT uid FROM entries WHERE store_key=? AND uid IN ({marks})",
                    (skey, *chunk),
                )
            )
        return found

    @staticmethod
    def _fold_summary(
        conn: sqlite3.Connection, key: SessionKey, fresh: list[SessionStoreEntry], mtime: int
    ) -> None:
        pk, sid = key["project_key"], key["session_id"]
        row = conn.execute(
            "SELECT mtime, data FROM summaries WHERE project_key=? AND session_id=?", (pk, sid)
        ).fetchone()
        prev: SessionSummaryEntry | None = (
            {"session_id": sid, "mtime": row[0], "data": json.loads(row[1])} if row else None
        )
        folded = fold_session_summary(prev, key, fresh)
        conn.execute(
            "INSERT INTO summaries(project_key, session_id, mtime, data) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(project_key, session_id) DO UPDATE SET mtime=excluded.mtime, "
            "data=excluded.data",
            (pk, sid, mtime, encode(folded["data"])),
        )

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """All entries of ``key`` in append order, or None if nothing was ever stored."""
        skey = store_key(key)
        return await anyio.to_thread.run_sync(self._load_sync, key, skey)

    def _load_sync(self, key: SessionKey, skey: str) -> list[SessionStoreEntry] | None:
        with gc_paused():
            entries = self._read(skey)
            return None if entries is None else self._rewrite(key, entries)

    def read_entries(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Sync, thread-safe: the stored entries of ``key``, freshly parsed (callers may edit
        them), or None. What ``LayeredSessionStore`` reads."""
        return self._read(store_key(key))

    def _read(self, skey: str) -> list[SessionStoreEntry] | None:
        return self.read_versioned(skey)[0]  # two PRAGMAs beside the SELECT: next to nothing

    def read_versioned(self, skey: str) -> tuple[list[SessionStoreEntry] | None, Any]:
        """``_read`` plus a version of the file the rows were read at: equal versions of
        one store object mean every row of the file is as it was (None: unknown).

        The version is SQLite's ``data_version`` — it changes whenever ANOTHER connection
        (another process, another store object) commits to the file — together with the
        count of this connection's own write transactions, which ``data_version`` does not
        see. It is asked before the SELECT and again after it: equal answers mean nobody
        committed in between, so the rows read are the file as it was at that version.
        What the load layers may reuse from an earlier load of the same rows hangs on it.
        """
        def read(conn: sqlite3.Connection) -> tuple[list[SessionStoreEntry], Any]:
            writes = self._writes
            (before,) = conn.execute("PRAGMA data_version").fetchone()
            cur = conn.execute(self._select, (skey,))
            entries = decode_many(p for (p,) in cur)
            (after,) = conn.execute("PRAGMA data_version").fetchone()
            same = before == after and writes == self._writes
            return entries, (id(self), skey, before, writes) if same else None

        entries, version = self._locked(read)
        return (entries or None), version

    def _rewrite(self, key: SessionKey, entries: list[SessionStoreEntry]) -> list[Any]:
        """Hook for the layers above: the copy fed back to the model. Identity here.

        ``entries`` were parsed by ``_read`` for this one call (a fresh ``json.loads`` of
        each row; nothing is cached or shared with a caller, and the stored rows are JSON
        text), so overrides may edit them in place instead of copying — the SDK only
        writes what ``load`` returns to its JSONL file.
        """
        return entries

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """Main transcripts of ``project_key`` with their storage mtime (epoch ms)."""
        lo, hi = _prefix_range(project_key)

        def query(conn: sqlite3.Connection) -> list[SessionStoreListEntry]:
            cur = conn.execute(
                "SELECT store_key, mtime FROM meta WHERE store_key >= ? AND store_key < ?",
                (lo, hi),
            )
            return [
                {"session_id": k[len(lo):], "mtime": m} for k, m in cur if "/" not in k[len(lo):]
            ]

        return await self._run(query)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The ``fold_session_summary`` sidecars of ``project_key``, verbatim."""

        def query(conn: sqlite3.Connection) -> list[SessionSummaryEntry]:
            cur = conn.execute(
                "SELECT session_id, mtime, data FROM summaries WHERE project_key=?",
                (project_key,),
            )
            return [{"session_id": s, "mtime": m, "data": json.loads(d)} for s, m, d in cur]

        return await self._run(query)

    async def delete(self, key: SessionKey) -> None:
        """Delete one transcript; a main key takes its subagent transcripts with it."""
        skey = store_key(key)
        main = key.get("subpath") is None

        def remove(conn: sqlite3.Connection) -> None:
            ranges: list[tuple[str, tuple[str, ...]]] = [("store_key = ?", (skey,))]
            if main:
                ranges.append(("store_key >= ? AND store_key < ?", _prefix_range(skey)))
                conn.execute(
                    "DELETE FROM summaries WHERE project_key=? AND session_id=?",
                    (key["project_key"], key["session_id"]),
                )
            for where, args in ranges:
                conn.execute(f"DELETE FROM entries WHERE {where}", args)
                conn.execute(f"DELETE FROM meta WHERE {where}", args)

        await self._run_write(remove)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """Subpaths (e.g. ``subagents/agent-<id>``) stored under one session."""
        lo, hi = _prefix_range(store_key(key))

        def query(conn: sqlite3.Connection) -> list[str]:
            cur = conn.execute(
                "SELECT store_key FROM meta WHERE store_key >= ? AND store_key < ?", (lo, hi)
            )
            return [k[len(lo):] for (k,) in cur]

        return await self._run(query)

    # ----------------------------------------------------------------- flower's sync helpers

    def projects(self) -> list[str]:
        """Project keys that have at least one transcript in this file."""
        rows = self._locked(lambda c: c.execute("SELECT store_key FROM meta").fetchall())
        return sorted({k.split("/", 1)[0] for (k,) in rows})

    def transcripts(self) -> list[str]:
        """Every store key (main and subagent transcripts), sorted."""
        rows = self._locked(
            lambda c: c.execute("SELECT store_key FROM meta ORDER BY store_key").fetchall())
        return [k for (k,) in rows]

    def has_session(self, project_key: str, session_id: str) -> bool:
        """Is the main transcript there? One meta lookup, no payload read (lineage check)."""
        skey = store_key({"project_key": project_key, "session_id": session_id})
        return self._locked(lambda c: SqliteReader(c).has(skey))

    def session_since(self, session_id: str, after: float) -> list[dict[str, Any]]:
        """The session's assistant entries (main and subagents, any project key) written
        since ``after`` (unix time): what a killed process paid for (core/reconcile.py)."""
        return self._locked(lambda c: SqliteReader(c).since(session_id, after))

    def last_context(self, project_key: str, session_id: str, *, scan: int = 60) -> int:
        """Context size (tokens) of the session's latest real API call, 0 if none found.

        Only the last ``scan`` entries are parsed — the wake-up banner needs this for runs
        with tens of thousands of entries.
        """
        skey = store_key({"project_key": project_key, "session_id": session_id})
        return self._locked(lambda c: SqliteReader(c).last_context(skey, scan=scan)) or 0

    def close(self) -> None:
        """Close the connection; further calls raise. Safe to call twice."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SqliteSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


"""PostgreSQL session store: the same three tables as ``sessions.db``, shared by machines.

``PostgresSessionStore(url, schema="flower")`` implements the whole SDK ``SessionStore``
protocol (``run_session_store_conformance`` passes) with the SQLite store's rules — verbatim
rows, uuid dedup under the SDK's batch retries, a per-key strictly increasing mtime, the
summary sidecar for main transcripts — and flower's sync helpers (``has_session``,
``last_context``, ``projects``). Wrap it in :class:`~flower.stores.layered.LayeredSessionStore`
for the trim/prune load layers (``Runtime(store=url)`` does).

Optional: ``pip install 'flower[postgres]'`` (psycopg 3 + psycopg-pool + orjson); this module
is imported only when a PostgreSQL URL is used.

Layout, in schema ``flower`` (created when missing)::

    entries(store_key, seq, uid, payload)       PRIMARY KEY (store_key, seq)
                                                UNIQUE (store_key, uid) WHERE uid IS NOT NULL
    meta(store_key, mtime, next_seq)            one row per transcript; an index on the
                                                session id part (finding a session under
                                                any project key reads the index, not meta)
    summaries(project_key, session_id, mtime, data)
    version(version)                            one row: the layout version (refused if newer)
    lineage(name, workspace, woke, steps, mtime)     one row per run name (v2)
    manifest(name, run_id, seq, row)            the run book rows of each run name (v2)

Version 2 added ``lineage`` and ``manifest`` (see :mod:`flower.stores.pgbook`); a version 1
schema is migrated in place (the two tables are created, nothing else changes).

Keys are ``COLLATE "C"`` so the prefix ranges that find a session's subagent transcripts
(``store_key >= 'p/s/' AND store_key < 'p/s0'``) mean the same as in SQLite whatever the
database's locale.

Concurrency: every append is one transaction holding a transaction-scoped advisory lock on
its store key, so dedup, ``next_seq`` and mtime are decided per key across any number of
connections, processes and machines; appends to different keys never wait for each other.

Outages: every database call retries connection failures (server stopped, restarted,
unreachable) with backoff for at most ``retry_for`` seconds (default 20 — below the SDK's
60 s per-append timeout, so its own three attempts stay serialised). A batch that still
cannot be written is kept in memory (``backlog``) and raises; the SDK then reports a
mirror error and moves on, and the batch is written — before anything newer of the same
transcript — by the next write to that transcript, a ``load``/``has_session`` of it, or
``close()``. So the table always holds a *prefix* of what the CLI mirrored per transcript
(a valid history to resume from), and the whole of it once the server is back while this
process lives. Pooled connections are checked on checkout, so the store reconnects by
itself when the server returns.

Event loop: every method runs its database work in a worker thread on a small sync
connection pool, like the SQLite store (no event-loop-bound connections: the SDK and tests
may drive the store from several loops). ``load`` reads through a server-side cursor in
batches, so a 50k-entry load never holds the raw rows and the parsed entries at once.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
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

from flower import texts
from flower.errors import StoreOffline, StoreUnavailable, StoreVersionError, one_line
from flower.stores.codec import decode, decode_many, encode
from flower.stores.pgbook import PostgresBook
from flower.stores.readers import DEFAULT_SCHEMA, PgReader, schema_sql
from flower.stores.rows import Rejected, plan_append
from flower.stores.sqlite import store_key
from flower.stores.url import display_url, is_postgres_url

try:
    import psycopg
    from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout
except ImportError as _exc:  # pragma: no cover - depends on the install
    raise ImportError(texts.STORE_NO_DRIVER) from _exc

__all__ = ["SCHEMA_VERSION", "PostgresSessionStore", "StoreOffline", "StoreUnavailable",
           "StoreVersionError", "display_url", "is_postgres_url"]

log = logging.getLogger("flower.stores")
T = TypeVar("T")

SCHEMA_VERSION = 2
FETCH = 2000  # rows per server-side cursor batch
_IN_CHUNK = 5000
_SCHEMA_LOCK = 0x666C6F776572  # "flower": serialises concurrent first-time schema creation
_DDL = """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.version (version integer NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.entries (
    store_key text COLLATE "C" NOT NULL,
    seq       bigint NOT NULL,
    uid       text COLLATE "C",
    payload   text NOT NULL,
    PRIMARY KEY (store_key, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uid
    ON {s}.entries (store_key, uid) WHERE uid IS NOT NULL;
CREATE TABLE IF NOT EXISTS {s}.meta (
    store_key text COLLATE "C" PRIMARY KEY,
    mtime     bigint NOT NULL,
    next_seq  bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS meta_session ON {s}.meta (split_part(store_key, '/', 2));
CREATE TABLE IF NOT EXISTS {s}.summaries (
    project_key text COLLATE "C" NOT NULL,
    session_id  text COLLATE "C" NOT NULL,
    mtime       bigint NOT NULL,
    data        text NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
CREATE TABLE IF NOT EXISTS {s}.lineage (
    name      text COLLATE "C" PRIMARY KEY,
    workspace text NOT NULL,
    woke      integer NOT NULL,
    steps     text NOT NULL,
    mtime     bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.manifest (
    name    text COLLATE "C" NOT NULL,
    run_id  text COLLATE "C" NOT NULL,
    seq     integer NOT NULL,
    row     text NOT NULL,
    PRIMARY KEY (name, run_id, seq)
);
"""
# Connection trouble worth waiting out: the server went away, is restarting, or the pool
# has no live connection yet. Anything else (a bug, a constraint) raises at once.
_OFFLINE: tuple[type[BaseException], ...] = (psycopg.OperationalError, PoolTimeout)
# psycopg_pool logs every failed reconnect at WARNING; flower says it once, in its words.
if logging.getLogger("psycopg.pool").level == logging.NOTSET:
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)


def _prefix_range(prefix: str) -> tuple[str, str]:
    return prefix + "/", prefix + "0"


class PostgresSessionStore(SessionStore):
    """Every transcript entry, verbatim, in PostgreSQL; shareable between machines."""

    def __init__(self, url: str, *, schema: str = DEFAULT_SCHEMA, max_size: int = 4,
                 connect_timeout: float = 10.0, retry_for: float = 20.0) -> None:
        self.url = url.strip()
        self.schema = schema
        self.rejected: list[Rejected] = []
        #: seconds a call keeps retrying a lost server before it gives up (see module doc)
        self.retry_for = retry_for
        #: store key → batches not yet written (the server was away), oldest first
        self.backlog: dict[str, list[tuple[SessionKey, list[SessionStoreEntry]]]] = {}
        self._backlog_lock = threading.Lock()
        # held batches written by a later call: a late SDK retry of one is not written twice
        self._caught_up: collections.deque[list[SessionStoreEntry]] = collections.deque(
            maxlen=32)
        self._offline_since: float | None = None
        self._books: list[PostgresBook] = []
        self._last_mtime = 0
        self._mtime_lock = threading.Lock()
        shown = display_url(self.url)
        if not is_postgres_url(self.url):
            raise StoreUnavailable(texts.STORE_BAD_URL.format(url=shown, reason="不是 postgresql://"))
        try:
            psycopg.conninfo.conninfo_to_dict(self.url)
        except psycopg.ProgrammingError as exc:
            raise StoreUnavailable(texts.STORE_BAD_URL.format(url=shown, reason=one_line(exc))) \
                from None
        #: ``q(text)``: ``{s}`` in ``text`` becomes the quoted schema name
        self._q: Callable[[str], Any] = schema_sql(schema)
        try:
            with psycopg.connect(self.url, connect_timeout=max(int(connect_timeout), 1),
                                 application_name="flower") as conn:
                self._ensure_schema(conn, shown)
        except psycopg.Error as exc:
            raise StoreUnavailable(texts.STORE_UNREACHABLE.format(
                url=shown, reason=one_line(exc))) from None
        # check: a pooled connection the server dropped (restart) is replaced on checkout;
        # reconnect_timeout: a background reconnect gives up after a few seconds, so the
        # next request starts a fresh one instead of waiting out a long backoff
        self._pool: ConnectionPool | None = ConnectionPool(
            self.url, min_size=1, max_size=max_size, open=False, timeout=60.0,
            kwargs={"application_name": "flower",
                    "connect_timeout": max(int(min(connect_timeout, 5.0)), 1)},
            check=ConnectionPool.check_connection, reconnect_timeout=6.0,
            name=f"flower-{schema}")
        self._pool.open(wait=False)

    def __repr__(self) -> str:
        return f"PostgresSessionStore({display_url(self.url)!r}, schema={self.schema!r})"

    # ----------------------------------------------------------------- plumbing

    def _ensure_schema(self, conn: psycopg.Connection[Any], shown: str) -> None:
        """Create what is missing; refuse a layout from a newer flower. One transaction
        under a database-wide advisory lock, so racing first starts do not collide."""
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            cur.execute(
                "SELECT 1 FROM information_schema.tables WHERE table_schema=%s "
                "AND table_name='version'", (self.schema,))
            if cur.fetchone():
                cur.execute(self._q("SELECT max(version) FROM {s}.version"))
                row = cur.fetchone()
                found = row[0] if row else None
                if found is not None and found > SCHEMA_VERSION:
                    raise StoreVersionError(texts.STORE_NEWER_SCHEMA.format(
                        url=shown, found=found, known=SCHEMA_VERSION))
            # every table is IF NOT EXISTS: creating the missing ones IS the v1 → v2 migration
            for statement in _DDL.split(";"):
                if statement.strip():
                    cur.execute(self._q(statement))
            cur.execute(self._q("SELECT count(*), max(version) FROM {s}.version"))
            count, found = cur.fetchone()  # type: ignore[misc]
            if count == 0:
                cur.execute(self._q("INSERT INTO {s}.version (version) VALUES (%s)"),
                            (SCHEMA_VERSION,))
            elif found < SCHEMA_VERSION:
                cur.execute(self._q("UPDATE {s}.version SET version=%s"), (SCHEMA_VERSION,))
                log.info("flower: migrated session store schema %s from v%s to v%s",
                         self.schema, found, SCHEMA_VERSION)

    def _db(self) -> ConnectionPool:
        if self._pool is None:
            raise RuntimeError(f"session store {display_url(self.url)} is closed")
        return self._pool

    def _tx(self, fn: Callable[[psycopg.Cursor[Any]], T], *, retry: float | None = None) -> T:
        """Run ``fn`` in one transaction on a pooled connection (commit on success)."""

        def body(conn: psycopg.Connection[Any]) -> T:
            with conn.cursor() as cur:
                return fn(cur)

        return self._with_conn(body, retry=retry)

    def _with_conn(self, body: Callable[[psycopg.Connection[Any]], T], *,
                   retry: float | None = None) -> T:
        """``body(conn)`` in one transaction on a pooled connection (commit on success).

        A lost server is retried with backoff for ``retry`` seconds (default
        ``retry_for``), then :class:`StoreOffline` is raised. ``body`` may therefore run
        more than once; a failed try was rolled back (or never reached the server)."""
        budget = self.retry_for if retry is None else retry
        deadline = time.monotonic() + budget
        delay = 0.2
        while True:
            left = deadline - time.monotonic()
            try:
                try:
                    with self._db().connection(timeout=max(min(left, 2.0), 0.2)) as conn:
                        result = body(conn)
                except PoolTimeout:
                    # the pool's own reconnect may still be backing off after a restart:
                    # a fresh connection tells whether the server is back, and serves
                    with psycopg.connect(self.url, connect_timeout=2,
                                         application_name="flower") as conn:
                        result = body(conn)
            except PoolClosed:
                raise
            except _OFFLINE as exc:
                failure: BaseException = exc
            else:
                self._online()
                return result
            self._offline(failure)
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreOffline(texts.STORE_OFFLINE.format(
                    url=display_url(self.url), seconds=round(budget),
                    reason=one_line(failure))) from None
            time.sleep(min(delay, left))
            delay = min(delay * 2, 2.0)

    def _offline(self, exc: BaseException) -> None:
        if self._offline_since is None:
            self._offline_since = time.monotonic()
            log.warning(texts.STORE_LOST.format(url=display_url(self.url), reason=one_line(exc)))

    def _online(self) -> None:
        if self._offline_since is not None:
            waited = time.monotonic() - self._offline_since
            self._offline_since = None
            log.warning(texts.STORE_BACK.format(url=display_url(self.url),
                                                seconds=round(waited, 1)))

    async def _run(self, fn: Callable[[psycopg.Cursor[Any]], T]) -> T:
        return await anyio.to_thread.run_sync(self._tx, fn)

    def _next_mtime(self, previous: int) -> int:
        """Epoch ms above this key's stored mtime and every mtime this process handed out."""
        with self._mtime_lock:
            now = max(int(time.time() * 1000), previous + 1, self._last_mtime + 1)
            self._last_mtime = now
            return now

    # ----------------------------------------------------------------- protocol

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Store new entries in call order; entries whose uuid is already stored are skipped.

        A fully replayed batch changes nothing — not the rows, not mtime, not the summary.
        """
        if not entries:
            return
        await anyio.to_thread.run_sync(self._append_sync, key, store_key(key), entries)

    def _append_sync(self, key: SessionKey, skey: str, entries: list[SessionStoreEntry]) -> None:
        """Write what waits in the backlog for ``skey`` (oldest first), then ``entries`` —
        one transaction, so the table never holds a newer entry without the older ones.
        When the server stays away, ``entries`` joins the backlog and StoreOffline is
        raised (the SDK retries the same list object, which is recognised, not doubled)."""
        with self._backlog_lock:
            if any(b is entries for b in self._caught_up):
                return
            waiting = [b for b in self.backlog.get(skey, ()) if b[1] is not entries]

        def write(cur: psycopg.Cursor[Any]) -> None:
            for k, batch in waiting:
                self._append_rows(cur, k, skey, batch)
            self._append_rows(cur, key, skey, entries)

        try:
            self._tx(write)
        except StoreOffline:
            with self._backlog_lock:
                queue = self.backlog.setdefault(skey, [])
                if not any(b is entries for _, b in queue):
                    queue.append((key, entries))
                held = sum(len(b) for _, b in queue)
            log.warning(texts.STORE_HELD.format(key=skey, n=held))
            raise
        self._forget(skey, [b for _, b in waiting] + [entries])
        if waiting:
            log.warning(texts.STORE_CAUGHT_UP.format(
                key=skey, n=sum(len(b) for _, b in waiting)))

    def _forget(self, skey: str, written: list[list[SessionStoreEntry]]) -> None:
        with self._backlog_lock:
            held = self.backlog.get(skey, ())
            self._caught_up.extend(b for _, b in held if any(b is w for w in written))
            queue = [(k, b) for k, b in held if not any(b is w for w in written)]
            if queue:
                self.backlog[skey] = queue
            else:
                self.backlog.pop(skey, None)

    def flush_backlog(self, skey: str | None = None, *, retry: float | None = None) -> int:
        """Write the held batches (of ``skey``, or all); returns how many entries are still
        held. Raises nothing: a server still away just leaves them held."""
        with self._backlog_lock:
            keys = [skey] if skey is not None else list(self.backlog)
            todo = {k: list(self.backlog.get(k, ())) for k in keys}
        for k, batches in todo.items():
            if not batches:
                continue

            def write(cur: psycopg.Cursor[Any], k: str = k,
                      batches: list[Any] = batches) -> None:
                for key, batch in batches:
                    self._append_rows(cur, key, k, batch)

            try:
                self._tx(write, retry=retry)
            except StoreOffline:
                continue
            self._forget(k, [b for _, b in batches])
            log.warning(texts.STORE_CAUGHT_UP.format(key=k, n=sum(len(b) for _, b in batches)))
        with self._backlog_lock:
            return sum(len(b) for q in self.backlog.values() for _, b in q)

    def _append_rows(self, cur: psycopg.Cursor[Any], key: SessionKey, skey: str,
                     entries: list[SessionStoreEntry]) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (skey,))
        fresh, rows = plan_append(self, key, entries,
                                  lambda uids: self._stored_uids(cur, skey, uids))
        if not rows:
            return
        cur.execute(self._q("SELECT next_seq, mtime FROM {s}.meta WHERE store_key=%s"), (skey,))
        row = cur.fetchone()
        start, previous = (row[0], row[1]) if row else (0, 0)
        with cur.copy(self._q("COPY {s}.entries (store_key, seq, uid, payload) FROM STDIN")) \
                as copy:
            for i, (uid, payload) in enumerate(rows):
                copy.write_row((skey, start + i, uid, payload))
        mtime = self._next_mtime(previous)
        cur.execute(self._q(
            "INSERT INTO {s}.meta (store_key, mtime, next_seq) VALUES (%s, %s, %s) "
            "ON CONFLICT (store_key) DO UPDATE SET mtime=excluded.mtime, "
            "next_seq=excluded.next_seq"), (skey, mtime, start + len(rows)))
        if key.get("subpath") is None:
            self._fold_summary(cur, key, fresh, mtime)

    def _stored_uids(self, cur: psycopg.Cursor[Any], skey: str, uids: list[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(uids), _IN_CHUNK):
            cur.execute(self._q("SELECT uid FROM {s}.entries WHERE store_key=%s "
                                "AND uid = ANY(%s)"), (skey, uids[i:i + _IN_CHUNK]))
            found.update(u for (u,) in cur.fetchall())
        return found

    def _fold_summary(self, cur: psycopg.Cursor[Any], key: SessionKey,
                      fresh: list[SessionStoreEntry], mtime: int) -> None:
        pk, sid = key["project_key"], key["session_id"]
        cur.execute(self._q("SELECT mtime, data FROM {s}.summaries "
                            "WHERE project_key=%s AND session_id=%s"), (pk, sid))
        row = cur.fetchone()
        prev: SessionSummaryEntry | None = (
            {"session_id": sid, "mtime": row[0], "data": decode(row[1])} if row else None)
        folded = fold_session_summary(prev, key, fresh)
        cur.execute(self._q(
            "INSERT INTO {s}.summaries (project_key, session_id, mtime, data) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (project_key, session_id) DO UPDATE SET "
            "mtime=excluded.mtime, data=excluded.data"), (pk, sid, mtime, encode(folded["data"])))

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """All entries of ``key`` in append order, or None if nothing was ever stored."""
        return await anyio.to_thread.run_sync(self.read_entries, key)

    def read_entries(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Sync, thread-safe: the entries of ``key`` freshly parsed (callers may edit them),
        or None. Batched through a server-side cursor: memory stays at the parsed entries
        plus one batch of raw rows."""
        skey = store_key(key)
        if skey in self.backlog:  # held entries belong before anything is read back
            self.flush_backlog(skey)

        def read(conn: psycopg.Connection[Any]) -> list[SessionStoreEntry]:
            out: list[SessionStoreEntry] = []
            with conn.cursor(name="flower_load", binary=True) as cur:
                cur.itersize = FETCH
                cur.execute(self._q("SELECT convert_to(payload, 'UTF8') FROM {s}.entries "
                                    "WHERE store_key=%s ORDER BY seq"), (skey,))
                while True:
                    batch = cur.fetchmany(FETCH)
                    if not batch:
                        break
                    out.extend(decode_many([p for (p,) in batch]))
            return out

        return self._with_conn(read) or None

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """Main transcripts of ``project_key`` with their storage mtime (epoch ms)."""
        lo, hi = _prefix_range(project_key)

        def query(cur: psycopg.Cursor[Any]) -> list[SessionStoreListEntry]:
            cur.execute(self._q("SELECT store_key, mtime FROM {s}.meta "
                                "WHERE store_key >= %s AND store_key < %s"), (lo, hi))
            return [{"session_id": k[len(lo):], "mtime": m} for k, m in cur.fetchall()
                    if "/" not in k[len(lo):]]

        return await self._run(query)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The ``fold_session_summary`` sidecars of ``project_key``, verbatim."""

        def query(cur: psycopg.Cursor[Any]) -> list[SessionSummaryEntry]:
            cur.execute(self._q("SELECT session_id, mtime, data FROM {s}.summaries "
                                "WHERE project_key=%s"), (project_key,))
            return [{"session_id": s, "mtime": m, "data": decode(d)} for s, m, d in cur]

        return await self._run(query)

    async def delete(self, key: SessionKey) -> None:
        """Delete one transcript; a main key takes its subagent transcripts with it."""
        skey = store_key(key)
        main = key.get("subpath") is None

        def remove(cur: psycopg.Cursor[Any]) -> None:
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (skey,))
            ranges: list[tuple[str, tuple[str, ...]]] = [("store_key = %s", (skey,))]
            if main:
                ranges.append(("store_key >= %s AND store_key < %s", _prefix_range(skey)))
                cur.execute(self._q("DELETE FROM {s}.summaries WHERE project_key=%s "
                                    "AND session_id=%s"), (key["project_key"], key["session_id"]))
            for where, args in ranges:
                cur.execute(self._q(f"DELETE FROM {{s}}.entries WHERE {where}"), args)
                cur.execute(self._q(f"DELETE FROM {{s}}.meta WHERE {where}"), args)

        await self._run(remove)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """Subpaths (e.g. ``subagents/agent-<id>``) stored under one session."""
        lo, hi = _prefix_range(store_key(key))

        def query(cur: psycopg.Cursor[Any]) -> list[str]:
            cur.execute(self._q("SELECT store_key FROM {s}.meta "
                                "WHERE store_key >= %s AND store_key < %s"), (lo, hi))
            return [k[len(lo):] for (k,) in cur.fetchall()]

        return await self._run(query)

    # ----------------------------------------------------------------- flower's sync helpers

    def projects(self) -> list[str]:
        """Project keys that have at least one transcript here."""
        rows = self._tx(lambda c: c.execute(self._q("SELECT store_key FROM {s}.meta")).fetchall())
        return sorted({k.split("/", 1)[0] for (k,) in rows})

    def transcripts(self) -> list[str]:
        """Every store key (main and subagent transcripts), sorted."""
        rows = self._tx(lambda c: c.execute(
            self._q("SELECT store_key FROM {s}.meta ORDER BY store_key")).fetchall())
        return [k for (k,) in rows]

    def has_session(self, project_key: str, session_id: str) -> bool:
        """Is the main transcript there? One meta lookup, no payload read."""
        skey = store_key({"project_key": project_key, "session_id": session_id})
        if skey in self.backlog:
            self.flush_backlog(skey)
        return self._tx(lambda c: PgReader(c, self.schema).has(skey))

    def session_since(self, session_id: str, after: float) -> list[dict[str, Any]]:
        """The session's assistant entries (main and subagents, any project key) written
        since ``after`` (unix time): what a killed process paid for (core/reconcile.py)."""
        return self._tx(lambda c: PgReader(c, self.schema).since(session_id, after))

    def last_context(self, project_key: str, session_id: str, *, scan: int = 60) -> int:
        """Context size (tokens) of the session's latest real API call, 0 if none found."""
        skey = store_key({"project_key": project_key, "session_id": session_id})
        return self._tx(lambda c: PgReader(c, self.schema).last_context(skey, scan=scan)) or 0

    def adopt(self, project_key: str, session_id: str) -> bool:
        """Make ``session_id`` resumable under ``project_key`` when it lives elsewhere.

        The SDK loads a resumed session under the project key of the *current* workspace
        path; a copy of the workspace on another machine (or in another folder) has another
        key. Session ids are uuids, so when ``project_key`` has no such transcript and
        exactly ONE other project has it, its transcript and subagent transcripts (rows,
        meta, summary) are copied server-side under ``project_key`` — the original stays as
        it was. True when the session is (now) there.
        """
        target = store_key({"project_key": project_key, "session_id": session_id})

        def copy_over(cur: psycopg.Cursor[Any]) -> bool:
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (target,))
            cur.execute(self._q("SELECT 1 FROM {s}.meta WHERE store_key=%s"), (target,))
            if cur.fetchone():
                return True
            cur.execute(self._q("SELECT DISTINCT split_part(store_key, '/', 1) FROM {s}.meta "
                                "WHERE split_part(store_key, '/', 2) = %s"), (session_id,))
            owners = [p for (p,) in cur.fetchall() if p != project_key]
            if len(owners) != 1:
                return False
            source = f"{owners[0]}/{session_id}"
            lo, hi = _prefix_range(source)
            where = "(store_key = %(src)s OR (store_key >= %(lo)s AND store_key < %(hi)s))"
            args = {"src": source, "lo": lo, "hi": hi, "dst": target, "n": len(source) + 1}
            cur.execute(self._q(
                "INSERT INTO {s}.entries (store_key, seq, uid, payload) "
                "SELECT %(dst)s || substr(store_key, %(n)s), seq, uid, payload "
                f"FROM {{s}}.entries WHERE {where}"), args)
            cur.execute(self._q(
                "INSERT INTO {s}.meta (store_key, mtime, next_seq) "
                "SELECT %(dst)s || substr(store_key, %(n)s), mtime, next_seq "
                f"FROM {{s}}.meta WHERE {where}"), args)
            cur.execute(self._q(
                "INSERT INTO {s}.summaries (project_key, session_id, mtime, data) "
                "SELECT %s, session_id, mtime, data FROM {s}.summaries "
                "WHERE project_key=%s AND session_id=%s"), (project_key, owners[0], session_id))
            log.info("flower: adopted session %s from project %s into %s", session_id,
                     owners[0], project_key)
            return True

        return self._tx(copy_over)

    def book(self, name: str) -> Any:
        """The remote run book of run ``name`` (lineage + manifest rows in this schema);
        closed with the store. See :mod:`flower.stores.pgbook`."""
        book = PostgresBook(self, name)
        self._books.append(book)
        return book

    def close(self, *, wait: float = 10.0) -> None:
        """Finish the run books and the backlog (waiting at most ``wait`` seconds for a
        server that is away), then close the pool; further calls raise. Safe to call twice.
        Entries still held then are lost to this store — said in one warning."""
        if self._pool is None:
            return
        for book in self._books:
            book.close(wait=wait)
        self._books.clear()
        if self.backlog:
            held = self.flush_backlog(retry=wait)
            if held:
                log.warning(texts.STORE_LOST_AT_CLOSE.format(n=held, url=display_url(self.url)))
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __enter__(self) -> PostgresSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

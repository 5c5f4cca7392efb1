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
    meta(store_key, mtime, next_seq)            one row per transcript
    summaries(project_key, session_id, mtime, data)
    version(version)                            one row: the layout version (refused if newer)

Keys are ``COLLATE "C"`` so the prefix ranges that find a session's subagent transcripts
(``store_key >= 'p/s/' AND store_key < 'p/s0'``) mean the same as in SQLite whatever the
database's locale.

Concurrency: every append is one transaction holding a transaction-scoped advisory lock on
its store key, so dedup, ``next_seq`` and mtime are decided per key across any number of
connections, processes and machines; appends to different keys never wait for each other.

Event loop: every method runs its database work in a worker thread on a small sync
connection pool, like the SQLite store (no event-loop-bound connections: the SDK and tests
may drive the store from several loops). ``load`` reads through a server-side cursor in
batches, so a 50k-entry load never holds the raw rows and the parsed entries at once.
"""

from __future__ import annotations

import logging
import re
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
from flower.core.usage import entry_context
from flower.stores.codec import decode, decode_many, encode
from flower.stores.rows import Rejected, plan_append
from flower.stores.select import is_postgres_url
from flower.stores.sqlite import store_key

try:
    import psycopg
    from psycopg import sql
    from psycopg_pool import ConnectionPool
except ImportError as _exc:  # pragma: no cover - depends on the install
    raise ImportError(texts.STORE_NO_DRIVER) from _exc

__all__ = ["SCHEMA_VERSION", "PostgresSessionStore", "StoreUnavailable", "StoreVersionError",
           "display_url", "is_postgres_url"]

log = logging.getLogger("flower.stores")
T = TypeVar("T")

SCHEMA_VERSION = 1
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
CREATE TABLE IF NOT EXISTS {s}.summaries (
    project_key text COLLATE "C" NOT NULL,
    session_id  text COLLATE "C" NOT NULL,
    mtime       bigint NOT NULL,
    data        text NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
"""


class StoreUnavailable(RuntimeError):
    """The PostgreSQL store cannot be used: bad URL or unreachable server. One line."""


class StoreVersionError(RuntimeError):
    """The schema was written by a newer flower; nothing is read or written."""


def display_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (safe for messages and logs)."""
    masked = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
    return re.sub(r"(password=)[^&\s]*", r"\1***", masked, flags=re.IGNORECASE)


def _reason(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def _prefix_range(prefix: str) -> tuple[str, str]:
    return prefix + "/", prefix + "0"


class PostgresSessionStore(SessionStore):
    """Every transcript entry, verbatim, in PostgreSQL; shareable between machines."""

    def __init__(self, url: str, *, schema: str = "flower", max_size: int = 4,
                 connect_timeout: float = 10.0) -> None:
        self.url = url.strip()
        self.schema = schema
        self.rejected: list[Rejected] = []
        self._last_mtime = 0
        self._mtime_lock = threading.Lock()
        shown = display_url(self.url)
        if not is_postgres_url(self.url):
            raise StoreUnavailable(texts.STORE_BAD_URL.format(url=shown, reason="不是 postgresql://"))
        try:
            psycopg.conninfo.conninfo_to_dict(self.url)
        except psycopg.ProgrammingError as exc:
            raise StoreUnavailable(texts.STORE_BAD_URL.format(url=shown, reason=_reason(exc))) \
                from None
        self._s = sql.Identifier(schema)
        try:
            with psycopg.connect(self.url, connect_timeout=max(int(connect_timeout), 1),
                                 application_name="flower") as conn:
                self._ensure_schema(conn, shown)
        except psycopg.Error as exc:
            raise StoreUnavailable(texts.STORE_UNREACHABLE.format(url=shown, reason=_reason(exc))) \
                from None
        self._pool: ConnectionPool | None = ConnectionPool(
            self.url, min_size=1, max_size=max_size, open=False, timeout=60.0,
            kwargs={"application_name": "flower"}, check=ConnectionPool.check_connection,
            name=f"flower-{schema}")
        self._pool.open(wait=False)

    def __repr__(self) -> str:
        return f"PostgresSessionStore({display_url(self.url)!r}, schema={self.schema!r})"

    # ----------------------------------------------------------------- plumbing

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=self._s)

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
            for statement in _DDL.split(";"):
                if statement.strip():
                    cur.execute(self._q(statement))
            cur.execute(self._q("SELECT count(*) FROM {s}.version"))
            if cur.fetchone()[0] == 0:  # type: ignore[index]
                cur.execute(self._q("INSERT INTO {s}.version (version) VALUES (%s)"),
                            (SCHEMA_VERSION,))

    def _db(self) -> ConnectionPool:
        if self._pool is None:
            raise RuntimeError(f"session store {display_url(self.url)} is closed")
        return self._pool

    def _tx(self, fn: Callable[[psycopg.Cursor[Any]], T]) -> T:
        """Run ``fn`` in one transaction on a pooled connection (commit on success)."""
        with self._db().connection() as conn, conn.cursor() as cur:
            return fn(cur)

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
        skey = store_key(key)
        await self._run(lambda cur: self._append_rows(cur, key, skey, entries))

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
        out: list[SessionStoreEntry] = []
        with self._db().connection() as conn, \
                conn.cursor(name="flower_load", binary=True) as cur:
            cur.itersize = FETCH
            cur.execute(self._q("SELECT convert_to(payload, 'UTF8') FROM {s}.entries "
                                "WHERE store_key=%s ORDER BY seq"), (skey,))
            while True:
                batch = cur.fetchmany(FETCH)
                if not batch:
                    break
                out.extend(decode_many([p for (p,) in batch]))
        return out or None

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
        row = self._tx(lambda c: c.execute(
            self._q("SELECT 1 FROM {s}.meta WHERE store_key=%s"), (skey,)).fetchone())
        return row is not None

    def last_context(self, project_key: str, session_id: str, *, scan: int = 60) -> int:
        """Context size (tokens) of the session's latest real API call, 0 if none found."""
        skey = store_key({"project_key": project_key, "session_id": session_id})
        rows = self._tx(lambda c: c.execute(self._q(
            "SELECT payload FROM {s}.entries WHERE store_key=%s ORDER BY seq DESC LIMIT %s"),
            (skey, scan)).fetchall())
        for (payload,) in rows:
            try:
                tokens = entry_context(decode(payload))
            except ValueError:
                continue
            if tokens:
                return tokens
        return 0

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

    def close(self) -> None:
        """Close the pool; further calls raise. Safe to call twice."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __enter__(self) -> PostgresSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

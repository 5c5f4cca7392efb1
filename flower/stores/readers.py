"""Read-only SELECTs on a session store, SQLite or PostgreSQL, written once for every reader.

``flower log``, ``flower analyze``, the wake probe and the stores' own ``has_session`` /
``last_context`` ask the same few questions — is this transcript there, what are its
entries, its rounds, the context of its last API call, which project keys hold a session,
which subagent transcripts hang under it, what does the run book say. Each question is one
method here, with the same name and meaning on :class:`SqliteReader` and :class:`PgReader`.

A reader wraps a connection it was given (or opened): nothing here creates a table, writes a
row or leaves a file behind. :func:`connect_ro` opens a ``sessions.db`` without creating
``-wal``/``-shm`` side files; :meth:`PgReader.open` opens a read-only PostgreSQL session. The
PostgreSQL reader reads any schema (``PostgresSessionStore(schema=…)`` accepts any name);
:func:`schema_sql` is the one place a schema name is put into a query, and the store builds
its own queries with it too. No database driver is imported when this module loads:
psycopg only when a PostgreSQL reader is made.
"""

from __future__ import annotations

import datetime as _dt
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from flower.stores.codec import decode as _decode
from flower.usage import entry_context

__all__ = ["DB_NAME", "DEFAULT_SCHEMA", "KeyFinder", "NoSessions", "PgReader", "Reader", "Round",
           "RunProbe", "SqliteReader", "connect_ro", "open_reader", "parse_timestamp",
           "rounds_from", "schema_sql"]

DB_NAME = "sessions.db"
#: ``since`` reads on this far past its bound: entries are appended about in time order.
SINCE_SLACK_S = 60.0
DEFAULT_SCHEMA = "flower"  # PostgresSessionStore's schema unless it is given another
SYNTHETIC_MODEL = "<synthetic>"  # the CLI's own messages (outage notes), not API calls
_MAGIC = b"SQLite format 3\0"


class NoSessions(Exception):
    """``sessions.db`` is empty or not a SQLite file: nothing in it can be resumed."""


# --- parsing stored payloads ----------------------------------------------------------------


@dataclass(frozen=True)
class Round:
    """One main-thread API call: when it was answered (unix time, None if unknown) and the
    context size the model saw."""

    at: float | None
    context: int


def parse_timestamp(value: object) -> float | None:
    """Unix time of a transcript entry's ISO ``timestamp``; None when absent or malformed."""
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


def rounds_from(payloads: Iterable[str | bytes],
                decode: Callable[[Any], Any] = _decode) -> list[Round]:
    """Every main-thread API call among stored payload texts in seq order: one
    :class:`Round` per assistant message id.

    The CLI writes one entry per content block, all carrying the same message id and usage,
    so entries are folded by id. Sidechain entries, the CLI's synthetic messages and
    zero-usage entries are skipped (subagents live under their own keys). Rows are decoded
    like the store's own ``load`` (orjson when installed, several times faster than json).
    """
    found: dict[str, Round] = {}
    for n, payload in enumerate(payloads):
        try:
            entry = decode(payload)
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
            found[ident] = Round(parse_timestamp(entry.get("timestamp")), size)
        elif size > seen.context:  # streamed blocks of one message: keep the fullest reading
            found[ident] = Round(seen.at, size)
    return list(found.values())


def _first_context(payloads: Iterable[Any], decode: Callable[[Any], Any]) -> int | None:
    """The first non-zero context size among payloads given newest first."""
    for payload in payloads:
        try:
            size = entry_context(decode(payload))
        except (TypeError, ValueError):
            continue
        if size:
            return size
    return None


def _decoded(payloads: Iterable[Any], decode: Callable[[Any], Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for payload in payloads:
        try:
            entry = decode(payload)
        except (TypeError, ValueError):
            continue  # a bad row is skipped, it costs only itself
        if isinstance(entry, dict):
            out.append(entry)
    return out


# --- the readers ----------------------------------------------------------------------------


class Reader(Protocol):
    """What every reader answers (keys are ``<project_key>/<session_id>[/subpath]``)."""

    errors: tuple[type[BaseException], ...]  # what a read raises when the store fails

    def mtime(self, key: str) -> int | None: ...
    def has(self, key: str) -> bool: ...
    def owners(self, sid: str) -> list[tuple[str, int]]: ...
    def owner_map(self) -> dict[str, list[str]]: ...
    def since(self, sid: str, after: float, *, slack: float = ...
              ) -> list[dict[str, Any]]: ...
    def candidates(self, pk: str, sid: str) -> list[str]: ...
    def entries(self, key: str) -> list[dict[str, Any]]: ...
    def rounds(self, key: str) -> list[Round]: ...
    def last_context(self, key: str, *, scan: int) -> int | None: ...
    def main_keys(self, pk: str) -> list[str]: ...
    def subagents(self, key: str) -> list[str]: ...
    def close(self) -> None: ...


class _Shared:
    """The answers that are the same whatever the backend."""

    def mtime(self, key: str) -> int | None:  # pragma: no cover - every backend defines it
        raise NotImplementedError

    def owners(self, sid: str) -> list[tuple[str, int]]:  # pragma: no cover
        raise NotImplementedError

    def owner_map(self) -> dict[str, list[str]]:  # pragma: no cover
        raise NotImplementedError

    def has(self, key: str) -> bool:
        """Is transcript ``key`` stored? One meta lookup, no payload read."""
        return self.mtime(key) is not None

    def _newest_replies(self, key: str) -> Iterable[Any]:  # pragma: no cover
        raise NotImplementedError

    def since(self, sid: str, after: float, *, slack: float = SINCE_SLACK_S
              ) -> list[dict[str, Any]]:
        """The assistant entries of session ``sid`` — its main transcripts under any
        project key and their subagent transcripts — written at ``after`` or later (unix
        time): each transcript is read newest first and only until entries older than
        ``after - slack``, so a wake reads what the killed attempt wrote, not ten hours."""
        out: list[dict[str, Any]] = []
        for main, _ in self.owners(sid):
            for key in (main, *self.subagents(main)):
                for payload in self._newest_replies(key):
                    entries = _decoded((payload,), self._row_decoder())
                    at = parse_timestamp(entries[0].get("timestamp")) if entries else None
                    if at is not None and at < after - slack:
                        break
                    out.extend(entries)
        return out

    def _row_decoder(self) -> Callable[[Any], Any]:
        return getattr(self, "_decode", _decode)

    def candidates(self, pk: str, sid: str) -> list[str]:
        """Main-transcript keys that may hold session ``sid``: this project key's first,
        then whichever other project key holds it (a run folder moved from another machine
        or path)."""
        mine = f"{pk}/{sid}"
        return [mine, *(key for key, _ in self.owners(sid) if key != mine)]


class KeyFinder:
    """``candidates(pk, sid)`` for many sessions at the cost of one: the exact key first (a
    primary-key lookup, and what nearly every session is), then the other project keys that
    hold the session — read from ``meta`` once, at the first session the exact key does not
    answer for. Asking :meth:`_Shared.owners` per session instead scans ``meta`` every time,
    which made ``flower log`` quadratic in the number of sessions."""

    def __init__(self, reader: Reader, pk: str) -> None:
        self.reader = reader
        self.pk = pk
        self._owners: dict[str, list[str]] | None = None

    def __call__(self, sid: str) -> Iterator[str]:
        """The keys :meth:`_Shared.candidates` lists, in its order, read lazily."""
        mine = f"{self.pk}/{sid}"
        yield mine
        if self._owners is None:
            self._owners = self.reader.owner_map()
        yield from (key for key in self._owners.get(sid, ()) if key != mine)


def _grouped(keys: Iterable[Any]) -> dict[str, list[str]]:
    """Main-transcript keys (``<pk>/<sid>``) by session id, in the order given."""
    out: dict[str, list[str]] = {}
    for key in keys:
        if isinstance(key, str) and key.count("/") == 1:
            out.setdefault(key.split("/", 1)[1], []).append(key)
    return out


class SqliteReader(_Shared):
    """The reads on a ``sessions.db`` connection (read-only from :func:`connect_ro`, or the
    store's own)."""

    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con

    @classmethod
    def open(cls, db: Path) -> tuple[str, SqliteReader | None]:
        """``("ok", reader)``, ``("missing", None)`` without the file, ``("unreadable",
        None)`` when it is no database or cannot be opened now."""
        if not db.is_file():
            return "missing", None
        try:
            con = connect_ro(db)
        except NoSessions:
            return "unreadable", None
        return ("ok", cls(con)) if con is not None else ("unreadable", None)

    def mtime(self, key: str) -> int | None:
        """The stored mtime of transcript ``key`` (0 when not a number), None if absent."""
        row = self.con.execute("SELECT mtime FROM meta WHERE store_key = ?", (key,)).fetchone()
        if row is None:
            return None
        return row[0] if isinstance(row[0], int) else 0

    def owners(self, sid: str) -> list[tuple[str, int]]:
        """``(key, mtime)`` of every main transcript of session ``sid``, any project key."""
        tail = f"/{sid}"
        return [(key, mtime if isinstance(mtime, int) else 0) for key, mtime in self.con.execute(
            "SELECT store_key, mtime FROM meta WHERE substr(store_key, -?) = ? ORDER BY rowid",
            (len(tail), tail)) if isinstance(key, str) and key.count("/") == 1]

    def owner_map(self) -> dict[str, list[str]]:
        """Every main transcript's key by session id, in :meth:`owners`' order: one read of
        ``meta`` for all sessions (:class:`KeyFinder`)."""
        return _grouped(k for (k,) in self.con.execute(
            "SELECT store_key FROM meta ORDER BY rowid"))

    def entries(self, key: str) -> list[dict[str, Any]]:
        """Every entry of ``key`` in append order; a row that is no JSON object is skipped."""
        return _decoded((p for (p,) in self.con.execute(
            "SELECT payload FROM entries WHERE store_key = ? ORDER BY seq", (key,))), _decode)

    def _newest_replies(self, key: str) -> Iterable[Any]:
        return (p for (p,) in self.con.execute(
            "SELECT payload FROM entries WHERE store_key = ? "
            "AND instr(payload, '\"assistant\"') > 0 ORDER BY seq DESC", (key,)))

    def rounds(self, key: str) -> list[Round]:
        """The main-thread API calls of ``key`` (:func:`rounds_from`)."""
        # "assistant" appears in every assistant entry; the filter only saves parsing the
        # big user/tool_result rows, the real test is in rounds_from
        return rounds_from(p for (p,) in self.con.execute(
            "SELECT payload FROM entries WHERE store_key = ? "
            "AND instr(payload, '\"assistant\"') > 0 ORDER BY seq", (key,)))

    def last_context(self, key: str, *, scan: int = 500) -> int | None:
        """Context size of the latest real API call among the last ``scan`` entries."""
        return _first_context((p for (p,) in self.con.execute(
            "SELECT payload FROM entries WHERE store_key = ? ORDER BY seq DESC LIMIT ?",
            (key, scan))), _decode)

    def main_keys(self, pk: str) -> list[str]:
        """Every main transcript, oldest write first: the file is the run's own, whatever
        the project key."""
        return [k for (k,) in self.con.execute("SELECT store_key FROM meta ORDER BY mtime")
                if isinstance(k, str) and k.count("/") == 1]

    def subagents(self, key: str) -> list[str]:
        """The subagent transcripts of main transcript ``key``, oldest write first."""
        # a range on the primary key (what starts with the prefix, binary collation):
        # substr() here scanned all of meta for every session flower log looked at
        return [k for (k,) in self.con.execute(
            "SELECT store_key FROM meta WHERE store_key >= ? AND store_key < ? "
            "ORDER BY mtime, store_key", (f"{key}/subagents/", f"{key}/subagents0"))]

    def has_tables(self) -> bool:
        """Is this a session store at all (a ``meta`` table), not some other database?"""
        try:
            self.con.execute("SELECT 1 FROM meta LIMIT 1")
        except sqlite3.Error:
            return False
        return True

    def close(self) -> None:
        self.con.close()


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


def schema_sql(schema: str) -> Callable[[str], Any]:
    """``q(text)``: the psycopg query ``text`` with ``{s}`` standing for the quoted schema
    name. The store and the readers build their queries with it, so a schema name is quoted
    by one rule (psycopg's identifier quoting) everywhere."""
    from psycopg import sql

    ident = sql.Identifier(schema)

    def q(text: str) -> Any:
        return sql.SQL(text).format(s=ident)

    return q


class PgReader(_Shared):
    """The same reads on a PostgreSQL store in ``schema``: plain SELECTs, payloads decoded
    like the store's own ``load`` (:func:`flower.stores.codec.decode`). ``con`` is a
    connection or a cursor (the store passes the cursor of its own transaction)."""

    def __init__(self, con: Any, schema: str = DEFAULT_SCHEMA) -> None:
        import psycopg

        from flower.stores.codec import decode

        self.con = con
        self.schema = schema
        self.errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        self._q = schema_sql(schema)
        self._decode = decode

    @classmethod
    def open(cls, url: str, *, schema: str = DEFAULT_SCHEMA,
             tables: tuple[str, ...] = ("entries", "meta"), timeout: float = 10.0,
             app: str = "flower-log") -> tuple[str, PgReader | None]:
        """A read-only session on ``url``: ``("ok", reader)``; ``("missing", None)`` when
        ``schema`` lacks one of ``tables`` (nothing is created); ``("unreadable", None)``
        when the driver is missing or the server cannot be reached. Never raises."""
        try:
            import psycopg
            from psycopg import sql
        except ImportError:
            return "unreadable", None
        try:
            con = psycopg.connect(url, connect_timeout=max(int(timeout), 1), autocommit=True,
                                  application_name=app)
        except Exception:
            return "unreadable", None
        try:
            con.read_only = True
            names = [sql.Identifier(schema, t).as_string(con) for t in tables]
            found = con.execute("SELECT " + ", ".join(["to_regclass(%s)"] * len(names)),
                                names).fetchone()
        except Exception:
            con.close()
            return "unreadable", None
        if not found or any(f is None for f in found):
            con.close()
            return "missing", None
        return "ok", cls(con, schema)

    def _rows(self, text: str, args: tuple[Any, ...]) -> Any:
        return self.con.execute(self._q(text), args)

    def mtime(self, key: str) -> int | None:
        """The stored mtime of transcript ``key``, None if absent."""
        row = self._rows("SELECT mtime FROM {s}.meta WHERE store_key = %s", (key,)).fetchone()
        return None if row is None else int(row[0])

    def owners(self, sid: str) -> list[tuple[str, int]]:
        """``(key, mtime)`` of every main transcript of session ``sid``, any project key."""
        return [(k, int(m)) for k, m in self._rows(
            "SELECT store_key, mtime FROM {s}.meta WHERE split_part(store_key, '/', 2) = %s "
            "AND split_part(store_key, '/', 3) = '' ORDER BY store_key", (sid,))]

    def owner_map(self) -> dict[str, list[str]]:
        """Every main transcript's key by session id, in :meth:`owners`' order: one read of
        ``meta`` for all sessions (:class:`KeyFinder`)."""
        return _grouped(k for (k,) in self._rows(
            "SELECT store_key FROM {s}.meta WHERE split_part(store_key, '/', 3) = '' "
            "ORDER BY store_key", ()))

    def entries(self, key: str) -> list[dict[str, Any]]:
        """Every entry of ``key`` in append order; a row that is no JSON object is skipped."""
        return _decoded((p for (p,) in self._rows(
            "SELECT payload FROM {s}.entries WHERE store_key = %s ORDER BY seq", (key,))),
            self._decode)

    def _newest_replies(self, key: str) -> Iterable[Any]:
        return (p for (p,) in self._rows(
            "SELECT payload FROM {s}.entries WHERE store_key = %s "
            "AND strpos(payload, '\"assistant\"') > 0 ORDER BY seq DESC", (key,)))

    def rounds(self, key: str) -> list[Round]:
        """The main-thread API calls of ``key`` (:func:`rounds_from`)."""
        # "assistant" is in every assistant entry: the filter only spares parsing the rest
        return rounds_from((p for (p,) in self._rows(
            "SELECT payload FROM {s}.entries WHERE store_key = %s "
            "AND strpos(payload, '\"assistant\"') > 0 ORDER BY seq", (key,))), self._decode)

    def last_context(self, key: str, *, scan: int = 500) -> int | None:
        """Context size of the latest real API call among the last ``scan`` entries."""
        return _first_context((p for (p,) in self._rows(
            "SELECT payload FROM {s}.entries WHERE store_key = %s ORDER BY seq DESC LIMIT %s",
            (key, scan))), self._decode)

    def main_keys(self, pk: str) -> list[str]:
        """The main transcripts of this project key only, oldest write first: a shared
        store holds every project's sessions, and the run is this workspace's."""
        return [k for (k,) in self._rows(
            "SELECT store_key FROM {s}.meta WHERE store_key >= %s AND store_key < %s "
            "ORDER BY mtime, store_key", (f"{pk}/", f"{pk}0")) if k.count("/") == 1]

    def subagents(self, key: str) -> list[str]:
        """The subagent transcripts of main transcript ``key``, oldest write first."""
        return [k for (k,) in self._rows(
            "SELECT store_key FROM {s}.meta WHERE store_key >= %s AND store_key < %s "
            "ORDER BY mtime, store_key", (f"{key}/subagents/", f"{key}/subagents0"))]

    def lineage(self, name: str) -> dict[str, Any] | None:
        """The run book's lineage document of run ``name``, None when there is none."""
        row = self._rows("SELECT workspace, woke, steps FROM {s}.lineage WHERE name = %s",
                         (name,)).fetchone()
        if row is None:
            return None
        return {"workspace": row[0], "woke": row[1], "steps": json.loads(row[2])}

    def manifest(self, name: str) -> list[dict[str, Any]]:
        """Every manifest row of run ``name`` (all machines), by run id then order."""
        return [json.loads(r) for (r,) in self._rows(
            "SELECT row FROM {s}.manifest WHERE name = %s ORDER BY run_id, seq", (name,))]

    def close(self) -> None:
        try:
            self.con.close()
        except Exception:
            pass


class RunProbe:
    """The strictly read-only run book ``wake_state`` looks at before anything is decided:
    run ``name``'s lineage in a PostgreSQL store, over one connection, writes ignored.
    ``reader`` answers the session questions on the same connection."""

    def __init__(self, reader: PgReader, name: str) -> None:
        self.reader = reader
        self.name = name

    @classmethod
    def open(cls, url: str, name: str, *, schema: str = DEFAULT_SCHEMA,
             timeout: float = 3.0) -> RunProbe | None:
        """None when the store cannot be read (no driver, server away, no run book tables
        yet): the wake probe then knows only what the files say."""
        _, reader = PgReader.open(url, schema=schema, tables=("lineage", "meta"),
                                  timeout=timeout, app="flower-probe")
        return cls(reader, name) if reader is not None else None

    def lineage(self) -> dict[str, Any] | None:
        return self.reader.lineage(self.name)

    def put_lineage(self, doc: dict[str, Any]) -> None:  # read-only: never writes
        return None

    def put_manifest(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        return None

    def close(self) -> None:
        self.reader.close()


def open_reader(run_dir: Path, *, schema: str = DEFAULT_SCHEMA
                ) -> tuple[str, SqliteReader | PgReader | None]:
    """The store ``flower log`` and ``flower analyze`` read, opened read-only: the configured
    one (``--store`` / ``FLOWER_STORE_URL``) when set, else ``<run_dir>/sessions.db``. With
    it the status a report shows: ``ok``, ``missing`` or ``unreadable``."""
    from flower.stores.url import configured_url, is_postgres_url, sqlite_path

    db = Path(run_dir) / DB_NAME
    url = configured_url()
    if url is not None:
        if is_postgres_url(url):
            return PgReader.open(url, schema=schema)
        db = sqlite_path(url)
    return SqliteReader.open(db)

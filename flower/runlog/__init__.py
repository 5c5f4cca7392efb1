"""``flower log``: the runs in a run folder — steps, sessions, attempts, cost, duration, and the
context size of every round as a chart — read from ``manifest.json`` and ``sessions.db``.

Strictly read-only: nothing under the run dir is created, changed or moved, not even SQLite
``-wal``/``-shm`` files, and a corrupt ``manifest.json`` stays byte-identical (the next
flower run moves it aside, see :mod:`flower.core.manifest`). The SDK is never imported.

- :func:`load_runs` — pure data (:class:`RunLog`);
- :func:`render` — the rich report; ASCII status icons (``+`` ok, ``x`` failed, ``#`` judge);
  the per-round chart uses ``▁▂▃▄▅▆▇█`` (``_.-=#`` when the console is not UTF-8);
- :func:`to_json` — the ``--json`` document;
- :func:`main` — the command body, returns the exit code.

Runs are the manifest's ``run`` ids (one per flower process), oldest first; rows keep the
manifest's order. A row's *rounds* are the main-thread API calls of its sessions (handed-off
ones first, then the live one) that fall inside the row's time window — a send-back
(``干活#round2``) resumes the same session, and each row shows only its own calls. The chart
runs from the row's smallest reading (lowest bar) to its largest (highest bar), with both
numbers printed after it; more than 48 rounds are folded into 48 cells (peak of each). Durations
are agent time: the sum of the rows' ``duration_s``.

``to_json`` keys (stable; numbers are plain JSON numbers, unknown values ``null``)::

    run_dir     str   the folder read
    workspace   str   whose project key was looked up in sessions.db
    db          str   "ok" | "missing" | "unreadable"  (no per-round data unless "ok")
    runs        list  oldest first, each:
        run         str | null    the run id (null: rows written without one)
        started_at  float | null  unix time of its first row
        cost_usd    float         rounded to 4 decimals
        duration_s  float         sum of the rows' durations
        steps, ok, failed  int
        rows        list  in manifest order, each:
            step        str         as recorded, e.g. "干活#round2"
            base        str         the step it belongs to, e.g. "干活"
            kind        str         "first" | "retry" | "round" | "judge"
            n           int | null  the N of #retryN / #roundN / ·判定#N
            ok          bool
            error       str | null
            attempts, num_turns, context  int   (context: the manifest's last-turn reading)
            session_id  str | null  the live session
            retired     [str]       sessions handed off, oldest first
            resumed     bool
            cost_usd    float
            started_at, ended_at, duration_s   float | null
            rounds      [int]       context size per main-thread API call, in order
    sessions    {session id: [int]}  every round of each session found in sessions.db
    totals      runs, steps, ok, failed, sessions (distinct ids, live + retired),
                cost_usd, duration_s, peak_context (largest round, 0 if none)
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import sqlite3
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.core import manifest as _manifest
from flower.core.lineage import recorded_workspace
from flower.core.paths import project_key
from flower.errors import CorruptManifest, NoRuns, one_line
from flower.stores.readonly import (
    NoSessions,
    Round,
    connect_ro,
    main_rounds,
    parse_timestamp,
    rounds_from,
)
from flower.usage import entry_context, human_tokens

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["CorruptManifest", "NoRuns", "Row", "Run", "RunLog", "SessionDetail", "ToolResult",
           "Transcript", "load_details", "load_runs", "main", "render", "slope", "to_json"]

DB_NAME = "sessions.db"
DEFAULT_RUN_DIR = "runs"
SPARK_WIDTH = 48  # chart cells per row; longer rows show the peak of each stretch
BARS = "▁▂▃▄▅▆▇█"
BARS_ASCII = "_.-=#"
SLACK_S = 2.0  # a round may be stamped this long outside its row's window (clock rounding)
ERROR_LINES = 6
_STEP_WIDTH = 28  # step names are padded up to this many cells

_JUDGE = re.compile(r"^(?P<base>.*)·判定#(?P<n>\d{1,9})$", re.S)
_SUFFIX = re.compile(r"^(?P<base>.*)#(?P<kind>retry|round)(?P<n>\d{1,9})$", re.S)
_RUN_STAMP = re.compile(r"^(\d{8}-\d{6})")


# --- data -------------------------------------------------------------------------------


@dataclass
class Row:
    """One manifest row, coerced to sane types (a malformed field gets its default)."""

    step: str
    base: str
    kind: str  # first | retry | round | judge
    n: int | None
    ok: bool = False
    error: str | None = None
    attempts: int = 1
    session_id: str | None = None
    retired: list[str] = field(default_factory=list)
    resumed: bool = False
    cost_usd: float = 0.0
    num_turns: int = 0
    started_at: float | None = None
    ended_at: float | None = None
    duration_s: float | None = None
    context: int = 0
    rounds: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # every failed attempt, oldest first

    @property
    def sessions(self) -> list[str]:
        """Every session this row ran in, oldest first (handed-off ones, then the live one)."""
        out = list(self.retired)
        if self.session_id and self.session_id not in out:
            out.append(self.session_id)
        return out

    @property
    def last_context(self) -> int:
        return self.context or (self.rounds[-1] if self.rounds else 0)


@dataclass
class Run:
    """The rows one flower process wrote (one ``run`` id)."""

    run: str | None
    started_at: float | None
    rows: list[Row] = field(default_factory=list)

    @property
    def cost_usd(self) -> float:
        return round(sum(r.cost_usd for r in self.rows), 4)

    @property
    def duration_s(self) -> float:
        return round(sum(r.duration_s or 0.0 for r in self.rows), 2)

    @property
    def ok(self) -> int:
        return sum(1 for r in self.rows if r.ok)


@dataclass
class RunLog:
    run_dir: Path
    workspace: Path
    db: str  # ok | missing | unreadable
    runs: list[Run] = field(default_factory=list)
    sessions: dict[str, list[Round]] = field(default_factory=dict)

    @property
    def rows(self) -> list[Row]:
        return [row for run in self.runs for row in run.rows]

    def totals(self) -> dict[str, Any]:
        rows = self.rows
        ok = sum(1 for r in rows if r.ok)
        sessions = {sid for r in rows for sid in r.sessions}
        peak = max((c for r in rows for c in r.rounds), default=0)
        return {
            "runs": len(self.runs),
            "steps": len(rows),
            "ok": ok,
            "failed": len(rows) - ok,
            "sessions": len(sessions),
            "cost_usd": round(sum(r.cost_usd for r in rows), 4),
            "duration_s": round(sum(r.duration_s or 0.0 for r in rows), 2),
            "peak_context": peak,
        }


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _count(value: Any, default: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def _time(value: Any) -> float | None:
    f = _number(value)
    return f if f is not None and f > 0 else None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def split_step(step: str) -> tuple[str, str, int | None]:
    """``(base, kind, n)`` of a step name: ``干活#round2`` → ``("干活", "round", 2)``,
    ``干活·判定#1`` → ``("干活", "judge", 1)``, ``干活`` → ``("干活", "first", None)``."""
    m = _JUDGE.match(step)
    if m and m["base"]:
        return m["base"], "judge", int(m["n"])
    m = _SUFFIX.match(step)
    if m and m["base"]:
        return m["base"], m["kind"], int(m["n"])
    return step, "first", None


def _row(raw: dict[str, Any]) -> Row:
    step = raw.get("step")
    step = step if isinstance(step, str) else (_text(step) or "?")
    base, kind, n = split_step(step)
    started, ended = _time(raw.get("started_at")), _time(raw.get("ended_at"))
    duration = _number(raw.get("duration_s"))
    if duration is None and started is not None and ended is not None:
        duration = round(ended - started, 2)
    if duration is not None and duration < 0:
        duration = None
    sid = raw.get("session_id")
    retired = raw.get("retired")
    cost = _number(raw.get("cost_usd"))
    errors = raw.get("errors")
    return Row(
        step=step, base=base, kind=kind, n=n,
        ok=raw.get("ok") is True,
        error=_text(raw.get("error")),
        attempts=_count(raw.get("attempts"), 1),
        session_id=sid if isinstance(sid, str) and sid else None,
        retired=[s for s in retired if isinstance(s, str) and s]
        if isinstance(retired, list) else [],
        resumed=raw.get("resumed") is True,
        cost_usd=cost if cost is not None else 0.0,
        num_turns=_count(raw.get("num_turns")),
        started_at=started, ended_at=ended, duration_s=duration,
        context=max(0, _count(raw.get("context"))),
        errors=[_text(e) or "" for e in errors] if isinstance(errors, list) else [],
    )


def _run_start(run: str | None, rows: list[Row]) -> float | None:
    starts = [r.started_at for r in rows if r.started_at is not None]
    if starts:
        return min(starts)
    m = _RUN_STAMP.match(run or "")
    if m:
        try:
            return _dt.datetime.strptime(m[1], "%Y%m%d-%H%M%S").timestamp()
        except (ValueError, OverflowError, OSError):
            return None
    return None


def read_manifest(run_dir: Path) -> list[dict[str, Any]]:
    """The manifest's rows; :class:`NoRuns` / :class:`CorruptManifest` otherwise. Never
    writes or moves anything."""
    path = run_dir / _manifest.FILENAME
    if not run_dir.is_dir():
        raise NoRuns(run_dir, folder=True)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise NoRuns(path, folder=False) from exc
    except OSError as exc:
        raise CorruptManifest(path, exc.strerror or type(exc).__name__) from exc
    try:
        return _manifest.parse(raw)
    except (ValueError, RecursionError) as exc:
        reason = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        raise CorruptManifest(path, one_line(reason) if reason else "?") from exc


def _candidates(con: sqlite3.Connection, pk: str, sid: str) -> list[str]:
    """Main-transcript keys that may hold session ``sid``: this workspace's first, then
    whichever other project key holds it (a run folder moved from another machine or path)."""
    tail = f"/{sid}"
    keys = con.execute(
        "SELECT store_key FROM meta WHERE substr(store_key, -?) = ?", (len(tail), tail)
    ).fetchall()
    return [f"{pk}/{sid}", *(key for (key,) in keys if isinstance(key, str)
                             and key.count("/") == 1 and key != f"{pk}/{sid}")]


def _in_window(row: Row, at: float | None) -> bool:
    if at is None or row.started_at is None:
        return True
    if at < row.started_at - SLACK_S:
        return False
    return row.ended_at is None or row.ended_at < row.started_at or at <= row.ended_at + SLACK_S


def load_runs(run_dir: Path, workspace: Path | None = None) -> RunLog:
    """Everything ``flower log`` shows, as data. Raises :class:`NoRuns` or
    :class:`CorruptManifest`; any malformed row or a missing/corrupt ``sessions.db`` only
    means less to show."""
    run_dir = Path(run_dir)
    raw_rows = read_manifest(run_dir)
    ws = Path(workspace) if workspace is not None else (
        recorded_workspace(run_dir) or run_dir.resolve().parent)

    groups: dict[str | None, list[Row]] = {}
    for raw in raw_rows:
        run = raw.get("run") if isinstance(raw, dict) else None
        key = run if isinstance(run, str) and run else None
        groups.setdefault(key, []).append(_row(raw if isinstance(raw, dict) else {}))
    runs = [Run(run, _run_start(run, rows), rows) for run, rows in groups.items()]
    order = {id(r): i for i, r in enumerate(runs)}
    runs.sort(key=lambda r: (r.started_at is None, r.started_at or 0.0, order[id(r)]))

    ids = list(dict.fromkeys(sid for run in runs for row in run.rows for sid in row.sessions))
    db, sessions = _read_sessions(run_dir, project_key(ws), ids)
    for run in runs:
        for row in run.rows:
            row.rounds = [r.context for sid in row.sessions for r in sessions.get(sid, [])
                          if _in_window(row, r.at)]
    return RunLog(run_dir=run_dir, workspace=ws, db=db, runs=runs, sessions=sessions)


# --- transcripts: the post-mortem view (tools/analyze_run.py) ------------------------------

#: Tool names of a subagent dispatch in the main thread (the CLI renamed ``Task`` to ``Agent``).
DISPATCH_TOOLS = frozenset({"Agent", "Task"})
TOP_RESULTS = 10
_PREVIEW = 120
_SPILL_HEAD = texts.SPILL_NOTE.split("{", 1)[0]  # live spill_guard pointers start like this
_DENIAL_KINDS = ("permission-rule", "automode-blocked")
_LONE = re.compile("[\ud800-\udfff]")  # half an emoji: a preview must print as UTF-8


@dataclass
class ToolResult:
    """One tool result as stored (before any resume-time rewriting)."""

    chars: int
    tool: str
    session_id: str
    agent: str | None  # the subagent's id, None for the main thread
    at: float | None
    preview: str


@dataclass
class Transcript:
    """What one stored transcript (a main session or one of its subagents) holds."""

    key: str
    session_id: str
    agent: str | None = None  # "agent-…" for a subagent transcript
    entries: int = 0
    rounds: list[Round] = field(default_factory=list)
    calls: list[tuple[float | None, str]] = field(default_factory=list)  # (when, tool name)
    results: list[ToolResult] = field(default_factory=list)
    input_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    api_errors: int = 0  # the CLI's synthetic error messages (outages, refusals)
    denials: int = 0  # tool calls refused by a permission rule or hook
    spill_pointers: int = 0  # results spill_guard replaced by a pointer while live
    first_at: float | None = None
    last_at: float | None = None

    @property
    def dispatches(self) -> int:
        return sum(1 for _, name in self.calls if name in DISPATCH_TOOLS)

    @property
    def duration_s(self) -> float | None:
        if self.first_at is None or self.last_at is None:
            return None
        return round(self.last_at - self.first_at, 2)


@dataclass
class SessionDetail:
    """A main session, its subagents, and what a resume-time ``load()`` would rewrite."""

    session_id: str
    main: Transcript
    subagents: list[Transcript] = field(default_factory=list)
    #: counts of the store's layers on this transcript: expired, trimmed, kept, chars_saved
    #: (layer 2) and pruned, denials_dropped, neutralized, healed (layer 3); None: not computed
    resume: dict[str, int] | None = None


def _tool_names(entries: list[dict[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for e in entries:
        for b in _blocks(e):
            if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                names[b["id"]] = str(b.get("name") or "?")
    return names


def _blocks(entry: Any) -> list[dict[str, Any]]:
    message = entry.get("message") if isinstance(entry, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _body(block: dict[str, Any]) -> str:
    body = block.get("content")
    if isinstance(body, str):
        return body
    if isinstance(body, list):
        parts = [b.get("text") if isinstance(b, dict) and isinstance(b.get("text"), str)
                 else json.dumps(b, ensure_ascii=False, default=str) for b in body]
        return "\n".join(parts)
    return "" if body is None else json.dumps(body, ensure_ascii=False, default=str)


def _tally(key: str, sid: str, agent: str | None,
           entries: list[dict[str, Any]]) -> Transcript:
    """One pass over a transcript's entries."""
    t = Transcript(key=key, session_id=sid, agent=agent, entries=len(entries))
    names = _tool_names(entries)
    seen: dict[str, int] = {}  # message id -> index in t.rounds (one entry per content block)
    for n, e in enumerate(entries):
        if not isinstance(e, dict):
            continue
        at = _timestamp_of(e)
        if at is not None:
            t.first_at = at if t.first_at is None else min(t.first_at, at)
            t.last_at = at if t.last_at is None else max(t.last_at, at)
        message = e.get("message") if isinstance(e.get("message"), dict) else {}
        if e.get("type") == "assistant":
            if e.get("isApiErrorMessage") or message.get("model") == "<synthetic>":
                t.api_errors += 1
                continue
            for b in _blocks(e):
                if b.get("type") == "tool_use":
                    t.calls.append((at, str(b.get("name") or "?")))
            size = entry_context(e)
            if size:
                mid = message.get("id")
                ident = mid if isinstance(mid, str) and mid else f"#{n}"
                if ident not in seen:
                    seen[ident] = len(t.rounds)
                    t.rounds.append(Round(at, size))
                    usage = message.get("usage") or {}
                    t.input_tokens += _count(usage.get("input_tokens"))
                    t.cache_read += _count(usage.get("cache_read_input_tokens"))
                    t.cache_creation += _count(usage.get("cache_creation_input_tokens"))
                    t.output_tokens += _count(usage.get("output_tokens"))
                    details = usage.get("output_tokens_details")
                    if isinstance(details, dict):
                        t.thinking_tokens += _count(details.get("thinking_tokens"))
        elif e.get("type") == "user":
            denied = e.get("toolDenialKind") in _DENIAL_KINDS
            for b in _blocks(e):
                if b.get("type") != "tool_result":
                    continue
                t.denials += denied
                body = _body(b)
                if body.startswith(_SPILL_HEAD):
                    t.spill_pointers += 1
                tool = names.get(str(b.get("tool_use_id")), "?")
                preview = _LONE.sub("\ufffd", " ".join(body[:_PREVIEW * 2].split())[:_PREVIEW])
                t.results.append(ToolResult(len(body), tool, sid, agent, at, preview))
    return t


def _timestamp_of(entry: dict[str, Any]) -> float | None:
    return parse_timestamp(entry.get("timestamp"))


def _entries(con: sqlite3.Connection, key: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for (payload,) in con.execute(
            "SELECT payload FROM entries WHERE store_key = ? ORDER BY seq", (key,)):
        try:
            entry = json.loads(payload)
        except (TypeError, ValueError):
            continue  # a bad row is skipped, like the reference's reader
        if isinstance(entry, dict):
            out.append(entry)
    return out


def _main_keys(con: sqlite3.Connection) -> list[str]:
    return [k for (k,) in con.execute("SELECT store_key FROM meta ORDER BY mtime")
            if isinstance(k, str) and k.count("/") == 1]


def _resume_counts(entries: list[dict[str, Any]], scratch: Path) -> dict[str, int]:
    """What the store's load() would rewrite in ``entries`` — expire, trim, prune — run on a
    throwaway store in ``scratch`` (spill files land there, never in the run dir)."""
    from flower.stores.prune import PruningSessionStore

    store = PruningSessionStore(scratch / "scratch.db", scratch)
    try:
        store.last_report = {"expired": 0, "cleared": 0, "kept": 0, "chars_saved": 0}
        copy = store.trim(store.expire(entries))
        store.prune(copy)
        r = store.last_report
        return {"expired": r["expired"], "trimmed": r["cleared"], "kept": r["kept"],
                "chars_saved": r["chars_saved"], "pruned": store.pruned,
                "denials_dropped": store.denials_dropped, "neutralized": store.neutralized,
                "healed": store.healed}
    finally:
        store.close()


class _SqliteReader:
    """The detail reader on a ``sessions.db`` (opened read-only by :func:`connect_ro`)."""

    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con

    def entries(self, key: str) -> list[dict[str, Any]]:
        return _entries(self.con, key)

    def has(self, key: str) -> bool:
        return self.con.execute("SELECT 1 FROM meta WHERE store_key = ?", (key,)).fetchone() \
            is not None

    def candidates(self, pk: str, sid: str) -> list[str]:
        return _candidates(self.con, pk, sid)

    def rounds(self, key: str) -> list[Round]:
        return main_rounds(self.con, key)

    def main_keys(self, pk: str) -> list[str]:
        """Every main transcript: the file is the run's own, whatever the project key."""
        return _main_keys(self.con)

    def subagents(self, key: str) -> list[str]:
        prefix = f"{key}/subagents/"
        return [k for (k,) in self.con.execute(
            "SELECT store_key FROM meta WHERE substr(store_key, 1, ?) = ? "
            "ORDER BY mtime, store_key", (len(prefix), prefix))]

    def close(self) -> None:
        self.con.close()


class _PgReader:
    """The same reads on a PostgreSQL store (schema ``flower``, see
    :mod:`flower.stores.postgres`): plain SELECTs in a read-only session, payloads decoded
    like the store's own ``load`` (:func:`flower.stores.codec.decode`)."""

    def __init__(self, con: Any, errors: tuple[type[BaseException], ...]) -> None:
        self.con = con
        self.errors = errors

    @classmethod
    def open(cls, url: str) -> tuple[str, _PgReader | None]:
        """``("ok", reader)``; ``("missing", None)`` when the store has no flower schema;
        ``("unreadable", None)`` when the driver is missing or the server unreachable."""
        try:
            import psycopg
        except ImportError:
            return "unreadable", None
        try:
            con = psycopg.connect(url, connect_timeout=10, application_name="flower-log",
                                  autocommit=True)
        except psycopg.Error:
            return "unreadable", None
        try:
            con.read_only = True
            found = con.execute("SELECT to_regclass('flower.entries'), "
                                "to_regclass('flower.meta')").fetchone()
        except psycopg.Error:
            con.close()
            return "unreadable", None
        if not found or found[0] is None or found[1] is None:
            con.close()
            return "missing", None
        return "ok", cls(con, (psycopg.Error,))

    def entries(self, key: str) -> list[dict[str, Any]]:
        from flower.stores.codec import decode

        out: list[dict[str, Any]] = []
        for (payload,) in self.con.execute(
                "SELECT payload FROM flower.entries WHERE store_key = %s ORDER BY seq", (key,)):
            try:
                entry = decode(payload)
            except (TypeError, ValueError):
                continue  # a bad row is skipped, as in sessions.db
            if isinstance(entry, dict):
                out.append(entry)
        return out

    def has(self, key: str) -> bool:
        return self.con.execute("SELECT 1 FROM flower.meta WHERE store_key = %s",
                                (key,)).fetchone() is not None

    def candidates(self, pk: str, sid: str) -> list[str]:
        mine = f"{pk}/{sid}"
        return [mine, *(k for (k,) in self.con.execute(
            "SELECT store_key FROM flower.meta WHERE split_part(store_key, '/', 2) = %s "
            "AND split_part(store_key, '/', 3) = '' AND store_key <> %s ORDER BY store_key",
            (sid, mine)))]

    def rounds(self, key: str) -> list[Round]:
        # "assistant" is in every assistant entry: the filter only spares parsing the rest
        return rounds_from(p for (p,) in self.con.execute(
            "SELECT payload FROM flower.entries WHERE store_key = %s "
            "AND strpos(payload, '\"assistant\"') > 0 ORDER BY seq", (key,)))

    def main_keys(self, pk: str) -> list[str]:
        """The main transcripts of this workspace's project key only: a shared store holds
        every project's sessions, and the run is this workspace's."""
        return [k for (k,) in self.con.execute(
            "SELECT store_key FROM flower.meta WHERE store_key >= %s AND store_key < %s "
            "ORDER BY mtime, store_key", (f"{pk}/", f"{pk}0")) if k.count("/") == 1]

    def subagents(self, key: str) -> list[str]:
        return [k for (k,) in self.con.execute(
            "SELECT store_key FROM flower.meta WHERE store_key >= %s AND store_key < %s "
            "ORDER BY mtime, store_key", (f"{key}/subagents/", f"{key}/subagents0"))]

    def close(self) -> None:
        self.con.close()


def _open_reader(run_dir: Path) -> tuple[str, _SqliteReader | _PgReader | None]:
    """The store ``flower log`` and ``analyze_run`` read, opened read-only: the configured
    one (``--store`` / ``FLOWER_STORE_URL``) when set, else ``<run_dir>/sessions.db``. With
    it the status ``RunLog.db`` reports: ``ok``, ``missing`` or ``unreadable``."""
    from flower.stores.url import configured_url, is_postgres_url, sqlite_path

    db = run_dir / DB_NAME
    url = configured_url()
    if url is not None:
        if is_postgres_url(url):
            return _PgReader.open(url)
        db = sqlite_path(url)
    if not db.is_file():
        return "missing", None
    try:
        con = connect_ro(db)
    except NoSessions:
        return "unreadable", None
    return ("ok", _SqliteReader(con)) if con is not None else ("unreadable", None)


def _read_sessions(run_dir: Path, pk: str, ids: list[str]) -> tuple[str, dict[str, list[Round]]]:
    """The rounds of each session in ``ids``, looked up under this workspace's key first,
    then under whichever other project key holds it (a run folder moved elsewhere)."""
    status, reader = _open_reader(run_dir)
    if reader is None:
        return status, {}
    found: dict[str, list[Round]] = {}
    try:
        for sid in ids:
            for key in reader.candidates(pk, sid):
                rounds = reader.rounds(key)
                if rounds:
                    found[sid] = rounds
                    break
    except reader.errors:
        return "unreadable", {}
    finally:
        reader.close()
    return "ok", found


def load_details(log: RunLog, *, resume: bool = True) -> dict[str, SessionDetail]:
    """Every main session in the store — the manifest's first (live and handed-off, in
    manifest order), then any other (an aside, a run without a manifest row; in a shared
    PostgreSQL store only those under this workspace's project key) — with its subagents.
    The store is the one ``flower log`` reads: ``--store`` / ``FLOWER_STORE_URL`` when set
    (PostgreSQL or a SQLite path), else ``<run_dir>/sessions.db``. Read-only; with
    ``resume`` the resume-time rewrite is counted on a scratch store in a temporary folder
    (this imports the SDK). Empty when the store is missing or unreadable."""
    reader = _open_reader(log.run_dir)[1]
    if reader is None:
        return {}
    pk = project_key(log.workspace)
    wanted = list(dict.fromkeys(sid for row in log.rows for sid in row.sessions))
    out: dict[str, SessionDetail] = {}
    try:
        keys: dict[str, str] = {}
        for sid in wanted:
            for key in reader.candidates(pk, sid):
                if reader.has(key):
                    keys[sid] = key
                    break
        for key in reader.main_keys(pk):
            sid = key.split("/", 1)[1]
            keys.setdefault(sid, key)
        with tempfile.TemporaryDirectory(prefix="flower-analyze-") as tmp:
            for n, (sid, key) in enumerate(keys.items()):
                entries = reader.entries(key)
                detail = SessionDetail(sid, _tally(key, sid, None, entries))
                prefix = f"{key}/subagents/"
                for sub in reader.subagents(key):
                    agent = sub[len(prefix):]
                    detail.subagents.append(_tally(sub, sid, agent, reader.entries(sub)))
                if resume and entries:
                    scratch = Path(tmp) / str(n)
                    scratch.mkdir()
                    detail.resume = _resume_counts(entries, scratch)
                out[sid] = detail
    except reader.errors:
        return out
    finally:
        reader.close()
    return out


def slope(values: list[int]) -> float | None:
    """Context growth per round as the reference's case studies state it:
    ``(last − first) / rounds`` (HT001: 28.7K → 185.9K over 70 rounds ≈ 2.2K/round)."""
    if len(values) < 2:
        return None
    return (values[-1] - values[0]) / len(values)


def in_window(row: Row, at: float | None) -> bool:
    """Does a transcript event stamped ``at`` belong to ``row`` (its time window)?"""
    return _in_window(row, at)


# --- json -------------------------------------------------------------------------------


def _finite(value: float | None) -> float | None:
    """Sums of absurd manifests can overflow; JSON gets null rather than ``Infinity``."""
    return value if value is None or math.isfinite(value) else None


def _row_json(row: Row) -> dict[str, Any]:
    return {
        "step": row.step, "base": row.base, "kind": row.kind, "n": row.n,
        "ok": row.ok, "error": row.error, "attempts": row.attempts,
        "session_id": row.session_id, "retired": list(row.retired), "resumed": row.resumed,
        "cost_usd": row.cost_usd, "num_turns": row.num_turns,
        "started_at": row.started_at, "ended_at": row.ended_at, "duration_s": row.duration_s,
        "context": row.context, "rounds": list(row.rounds),
    }


def to_json(log: RunLog) -> dict[str, Any]:
    """The ``--json`` document; keys are listed in the module docstring."""
    return {
        "run_dir": str(log.run_dir),
        "workspace": str(log.workspace),
        "db": log.db,
        "runs": [
            {"run": run.run, "started_at": run.started_at, "cost_usd": _finite(run.cost_usd),
             "duration_s": _finite(run.duration_s), "steps": len(run.rows), "ok": run.ok,
             "failed": len(run.rows) - run.ok, "rows": [_row_json(r) for r in run.rows]}
            for run in log.runs
        ],
        "sessions": {sid: [r.context for r in rounds] for sid, rounds in log.sessions.items()},
        "totals": {k: _finite(v) if isinstance(v, float) else v
                   for k, v in log.totals().items()},
    }


# --- rendering --------------------------------------------------------------------------


def fmt_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return texts.LOG_UNKNOWN
    if seconds < 60:
        return texts.LOG_SECONDS.format(s=seconds)
    total = int(seconds)
    if total < 3600:
        return texts.LOG_MINUTES.format(m=total // 60, s=total % 60)
    return texts.LOG_HOURS.format(h=total // 3600, m=total % 3600 // 60)


def fmt_time(stamp: float | None) -> str:
    if stamp is None:
        return texts.LOG_UNKNOWN
    try:
        return _dt.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):
        return texts.LOG_UNKNOWN


def fmt_cost(cost: float) -> str:
    return texts.LOG_COST.format(cost=cost)


def sparkline(values: list[int], *, bars: str = BARS, width: int = SPARK_WIDTH) -> str:
    """One cell per value, from the lowest bar at ``min(values)`` to the highest at
    ``max(values)`` (all middle bars when they are equal); more than ``width`` values are cut
    into ``width`` stretches, each shown by its largest value."""
    if not values:
        return ""
    if len(values) > width:
        step = len(values) / width
        values = [max(values[int(i * step):max(int((i + 1) * step), int(i * step) + 1)])
                  for i in range(width)]
    lo, hi = min(values), max(values)
    top = len(bars) - 1
    if hi == lo:
        return bars[top // 2] * len(values)
    return "".join(bars[math.floor((v - lo) / (hi - lo) * top + 0.5)] for v in values)


def chart_range(values: list[int]) -> str:
    """The numbers the chart's lowest and highest bars stand for."""
    lo, hi = min(values), max(values)
    if lo == hi:
        return human_tokens(lo)
    return texts.LOG_RANGE.format(lo=human_tokens(lo), hi=human_tokens(hi))


def _utf8(console: Console) -> bool:
    encoding = (getattr(console, "encoding", "") or "").lower().replace("-", "").replace("_", "")
    return encoding.startswith("utf")


def _icon(row: Row) -> tuple[str, str]:
    if not row.ok:
        return "x", "red"
    if row.kind == "judge":
        return "#", "magenta"
    return "+", "green"


def render(log: RunLog, console: Console) -> None:
    """Print the report: one block per run, one line per row, then the totals."""
    from rich.cells import cell_len
    from rich.text import Text

    from flower.cli.tui.render import clean

    bars = BARS if _utf8(console) else BARS_ASCII
    totals = log.totals()

    def out(text: Text) -> None:
        console.print(text, soft_wrap=True, highlight=False)

    if not log.rows:
        out(Text(texts.LOG_EMPTY.format(path=log.run_dir / _manifest.FILENAME)))
        return

    # columns: name, attempts/turns, session, cost, duration, context — aligned over all runs
    cells: dict[int, list[str]] = {}
    for row in log.rows:
        meta = texts.LOG_ATTEMPTS.format(n=row.attempts)
        meta += " · " + texts.LOG_TURNS.format(n=row.num_turns)
        if row.resumed:
            meta += " · " + texts.LOG_RESUMED
        ctx = row.last_context
        cells[id(row)] = [
            clean(row.step).replace("\n", " "), meta,
            clean(row.session_id[:8]) if row.session_id else texts.LOG_NO_SESSION,
            fmt_cost(row.cost_usd), fmt_duration(row.duration_s),
            human_tokens(ctx) if ctx else "",
        ]
    widths = [max(cell_len(c[i]) for c in cells.values()) for i in range(6)]
    widths[0] = min(widths[0], _STEP_WIDTH)
    styles = ["bold", "dim", "cyan", "", "", ""]
    right = [False, False, False, True, True, True]
    for run in log.runs:
        head = texts.LOG_RUN.format(
            run=clean(run.run) if run.run else texts.LOG_RUN_NO_ID,
            start=fmt_time(run.started_at), steps=len(run.rows),
            cost=fmt_cost(run.cost_usd), duration=fmt_duration(run.duration_s))
        out(Text(f"= {head}", style="bold"))
        for row in run.rows:
            icon, colour = _icon(row)
            line = Text("  ")
            line.append(icon, style=f"bold {colour}")
            for i, cell in enumerate(cells[id(row)]):
                pad = " " * max(0, widths[i] - cell_len(cell))
                line.append(" " if i == 0 else "  ")
                line.append(pad + cell if right[i] else cell + pad, style=styles[i])
            if row.rounds:
                line.append(f"  {sparkline(row.rounds, bars=bars)}", style="yellow")
                line.append(f" {chart_range(row.rounds)}", style="dim")
            line.rstrip()
            out(line)
            if row.retired:
                ids = " ".join(clean(s[:8]) for s in row.retired)
                out(Text(f"      {texts.LOG_RETIRED.format(ids=ids)}", style="dim"))
            if not row.ok and row.error:
                lines = clean(row.error).strip().splitlines() or [""]
                if len(lines) > ERROR_LINES:
                    lines = [*lines[:ERROR_LINES], f"… (+{len(lines) - ERROR_LINES})"]
                out(Text(f"      {texts.LOG_ERROR.format(error=lines[0])}", style="red"))
                for extra in lines[1:]:
                    out(Text(f"        {extra}", style="red"))
        out(Text(""))
    db = log.run_dir / DB_NAME
    if log.db == "missing":
        out(Text(texts.LOG_DB_MISSING.format(path=db), style="dim"))
    elif log.db == "unreadable":
        out(Text(texts.LOG_DB_UNREADABLE.format(path=db), style="dim"))
    elif any(row.rounds for row in log.rows):
        out(Text(texts.LOG_CHART.format(lo=bars[0], hi=bars[-1]), style="dim"))
    out(Text(texts.LOG_TOTALS.format(
        runs=totals["runs"], steps=totals["steps"], ok=totals["ok"], failed=totals["failed"],
        sessions=totals["sessions"], cost=fmt_cost(totals["cost_usd"]),
        duration=fmt_duration(totals["duration_s"])), style="bold"))


# --- command ----------------------------------------------------------------------------


def _console(*, stderr: bool = False) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    encoding = (getattr(stream, "encoding", "") or "").lower()
    if "utf" not in encoding and hasattr(stream, "reconfigure"):
        # a non-UTF-8 terminal shows "?" for the Chinese labels rather than crashing
        try:
            stream.reconfigure(errors="replace")
        except (OSError, ValueError):
            pass
    return Console(stderr=stderr, highlight=False)


def main(run_dir: str | None, *, as_json: bool, console: Console | None = None) -> int:
    """``flower log [RUN_DIR] [--json]``: 0 when the runs were shown, 1 when there is no
    readable manifest (with one line saying why and what to do)."""
    folder = Path(run_dir if run_dir is not None else DEFAULT_RUN_DIR)
    try:
        log = load_runs(folder)
    except (NoRuns, CorruptManifest) as exc:
        from rich.text import Text

        if isinstance(exc, NoRuns):
            template = texts.LOG_NO_RUN_DIR if exc.folder else texts.LOG_NO_MANIFEST
            message = template.format(path=exc.path)
        else:
            message = texts.LOG_CORRUPT.format(path=exc.path, reason=exc.reason)
        err = console or _console(stderr=True)
        err.print(Text(message), soft_wrap=True, highlight=False)
        return 1
    con = console or _console()
    if as_json:
        con.out(json.dumps(to_json(log), ensure_ascii=False, indent=2), highlight=False)
    else:
        render(log, con)
    return 0

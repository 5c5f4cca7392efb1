"""The data of ``flower log``: a run folder's manifest rows, grouped into runs, with the
context size of every round read from the session store — and the ``--json`` document.

Strictly read-only: nothing under the run dir is created, changed or moved, not even SQLite
``-wal``/``-shm`` files, and a corrupt ``manifest.json`` stays byte-identical (the next
flower run moves it aside, see :mod:`flower.core.manifest`). The SDK is never imported.

Runs are the manifest's ``run`` ids (one per flower process), oldest first; rows keep the
manifest's order. A row's *rounds* are the main-thread API calls of its sessions (handed-off
ones first, then the live one) that fall inside the row's time window — a send-back
(``干活#round2``) resumes the same session, and each row shows only its own calls. Durations
are agent time: the sum of the rows' ``duration_s``.

``to_json`` keys (stable; numbers are plain JSON numbers, unknown values ``null``)::

    run_dir     str   the folder read
    workspace   str   whose project key was looked up in sessions.db
    db          str   "ok" | "missing" | "unreadable"  (no per-round data unless "ok")
    caps        obj | null  the task's ledger (budget.json; null: none): budget_usd,
                max_hours (null: no cap), spent_usd, elapsed_s (the whole task, every
                wake), stopped {run id: "budget" | "time"}
    runs        list  oldest first, each:
        run         str | null    the run id (null: rows written without one)
        stopped     str | null    "budget" | "time": this run stopped at that cap
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
            sandbox     str | null  the wall its Bash ran behind: "off" | "readonly" |
                                    "workspace" | "workspace+net" (null: written before
                                    flower recorded it)
            dispatches  list        its worker dispatches, in order: agent, cost_usd
                                    (estimated from token usage), rounds, estimated
    sessions    {session id: [int]}  every round of each session found in sessions.db
    totals      runs, steps, ok, failed, sessions (distinct ids, live + retired),
                cost_usd, duration_s, peak_context (largest round, 0 if none)
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flower import texts
from flower.core import manifest as _manifest
from flower.core.lineage import recorded_workspace
from flower.core.paths import project_key
from flower.errors import CorruptManifest, NoRuns, one_line
from flower.stores.readers import DB_NAME, DEFAULT_SCHEMA, KeyFinder, Round, open_reader

__all__ = ["DB_NAME", "DEFAULT_RUN_DIR", "CorruptManifest", "NoRuns", "Row", "Run", "RunLog",
           "in_window", "load_runs", "owns", "read_manifest", "read_sessions",
           "rows_by_session", "split_step", "to_json"]

DEFAULT_RUN_DIR = "runs"
SLACK_S = 2.0  # a round may be stamped this long outside its row's window (clock rounding)

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
    sandbox: str | None = None
    errors: list[str] = field(default_factory=list)  # every failed attempt, oldest first
    #: its worker dispatches with their estimated cost (filled by ``runlog.spend.fill``)
    dispatches: list[dict[str, Any]] = field(default_factory=list)

    @property
    def reason(self) -> str | None:
        """``error`` as ``flower log`` says it: the machine-written reasons of a stopped
        step (``aborted (CancelledError)``, ``killed-by-signal`` …) in words; anything
        else as written — a gateway's own message is what one debugs with. ``--json``
        keeps ``error`` as the manifest has it."""
        return said(self.error)

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
    """A run folder as ``flower log`` shows it: its runs, and every round of each session."""

    run_dir: Path
    workspace: Path
    db: str  # ok | missing | unreadable
    runs: list[Run] = field(default_factory=list)
    sessions: dict[str, list[Round]] = field(default_factory=dict)
    #: the PostgreSQL schema the sessions were read from (when the store is PostgreSQL)
    schema: str = DEFAULT_SCHEMA
    #: the task's caps and totals from ``budget.json`` (``runlog.spend.fill``); None: none
    caps: dict[str, Any] | None = None

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


_ABORTED = re.compile(r"aborted \((\w+)\)")  # Runtime.run: what ended the step
#: Runtime.KILLED, interrupts.INTERRUPTED, handoff_control.HANDOFF_DUE — spelled out, since
#: importing the Runtime would slow ``flower log`` down by half a second
_FIXED = {"killed-by-signal": texts.LOG_KILLED, "interrupted-by-human": texts.LOG_INTERRUPTED,
          "context-full-handoff": texts.LOG_HANDOFF_DUE}


def said(error: str | None) -> str | None:
    """A manifest error in words (see ``Row.reason``)."""
    if not error:
        return error
    if error in _FIXED:
        return _FIXED[error]
    aborted = _ABORTED.fullmatch(error.strip())
    if aborted:
        what = aborted.group(1)
        if what == "KeyboardInterrupt":
            return texts.LOG_ABORTED_CTRL_C
        if what == "CancelledError":
            return texts.LOG_ABORTED_CANCELLED
        return texts.LOG_ABORTED_OTHER.format(what=what)
    return error


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
        sandbox=box if isinstance(box := raw.get("sandbox"), str) and box else None,
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


def in_window(row: Row, at: float | None) -> bool:
    """Does a transcript event stamped ``at`` belong to ``row`` (its time window)?"""
    if at is None or row.started_at is None:
        return True
    if at < row.started_at - SLACK_S:
        return False
    return row.ended_at is None or row.ended_at < row.started_at or at <= row.ended_at + SLACK_S


def rows_by_session(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """Each session id with the rows that ran in it, in manifest order (one pass)."""
    out: dict[str, list[Row]] = {}
    for row in rows:
        for sid in row.sessions:
            out.setdefault(sid, []).append(row)
    return out


def _gap(row: Row, at: float) -> float:
    """How far ``at`` lies outside ``row``'s own window (0 inside it)."""
    start = row.started_at or 0.0
    end = row.ended_at if row.ended_at is not None and row.ended_at >= start else None
    if at < start:
        return start - at
    return 0.0 if end is None else max(0.0, at - end)


def owns(row: Row, at: float | None, sharing: Sequence[Row]) -> bool:
    """Does an event stamped ``at`` belong to ``row``, given the rows ``sharing`` its
    session? The slack of :func:`in_window` only places an event that lies outside every
    row's own window — it never gives one event to two rows: ``干活`` and ``干活#round2``
    share a session, and the round's first dispatch a second after the judge was counted
    for both (the demo's work step showed two ``Agent`` dispatches)."""
    if not in_window(row, at):
        return False
    if at is None or row.started_at is None:
        return True
    rivals = [r for r in sharing if r.started_at is not None and in_window(r, at)]
    if len(rivals) < 2:
        return True
    best = min(rivals, key=lambda r: (_gap(r, at), -(r.started_at or 0.0)))
    return best is row


def load_runs(run_dir: Path, workspace: Path | None = None, *,
              schema: str = DEFAULT_SCHEMA) -> RunLog:
    """Everything ``flower log`` shows, as data. Raises :class:`NoRuns` or
    :class:`CorruptManifest`; any malformed row or a missing/corrupt ``sessions.db`` only
    means less to show. The sessions come from the store :func:`open_reader` names (a
    PostgreSQL store is read in ``schema``)."""
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
    db, sessions = read_sessions(run_dir, project_key(ws), ids, schema=schema)
    sharing = rows_by_session(row for run in runs for row in run.rows)
    for run in runs:
        for row in run.rows:
            row.rounds = [r.context for sid in row.sessions for r in sessions.get(sid, [])
                          if owns(row, r.at, sharing[sid])]
    return RunLog(run_dir=run_dir, workspace=ws, db=db, runs=runs, sessions=sessions,
                  schema=schema)


def read_sessions(run_dir: Path, pk: str, ids: list[str], *, schema: str = DEFAULT_SCHEMA
                  ) -> tuple[str, dict[str, list[Round]]]:
    """The store's status and the rounds of each session in ``ids``, looked up under this
    workspace's key first, then under whichever other project key holds it (a run folder
    moved elsewhere)."""
    status, reader = open_reader(run_dir, schema=schema)
    if reader is None:
        return status, {}
    found: dict[str, list[Round]] = {}
    candidates = KeyFinder(reader, pk)  # one meta read for all ids, not one per id
    try:
        for sid in ids:
            for key in candidates(sid):
                rounds = reader.rounds(key)
                if rounds:
                    found[sid] = rounds
                    break
    except reader.errors:
        return "unreadable", {}
    finally:
        reader.close()
    return "ok", found


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
        "context": row.context, "rounds": list(row.rounds), "sandbox": row.sandbox,
        "dispatches": list(row.dispatches),
    }


def to_json(log: RunLog) -> dict[str, Any]:
    """The ``--json`` document; keys are listed in the module docstring."""
    stopped = (log.caps or {}).get("stopped") or {}
    return {
        "run_dir": str(log.run_dir),
        "workspace": str(log.workspace),
        "db": log.db,
        "caps": log.caps,
        "runs": [
            {"run": run.run, "started_at": run.started_at, "cost_usd": _finite(run.cost_usd),
             "duration_s": _finite(run.duration_s), "steps": len(run.rows), "ok": run.ok,
             "failed": len(run.rows) - run.ok, "stopped": stopped.get(run.run),
             "rows": [_row_json(r) for r in run.rows]}
            for run in log.runs
        ],
        "sessions": {sid: [r.context for r in rounds] for sid, rounds in log.sessions.items()},
        "totals": {k: _finite(v) if isinstance(v, float) else v
                   for k, v in log.totals().items()},
    }


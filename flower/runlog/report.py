"""The post-mortem of a run folder as one document — what ``flower analyze`` prints and
``flower analyze --json`` emits: per step and per session the turns, tool calls by tool,
subagent dispatches, retries and why, handoffs (degraded or not), what a resume-time
``load()`` would rewrite, cost, duration, the context of every round with its slope, the
cache, the largest tool results and the workbench.

Built from :mod:`flower.model` (the manifest, as ``flower log`` reads it) and
:mod:`flower.analysis` (the transcripts); read-only like both.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from flower import texts
from flower.core.lineage import recorded_workspace
from flower.core.paths import project_key
from flower.runlog.analysis import (
    DISPATCH_TOOLS,
    TOP_RESULTS,
    SessionDetail,
    Transcript,
    load_details,
    slope,
)
from flower.runlog.model import (
    DB_NAME,
    NoRuns,
    Row,
    RunLog,
    load_runs,
    owns,
    read_sessions,
    rows_by_session,
    to_json,
)
from flower.stores.readers import DEFAULT_SCHEMA, SqliteReader

__all__ = ["DEGRADED", "analyze"]

#: the words a degraded handoff's note in the manifest's ``errors`` starts with
DEGRADED = texts.HANDOFF_NOTE_DEGRADED.split("{", 1)[0][:-1]  # without the opening "("


def _tools(calls: list[str]) -> dict[str, int]:
    return dict(Counter(calls).most_common())


def _context(values: list[int]) -> dict[str, Any]:
    """first/last/peak/min and the slope of a list of per-round context sizes."""
    if not values:
        return {"rounds": 0, "first": None, "last": None, "peak": None, "min": None,
                "peak_round": None, "slope": None, "values": []}
    peak = max(values)
    return {"rounds": len(values), "first": values[0], "last": values[-1], "peak": peak,
            "min": min(values), "peak_round": values.index(peak) + 1,
            "slope": slope(values), "values": list(values)}


def _step(row: Row, details: dict[str, SessionDetail],
          sharing: dict[str, list[Row]]) -> dict[str, Any]:
    main_calls: list[str] = []
    sub_calls: list[str] = []
    for sid in row.sessions:
        d = details.get(sid)
        if d is None:
            continue
        main_calls += [n for at, n in d.main.calls if owns(row, at, sharing[sid])]
        for sub in d.subagents:
            sub_calls += [n for at, n in sub.calls if owns(row, at, sharing[sid])]
    degraded = [e for e in row.errors if DEGRADED in e]
    retries = [e for e in row.errors if DEGRADED not in e]
    live = details.get(row.session_id or "")
    return {
        "step": row.step, "base": row.base, "kind": row.kind, "ok": row.ok,
        "error": row.error, "attempts": row.attempts, "retries": max(row.attempts - 1, 0),
        "retry_errors": retries, "resumed": row.resumed, "num_turns": row.num_turns,
        "tool_calls": _tools(main_calls), "subagent_tool_calls": _tools(sub_calls),
        "dispatches": sum(1 for n in main_calls if n in DISPATCH_TOOLS),
        "handoffs": len(row.retired), "degraded_handoffs": len(degraded),
        "degraded_notes": degraded, "retired": list(row.retired),
        "session_id": row.session_id, "cost_usd": row.cost_usd,
        "duration_s": row.duration_s, "started_at": row.started_at, "ended_at": row.ended_at,
        "context": _context(row.rounds),
        "resume": live.resume if live is not None else None,
    }


def _session(d: SessionDetail, steps: list[str]) -> dict[str, Any]:
    m = d.main
    return {
        "session_id": d.session_id, "store_key": m.key, "steps": steps,
        "turns": len(m.rounds), "entries": m.entries,
        "tool_calls": _tools([n for _, n in m.calls]), "dispatches": m.dispatches,
        "subagents": [s.agent for s in d.subagents],
        "duration_s": m.duration_s, "context": _context([r.context for r in m.rounds]),
        "input_tokens": m.input_tokens, "cache_read": m.cache_read,
        "cache_creation": m.cache_creation, "output_tokens": m.output_tokens,
        "thinking_tokens": m.thinking_tokens, "api_errors": m.api_errors,
        "denials": m.denials, "spill_pointers": m.spill_pointers, "resume": d.resume,
    }


def _subagent(s: Transcript) -> dict[str, Any]:
    return {
        "agent": s.agent, "session_id": s.session_id, "store_key": s.key,
        "turns": len(s.rounds), "entries": s.entries,
        "tool_calls": _tools([n for _, n in s.calls]), "output_tokens": s.output_tokens,
        "thinking_tokens": s.thinking_tokens, "duration_s": s.duration_s,
        "denials": s.denials, "api_errors": s.api_errors,
    }


def _dir_stats(path: Path) -> dict[str, int] | None:
    if not path.is_dir():
        return None
    files = [p for p in path.rglob("*") if p.is_file()]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def _workbench(ws: Path) -> dict[str, Any]:
    root = ws / ".flower"
    return {"path": str(root), "exists": root.is_dir(),
            **{name: _dir_stats(root / name)
               for name in ("spill", "scripts", "artifacts", "notes")}}


def analyze(run_dir: Path, *, schema: str = DEFAULT_SCHEMA) -> dict[str, Any]:
    """The whole report as data (``--json`` prints exactly this). Raises
    :class:`~flower.runlog.model.CorruptManifest`; a missing manifest leaves the steps
    empty. The sessions come from the store ``flower log`` reads (``schema``: the
    PostgreSQL schema, when that store is PostgreSQL)."""
    run_dir = Path(run_dir)
    try:
        log = load_runs(run_dir, schema=schema)
    except NoRuns:
        # no manifest: the sessions alone still tell a lot (a folder may hold only the db)
        ws = recorded_workspace(run_dir) or run_dir.resolve().parent
        db = run_dir / DB_NAME
        log = RunLog(run_dir=run_dir, workspace=ws, db="ok" if db.is_file() else "missing",
                     schema=schema)
        if _store_url() is not None:
            log.db = read_sessions(run_dir, project_key(ws), [], schema=schema)[0]
    details = load_details(log)
    if log.db == "ok" and not details and _store_url() is None \
            and (run_dir / DB_NAME).is_file():
        log.db = "unreadable" if not _has_tables(run_dir) else log.db

    sharing = rows_by_session(log.rows)
    steps = [_step(row, details, sharing) for row in log.rows]
    sessions = [_session(d, [r.step for r in sharing.get(sid, [])])
                for sid, d in details.items()]
    subs = [s for d in details.values() for s in d.subagents]

    mains = [d.main for d in details.values()]
    everything = mains + subs
    total_in = sum(t.input_tokens + t.cache_read + t.cache_creation for t in everything)
    hits = sum(t.cache_read for t in everything)
    main_rounds = [r.context for d in details.values() for r in d.main.rounds]
    results = sorted((r for t in everything for r in t.results),
                     key=lambda r: r.chars, reverse=True)[:TOP_RESULTS]
    totals = log.totals()
    doc_runs = to_json(log)["runs"]
    return {
        "run_dir": str(run_dir), "workspace": str(log.workspace), "db": log.db,
        "totals": {**totals, "main_sessions": len(mains), "subagents": len(subs),
                   "turns": sum(r.num_turns for r in log.rows),
                   "retries": sum(max(r.attempts - 1, 0) for r in log.rows),
                   "handoffs": sum(len(r.retired) for r in log.rows),
                   "degraded_handoffs": sum(s["degraded_handoffs"] for s in steps)},
        "runs": [{k: v for k, v in run.items() if k != "rows"} for run in doc_runs],
        "steps": steps,
        "sessions": sessions,
        "subagents": [_subagent(s) for s in subs],
        "context": {"main_thread": _context(main_rounds),
                    "drops": [i + 1 for i in range(1, len(main_rounds))
                              if main_rounds[i] < 0.7 * main_rounds[i - 1]]},
        "cache": {
            "input_total": total_in, "cache_read": hits,
            "cache_creation": sum(t.cache_creation for t in everything),
            "uncached": sum(t.input_tokens for t in everything),
            "hit_rate": round(hits / total_in, 4) if total_in else None,
            "output_tokens": sum(t.output_tokens for t in everything),
            "thinking_tokens": sum(t.thinking_tokens for t in everything),
            "main": {"turns": sum(len(t.rounds) for t in mains),
                     "tool_calls": sum(len(t.calls) for t in mains),
                     "output_tokens": sum(t.output_tokens for t in mains)},
            "subagents": {"turns": sum(len(t.rounds) for t in subs),
                          "tool_calls": sum(len(t.calls) for t in subs),
                          "output_tokens": sum(t.output_tokens for t in subs)},
        },
        "top_results": [{"chars": r.chars, "tool": r.tool, "session_id": r.session_id,
                         "agent": r.agent, "at": r.at, "preview": r.preview} for r in results],
        "workbench": _workbench(Path(log.workspace)),
    }


def _store_url() -> str | None:
    """The configured session store (``--store`` / ``FLOWER_STORE_URL``), None: sessions.db."""
    from flower.stores.url import configured_url

    return configured_url()


def _has_tables(run_dir: Path) -> bool:
    """Is ``<run_dir>/sessions.db`` a session store (not just any SQLite file)?"""
    _, reader = SqliteReader.open(run_dir / DB_NAME)
    if reader is None:
        return False
    try:
        return reader.has_tables()
    finally:
        reader.close()

"""What ``flower log`` says about money and time: the task's caps and totals from the
ledger (``budget.json``), why a run stopped at a cap, and the spend of each worker dispatch.

The CLI reports a cost per *session* only (the step's ``cost_usd``); a worker's share is
inside it. To show it per dispatch, each subagent transcript's token usage is weighed at the
API's price ratios — cache reads a tenth of an input token, cache writes 1.25, output five
— and the session's cost is split by those weights. It is an estimate (shown with ``≈``);
the step's own cost stays the CLI's exact figure. Read-only, like the rest of ``runlog``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flower.core import ledger as _ledger
from flower.core.reconcile import unbooked
from flower.runlog.analysis import Transcript, load_details
from flower.runlog.model import owns, rows_by_session
from flower.stores.readers import open_reader

if TYPE_CHECKING:
    from flower.runlog.model import Row, RunLog

#: Weight of one token of each kind, relative to one uncached input token.
WEIGHTS = {"input_tokens": 1.0, "cache_creation": 1.25, "cache_read": 0.1,
           "output_tokens": 5.0}


@dataclass
class Dispatch:
    """One worker dispatch (a subagent transcript) of a row, and its estimated cost."""

    agent: str
    cost_usd: float
    rounds: int

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "cost_usd": round(self.cost_usd, 6),
                "rounds": self.rounds, "estimated": True}


def weight(t: Transcript) -> float:
    """A transcript's tokens, each kind at its price ratio."""
    return sum(float(getattr(t, name)) * w for name, w in WEIGHTS.items())


def caps(log: RunLog) -> dict[str, Any] | None:
    """The ledger as ``--json`` shows it (``None``: this run dir has none): the caps, the
    task's spend and working time, and the runs that stopped at a cap."""
    doc = _ledger.read(log.run_dir)
    if doc is None:
        return None
    spent, elapsed = _ledger.totals(doc)
    spent = round(spent + unbooked_usd(log, doc), 6)
    stopped = {run: e["stopped"] for run, e in doc["runs"].items() if e.get("stopped")}
    return {"budget_usd": doc["budget_usd"], "max_hours": doc["max_hours"],
            "spent_usd": spent, "elapsed_s": elapsed, "stopped": stopped}


def unbooked_usd(log: RunLog, doc: dict[str, Any]) -> float:
    """What a killed process paid for that its ledger entry misses, as the next wake will
    book it from the transcripts (core/reconcile.py) — counted here without writing, so
    ``flower log`` right after a kill -9 shows what was spent. 0 when the store is shut."""
    if not any(e.get("sessions") for e in doc["runs"].values()):
        return 0.0
    reader = open_reader(log.run_dir, schema=log.schema)[1]
    if reader is None:
        return 0.0
    try:
        found = unbooked(doc["runs"], reader.since)
    except reader.errors:
        return 0.0
    finally:
        reader.close()
    return sum(sum(sum(p.values()) for p in by_sid.values())
               * float(doc["runs"][run].get("rate") or 1.0) for run, by_sid in found.items())


def dispatches(log: RunLog) -> dict[int, list[Dispatch]]:
    """Per row (keyed by ``id(row)``), its worker dispatches in order of their start. Empty
    when the store holds no subagent transcripts (or none can be read)."""
    details = load_details(log, resume=False)
    out: dict[int, list[Dispatch]] = {}
    by_session = rows_by_session(log.rows)  # one pass, not one over every row per session
    for sid, detail in details.items():
        if not detail.subagents:
            continue
        rows = by_session.get(sid, [])
        if not rows:
            continue
        session_cost = sum(r.cost_usd for r in rows)
        total = weight(detail.main) + sum(weight(s) for s in detail.subagents)
        if total <= 0:
            continue
        for sub in sorted(detail.subagents, key=lambda s: s.first_at or 0.0):
            row = _row_at(rows, sub.first_at)
            out.setdefault(id(row), []).append(Dispatch(
                agent=sub.agent or "?", cost_usd=session_cost * weight(sub) / total,
                rounds=len(sub.rounds)))
    return out


def fill(log: RunLog) -> RunLog:
    """``log`` with its caps and every row's dispatches filled in (what ``flower log``
    shows); the manifest's figures are left as they are."""
    log.caps = caps(log)
    found = dispatches(log)
    for row in log.rows:
        row.dispatches = [d.to_json() for d in found.get(id(row), [])]
    return log


def _row_at(rows: list[Row], at: float | None) -> Row:
    """The row whose time window holds ``at`` (the last one when none does)."""
    for row in rows:
        if at is not None and row.started_at is not None and owns(row, at, rows):
            return row
    return rows[-1]

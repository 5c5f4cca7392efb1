"""What a killed process spent that its ledger entry does not show, read from transcripts.

Each process books every API call the moment the SDK streams it (``Ledger.call``), but a
kill -9 can fall between a response reaching the session store's mirror and its booking.
The transcript is the record of what was paid for: every assistant entry carries the
``message.usage`` of its response. So a process, before it first checks the caps, looks
at the sessions the other entries of the task's ledger have *open* — per session when that
process first drove it (``from``), the time from which no result has covered its calls
(``after``) and the message ids booked since (``ids``) — and books every call of those
transcripts that falls in such a window and that no entry has booked yet.

One response can be written as several assistant entries sharing its ``message.id`` (one
per content block), and a session's subagents write their own transcripts: calls are
folded by message id across all of them, each count at its largest. A call belongs to the
process that drove its session then (the latest ``from`` at or before it — one process
drives a session at a time), is booked only when it came after that window's ``after``,
and its id is booked with it: reconciling twice, or after the owner's own result, books
nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from flower.stores.readers import SYNTHETIC_MODEL, parse_timestamp
from flower.usage import call_cost

#: ``read(session_id, after)``: every transcript entry of the session (main and subagent
#: transcripts) written at ``after`` (unix time) or later; older ones may come too.
ReadSession = Callable[[str, float], Iterable[dict[str, Any]]]


@dataclass
class Call:
    """One API response as its transcript entries recorded it."""

    id: str
    model: str | None
    usage: dict[str, Any] = field(default_factory=dict)
    at: float | None = None  # the latest of its entries' timestamps


def _fold(into: dict[str, Any], usage: dict[str, Any]) -> None:
    """Every count of ``usage`` into ``into`` at its largest (nested dicts alike)."""
    for key, value in usage.items():
        if isinstance(value, dict):
            sub = into.get(key)
            if not isinstance(sub, dict):
                sub = into[key] = {}
            _fold(sub, value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            old = into.get(key)
            if not isinstance(old, (int, float)) or value > old:
                into[key] = value


def calls(entries: Iterable[Any]) -> dict[str, Call]:
    """The API calls among transcript entries, one per message id. The CLI's synthetic
    messages (outage notes) and API-error entries were no paid call and are skipped."""
    found: dict[str, Call] = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("type") != "assistant" or \
                entry.get("isApiErrorMessage"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        mid, usage, model = message.get("id"), message.get("usage"), message.get("model")
        if not isinstance(mid, str) or not mid or not isinstance(usage, dict) or \
                model == SYNTHETIC_MODEL:
            continue
        call = found.setdefault(mid, Call(mid, model if isinstance(model, str) else None))
        _fold(call.usage, usage)
        at = parse_timestamp(entry.get("timestamp"))
        if at is not None and (call.at is None or at > call.at):
            call.at = at
    return found


def booked(runs: dict[str, dict[str, Any]]) -> set[str]:
    """Every message id some entry has booked since its session's last result."""
    return {i for entry in runs.values() for s in (entry.get("sessions") or {}).values()
            for i in s.get("ids", [])}


def unbooked(runs: dict[str, dict[str, Any]], read: ReadSession, *, skip: str = ""
             ) -> dict[str, dict[str, dict[str, float]]]:
    """Per run id and session id, the calls (message id → list price) that fall in one of
    that entry's open windows and that no entry has booked. ``skip`` is the reading
    process's own entry: it books its own calls as they stream."""
    windows: dict[str, list[tuple[float, float, str]]] = {}
    for run_id, entry in runs.items():
        for sid, w in (entry.get("sessions") or {}).items():
            after = float(w["after"])
            windows.setdefault(sid, []).append((float(w.get("from", after)), after, run_id))
    seen = booked(runs)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for sid, wins in windows.items():
        if all(run_id == skip for _, _, run_id in wins):
            continue
        wins.sort()
        for call in calls(read(sid, min(after for _, after, _ in wins))).values():
            if call.id in seen or call.at is None or call.at < wins[0][0]:
                continue
            # the process that drove the session then: the latest to start before the call
            _, after, owner = [w for w in wins if w[0] <= call.at][-1]
            if owner == skip or call.at < after:
                continue
            out.setdefault(owner, {}).setdefault(sid, {})[call.id] = \
                call_cost(call.usage, call.model)
            seen.add(call.id)
    return out

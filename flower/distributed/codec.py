"""What crosses a Temporal boundary, as JSON: ``ctx``, events and step results.

Nothing here imports temporalio. The rules for ``ctx`` (see docs/distributed.md):

* every worker re-imports the target, so a key already in ``Workflow.context`` at import
  time is there on every worker anyway;
* what a step *adds or changes* travels to the next step's worker as JSON — a step's output
  (``ctx[step.name]``: the text, or what ``reduce`` returned), anything a gate or a
  callable prompt writes. Such a value must be JSON-serialisable (str, number, bool, None,
  lists and dicts of those). A value that is not is left behind and reported as a ``task``
  event (``texts.DIST_CTX_DROPPED``);
* flower's own keys: ``_sessions`` and ``_failed_at``/``_aborted``/``_woke`` travel;
  ``_results`` travels as manifest rows and becomes ``StepResult`` objects again;
  ``_runtime``, ``_on_event`` and ``_lineage`` are per process and never travel.
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flower.core.events import Event
    from flower.core.runtime import StepResult

LOCAL_KEYS = ("_runtime", "_on_event", "_lineage")  # never leave the process
EVENT_TEXT_MAX = 4000  # an event's text in the run's history; the manifest keeps the rest


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def result_row(result: StepResult) -> dict[str, Any]:
    """A ``StepResult`` as a plain dict (the manifest row without ``run``/``duration_s``)."""
    return {f.name: getattr(result, f.name) for f in fields(result)}


def result_from(row: dict[str, Any]) -> StepResult:
    from flower.core.runtime import StepResult

    names = {f.name for f in fields(StepResult)}
    return StepResult(**{k: v for k, v in row.items() if k in names})


def dump_ctx(ctx: dict[str, Any], base: dict[str, Any] | None = None) -> tuple[dict[str, Any],
                                                                               list[str]]:
    """``ctx`` as JSON-ready data, plus the keys left behind because they are not JSON.

    A key whose value is still the very object of ``base`` (the target's own
    ``Workflow.context``, re-created on every worker) is not a loss when left behind."""
    base = base or {}
    out: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in ctx.items():
        if key in LOCAL_KEYS:
            continue
        if key == "_results":
            out[key] = {name: result_row(r) if not isinstance(r, dict) else r
                        for name, r in value.items()}
            continue
        if _jsonable(value):
            out[key] = value
        elif base.get(key) is not value:
            dropped.append(key)
    return out, dropped


def load_ctx(data: dict[str, Any], into: dict[str, Any]) -> dict[str, Any]:
    """Overlay JSON ``data`` on ``into`` (the freshly imported target's context)."""
    for key, value in data.items():
        if key == "_results":
            into[key] = {name: result_from(row) for name, row in value.items()}
        else:
            into[key] = value
    return into


def event_to_json(ev: Event) -> dict[str, Any]:
    """An ``Event`` without ``raw``; payload values that are not JSON become strings."""
    payload = json.loads(json.dumps(ev.payload, ensure_ascii=False, default=str))
    text = ev.text if len(ev.text) <= EVENT_TEXT_MAX else ev.text[:EVENT_TEXT_MAX] + "…"
    return {"kind": ev.kind, "text": text, "tool": ev.tool, "payload": payload}


def event_from_json(data: dict[str, Any]) -> Event:
    from flower.core.events import Event

    return Event(data.get("kind", "unknown"), text=data.get("text", ""),
                 tool=data.get("tool", ""), payload=dict(data.get("payload") or {}))

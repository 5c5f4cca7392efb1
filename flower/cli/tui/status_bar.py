"""The bar under a run's input line: context, cost so far, elapsed, the tool running now.

Its own module, apart from ``terminal`` (which drives the run and shows the bar), because
it only reads events and the task's ledger and never acts on a run: it is tested on events
alone. ``flower.cli.tui.terminal.Status`` still names it (scripts and tests import it there).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.core.human import INBOX_NAME as INBOX_TOOL
from flower.core.human import TOOL_NAME as ASK_TOOL
from flower.usage import human_tokens

if TYPE_CHECKING:
    from flower.core.events import Event

__all__ = ["Status"]


class Status:
    """What the bottom bar shows: context, cost so far, elapsed, the tool running now —
    and with a cap, the task's spend and working time against it (``ledger``).

    ``stored_context(session_id)`` is the context a stored session last held: a step that
    resumes a session (a wake, above all) starts the bar there, not at 0, until its first
    answer brings a fresh reading."""

    def __init__(self, ledger: Any = None,
                 stored_context: Callable[[str], int] | None = None) -> None:
        self.started = time.monotonic()
        self.cost = 0.0
        self.context = 0
        self.tool = ""
        self.ledger = ledger
        self.stored_context = stored_context
        self._session = ""

    def update(self, ev: Event) -> None:
        p = ev.payload
        if ev.kind == "result" and not p.get("subagent"):
            self.cost += float(p.get("cost_usd") or 0.0)
        if p.get("subagent"):
            return
        if ev.kind == "system" and ev.text == "init" and p.get("session_id"):
            self._seed(str(p["session_id"]))
        if p.get("context"):
            self.context = int(p["context"])
        if ev.kind == "tool_call":
            # a human tool by what it means: its arguments (the question) are on screen
            self.tool = _HUMAN_TOOLS.get(ev.tool or "") or f"{ev.tool} {ev.text}"[:60]
        elif ev.kind in ("tool_result", "result"):
            self.tool = ""

    def _seed(self, session_id: str) -> None:
        """A session starts (or resumes): its stored context, if the store has one."""
        if session_id == self._session or self.stored_context is None:
            return
        self._session = session_id
        try:
            stored = int(self.stored_context(session_id) or 0)
        except Exception:  # the bar is a courtesy: a store hiccup never reaches the run
            return
        if stored > 0:
            self.context = stored

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def line(self) -> str:
        elapsed = int(time.monotonic() - self.started)
        parts = [self._caps_line() or texts.STATUS.format(
            context=human_tokens(self.context), cost=self.cost,
            elapsed=f"{elapsed // 60}:{elapsed % 60:02d}")]
        if self.tool:
            parts.append(f"* {self.tool}")
        return "  - " + " · ".join(parts)

    def _caps_line(self) -> str:
        """With a cap: the task's totals (earlier wakes included) against it; "" without."""
        from flower.core.ledger import fmt_duration

        lg = self.ledger
        if lg is None or (lg.budget_usd is None and lg.max_hours is None):
            return ""
        elapsed = fmt_duration(lg.elapsed_s)
        if lg.max_s is not None:
            elapsed += f" / {fmt_duration(lg.max_s)}"
        context = human_tokens(self.context)
        if lg.budget_usd is None:
            return texts.STATUS.format(context=context, cost=lg.total_usd, elapsed=elapsed)
        return texts.STATUS_BUDGET.format(context=context, cost=lg.total_usd,
                                          cap=lg.budget_usd, elapsed=elapsed)


_HUMAN_TOOLS = {ASK_TOOL: texts.STATUS_TOOL_ASK, INBOX_TOOL: texts.STATUS_TOOL_INBOX}

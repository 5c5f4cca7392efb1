"""The spending cap and the time cap inside a step: what an attempt may spend, when its
turn is stopped, and the question a reached cap asks.

One work step can be the whole ten hours, so a cap checked only between steps would hold
nothing. Each attempt gets what is left of the budget as the CLI's own ``max_budget_usd``
(the CLI stops the session after the request that crosses it), and a clock stops the turn
when the time cap passes the way a Ctrl-C does (``Stopper``: the CLI ends the turn; the
session stays resumable). Then the step loop asks through the human channel whether to
raise the cap; an answer resumes the same session, silence stops the step with ``budget``
or ``time`` as its error. The numbers live in the ledger (``ledger.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flower import texts
from flower.core.events import Event
from flower.core.ledger import BUDGET, TIME, Ledger, fmt_duration, raised_cap

if TYPE_CHECKING:
    from flower.core.attempt import EventSink
    from flower.core.interrupts import Stopper
    from flower.core.runtime import StepResult

#: The CLI's result subtype when it stopped on ``--max-budget-usd``.
CLI_BUDGET_SUBTYPE = "error_max_budget_usd"
#: How often the clock looks at the time cap (its answer is checked against the ledger).
TICK_S = 0.2


def attempt_budget(own: float | None, ledger: Ledger) -> float | None:
    """The ``max_budget_usd`` an attempt runs with: the spec's own, or what is left of the
    run's budget, whichever is smaller. Never 0 or less: an attempt only starts with money
    left (the step loop checks first), and the CLI treats 0 as "no limit"."""
    left = ledger.left_usd()
    if left is None:
        return own
    left = max(left, 0.0001)
    return left if own is None else min(own, left)


def stopped_on_budget(ev: Event, ledger: Ledger) -> bool:
    """This result is the CLI stopping on the *run's* budget (the spec's own smaller cap
    is the spec's business and keeps its old error)."""
    return ev.kind == "result" and getattr(ev.raw, "subtype", None) == CLI_BUDGET_SUBTYPE \
        and ledger.exceeded() == BUDGET


def stamped(ev: Event, ledger: Ledger) -> Event:
    """A result event with the task's totals added (``total_usd``, ``budget_usd``), so a
    cost line can say how much of the cap is gone without knowing the ledger."""
    if ev.kind != "result" or ev.payload.get("subagent"):
        return ev
    ev.payload["total_usd"] = ledger.total_usd
    ev.payload["budget_usd"] = ledger.budget_usd
    return ev


async def clock(ledger: Ledger, stop: Stopper, result: StepResult, hit: list[str]) -> None:
    """Stop the turn once the time cap has passed (and the session has an id to resume);
    ``hit`` gets ``"time"`` so the attempt can tell this stop from a human's."""
    import anyio

    while True:
        left = ledger.left_s()
        if left is None:
            return
        if left <= 0 and result.session_id:
            break
        await anyio.sleep(min(TICK_S, max(left, 0.01)))
    hit.append(TIME)
    await stop.now()


def question(which: str, ledger: Ledger) -> tuple[str, dict[str, Any]]:
    """The question line and the ``cap`` event's payload for a reached cap."""
    used, cap = ledger.reading(which)
    if which == BUDGET:
        text = texts.CAP_BUDGET_QUESTION.format(cap=cap, spent=used)
    else:
        text = texts.CAP_TIME_QUESTION.format(cap=fmt_duration(cap * 3600),
                                              spent=fmt_duration(used * 3600))
    return text, {"which": which, "spent": used, "cap": cap}


async def ask_to_raise(which: str, ledger: Ledger, channel: Any, emit: EventSink) -> bool:
    """Tell the UI (the ``cap`` event), then ask whether to raise the cap; True when an
    answer raised it. No channel, no answer, ``停下`` or an unclear answer: False."""
    text, payload = question(which, ledger)
    emit(Event("cap", text=text, payload=payload))
    if channel is None:
        return False
    with ledger.paused():
        asked = await channel.ask(text, list(texts.CAP_OPTIONS))
    if getattr(asked, "state", "") != "answered":
        return False
    new = raised_cap(str(asked.answer), payload["cap"], stop_words=(texts.CAP_OPTIONS[-1],))
    if new is None:
        return False
    ledger.raise_cap(which, new)
    emit(Event("task", text=texts.CAP_RAISED[which].format(
        cap=new if which == BUDGET else fmt_duration(new * 3600)),
        payload={"cap_raised": which, "cap": new}))
    return True


async def within_caps(ledger: Ledger, channel: Any, result: StepResult,
                      emit: EventSink) -> bool:
    """Before each attempt: under both caps, or a cap raised by the human's answer.
    False stops the step with ``budget``/``time`` as its error."""
    while True:
        which = ledger.exceeded()
        if which is None:
            return True
        if not await ask_to_raise(which, ledger, channel, emit):
            result.ok, result.error = False, which
            if which not in result.errors:
                result.errors.append(which)
            ledger.stop(which)
            return False


def continue_hint(which: str, ledger: Ledger) -> str:
    """The one line a run stopped at a cap ends with: how to go on (twice the cap)."""
    used, cap = ledger.reading(which)
    if which == BUDGET:
        return texts.CAP_STOPPED_BUDGET.format(cap=cap, spent=used, more=_nice(cap * 2))
    return texts.CAP_STOPPED_TIME.format(cap=fmt_duration(cap * 3600),
                                         more=_nice(cap * 2))


def _nice(value: float) -> str:
    """``40`` rather than ``40.0``; two decimals at most."""
    return f"{value:.2f}".rstrip("0").rstrip(".")

"""When a step's session is retired for a successor, and how the successor gets its prompt.

``handoff.py`` knows the handoff *document* (its sections, the degraded stand-in, the file
under ``notes/``, the overflow calibration). This module holds the per-step *decisions* of
one ``Runtime``: the context watermark of the current generation and its one warning, when
a round counts as "context full", the brake on unproductive generations (:class:`Brake`),
the writing round (the retiring session resumed once more to write its document) and the
successor's prompt. It is
separate from ``runtime.py`` because this state lives for one step and is read at every
message boundary by the attempt, while the step loop only asks "is a handoff due?".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.core.events import ContextMeter, Event
from flower.core.handoff import (
    HANDOFF_PROMPT,
    Handoff,
    degraded,
    fmt_tokens,
    fmt_window,
    is_overflow,
    remember_overflow,
    save_document,
)
from flower.errors import one_line

if TYPE_CHECKING:
    from pathlib import Path

    from flower.core.agent import AgentSpec, HandoffPolicy
    from flower.core.attempt import EventSink
    from flower.core.runtime import Runtime, StepResult

log = logging.getLogger("flower.runtime")

#: ``StepResult.error`` of a round the watermark stopped: the session hands off.
HANDOFF_DUE = "context-full-handoff"
#: A generation that starts within this share of the line below it had no room to work: the
#: successor's startup alone (system prompt, workbench index, handoff document) used it up.
START_MARGIN = 0.25
#: A generation with fewer main-thread API calls than this between two handoffs made no
#: progress worth a successor (a productive one makes dozens: 41 on a 60K window).
MIN_ROUNDS = 3
#: How many of the last generations the brake's error lists.
SHOWN = 6


@dataclass(frozen=True)
class Generation:
    """What one generation of a step measured by the time it handed off: the main thread's
    first context reading, its number of API calls, and whether its document degraded."""

    start: int
    rounds: int
    degraded: bool = False

    def stalled(self, at: int) -> bool:
        """Started within :data:`START_MARGIN` of the line ``at``, or handed off after fewer
        than :data:`MIN_ROUNDS` calls — known before the writing round."""
        return self.start >= at - int(at * START_MARGIN) or self.rounds < MIN_ROUNDS

    def unproductive(self, at: int) -> bool:
        """Stalled, or its handoff degraded (the successor starts with nothing to go on)."""
        return self.degraded or self.stalled(at)


@dataclass
class Brake:
    """Stops a runaway, not a long step: it counts *unproductive* generations in a row and
    a productive one resets the count, so a ten-hour step may hand off any number of times
    (its budget bounds that), while a line below the startup floor — every successor
    over it at once — stops after ``limit`` handoffs."""

    limit: int
    run: list[Generation] = field(default_factory=list)

    def stops(self, gen: Generation, at: int) -> bool:
        """Whether the handoff ``gen`` is due for must not happen: ``limit`` unproductive
        handoffs in a row already, and this generation stalled too."""
        return len(self.run) >= self.limit and gen.stalled(at)

    def record(self, gen: Generation, at: int) -> None:
        """Count a generation that handed off (its document written or degraded)."""
        if gen.unproductive(at):
            self.run.append(gen)
        else:
            self.run.clear()

    def reason(self, gen: Generation, lim: HandoffPolicy) -> str:
        """The error of a stop: the count, and the measured start and calls of the last
        generations, so a reader sees *why* they were unproductive."""
        shown = [*self.run, gen][-SHOWN:]
        gens = "; ".join(
            (texts.HANDOFF_BRAKE_GEN_DEGRADED if g.degraded else texts.HANDOFF_BRAKE_GEN)
            .format(start=fmt_tokens(g.start), rounds=g.rounds) for g in shown)
        return texts.HANDOFF_BRAKE.format(
            n=len(self.run), limit=self.limit, gens=gens, at=fmt_window(lim.at),
            margin=fmt_window(int(lim.at * START_MARGIN)), rounds=MIN_ROUNDS,
            window=fmt_window(int(lim.window or 0)))


class HandoffControl:
    """The handoff state of the step a ``Runtime`` is running: thresholds pinned at step
    start, the main thread's context watermark of this generation, its one warning, the
    writing-round flag, the run of degraded handoffs, the brake with this generation's
    start and call count, and a successor not yet announced."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.limits: HandoffPolicy = rt.handoff
        self.ctx = 0
        self.warned = False
        self.writing = False
        self.degraded_run = 0
        self.unannounced = False  # a handoff successor not yet in the store (nor lineage)
        self.brake = Brake(self.limits.max_generations)
        self.meter = ContextMeter()  # this generation's main-thread API calls
        self.start = 0  # … and its first context reading

    def begin_step(self) -> None:
        """The watermark and the brake are per step: step 2 must not inherit step 1's reading
        and hand off, nor its run of unproductive generations."""
        rt = self.rt
        self.ctx, self.warned, self.degraded_run = 0, False, 0
        self.unannounced = False
        self.meter.reset()
        self.start = 0
        try:
            self.limits = rt.handoff.resolved(rt._config()) if rt.handoff.enabled \
                else rt.handoff
        except Exception as exc:  # a broken override must not break the step
            log.warning("flower: could not resolve the handoff window: %s", exc)
            self.limits = rt.handoff
        self.brake = Brake(self.limits.max_generations)

    def due(self, result: StepResult, round_errors: list[str]) -> bool:
        """Whether this round ended because the context is full: the watermark stopped it,
        or the API refused the prompt as too long. Only *this round's* errors count — one
        overflow early in a step must not turn every later failure into a handoff."""
        if result.error == HANDOFF_DUE:
            return True
        return self.rt.handoff.enabled and bool(result.session_id) and is_overflow(
            result.error, *round_errors)

    def over_watermark(self, result: StepResult) -> bool:
        """Checked at every message boundary; the writing round itself is exempt (else its
        first message trips it again and every handoff degrades)."""
        return (self.rt.handoff.enabled and not self.writing and bool(result.session_id)
                and self.ctx >= self.limits.at)

    def track(self, ev: Event, result: StepResult, emit: EventSink) -> None:
        """Raise the main thread's watermark; warn once per generation at ``warn_at``.
        Subagent context never counts: the criterion is the main thread's own prompt."""
        p = ev.payload
        if not self.rt.handoff.enabled or self.writing or p.get("subagent") or \
                ev.kind not in ("text", "thinking", "tool_call", "tool_result"):
            return
        ctx = p.get("context")
        if not ctx:
            return
        self.ctx = max(self.ctx, int(ctx))
        if self.meter.observe(ev) is not None and self.meter.calls == 1:
            self.start = int(ctx)
        lim = self.limits
        if not self.warned and self.ctx >= lim.warn_at:
            self.warned = True
            window = int(lim.window or 0)
            emit(Event("handoff", text=texts.HANDOFF_NEAR.format(
                used=fmt_tokens(self.ctx), window=fmt_window(window),
                left=fmt_window(max(0, lim.at - self.ctx) // 1000 * 1000)),
                payload={"phase": "near", "step": result.step, "context": self.ctx,
                         "window": window, "at": lim.at}))

    def calibrate(self, used: int) -> None:
        """An overflow at ``used`` tokens: remember it as this endpoint's window and, unless
        the window was pinned (argument or ``FLOWER_WINDOW``), use it from now on — else a
        1M guess on a 200K gateway degrades every generation of this step."""
        rt = self.rt
        remember_overflow(used, rt._config())
        try:
            self.limits = rt.handoff.resolved(rt._config())
        except Exception as exc:
            log.warning("flower: could not resolve the handoff window: %s", exc)

    async def hand_off(self, spec: AgentSpec, prompt: str, result: StepResult,
                       emit: EventSink) -> str | None:
        """Retire the current session: get its handoff document (written by it, or the
        degraded stand-in after an overflow), save it, and return the successor's prompt.
        ``None`` means the step stops (the brake, repeated degradation)."""
        forced = result.error != HANDOFF_DUE  # the API refused: nothing more fits
        used = self.ctx or result.context
        if forced:
            self.calibrate(used)
        lim = self.limits
        window = int(lim.window or 0)
        gen = Generation(start=self.start, rounds=self.meter.calls)
        if self.brake.stops(gen, lim.at):
            result.error = self.brake.reason(gen, lim)
            result.errors.append(result.error)
            return None
        base = {"step": result.step, "context": used, "window": window}
        doc, why = await self._document(spec, prompt, result, emit, forced=forced, base=base)
        if why is not None:
            result.errors.append(texts.HANDOFF_NOTE_DEGRADED.format(why=why))
            self.degraded_run += 1
        else:
            self.degraded_run = 0
        self.brake.record(replace(gen, degraded=why is not None), lim.at)
        doc, path = self._save(result.step, doc)
        emit(Event("handoff", text=_done_text(why, path), payload={
            "phase": "done", **base, "degraded": why is not None,
            "path": str(path) if path is not None else "", "sections": doc.sections}))
        if self.degraded_run >= 2:
            result.error = texts.HANDOFF_STOP_DEGRADED.format(n=self.degraded_run)
            result.errors.append(result.error)
            return None
        return self._successor(result, doc)

    async def _document(self, spec: AgentSpec, prompt: str, result: StepResult,
                        emit: EventSink, *, forced: bool,
                        base: dict[str, Any]) -> tuple[Handoff, str | None]:
        """The document and, for a degraded one, why: after an overflow nothing more fits,
        so no writing round is tried."""
        name, used, window = result.step, base["context"], base["window"]
        if forced:
            return degraded(name, prompt, why=texts.HANDOFF_WHY_OVERFLOW), \
                texts.HANDOFF_WHY_OVERFLOW
        emit(Event("handoff", text=texts.HANDOFF_WRITING.format(
            used=fmt_tokens(used), window=fmt_window(window)),
            payload={"phase": "writing", **base}))
        doc, why = await self._write(spec, result, used, window)
        if why is not None:
            doc = degraded(name, prompt, why=why)
        return doc, why

    async def _write(self, spec: AgentSpec, result: StepResult, used: int,
                     window: int) -> tuple[Handoff, str | None]:
        """The writing round: the *same* session, resumed with ``HANDOFF_PROMPT``; no budget
        cap, no UI stream, exempt from the watermark. Returns the parsed document and
        ``None``, or the reason it could not be used."""
        from flower.core.runtime import StepResult  # runtime.py imports this module

        scratch = StepResult(step=result.step, session_id=result.session_id)
        ask = HANDOFF_PROMPT.format(used=fmt_tokens(used), window=fmt_window(window))
        self.writing = True
        try:
            await self.rt._attempt(replace(spec, max_budget_usd=None), ask, scratch,
                                   resume=result.session_id, fork=False, resume_at=None,
                                   emit=lambda ev: None)
        except Exception as exc:
            return Handoff(step=result.step), type(exc).__name__
        finally:
            self.writing = False
            result.cost_usd = round(result.cost_usd + scratch.cost_usd, 6)
            result.num_turns += scratch.num_turns
        if not scratch.ok:
            if is_overflow(scratch.error, *scratch.errors):
                self.calibrate(used)
                return Handoff(step=result.step), texts.HANDOFF_WHY_OVERFLOW
            why = one_line(scratch.error or texts.HANDOFF_WHY_UNKNOWN, 120)
            return Handoff(step=result.step), why
        if not scratch.text.strip():
            return Handoff(step=result.step), texts.HANDOFF_WHY_EMPTY
        doc = Handoff.parse(scratch.text, step=result.step)
        if not doc.complete():
            return doc, texts.HANDOFF_WHY_MISSING.format(names="、".join(doc.missing()))
        return doc, None

    def _save(self, name: str, doc: Handoff) -> tuple[Handoff, Path | None]:
        """Save ``doc`` under the workbench's notes; the successor reads exactly the file a
        person may edit, so a complete saved file wins over ``doc``."""
        workbench = self.rt.workbench
        path = save_document(workbench.notes, name, doc) if workbench else None
        if path is not None:
            saved = Handoff.load(path)
            if saved is not None and saved.complete():
                doc = saved
        return doc, path

    def _successor(self, result: StepResult, doc: Handoff) -> str:
        """Retire the session in ``result`` and start a new generation; the successor's
        prompt carries words a human said during the writing round."""
        if result.session_id:
            result.retired.append(result.session_id)
        result.session_id = None  # the successor's id fires on_session (lineage follows) …
        self.unannounced = True  # … once the store holds it (see Runtime._note_session)
        self.ctx, self.warned = 0, False
        self.meter.reset()
        self.start = 0
        successor = doc.prompt_block()
        words = self.rt._interrupt.take()  # said during the writing round: for the successor
        if words:
            successor += "\n\n" + texts.HANDOFF_HUMAN_WORDS.format(words=words)
        return successor


def _done_text(why: str | None, path: Path | None) -> str:
    if why is not None:
        return texts.HANDOFF_DONE_DEGRADED
    if path is not None:
        return texts.HANDOFF_DONE.format(path=path)
    return texts.HANDOFF_DONE_NO_FILE

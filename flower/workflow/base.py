"""``Step`` and ``Workflow``: a long run as ordered steps that share state through ``ctx``.

One step is one ``Runtime.run`` — one session (or a chain of them across handoffs) — with
an acceptance gate and a failure rule. Steps chain sessions three ways (fresh, ``resume_from``,
``resume_from`` + ``fork``); across processes, ``continuous=True`` resumes each step's last
session recorded in ``lineage.json`` the moment it was first known, so a killed run picks up
where it stopped.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from flower import texts
from flower.core.agent import AgentSpec
from flower.core.checkpoints import Position
from flower.core.events import Event
from flower.core.ledger import CAP_ERRORS
from flower.errors import one_line

if TYPE_CHECKING:
    from flower.core.lineage import Lineage
    from flower.core.runtime import Runtime, StepResult

Ctx = dict[str, Any]
ON_FAIL = ("stop", "skip", "continue")
#: ctx keys that describe one ``Workflow.run`` only; cleared when the next run starts
RUN_SCOPED = ("_failed_at", "_aborted")


class SessionMemory(Protocol):
    """Where a step's session ids go the moment they are known — a run killed mid-step
    (SIGHUP, a dead worker) can then resume that session instead of starting over.
    ``Lineage`` (lineage.json, local runs) and a Temporal activity's heartbeat both are one.
    """

    def remember(self, name: str, sid: str, /) -> None:
        """Step ``name`` is now in session ``sid``."""


class StepAbort(Exception):
    """Raised from a gate: another round will not help — stop retrying this step now."""


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


@dataclass
class Step:
    """A declaration: which agent runs, with what prompt, accepted by which gate."""

    name: str
    spec: AgentSpec
    prompt: str | Callable[[Ctx], str]
    resume_from: str | None = None
    fork: bool = False
    retries: int = 0
    gate: Callable[[StepResult, Ctx], Any] | None = None
    on_fail: str = "stop"
    when: Callable[[Ctx], Any] | None = None
    on_reject: Callable[[StepResult, Ctx], Any] | None = None
    resume_prompt: str | Callable[[Ctx], str] | None = None
    reduce: Callable[[StepResult, Ctx], Any] | None = None
    #: Returns the step's finished output when its frozen document is already complete
    #: (e.g. a confirmed 需求.md); the step is then skipped whole and that value still
    #: flows into ``ctx[name]``. ``None`` means "not done yet, run it". May be async, like
    #: ``when`` and ``gate``.
    frozen: Callable[[Ctx], Any] | None = None
    #: Why the gate said no, in words for the person reading the abort line and
    #: ``flower log``; called once, when the last attempt was rejected. ``None`` (or an
    #: empty answer) books the generic ``texts.GATE_REJECTED``.
    explain: Callable[[StepResult, Ctx], str] | None = None
    #: The file this step freezes (``需求.md``, ``目标.md``), if any: a rewind to before
    #: the step moves it aside so the step runs again (flower.core.checkpoints).
    document: str | None = None

    def __post_init__(self) -> None:
        if self.name.startswith("_"):
            raise ValueError(f"step name {self.name!r}: names starting with '_' are reserved "
                             "for flower's own ctx keys")
        if self.on_fail not in ON_FAIL:
            raise ValueError(f"step {self.name!r}: on_fail must be one of {', '.join(ON_FAIL)},"
                             f" got {self.on_fail!r}")

    def render(self, ctx: Ctx, *, resuming: bool = False) -> str:
        """The prompt to send: ``resume_prompt`` when continuing a carried session, if set."""
        source = self.resume_prompt if resuming and self.resume_prompt is not None \
            else self.prompt
        return source(ctx) if callable(source) else source


def _no_conversation(result: StepResult) -> bool:
    """The CLI found nothing to resume under that id (a session only named in lineage)."""
    return not result.ok and "no conversation found" in (result.error or "").lower()


def _label(step: Step, attempt: int) -> str:
    """Manifest name of an attempt: ``name``, ``name#retryN`` or ``name#roundN``."""
    if attempt == 0:
        return step.name
    return f"{step.name}#round{attempt + 1}" if step.on_reject else f"{step.name}#retry{attempt}"


@dataclass
class Workflow:
    """Ordered steps plus the ``ctx`` they share. ``continuous`` carries sessions across runs."""

    steps: list[Step]
    name: str = "workflow"
    context: Ctx = field(default_factory=dict)
    channel: Any = None
    workbench: Any = None
    continuous: bool = True
    #: Caps for the whole task (every step, every wake until the lineage is new): dollars
    #: and hours. ``None`` keeps what the run dir's ledger recorded (core/ledger.py).
    budget: float | None = None
    max_hours: float | None = None

    #: What the caller's ``on_event`` raised, one line each: a broken UI callback must not
    #: stop the run it displays (``HumanChannel.ui_errors`` does the same for the channel).
    ui_errors: list[str] = field(default_factory=list, init=False, repr=False)

    def shielded(self, on_event: Callable[[Event], None] | None
                 ) -> Callable[[Event], None] | None:
        """``on_event`` wrapped so that its exceptions land in ``ui_errors`` instead of
        escaping the step (the Runtime shields the events it emits itself; this covers the
        ones the workflow emits: ``step``, a send-back ``retry``, a judge's ``task``)."""
        if on_event is None or getattr(on_event, "_shield_of", None) is self:
            return on_event

        def sink(ev: Event) -> None:
            try:
                on_event(ev)
            except Exception as exc:
                self.ui_errors.append(one_line(exc))

        sink._shield_of = self  # type: ignore[attr-defined]
        return sink

    async def run(
        self,
        runtime: Runtime,
        *,
        on_event: Callable[[Event], None] | None = None,
        on_step: Callable[[Step, StepResult], None] | None = None,
    ) -> Ctx:
        """Run every step in order; returns ``ctx``. Success ⇔ ``"_failed_at" not in ctx``."""
        ctx = self.context
        for key in RUN_SCOPED:  # a second run on this object must not report the first's end
            ctx.pop(key, None)
        ctx["_runtime"] = runtime
        if self.channel is not None and on_event is not None and \
                getattr(self.channel, "on_event", None) is None:
            self.channel.on_event = on_event  # the channel shields (and collects) on its own
        on_event = self.shielded(on_event)
        ctx["_on_event"] = on_event
        sessions: dict[str, str] = ctx.setdefault("_sessions", {})
        ctx.setdefault("_results", {})
        lineage = self._open_lineage(runtime, ctx, sessions)
        self._open_ledger(runtime, ctx, lineage)
        for index, step in enumerate(self.steps, 1):
            if not await self.run_step(step, index, runtime, ctx, lineage,
                                       on_event=on_event, on_step=on_step):
                break
        return ctx

    def position(self, index: int) -> Position:
        """Where step ``index`` sits, as a checkpoint records it for a later rewind."""
        return Position(index=index, order=[s.name for s in self.steps],
                        documents={s.name: s.document for s in self.steps if s.document})

    async def run_step(
        self,
        step: Step,
        index: int,
        runtime: Runtime,
        ctx: Ctx,
        lineage: SessionMemory | None = None,
        *,
        on_event: Callable[[Event], None] | None = None,
        on_step: Callable[[Step, StepResult], None] | None = None,
    ) -> bool:
        """Step ``index`` (1-based) of this workflow, whole: ``when``, ``frozen``, then its
        attempts with gate, ``on_reject`` and ``on_fail``. False means the workflow stops.

        ``run`` calls it once per step and a Temporal worker calls it for the one step its
        activity runs, so both honour the same rules. ``lineage`` is told each session id
        of the step the moment it is known; ``None`` records nothing.
        """
        if hasattr(runtime, "checkpoint"):  # a duck-typed runtime needs only run()
            runtime.position = self.position(index)
        raw, on_event = on_event, self.shielded(on_event)
        if raw is not None and ctx.get("_on_event") is raw:  # a judge's gate emits through it
            ctx["_on_event"] = on_event
        if step.when is not None and not await _maybe_await(step.when(ctx)):
            return True
        if step.frozen is not None:
            done = await _maybe_await(step.frozen(ctx))
            if done is not None:
                ctx[step.name] = done
                if on_event is not None:
                    on_event(Event("step", text=step.name, payload={
                        "index": index, "total": len(self.steps), "resumed": False,
                        "frozen": True, "woke": ctx.get("_woke", 1)}))
                return True
        return await self._attempts(step, index, runtime, ctx, lineage, on_event, on_step)

    def _open_ledger(self, runtime: Runtime, ctx: Ctx, lineage: Lineage | None) -> None:
        """The caps hold for the task the lineage is: a new lineage (first run, ``--new``)
        starts the spend from zero. The channel answers the cap question."""
        ledger = getattr(runtime, "ledger", None)  # a test fake need not have one
        if ledger is not None:
            if lineage is not None and ctx.get("_woke") == 1:
                ledger.reset()
            ledger.set_caps(budget=self.budget, max_hours=self.max_hours)
        if self.channel is not None and getattr(runtime, "channel", False) is None:
            runtime.channel = self.channel

    def _open_lineage(self, runtime: Runtime, ctx: Ctx,
                      sessions: dict[str, str]) -> Lineage | None:
        run_dir = getattr(runtime, "run_dir", None)
        workspace = getattr(runtime, "workspace", None)
        if not (self.continuous and run_dir and workspace):
            return None
        from flower.core.lineage import Lineage

        has = getattr(runtime, "has_session", None)
        lineage = Lineage.open(run_dir, workspace, has_session=has,
                               book=getattr(runtime, "book", None))
        ctx["_lineage"] = lineage
        ctx["_woke"] = lineage.bump()
        for name, sid in lineage.steps.items():
            sessions.setdefault(name, sid)
        return lineage

    async def _attempts(self, step: Step, index: int, runtime: Runtime, ctx: Ctx,
                        lineage: SessionMemory | None,
                        on_event: Callable[[Event], None] | None,
                        on_step: Callable[[Step, StepResult], None] | None) -> bool:
        """The step's attempt loop (it is not skipped); returns False when the workflow
        must stop."""
        sessions: dict[str, str] = ctx.setdefault("_sessions", {})
        carried = False
        refork: str | None = None  # the source to fork after all, if the own fork is gone
        own = sessions.get(step.name) if self.continuous else None
        if step.resume_from is not None and step.fork and own:
            # the fork already happened in an earlier run (killed mid-way, say): continue the
            # forked session and its progress instead of forking the source a second time
            resume, fork, carried = own, False, True
            refork = sessions.get(step.resume_from)
        elif step.resume_from is not None:
            resume = sessions.get(step.resume_from)
            if not resume:
                raise ValueError(
                    f"step {step.name!r}: resume_from={step.resume_from!r} has no session "
                    "(it was skipped, never ran, or failed before a session existed)")
            fork = step.fork
        else:
            resume = own
            carried = bool(resume)
            fork = False
        prompt = step.render(ctx, resuming=carried)
        if on_event is not None:
            on_event(Event("step", text=step.name, payload={
                "index": index, "total": len(self.steps), "resumed": carried,
                "woke": ctx.get("_woke", 1)}))

        result: StepResult | None = None
        passed = False
        for attempt in range(step.retries + 1):
            result = await self._attempt(step, attempt, runtime, prompt, resume, fork,
                                         lineage, on_event)
            if result.error in CAP_ERRORS:  # nobody raised the cap: no more rounds
                break
            if refork and attempt == 0 and _no_conversation(result):
                # killed before its transcript reached the store: nothing to lose, fork anew
                prompt, resume, fork = step.render(ctx), refork, True
                result = await self._attempt(step, attempt, runtime, prompt, resume, fork,
                                             lineage, on_event)
            try:
                passed = result.ok and (step.gate is None
                                        or bool(await _maybe_await(step.gate(result, ctx))))
            except StepAbort as exc:
                ctx["_aborted"] = str(exc)
                passed = False
                break
            if passed:
                break
            # the next attempt: resume the rejected session with what is missing, or restart
            feedback = ""
            if step.on_reject is not None and result.ok and result.session_id:
                feedback = await _maybe_await(step.on_reject(result, ctx)) or ""
            if feedback:
                prompt, resume, fork = feedback, result.session_id, False
                if on_event is not None and attempt < step.retries:  # only if one follows
                    on_event(Event("retry", text=texts.SENT_BACK.format(
                        step=step.name, round=attempt + 2), payload={
                        "step": step.name, "attempt": attempt + 1, "source": "reject"}))
            # else: same prompt/resume/fork as the first attempt (locals; the Step is untouched)

        assert result is not None
        if not passed and result.ok:  # the agent finished but the gate (or an abort) said no
            await _book_rejected(step, result, runtime, ctx)
        ctx.setdefault("_results", {})[step.name] = result
        if on_step is not None:
            on_step(step, result)
        if result.session_id:
            sessions[step.name] = result.session_id
            if lineage is not None:
                lineage.remember(step.name, result.session_id)
        if passed:
            ctx[step.name] = step.reduce(result, ctx) if step.reduce else result.text
            return True
        if step.on_fail == "continue":
            ctx[step.name] = result.text
            return True
        if step.on_fail == "skip":
            return True
        ctx["_failed_at"] = step.name
        return False

    @staticmethod
    async def _attempt(step: Step, attempt: int, runtime: Runtime, prompt: str,
                       resume: str | None, fork: bool, lineage: SessionMemory | None,
                       on_event: Callable[[Event], None] | None) -> StepResult:
        """``runtime.run`` with the lineage hook attached for exactly this call.

        The hook records the session the moment its id is known (a SIGHUP may come before
        the step ends) and is detached before the gate runs: a judge dispatched from the
        gate shares this Runtime and must never enter the lineage.
        """
        # ``on_session`` is optional: the original flower documents a test fake that has
        # only ``run`` and ``has_session``; then the session is remembered after the call
        hooked = lineage is not None and hasattr(runtime, "on_session")
        previous = runtime.on_session if hooked else None
        if hooked:
            runtime.on_session = lambda sid: lineage.remember(step.name, sid)
        try:
            return await runtime.run(step.spec, prompt, step_name=_label(step, attempt),
                                     resume=resume, fork=fork, on_event=on_event)
        finally:
            if hooked:
                runtime.on_session = previous


async def _book_rejected(step: Step, result: StepResult, runtime: Runtime, ctx: Ctx) -> None:
    """A result the gate refused is a failed step: ``ok=False`` with the reason in words,
    in ``ctx["_results"]`` and in the manifest row alike — otherwise the abort line has
    nothing to say and ``flower log`` books the step as a success."""
    why = ctx.get("_aborted") or ""
    stopped = getattr(getattr(runtime, "ledger", None), "stopped", None)
    if stopped in CAP_ERRORS:  # the gate (a judge) stopped at a cap: the row says which
        why = stopped
    if not why and step.explain is not None:
        why = await _maybe_await(step.explain(result, ctx)) or ""
    result.ok = False
    result.error = why or texts.GATE_REJECTED.format(n=step.retries + 1)
    rebook = getattr(runtime, "rebook", None)  # a test double may have none
    if rebook is not None:
        rebook(result)

"""One attempt of a step: one CLI session, from its options to the folded result.

Kept apart from ``runtime.py`` because this is the only code that talks to the SDK client
message by message: it builds the options, connects, streams every message into events and
into the ``StepResult``, stops the turn when it must (a fatal API retry, a full context, a
human's interrupt) and always disconnects. ``Runtime.run`` only decides what the *next*
attempt should be; it never sees an SDK message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.core.agent import (
    AgentSpec,
    CompactPolicy,
    build_options,
    configured_model,
    served_differs,
)
from flower.core.caps import attempt_budget, clock, stamped, stopped_on_budget
from flower.core.env import redact
from flower.core.events import SYNTHETIC_MODEL, Event, normalize
from flower.core.handoff_control import HANDOFF_DUE
from flower.core.interrupts import INTERRUPTED, Stopper, say_goodbye, watch
from flower.core.resilience import is_fatal_retry
from flower.core.runstate import of_runtime
from flower.usage import call_cost

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions

    from flower.core.runtime import Runtime, StepResult
    from flower.core.workbench import Workbench

EventSink = Callable[[Event], None]
#: Events made from an assistant message: their ``model`` is the one that served it.
_REPLY_KINDS = ("text", "thinking", "tool_call")


class Attempt:
    """One CLI session run for ``result``: what it said, why it failed, whether it was
    stopped. ``run`` leaves ``result`` with ``ok``/``error``/``text`` set for this round."""

    def __init__(self, rt: Runtime, result: StepResult, emit: EventSink) -> None:
        self.rt = rt
        self.result = result
        self.emit = emit
        self.said: list[str] = []
        self.failure: str | None = None
        self.fatal: str | None = None  # an API retry that cannot succeed
        self.full = False  # the watermark stopped the turn; the session hands off
        self.expect = ""  # the configured model, until the served one has been compared
        self.capped: list[str] = []  # "budget"/"time": a cap of the run stopped this turn
        self.opened = ""  # the session whose ledger window this attempt opened

    def _report_hook(self, spec: AgentSpec) -> Any:
        """A checkpoint at each worker's report, for a role that dispatches workers."""
        from flower.core.guard import can_dispatch, report_guard

        rt = self.rt
        if rt.checkpoints is None or not can_dispatch(spec):
            return None
        step = self.result.step
        return {"PostToolUse": [report_guard(lambda: rt.checkpoint("worker-report", step))]}

    async def run(self, spec: AgentSpec, prompt: str, *, resume: str | None, fork: bool,
                  resume_at: str | None) -> None:
        """Connect, send ``prompt``, stream the response, disconnect; an SDK failure becomes
        ``result.error`` (only cancellation propagates, after a bounded goodbye)."""
        from claude_agent_sdk import ClaudeSDKClient

        rt, result = self.rt, self.result
        result.ok = False
        result.error = None
        if not rt._model_warned and not spec.model:  # a spec's own model is not the guess's
            self.expect = configured_model(rt._config())
        prompt, options = await self._options(spec, prompt, resume=resume, fork=fork,
                                              resume_at=resume_at)
        rt.ledger.begin_attempt()
        aborted = False
        client = ClaudeSDKClient(options)
        try:
            await self._converse(client, prompt)
        except Exception as exc:  # every SDK failure becomes a result
            if self.failure is None:
                self.failure = f"{type(exc).__name__}: {exc}".strip()
        except BaseException:  # cancelled, Ctrl-C: the step is being abandoned
            aborted = True
            raise
        finally:
            await say_goodbye(client, aborted=aborted,
                              scrub=lambda text: redact(text, rt._secrets()))
        control = rt._handoff_ctl
        if control.unannounced and result.session_id:  # the mirror has flushed by now
            rt._announce_if_stored(result.session_id)
        self._settle()

    async def _options(self, spec: AgentSpec, prompt: str, *, resume: str | None,
                       fork: bool, resume_at: str | None) -> tuple[str, ClaudeAgentOptions]:
        """The prompt to send (a new session's first message carries the workbench index)
        and the SDK options for this attempt."""
        import anyio.to_thread

        rt = self.rt
        add_dirs: list[str] | None = None
        if rt.workbench is not None:
            from flower.core.workbench import inject_index

            rt.workbench.refresh()
            # The index rides in a new session's first user message, not the system prompt:
            # it changes whenever a file lands and would void the prompt cache (workbench.py).
            if spec.workbench and not resume:
                prompt = inject_index(prompt, rt.workbench.prompt_block())
            if rt.workbench.external:
                add_dirs = [str(rt.workbench.root)]
        if rt.handoff.enabled and spec.compact is None:
            # two mechanisms shrinking one context cannot be told apart: handoff on ⇒ the
            # CLI's auto-compact off (an explicit CompactPolicy on the spec is respected)
            spec = replace(spec, compact=CompactPolicy(mode="no_summary"))
        if not rt._handoff_ctl.writing:  # what is left of the run's budget (caps.py)
            spec = replace(spec, max_budget_usd=attempt_budget(spec.max_budget_usd, rt.ledger))
        if resume and hasattr(rt.store, "adopt"):
            # a session written from another workspace path: make it loadable under ours
            await anyio.to_thread.run_sync(rt._adopt, resume)
        options = build_options(
            guarded(spec, rt.workbench, rt.spill_threshold, reports=self._report_hook(spec)),
            cwd=rt.workspace,
            session_store=rt.store, resume=resume, fork=fork, resume_at=resume_at,
            portable=rt.portable, add_dirs=add_dirs, extra_env=rt._agent_env(),
            sandbox=rt.sandbox, state=of_runtime(rt),
        )
        return prompt, options

    async def _converse(self, client: Any, prompt: str) -> None:
        """Send ``prompt`` and read the whole response; then say why the turn ended early,
        if it did."""
        import anyio

        rt, result = self.rt, self.result
        await client.connect()
        await client.query(prompt)
        async with anyio.create_task_group() as tg:
            stop = Stopper(client)
            if not rt._handoff_ctl.writing:  # words for the model wait for the successor
                tg.start_soon(watch, rt._interrupt, stop, result)
                tg.start_soon(clock, rt.ledger, stop, result, self.capped)  # the time cap
            async for message in client.receive_response():
                await self._take(message, stop)
            tg.cancel_scope.cancel()
        if self.fatal:
            self.failure = self.fatal
        elif self.capped:  # the step loop asks whether to raise the cap, then resumes
            self.failure = self.capped[0]
        elif self.full and not result.ok:  # a turn that finished anyway needs no successor
            self.failure = HANDOFF_DUE
        elif stop.sent and rt._interrupt.pending:
            self.failure = INTERRUPTED

    async def _take(self, message: Any, stop: Stopper) -> None:
        """One SDK message: into the result and the event stream; stop the turn if it
        cannot succeed or the context is full."""
        rt, result = self.rt, self.result
        rt._note_session(message, result)
        sid = _session_of(message)
        if sid and sid != self.opened:  # the window a kill leaves to reconcile (ledger.py)
            self.opened = sid
            rt.ledger.session(sid)
        if type(message).__name__ == "AssistantMessage" and message.usage:  # priced now
            rt.ledger.call(message.message_id or message.uuid or "",
                           call_cost(message.usage, message.model), sid)
        for ev in normalize(message):
            self.failure = absorb(ev, result, self.said) or self.failure
            if _answered(ev):
                rt.answered = True
            if ev.kind == "result" and stop.sent and rt._interrupt.pending and \
                    not (self.fatal or self.full):  # the UI says "interrupted", not "done"
                ev = replace(ev, payload={**ev.payload, "interrupted": True})
            if ev.kind == "result":  # every session's cost counts, as it arrives
                rt.ledger.add(float(ev.payload.get("cost_usd") or 0.0))
                if stopped_on_budget(ev, rt.ledger) and not self.capped:
                    self.capped.append("budget")
                ev = stamped(ev, rt.ledger)
            self.emit(ev)
            rt._handoff_ctl.track(ev, result, self.emit)
            if self.expect:
                self._compare_model(ev)
        if self.fatal is None:
            self.fatal = fatal_retry(message)
            if self.fatal:  # the CLI is about to retry something that cannot succeed
                await stop.now()
        if not self.full and rt._handoff_ctl.over_watermark(result):
            self.full = True  # stop the turn like an interrupt; the session hands off
            await stop.now()

    def _compare_model(self, ev: Event) -> None:
        """The first main-thread reply of the attempt names the model that served it. Told
        once per run when it is not the configured one: the window, and with it every
        handoff threshold, was guessed from the configured name."""
        rt, p = self.rt, ev.payload
        served = p.get("model")  # the init message's "model" is the configured name
        if ev.kind not in _REPLY_KINDS or not served or served == SYNTHETIC_MODEL or \
                p.get("subagent") or rt._handoff_ctl.writing:
            return
        expect, self.expect = self.expect, ""
        if rt._model_warned or not served_differs(expect, served):
            return
        rt._model_warned = True
        window = int(rt._handoff_ctl.limits.window or 0)
        self.emit(Event("task", text=texts.MODEL_MISMATCH.format(
            served=served, configured=expect, window=f"{window:,}"),
            payload={"model_mismatch": True, "configured": expect, "served": served,
                     "window": window}))

    def _settle(self) -> None:
        """The round's text and error, once the CLI has gone."""
        result = self.result
        if self.said:
            result.text = "\n".join(self.said).strip()
        if self.failure is not None:
            result.ok = False
            result.error = self.failure
        elif not result.ok:  # no result message at all (error was reset at the start)
            result.error = result.errors[-1] if result.errors else texts.NO_RESULT
        if result.error and result.error not in result.errors and \
                result.error not in (INTERRUPTED, HANDOFF_DUE):
            result.errors.append(result.error)


def guarded(spec: AgentSpec, workbench: Workbench | None,
            spill_threshold: int | None, reports: Any = None) -> AgentSpec:
    """``spec`` with the hooks its role needs (walls, foreground dispatch, workbench
    housekeeping, a checkpoint at each worker's report) merged after the author's own —
    installed afresh on every attempt."""
    from flower.core.guard import merge_hooks, role_hooks

    walls = merge_hooks(role_hooks(spec, workbench=workbench,
                                   spill_threshold=spill_threshold), reports)
    return replace(spec, hooks=merge_hooks(spec.hooks, walls)) if walls else spec


def _session_of(message: Any) -> str:
    """The session id an SDK message carries (the init message's is in its ``data``)."""
    sid = getattr(message, "session_id", None)
    if not sid:
        data = getattr(message, "data", None)
        sid = data.get("session_id") if isinstance(data, dict) else None
    return sid if isinstance(sid, str) else ""


def absorb(ev: Event, result: StepResult, said: list[str]) -> str | None:
    """Fold one event into the result; returns a failure text for an error result."""
    p = ev.payload
    if ev.kind == "text" and not p.get("subagent"):
        if ev.text.strip():
            said.append(ev.text)
    elif ev.kind == "error":
        result.errors.append(ev.text)
    elif ev.kind == "result":
        result.cost_usd = round(result.cost_usd + float(p.get("cost_usd") or 0.0), 6)
        result.num_turns += int(p.get("num_turns") or 0)
        if p.get("session_id"):
            result.session_id = p["session_id"]
        if p.get("is_error"):
            raw = ev.raw
            detail = getattr(raw, "result", None) or "; ".join(
                getattr(raw, "errors", None) or []) or ev.text
            # an API failure reports subtype "success"; the prose alone is the reason
            if ev.text in ("", "success") or detail == ev.text:
                return detail
            return f"{ev.text}: {detail}"
        result.ok = True
    if ev.kind in ("text", "thinking", "tool_call", "tool_result") and \
            not p.get("subagent") and p.get("context"):
        result.context = int(p["context"])
    return None


def _answered(ev: Event) -> bool:
    """Did the endpoint answer? A model's reply or a result that is not an error; the
    CLI's synthetic "API Error" message is not an answer."""
    if ev.kind in _REPLY_KINDS:
        return ev.payload.get("model") not in (None, SYNTHETIC_MODEL)
    return ev.kind == "result" and not ev.payload.get("is_error")


def fatal_retry(message: Any) -> str | None:
    """An ``api_retry`` notice for an error no retry can fix (e.g. a bad key)."""
    if getattr(message, "subtype", None) != "api_retry":
        return None
    data = getattr(message, "data", None) or {}
    if is_fatal_retry(data):
        status = data.get("error_status")
        return f"API Error: {status or ''} {data.get('error') or 'fatal'} (not retried)".strip()
    return None

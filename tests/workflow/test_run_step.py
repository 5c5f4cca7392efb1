"""``Workflow.run_step``: one step whole — the same rules for ``Workflow.run`` and a Temporal
worker. A stand-in Runtime (no CLI) shows what the step does with ``when``, ``frozen`` and the
session memory it is given."""

from __future__ import annotations

import itertools
from typing import Any

import anyio

from flower import AgentSpec, Step, Workflow
from flower.core.events import Event
from flower.core.runtime import StepResult
from flower.workflow.base import SessionMemory

SPEC = AgentSpec("a", "x")


class FakeRuntime:
    """Answers every ``run`` with "done: <prompt>" in a new session, naming it to
    ``on_session`` first, as the real Runtime does the moment the CLI names it."""

    def __init__(self) -> None:
        self.on_session: Any = None
        self.prompts: list[str] = []
        self._ids = itertools.count(1)

    async def run(self, spec: AgentSpec, prompt: str, *, step_name: str, **kw: Any) -> StepResult:
        self.prompts.append(prompt)
        sid = f"s{next(self._ids)}"
        if self.on_session is not None:
            self.on_session(sid)
        return StepResult(step=step_name, session_id=sid, ok=True, text=f"done: {prompt}")


class Memory:
    """A session memory that is not a Lineage (as a worker's heartbeat is not)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def remember(self, name: str, sid: str) -> None:
        self.seen.append((name, sid))


def _run(wf: Workflow, step: Step, index: int, rt: Any, ctx: dict[str, Any],
         memory: SessionMemory | None = None, events: list[Event] | None = None) -> bool:
    async def go() -> bool:
        return await wf.run_step(step, index, rt, ctx, memory,
                                 on_event=None if events is None else events.append)
    return anyio.run(go)


def test_async_frozen_is_awaited_and_the_step_skipped() -> None:
    async def frozen(ctx: dict[str, Any]) -> str:
        await anyio.sleep(0)
        return "## 需求\n异步冻结"

    step = Step("确认需求", SPEC, "clarify", frozen=frozen)
    wf = Workflow([step, Step("干活", SPEC, "x")])
    rt, ctx, events = FakeRuntime(), {}, []
    assert _run(wf, step, 1, rt, ctx, events=events) is True
    assert ctx["确认需求"] == "## 需求\n异步冻结" and rt.prompts == []
    (ev,) = events
    assert ev.kind == "step" and ev.payload["frozen"] and ev.payload["total"] == 2


def test_async_when_false_skips_without_a_value() -> None:
    async def when(ctx: dict[str, Any]) -> bool:
        return False

    step = Step("可选", SPEC, "x", when=when)
    rt, ctx = FakeRuntime(), {}
    assert _run(Workflow([step]), step, 1, rt, ctx) is True
    assert "可选" not in ctx and rt.prompts == []


def test_the_steps_session_is_remembered_but_not_the_judges() -> None:
    """A judge dispatched from the gate shares the Runtime; its session must not be taken
    for the step's (a resume would continue the judge's conversation)."""
    async def gate(result: StepResult, ctx: dict[str, Any]) -> bool:
        verdict = await ctx["_runtime"].run(SPEC, "judge it", step_name="判定")
        return verdict.ok

    step = Step("写", SPEC, "write", gate=gate)
    rt, memory = FakeRuntime(), Memory()
    ctx: dict[str, Any] = {"_runtime": rt}
    assert _run(Workflow([step]), step, 1, rt, ctx, memory) is True
    assert memory.seen == [("写", "s1"), ("写", "s1")]  # as named, then as finished
    assert ctx["写"] == "done: write" and ctx["_sessions"] == {"写": "s1"}
    assert ctx["_results"]["写"].session_id == "s1"

"""What ``Workflow.run`` tells the caller about a step: a send-back line only when another
attempt follows, a refused last attempt booked as a failure with its reason, and a broken
``on_event`` callback that can never stop the run (issue 21)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from flower import texts
from flower.core.agent import AgentSpec
from flower.core.events import Event
from flower.core.runtime import StepResult
from flower.workflow.base import Step, Workflow
from flower.workflow.clarify import clarify_step
from flower.workflow.goal import with_goal

SPEC = AgentSpec("worker", "x")
NOT_YET = "## 结论\n未达成\n\n## 理由\n少了测试\n\n## 未通过\n- 有测试"
ACHIEVED = "## 结论\n达成\n\n## 理由\n都做到了"


class FakeRuntime:
    """Answers every step with ``answer(step_name)``; remembers what it was asked to rebook."""

    def __init__(self, answer: Callable[[str], str]) -> None:
        self.answer = answer
        self.results: list[StepResult] = []
        self.rebooked: list[tuple[str, bool, str | None]] = []

    async def run(self, spec: AgentSpec, prompt: str, *, step_name: str | None = None,
                  resume: str | None = None, fork: bool = False,
                  on_event: Callable[[Event], None] | None = None) -> StepResult:
        name = step_name or spec.name
        result = StepResult(step=name, session_id=f"sid-{len(self.results)}", ok=True,
                            text=self.answer(name))
        self.results.append(result)
        return result

    def has_session(self, sid: str) -> bool:
        return False

    def rebook(self, result: StepResult) -> None:
        self.rebooked.append((result.step, result.ok, result.error))


def drive(wf: Workflow, rt: FakeRuntime,
          on_event: Callable[[Event], None] | None = None) -> tuple[dict[str, Any], list[Event]]:
    events: list[Event] = []

    def sink(ev: Event) -> None:
        events.append(ev)
        if on_event is not None:
            on_event(ev)

    async def go() -> dict[str, Any]:
        return await wf.run(rt, on_event=sink)  # type: ignore[arg-type]

    return anyio.run(go), events


def clarify(tmp_path: Path, retries: int = 0) -> Step:
    return clarify_step(None, brief_path=tmp_path / "需求.md", prompt="写个脚本",
                        spec=SPEC, retries=retries)


# --- point 3: the send-back line, the abort reason, the manifest row --------------------

def test_no_send_back_line_when_no_attempt_follows(tmp_path: Path) -> None:
    rt = FakeRuntime(lambda name: "好的。")
    ctx, events = drive(Workflow([clarify(tmp_path)], continuous=False), rt)
    assert [e for e in events if e.kind == "retry"] == []
    assert len(rt.results) == 1 and ctx["_failed_at"] == "确认需求"


def test_send_back_line_for_each_attempt_that_follows(tmp_path: Path) -> None:
    rt = FakeRuntime(lambda name: "好的。")
    _, events = drive(Workflow([clarify(tmp_path, retries=1)], continuous=False), rt)
    retries = [e for e in events if e.kind == "retry"]
    assert len(rt.results) == 2 and len(retries) == 1  # sent back once, then it stopped
    assert retries[0].payload["attempt"] == 1
    # said in words: not "确认需求#round2" inside a Chinese sentence
    assert retries[0].text == texts.SENT_BACK.format(step="确认需求", round=2)
    assert "#round" not in retries[0].text


def test_a_refused_last_attempt_is_booked_as_failed_with_the_reason(tmp_path: Path) -> None:
    rt = FakeRuntime(lambda name: "好的。")
    ctx, _ = drive(Workflow([clarify(tmp_path)], continuous=False), rt)
    result = ctx["_results"]["确认需求"]
    assert not result.ok
    assert result.error == texts.BRIEF_INCOMPLETE.format(missing="、".join(texts.BRIEF_SECTIONS))
    assert rt.rebooked == [("确认需求", False, result.error)]  # the manifest row agrees


def test_a_gate_without_explain_still_says_why(tmp_path: Path) -> None:
    rt = FakeRuntime(lambda name: "x")
    step = Step("写", SPEC, "p", retries=1, gate=lambda r, c: False)
    ctx, _ = drive(Workflow([step], continuous=False), rt)
    assert ctx["_results"]["写"].error == texts.GATE_REJECTED.format(n=2)


def test_judge_rounds_used_up_say_the_judges_reason(tmp_path: Path) -> None:
    rt = FakeRuntime(lambda name: NOT_YET if "判定" in name else "做了")
    step = with_goal(Step("干活", SPEC, "p"), None, goal_path=tmp_path / "目标.md", spec=SPEC,
                     rounds=2)
    ctx, events = drive(Workflow([step], continuous=False), rt)
    assert len([e for e in events if e.kind == "retry"]) == 1  # round 2 follows round 1 only
    result = ctx["_results"]["干活"]
    assert not result.ok and "少了测试" in result.error
    assert result.error == texts.GOAL_NOT_MET.format(n=2, reason="少了测试")


def test_a_passing_step_is_not_rebooked(tmp_path: Path) -> None:
    rt = FakeRuntime(lambda name: "x")
    ctx, _ = drive(Workflow([Step("写", SPEC, "p")], continuous=False), rt)
    assert ctx["_results"]["写"].ok and rt.rebooked == []


# --- on_event: a broken UI callback is collected, never raised ---------------------------

def _raising_on(kind: str) -> Callable[[Event], None]:
    def on_event(ev: Event) -> None:
        if ev.kind == kind:
            raise RuntimeError(f"ui broke on {kind}")
    return on_event


@pytest.mark.parametrize("kind", ["step", "retry", "task"])
def test_a_raising_on_event_does_not_escape_the_run(tmp_path: Path, kind: str) -> None:
    answers = iter([NOT_YET, ACHIEVED])
    rt = FakeRuntime(lambda name: next(answers) if "判定" in name else "做了")
    step = with_goal(Step("干活", SPEC, "p"), None, goal_path=tmp_path / "目标.md", spec=SPEC,
                     rounds=2)
    wf = Workflow([step], continuous=False)
    ctx, events = drive(wf, rt, _raising_on(kind))
    assert "_failed_at" not in ctx  # the run went on to its end
    assert any(e.kind == kind for e in events)
    assert f"RuntimeError: ui broke on {kind}" in wf.ui_errors


def test_a_raising_on_event_is_shielded_in_run_step_too(tmp_path: Path) -> None:
    """A Temporal worker calls ``run_step`` directly, with ``ctx['_on_event']`` set."""
    rt = FakeRuntime(lambda name: "x")
    wf = Workflow([Step("写", SPEC, "p")], continuous=False)
    broken = _raising_on("step")
    ctx: dict[str, Any] = {"_on_event": broken}

    async def go() -> bool:
        return await wf.run_step(wf.steps[0], 1, rt, ctx, on_event=broken)  # type: ignore[arg-type]

    assert anyio.run(go) is True
    assert wf.ui_errors == ["RuntimeError: ui broke on step"]
    assert ctx["_on_event"] is not broken  # a judge's gate emits through the shield too

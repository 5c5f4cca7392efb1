"""A runtime that offers only what the original flower documents for test fakes —
``async run(spec, prompt, *, step_name=None, resume=None, fork=False, on_event=None)`` and
``has_session(sid)`` — drives ``Workflow.run``, ``with_goal`` and ``starter_flow``.

Scripts written for the original flower test their workflows with such fakes; a workflow
that reads ``on_session``, ``manifest_path`` or anything else off the runtime crashes them.
The fake uses ``__slots__``, so neither reading nor setting any other attribute works.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from flower import AgentSpec, Step, Workflow, starter_flow, with_goal
from flower.core.events import Event
from flower.core.runtime import StepResult
from flower.workflow.goal import ROUND_KEY, VERDICT_KEY

SPEC = AgentSpec("worker", "x")
JUDGE = AgentSpec("judge", "x")
ACHIEVED = "## 结论\n达成\n\n## 理由\n都做到了"
NOT_YET = "## 结论\n未达成\n\n## 理由\n少了测试\n\n## 未通过\n- 有测试"
UNREACHABLE = "## 结论\n无法验证\n\n## 理由\n这里没有 GPU"


class DuckRuntime:
    """The documented fake-runtime contract and nothing else."""

    __slots__ = ("answer", "calls")

    def __init__(self, answer: Callable[[str, str], str]) -> None:
        self.answer = answer  # (step_name, prompt) -> the agent's text
        self.calls: list[tuple[str, str | None]] = []

    async def run(self, spec: AgentSpec, prompt: str, *, step_name: str | None = None,
                  resume: str | None = None, fork: bool = False,
                  on_event: Callable[[Event], None] | None = None) -> StepResult:
        name = step_name or spec.name
        self.calls.append((name, resume))
        return StepResult(step=name, session_id=f"sid-{len(self.calls)}", ok=True,
                          text=self.answer(name, prompt))

    def has_session(self, sid: str) -> bool:
        return False


def _drive(wf: Workflow, rt: DuckRuntime) -> dict[str, Any]:
    events: list[Event] = []

    async def go() -> dict[str, Any]:
        return await wf.run(rt, on_event=events.append)  # type: ignore[arg-type]

    ctx = anyio.run(go)
    ctx["__events"] = events
    return ctx


def _judged(*verdicts: str) -> Callable[[str, str], str]:
    """Work rounds report "done"; judge round N answers ``verdicts[N-1]``."""
    def answer(name: str, prompt: str) -> str:
        if "·判定#" in name:
            return verdicts[int(name.rsplit("#", 1)[1]) - 1]
        return "做完了"
    return answer


class Channel:
    """A person who always picks option ``pick`` (or never answers)."""

    def __init__(self, pick: int | None) -> None:
        self.pick = pick
        self.on_event = None
        self.asked: list[str] = []

    async def ask(self, question: str, options: list[str] | None = None) -> Any:
        self.asked.append(question)
        if self.pick is None or not options:
            return SimpleNamespace(state="timeout", answer="")
        return SimpleNamespace(state="answered", answer=options[self.pick])


def _goal_file(tmp_path: Path) -> Path:
    path = tmp_path / "目标.md"
    path.write_text("# 目标\n做个工具\n\n# 判定清单\n- 能跑\n", encoding="utf-8")
    return path


def test_workflow_run_needs_only_run_and_has_session() -> None:
    rt = DuckRuntime(lambda name, prompt: f"{name} ok")
    wf = Workflow([Step("一", SPEC, "a"), Step("二", SPEC, lambda ctx: ctx["一"],
                                              resume_from="一")])
    ctx = _drive(wf, rt)
    assert "_failed_at" not in ctx
    assert ctx["一"] == "一 ok" and ctx["二"] == "二 ok"
    assert rt.calls == [("一", None), ("二", "sid-1")]  # resume_from still wires the session


def test_with_goal_achieved(tmp_path: Path) -> None:
    work = with_goal(Step("干活", SPEC, "do"), None, goal_path=_goal_file(tmp_path),
                     spec=JUDGE)
    rt = DuckRuntime(_judged(ACHIEVED))
    ctx = _drive(Workflow([work]), rt)
    assert "_failed_at" not in ctx and ctx[VERDICT_KEY].achieved and ctx[ROUND_KEY] == 1


def test_with_goal_not_yet_sends_back_then_passes(tmp_path: Path) -> None:
    work = with_goal(Step("干活", SPEC, "do"), None, goal_path=_goal_file(tmp_path),
                     spec=JUDGE, rounds=2)
    rt = DuckRuntime(_judged(NOT_YET, ACHIEVED))
    ctx = _drive(Workflow([work]), rt)
    assert "_failed_at" not in ctx and ctx[ROUND_KEY] == 2
    assert [name for name, _ in rt.calls] == ["干活", "干活·判定#1", "干活#round2", "干活·判定#2"]
    assert rt.calls[2][1] == "sid-1"  # the rejected session continues


def test_with_goal_not_yet_every_round_fails(tmp_path: Path) -> None:
    work = with_goal(Step("干活", SPEC, "do"), None, goal_path=_goal_file(tmp_path),
                     spec=JUDGE, rounds=2)
    ctx = _drive(Workflow([work]), DuckRuntime(_judged(NOT_YET, NOT_YET)))
    assert ctx["_failed_at"] == "干活" and "_aborted" not in ctx


def test_with_goal_unreachable_and_nobody_answers_stops(tmp_path: Path) -> None:
    """The path that names the manifest in its message: the fake has no manifest_path."""
    goal = _goal_file(tmp_path)
    for channel in (None, Channel(pick=None)):
        work = with_goal(Step("干活", SPEC, "do"), channel, goal_path=goal, spec=JUDGE)
        ctx = _drive(Workflow([work], channel=channel), DuckRuntime(_judged(UNREACHABLE)))
        assert ctx["_failed_at"] == "干活"
        assert str(goal) in ctx["_aborted"] and "manifest.json" in ctx["_aborted"]


def test_with_goal_unreachable_accepted(tmp_path: Path) -> None:
    channel = Channel(pick=0)  # 接受这个结果
    work = with_goal(Step("干活", SPEC, "do"), channel, goal_path=_goal_file(tmp_path),
                     spec=JUDGE)
    ctx = _drive(Workflow([work], channel=channel), DuckRuntime(_judged(UNREACHABLE)))
    assert "_failed_at" not in ctx and ctx[VERDICT_KEY].unreachable
    assert channel.asked and "这里没有 GPU" in channel.asked[0]


def test_with_goal_unreachable_overruled_goes_another_round(tmp_path: Path) -> None:
    channel = Channel(pick=2)  # 你判断错了,继续做
    work = with_goal(Step("干活", SPEC, "do"), channel, goal_path=_goal_file(tmp_path),
                     spec=JUDGE, rounds=2)
    ctx = _drive(Workflow([work], channel=channel),
                 DuckRuntime(_judged(UNREACHABLE, ACHIEVED)))
    assert "_failed_at" not in ctx and ctx[ROUND_KEY] == 2


BRIEF = ("## 目标\n做个工具\n\n## 验收标准\n能跑\n\n## 边界\n只用标准库\n\n"
         "## 未知与假设\n无\n")
GOAL = "## 目标\n做个工具\n\n## 判定清单\n- 运行 tool.py 能输出 ok\n"


def _starter_answers(verdict: str) -> Callable[[str, str], str]:
    def answer(name: str, prompt: str) -> str:
        if name == "确认需求":
            return BRIEF
        if name == "设定目标":
            return GOAL
        if "·判定#" in name:
            return verdict
        return "做完了,tool.py 输出 ok"
    return answer


def test_starter_flow_on_a_duck_runtime(workspace: Path) -> None:
    wf = starter_flow("做个工具", workspace=workspace, run_dir=workspace / "runs",
                      timeout_s=0)
    rt = DuckRuntime(_starter_answers(ACHIEVED))
    ctx = _drive(wf, rt)
    assert "_failed_at" not in ctx, ctx.get("_aborted")
    assert [name for name, _ in rt.calls] == ["确认需求", "设定目标", "干活", "干活·判定#1",
                                              "收尾交接"]
    assert (wf.workbench.notes / "需求.md").is_file()
    assert (wf.workbench.notes / "目标.md").is_file()


@pytest.mark.parametrize("verdict", [UNREACHABLE, NOT_YET])
def test_starter_flow_judge_refuses_on_a_duck_runtime(workspace: Path, verdict: str) -> None:
    """Unreachable with nobody at the terminal (timeout 0) stops with a message naming the
    goal file and a manifest; not-yet in every round fails the step. Neither crashes."""
    wf = starter_flow("做个工具", workspace=workspace, run_dir=workspace / "runs",
                      timeout_s=0, rounds=2)
    ctx = _drive(wf, DuckRuntime(_starter_answers(verdict)))
    assert ctx["_failed_at"] == "干活"
    if verdict == UNREACHABLE:
        assert "目标.md" in ctx["_aborted"] and "manifest.json" in ctx["_aborted"]
    else:
        assert ctx[ROUND_KEY] == 2

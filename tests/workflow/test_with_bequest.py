"""``with_bequest`` around the judged work step: the handover session runs exactly once, when
the step is over — passed, out of rounds, or stopped on an unreachable goal — and never
changes the step's outcome. A scripted runtime stands in for the model (no CLI here; the
end-to-end tests in tests/e2e/test_bequest.py drive the real one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flower import texts
from flower.core.agent import AgentSpec
from flower.core.bequest import BEGIN, DEGRADED
from flower.core.runtime import StepResult
from flower.core.workbench import Workbench
from flower.workflow.base import Step, Workflow
from flower.workflow.bequest import NAME, with_bequest
from flower.workflow.goal import with_goal

WORK = AgentSpec("协调者", "x")
GOOD = ("## 这是什么\n一个小工具\n## 验收:达成与未达成\n全过\n"
        "## 哪些文件是生成的、由什么生成\n(无)\n## 走不通的路\n(无)\n"
        "## 工作台在哪、怎么读\n.flower/")
ACHIEVED = "## 结论\n已达成\n## 理由\n都有\n## 未通过\n无"
NOT_YET = "## 结论\n未达成\n## 理由\n缺东西\n## 未通过\n- 第一条"
UNREACHABLE = "## 结论\n无法验证\n## 理由\n没有 GPU"


class ScriptedRuntime:
    """``run`` answers by the step name: the judge and the bequest from their scripts."""

    def __init__(self, verdicts: list[str], bequest: str | None = GOOD,
                 work_ok: bool = True) -> None:
        self.verdicts = list(verdicts)
        self.bequest = bequest
        self.work_ok = work_ok
        self.calls: list[tuple[str, str, AgentSpec]] = []
        self.on_session: Any = None
        self.manifest_path = Path("manifest.json")

    async def run(self, spec: AgentSpec, prompt: str, *, step_name: str | None = None,
                  resume: str | None = None, fork: bool = False, on_event: Any = None,
                  ) -> StepResult:
        name = step_name or spec.name
        self.calls.append((name, prompt, spec))
        if name == NAME:
            if self.bequest is None:
                return StepResult(step=name, ok=False, error="API Error: 500")
            return StepResult(step=name, ok=True, text=self.bequest, session_id="s-bequest")
        if "·判定#" in name:
            return StepResult(step=name, ok=True, text=self.verdicts.pop(0), session_id=name)
        return StepResult(step=name, ok=self.work_ok, text="做完了:写了 tool.py",
                          session_id="s-work", error=None if self.work_ok else "boom")

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


def _flow(tmp_path: Path, *, rounds: int = 3, goal: bool = True) -> Workflow:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    wb = Workbench.for_workspace(ws).ensure()
    step = Step("干活", WORK, "do it")
    if goal:
        step = with_goal(step, None, goal_path=wb.notes / "目标.md", rounds=rounds)
    step = with_bequest(step, root=ws, workbench=wb, brief_path=wb.notes / "需求.md",
                        goal_path=wb.notes / "目标.md" if goal else None)
    return Workflow([step], workbench=wb, continuous=False)


async def test_after_a_pass_the_handover_is_written(tmp_path: Path) -> None:
    rt = ScriptedRuntime([ACHIEVED])
    ctx = await _flow(tmp_path).run(rt)
    assert "_failed_at" not in ctx
    assert rt.names() == ["干活", "干活·判定#1", NAME]
    _, prompt, spec = rt.calls[-1]
    assert spec.role == "oracle" and "Write" not in spec.allowed_tools  # walled read-only
    assert "已达成" in prompt and "做完了:写了 tool.py" in prompt  # the verdict, the report
    claude = (tmp_path / "ws" / "CLAUDE.md").read_text(encoding="utf-8")
    assert claude.startswith(BEGIN) and "一个小工具" in claude
    assert (tmp_path / "ws" / "AGENTS.md").read_text(encoding="utf-8") == claude
    assert ctx["_bequest"]["degraded"] is False
    json.dumps(ctx["_bequest"])  # crosses to a Temporal worker's next step as it is


async def test_not_after_an_early_round_only_after_the_last(tmp_path: Path) -> None:
    rt = ScriptedRuntime([NOT_YET, NOT_YET, NOT_YET])
    ctx = await _flow(tmp_path, rounds=3).run(rt)
    assert ctx["_failed_at"] == "干活"  # the round limit still fails the step
    assert rt.names() == ["干活", "干活·判定#1", "干活#round2", "干活·判定#2", "干活#round3",
                          "干活·判定#3", NAME]
    assert "未达成" in rt.calls[-1][1] and "第一条" in rt.calls[-1][1]


async def test_a_stop_on_an_unreachable_goal_is_handed_over_too(tmp_path: Path) -> None:
    rt = ScriptedRuntime([UNREACHABLE])
    ctx = await _flow(tmp_path).run(rt)
    assert ctx["_failed_at"] == "干活" and ctx["_aborted"]  # still stopped, as before
    assert rt.names() == ["干活", "干活·判定#1", NAME]
    assert "无法验证" in rt.calls[-1][1]


async def test_a_broken_work_session_writes_nothing(tmp_path: Path) -> None:
    rt = ScriptedRuntime([], work_ok=False)
    ctx = await _flow(tmp_path, rounds=1).run(rt)
    assert ctx["_failed_at"] == "干活" and NAME not in rt.names()
    assert not (tmp_path / "ws" / "CLAUDE.md").exists()


async def test_without_a_goal_the_handover_follows_the_work(tmp_path: Path) -> None:
    rt = ScriptedRuntime([])
    ctx = await _flow(tmp_path, goal=False).run(rt)
    assert "_failed_at" not in ctx and rt.names() == ["干活", NAME]
    assert texts.BEQUEST_NO_VERDICT in rt.calls[-1][1]


@pytest.mark.parametrize("answer", [None, "", "随便说两句,没有标题。", "## 这是什么\n只有这一节"],
                         ids=["session failed", "empty", "no headings", "missing the last"])
async def test_an_unusable_answer_gives_the_mechanical_block(tmp_path: Path,
                                                             answer: str | None) -> None:
    wb = Workbench.for_workspace(tmp_path / "ws").ensure()
    (wb.notes / "需求.md").write_text("## 目标\n做个 md 转 html 的脚本\n## 验收标准\n- 能跑\n"
                                     "## 边界\n- 无\n## 未知与假设\n- 无\n", encoding="utf-8")
    rt = ScriptedRuntime([ACHIEVED], bequest=answer)
    ctx = await _flow(tmp_path).run(rt)
    assert "_failed_at" not in ctx  # the work passed; a failed handover changes nothing
    block = (tmp_path / "ws" / "CLAUDE.md").read_text(encoding="utf-8")
    assert DEGRADED in block and "做个 md 转 html 的脚本" in block and "已达成" in block
    assert ".flower/INDEX.md" in block
    assert ctx["_bequest"]["degraded"] and ctx["_bequest"]["why"]
    assert sorted(Path(f).name for f in ctx["_bequest"]["files"]) == ["AGENTS.md", "CLAUDE.md"]


async def test_a_file_that_cannot_be_written_is_a_notice_not_a_failure(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "CLAUDE.md").mkdir()  # a folder where the file should be
    seen: list[str] = []
    rt = ScriptedRuntime([ACHIEVED])
    ctx = await _flow(tmp_path).run(rt, on_event=lambda ev: seen.append(ev.text))
    assert "_failed_at" not in ctx
    assert any("CLAUDE.md" in t and "没写进" in t for t in seen)
    assert (tmp_path / "ws" / "AGENTS.md").read_text(encoding="utf-8").startswith(BEGIN)

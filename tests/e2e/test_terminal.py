"""The interactive terminal, driven through a real pty: answer a question by typing ``1``, add
a requirement mid-run, ask an aside with ``？``, Ctrl-C once (the step resumes with the next
line) and twice (exit 130, the manifest row says aborted).

The fake model holds the coordinator's requests on gates the test opens, so every keystroke
lands while the step is provably mid-turn — no sleeps.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest
from ptyterm import Pty, term_env

from flower import texts
from flower.testing import FakeServer, Request, reply, tool_use

WAIT = 60.0
QUESTION = "给谁用?"
OPTIONS = ["给我自己", "给团队"]
BRIEF = "## 目标\n{who}的小工具\n## 验收标准\n- 能跑\n## 边界\n- 不联网\n## 未知与假设\n- 无"
GOAL = "## 目标\n小工具能跑\n## 判定清单\n- tool.py 存在"


def first(rules: str) -> str:
    return rules.strip().splitlines()[0]


def status_bars(lines: list[str]) -> list[str]:
    """The status bar's lines among ``lines`` (``  - 上下文 … · 累计 $…``)."""
    head = "- " + texts.STATUS.split("{")[0]
    return [line for line in lines if line.lstrip().startswith(head)]


class Brain:
    """Plays every role; the coordinator's turns wait on gates the test opens."""

    def __init__(self) -> None:
        self.gates = [threading.Event() for _ in range(4)]
        self.arrived = [threading.Event() for _ in range(4)]
        self.work_requests: list[Request] = []
        self.oracle_requests: list[Request] = []

    def __call__(self, req: Request):
        system = req.system_text
        if first(texts.CLARIFIER_RULES) in system:
            asked = req.tool_uses("mcp__human__ask")
            if not asked:
                return reply(tool_use("mcp__human__ask", {"question": QUESTION,
                                                          "options": OPTIONS}))
            return reply(BRIEF.format(who=req.result_of(asked[-1]["id"]) or "?"))
        if first(texts.ORACLE_RULES) in system:
            self.oracle_requests.append(req)
            return reply("ORACLE: 协调者正在等第一个活的结果。")
        if first(texts.JUDGE_RULES) in system:
            if first(texts.SET_PROMPT) in req.first_user_text():
                return reply(GOAL)
            return reply("## 结论\n已达成\n## 理由\n有\n## 未通过\n无")
        return self.coordinate(req)

    def coordinate(self, req: Request):
        n = len(self.work_requests)
        self.work_requests.append(req)
        if n < len(self.gates):
            self.arrived[n].set()
            self.gates[n].wait(WAIT)
        if n == 0:
            return reply(tool_use("mcp__human__inbox", {}))
        if n == 2:  # resumed after the interrupt: keep the step busy for the double Ctrl-C
            return reply(tool_use("Bash", {"command": "ls"}))
        return reply(f"WORK-TURN-{n}")


@pytest.fixture
def tty_env(cli_env: dict[str, str]) -> dict[str, str]:
    return term_env(dict(os.environ), cpr=True, FLOWER_NO_PROBE="1")


def test_interactive_run(fake: FakeServer, workspace: Path, tty_env: dict[str, str]) -> None:
    brain = Brain()
    fake.fallback(brain)
    term = Pty([sys.executable, "-m", "flower", "--timeout", "30", "做个小工具"], tty_env,
               workspace)
    try:
        at = term.expect(f"? {QUESTION}")
        bar = term.expect_screen(lambda lines: any(texts.STATUS_TOOL_ASK in line
                                                   for line in status_bars(lines)))
        assert not [line for line in status_bars(bar) if "mcp__" in line]
        term.type("1\r")  # a number picks the option
        at = term.expect(f"+ {OPTIONS[0]}", at)
        assert brain.arrived[0].wait(WAIT)  # the coordinator's first turn is in flight

        term.type("顺便支持命令行参数\r")  # no question pending: an added requirement
        at = term.expect(texts.UI_MAIL_KEPT.format(path=".flower/notes/需求.md"), at)
        term.type("？现在到哪了\r")  # full-width: an aside, not a requirement
        at = term.expect("ORACLE: 协调者正在等第一个活的结果", at)
        brain.gates[0].set()
        assert brain.arrived[1].wait(WAIT)
        inbox = brain.work_requests[1].last_tool_results()
        assert "顺便支持命令行参数" in json.dumps(inbox, ensure_ascii=False)

        term.type("\x03")  # Ctrl-C once: the turn stops, the step waits for words
        at = term.expect(texts.INTERRUPTED, at)
        term.type("换个思路\r")
        assert brain.arrived[2].wait(WAIT)
        assert "换个思路" in brain.work_requests[2].last_user_text()
        brain.gates[1].set()  # the interrupted request's late answer goes nowhere
        brain.gates[2].set()
        assert brain.arrived[3].wait(WAIT)  # the next turn of the same step

        term.type("\x03")
        term.expect(texts.INTERRUPTED, at)
        term.type("\x03")  # again while it waits for words: stop
        assert term.proc.wait(WAIT) == 130
        brain.gates[3].set()
        term.eof(WAIT)
    finally:
        for gate in brain.gates:
            gate.set()
        term.close()

    seen = term.lines()  # what a person scrolling back sees
    prompts = {texts.PROMPT_IDLE.strip(), texts.PROMPT_INTERRUPTED.strip(),
               texts.PROMPT_ANSWER.strip()}
    assert not [line for line in seen if line.strip() in prompts]  # no empty input line left
    assert not status_bars(seen)  # nor the status bar
    assert any("顺便支持命令行参数" in line for line in seen)  # a typed line stays
    (closing,) = [line for line in seen if line.startswith(texts.CLOSING.split("$")[0])]
    assert texts.CLOSING_ELAPSED.split("{")[0] in closing
    assert seen[-1].endswith(texts.STOPPED)

    notes = workspace / ".flower" / "notes"
    assert "顺便支持命令行参数" in (notes / "需求.md").read_text()
    assert "现在到哪了" not in (notes / "需求.md").read_text()
    assert all("现在到哪了" not in r.text() for r in brain.work_requests)
    assert brain.oracle_requests and (workspace / "runs" / "aside" / "manifest.json").is_file()
    main_rows = json.loads((workspace / "runs" / "manifest.json").read_text())
    assert all(r["step"] != "旁路问答" for r in main_rows)  # the aside's cost stays aside
    work = [r for r in main_rows if r["step"] == "干活"]
    assert work and work[-1]["error"].startswith("aborted")
    sessions = {r.session_id for r in brain.work_requests}
    assert len(sessions) == 1  # interrupt and resume: one session throughout

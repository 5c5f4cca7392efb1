"""Ctrl-C twice ends a run in a terminal with exit 130 within 2 s — whatever the agent is
doing at that moment, and also on a machine whose every core is busy.

Not in the default run (marker ``stress``; ``python -m pytest -m stress tests/e2e``): it
repeats the interactive double Ctrl-C 20 times under a busy loop per core. It cycles
through three moments the second press can land in: the model's answer is still on the
wire (the fake holds it), a long tool is running, and both presses come at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ptyterm import Pty, term_env

from flower import texts
from flower.testing import FakeServer, Request, reply, tool_use

pytestmark = pytest.mark.stress

RUNS = 20
MODES = ("answer", "tool", "both")
EXIT_WITHIN_S = 2.0
WAIT = 60.0
BRIEF = "## 目标\n小工具\n## 验收标准\n- 能跑\n## 边界\n- 不联网\n## 未知与假设\n- 无"
GOAL = "## 目标\n小工具能跑\n## 判定清单\n- tool.py 存在"


def first(rules: str) -> str:
    return rules.strip().splitlines()[0]


class Brain:
    """Clarifier and judge answer at once; the coordinator's first turn is held on a gate
    (``answer``, ``both``) or runs a long tool (``tool``)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.gate = threading.Event()
        self.working = threading.Event()

    def __call__(self, req: Request):
        system = req.system_text
        if first(texts.CLARIFIER_RULES) in system:
            return reply(BRIEF)
        if first(texts.JUDGE_RULES) in system:
            if first(texts.SET_PROMPT) in req.first_user_text():
                return reply(GOAL)
            return reply("## 结论\n已达成\n## 理由\n有\n## 未通过\n无")
        self.working.set()
        if self.mode == "tool" and not req.tool_uses("Bash"):
            return reply(tool_use("Bash", {"command": "sleep 30"}))
        self.gate.wait(WAIT)
        return reply("WORK")


@pytest.fixture(scope="module")
def busy() -> Iterator[None]:
    """A busy loop on every core for as long as the module's tests run."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(os.cpu_count() or 2)]
    yield
    for p in loops:
        p.kill()
        p.wait()


@pytest.mark.parametrize("n", range(RUNS))
def test_ctrl_c_twice_exits_130_within_2_s(n: int, busy: None, fake: FakeServer,
                                            workspace: Path, cli_env: dict[str, str]) -> None:
    mode = MODES[n % len(MODES)]
    brain = Brain(mode)
    fake.fallback(brain)
    term = Pty([sys.executable, "-m", "flower", "--timeout", "30", "做个小工具"],
               term_env(dict(os.environ), FLOWER_NO_PROBE="1"), workspace)
    try:
        assert brain.working.wait(WAIT)  # the coordinator's turn is in flight
        at = 0
        if mode == "tool":
            at = term.expect("sleep 30")
        if mode == "both":
            term.type("\x03\x03")
        else:
            term.type("\x03")
            term.expect(texts.INTERRUPT_SAY, at)
            term.type("\x03")
        pressed = time.monotonic()
        try:
            code = term.wait(30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{mode}: no exit 30 s after the second Ctrl-C")
        took = time.monotonic() - pressed
        assert code == 130, f"{mode}: exit {code}"
        assert took <= EXIT_WITHIN_S, f"{mode}: exit after {took:.1f} s"
        term.eof(5.0)
        assert texts.STOPPED in term.buf
    finally:
        brain.gate.set()
        term.close()

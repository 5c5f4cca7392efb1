"""A Ctrl-C always reaches the input line of a run in a terminal — also when it is typed in
the instant between two prompts, or while a line is being printed above the input line.

In both instants prompt_toolkit used to put the terminal back into cooked mode, where the
terminal driver, not the input line, takes a Ctrl-C: the second press of "Ctrl-C twice"
was lost and the run went on waiting for words. The child (``terminal_child.py``) stops on
a gate the test opens exactly inside each instant, so the key provably lands there.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ptyterm import Pty, term_env

from flower import texts

WAIT = 30.0
CHILD = str(Path(__file__).with_name("terminal_child.py"))
MARK = "a line printed above the input line"


class Terminal(Pty):
    """``terminal_child.py MODE`` on a pty; ``release()`` opens the child's gate once."""

    def __init__(self, mode: str) -> None:
        self.gate_r, self.gate_w = os.pipe()
        super().__init__([sys.executable, CHILD, mode, str(self.gate_r)], term_env(),
                         pass_fds=(self.gate_r,))

    def release(self) -> None:
        os.write(self.gate_w, b".")

    def close(self) -> None:
        super().close()
        for fd in (self.gate_r, self.gate_w):
            os.close(fd)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    started: list[Terminal] = []

    def start(mode: str) -> Terminal:
        started.append(Terminal(mode))
        return started[-1]

    yield start  # type: ignore[misc]
    for term in started:
        term.close()


def test_second_ctrl_c_between_two_prompts_ends_the_run(terminal) -> None:
    term = terminal("between")
    term.expect(texts.PROMPT_IDLE.strip())
    term.type("\x03")
    term.expect("HELD")  # the first press is being handled: the next prompt is not up yet
    term.type("\x03")
    term.release()
    term.expect("QUIT")
    assert term.proc.wait(WAIT) == 0


def test_ctrl_c_while_a_line_is_printed_reaches_the_input_line(terminal) -> None:
    term = terminal("printing")
    term.expect(texts.PROMPT_IDLE.strip())
    term.release()  # print a line above the input line …
    term.expect(MARK)  # … which is now half-way through being printed
    term.type("\x03")
    term.release()
    term.expect("HELD")
    term.type("\x03")  # and again while it waits for words: stop
    term.expect("QUIT")
    assert term.proc.wait(WAIT) == 0

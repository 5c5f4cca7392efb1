"""The terminal session of a run, with a stand-in workflow and Runtime, for tests that type
keys into it through a pty at chosen instants:

    python terminal_child.py between GATE   # the first Ctrl-C's hold() waits on GATE
    python terminal_child.py printing GATE  # a line printed above the input line waits,
                                            # mid-print, on GATE; it is printed once the
                                            # input line is up and GATE brings a byte

GATE is an inherited pipe's read end: every byte the test writes releases one wait. The
child prints ``HELD`` when the session holds the step (a Ctrl-C reached it) and, when the
session ends, ``QUIT`` if it was stopped by Ctrl-C.
"""

from __future__ import annotations

import os
import sys

import anyio
import anyio.to_thread
from prompt_toolkit.output.vt100 import Vt100_Output
from rich.console import Console

from flower.cli.tui.terminal import Session

MARK = "a line printed above the input line"


def say(text: str) -> None:
    os.write(sys.stdout.fileno(), f"{text}\n".encode())


class Runtime:
    """What the session calls on a Runtime when Ctrl-C is pressed."""

    def __init__(self, gate: int | None) -> None:
        self.gate = gate

    def hold(self) -> None:
        say("HELD")
        if self.gate is not None:  # still between two prompts: the next one is not up yet
            os.read(self.gate, 1)

    def interrupt(self, words: str) -> None:
        pass


class Workflow:
    channel = None
    workbench = None

    def __init__(self, gate: int | None) -> None:
        self.gate = gate
        self.session: Session | None = None

    async def run(self, rt: Runtime, on_event: object) -> dict:
        if self.gate is not None and self.session is not None:
            await anyio.to_thread.run_sync(os.read, self.gate, 1)
            self.session.render.line(MARK)
        await anyio.sleep_forever()
        return {}


def hold_mid_print(gate: int) -> None:
    """Write ``MARK`` to the terminal, then wait on ``gate`` before returning: the test types
    while the input line is, provably, in the middle of printing it."""
    flush = Vt100_Output.flush

    def gated(self: Vt100_Output) -> None:
        printing = MARK in "".join(self._buffer)
        flush(self)
        if printing:
            os.read(gate, 1)

    Vt100_Output.flush = gated  # type: ignore[method-assign]


def main() -> int:
    mode, gate = sys.argv[1], int(sys.argv[2])
    if mode == "printing":
        hold_mid_print(gate)
    wf = Workflow(gate if mode == "printing" else None)
    session = Session(Console(), Runtime(gate if mode == "between" else None))  # type: ignore[arg-type]
    wf.session = session
    # this child ends by itself, with QUIT; the bound on a real run's exit (watchdog.py)
    # is what tests/e2e/test_terminal_stress.py checks
    session.exit_watch.arm = lambda seconds=0.0: None  # type: ignore[method-assign]
    anyio.run(session.drive, wf)
    if session.quit:
        say("QUIT")
    return 0


if __name__ == "__main__":
    sys.exit(main())

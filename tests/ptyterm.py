"""A child process on a pseudo-terminal, for tests that type keys and read what a person sees.

One helper for every terminal test (the e2e run, the key-timing tests, the stress test): it
starts the child on a pty of a fixed size, collects everything printed, waits for text to
appear (a condition, never a sleep) and renders the output with ``pyte`` — a terminal
emulator — so a test can assert on the screen and its scrollback as a person would see
them, after every cursor move and erase, instead of on the raw byte stream.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pyte

WAIT = 60.0
COLUMNS = 120
LINES = 40
_EOF = "\0EOF"
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]|\r")


def plain(text: str) -> str:
    """``text`` without escape sequences and carriage returns (good enough for ``in``)."""
    return _ESCAPES.sub("", text)


def term_env(base: dict[str, str] | None = None, *, cpr: bool = False,
             **extra: str) -> dict[str, str]:
    """The environment of a child on the pty: a colour terminal of the pty's size. Without
    ``cpr`` prompt_toolkit is told not to ask where the cursor is (the key-timing tests
    want no such round trip); with it, the emulator answers — as a real terminal does, and
    prompt_toolkit draws its bottom toolbar (flower's status bar) only once it knows."""
    env = {**(os.environ if base is None else base), "TERM": "xterm-256color",
           "COLUMNS": str(COLUMNS), "LINES": str(LINES), "PROMPT_TOOLKIT_NO_CPR": "1",
           **extra}
    if cpr:
        env.pop("PROMPT_TOOLKIT_NO_CPR")
    return env


class Pty:
    """``argv`` on a new pty (in its own session, so the pty is not its controlling
    terminal and a Ctrl-C typed is a key, as in raw mode); ``type`` writes keys."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: Path | None = None,
                 pass_fds: Sequence[int] = ()) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
        self.master = master
        self.proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=slave, stdout=slave,
                                     stderr=slave, pass_fds=tuple(pass_fds),
                                     start_new_session=True)
        os.close(slave)
        self.raw = ""
        self.cond = threading.Condition()
        # a live emulator: it answers the child's questions (where is the cursor?) the
        # way a terminal does, and renders what a person sees
        self.screen = pyte.HistoryScreen(COLUMNS, LINES, history=100_000)
        self.screen.write_process_input = self._answer  # type: ignore[method-assign]
        self._stream = pyte.Stream(self.screen)
        threading.Thread(target=self._pump, daemon=True).start()

    def _answer(self, data: str) -> None:
        with contextlib.suppress(OSError):
            os.write(self.master, data.encode())

    def _pump(self) -> None:
        decoder = _decoder()
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:
                data = b""
            with self.cond:
                text = decoder.decode(data, final=not data) if data else ""
                self.raw += text if data else _EOF
                self._stream.feed(text)
                self.cond.notify_all()
            if not data:
                return

    @property
    def buf(self) -> str:
        """Everything printed so far, escape sequences included."""
        with self.cond:
            return self.raw

    def expect(self, text: str, after: int = 0, timeout: float = WAIT) -> int:
        """Wait until ``text`` appears (escape sequences ignored) after offset ``after``;
        returns the offset to pass as ``after`` next time."""
        with self.cond:
            ok = self.cond.wait_for(lambda: text in plain(self.raw[after:])
                                    or _EOF in self.raw, timeout)
            if not ok or text not in plain(self.raw[after:]):
                raise AssertionError(f"{text!r} never appeared; output:\n{plain(self.raw)}")
            return len(self.raw)

    def expect_screen(self, seen: Callable[[list[str]], bool], timeout: float = WAIT,
                      ) -> list[str]:
        """Wait until ``seen(lines())`` holds — what the terminal shows, not what was
        sent — and return those lines."""
        with self.cond:
            ok = self.cond.wait_for(lambda: seen(self._lines()) or _EOF in self.raw, timeout)
            lines = self._lines()
            if not ok or not seen(lines):
                raise AssertionError("the screen never showed it:\n" + "\n".join(lines))
            return lines

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def wait(self, timeout: float = WAIT) -> int:
        return self.proc.wait(timeout)

    def eof(self, timeout: float = WAIT) -> None:
        """Wait until the child and everything holding the pty open are gone."""
        with self.cond:
            self.cond.wait_for(lambda: _EOF in self.raw, timeout)

    def lines(self) -> list[str]:
        """What a person scrolling back through this terminal sees, top to bottom: the
        scrollback, then the screen (trailing blank lines dropped)."""
        with self.cond:
            return self._lines()

    def _lines(self) -> list[str]:
        screen = self.screen
        rows = [_row(line, COLUMNS) for line in screen.history.top]
        rows += [line.rstrip() for line in screen.display]
        while rows and not rows[-1]:
            rows.pop()
        return rows

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        os.close(self.master)


def _row(line: dict[int, pyte.screens.Char], columns: int) -> str:
    """One scrollback line of a ``HistoryScreen`` as text (wide characters take two
    cells; the second one is stored empty)."""
    return "".join(line[x].data if x in line else " " for x in range(columns)).rstrip()


def _decoder() -> codecs.IncrementalDecoder:
    """UTF-8 across reads: a character split between two reads is decoded whole."""
    return codecs.getincrementaldecoder("utf-8")("replace")

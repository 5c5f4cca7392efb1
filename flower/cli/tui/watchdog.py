"""Ctrl-C twice ends the process within a bound, whatever the agent's CLI or the SDK does.

The orderly way out of a run stopped by Ctrl-C twice goes through the SDK's
``disconnect()``, which shields its cleanup from cancellation and waits on the CLI (its
exit, its last transcript lines, the in-process MCP servers) for up to tens of seconds —
longer on a loaded machine, or when the CLI does not react to SIGTERM while it is busy. An
outer time limit cannot cut a shielded wait short, so the human could be left looking at
a terminal that ignores them. The watchdog here gives the orderly exit ``HARD_EXIT_S``
and then ends the process itself: the step booked as aborted in the manifest, the run's
last lines printed (once: whoever claims them first prints them), every child process
(the CLI, its tools) killed, the terminal's mode restored, exit code 130. An orderly exit
that makes it in time ends with ``os._exit`` too (:meth:`ExitWatch.leave`): Python's
shutdown after it (joining threads, running exit hooks) took another 1-2 s on a loaded
machine, and a daemon thread cannot run once that has begun.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

#: How long the orderly exit gets after the second Ctrl-C before the process is ended.
HARD_EXIT_S = 1.5
#: The manifest's ``error`` of the step a hard exit ended (it starts like every abort's).
ABORTED = "aborted (Ctrl-C twice)"
EXIT_CODE = 130


class ExitWatch:
    """Arm once (at the second Ctrl-C); ``claim`` decides who prints the last lines.

    ``book`` writes the manifest with the running step aborted (it must never block on a
    lock of this process); ``last_lines`` returns the run's closing lines as plain text."""

    def __init__(self, book: Callable[[str], Any], last_lines: Callable[[], list[str]],
                 *, tty: bool) -> None:
        self.book = book
        self.last_lines = last_lines
        self._mode = _terminal_mode() if tty else None
        self._lock = threading.Lock()
        self._claimed = False
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float = HARD_EXIT_S) -> None:
        """Start the countdown (a second call changes nothing)."""
        with self._lock:
            if self._thread is not None:
                return
            deadline = time.monotonic() + seconds
            self._thread = threading.Thread(target=self._run, args=(deadline,),
                                            name="flower-exit-watch", daemon=True)
            self._thread.start()

    @property
    def armed(self) -> bool:
        return self._thread is not None

    def claim(self) -> bool:
        """True for the first caller only: that one prints the last lines."""
        with self._lock:
            if self._claimed:
                return False
            self._claimed = True
            return True

    def _run(self, deadline: float) -> None:
        threading.Event().wait(max(0.0, deadline - time.monotonic()))
        self.end_now()

    def end_now(self) -> None:
        """Book, print (if nobody has), kill the children, restore the terminal, exit 130."""
        with contextlib.suppress(BaseException):
            self.book(ABORTED)
        lines: list[str] = []
        if self.claim():
            with contextlib.suppress(BaseException):
                lines = self.last_lines()
        kill_children(signal.SIGKILL)
        _restore(self._mode)
        if lines:
            # the input line and the status bar under it are still drawn: erase them first
            text = ("\r\x1b[J\x1b[?25h" if self._mode is not None else "") + "\n".join(lines) + "\n"
            with contextlib.suppress(OSError):
                _write_all(sys.__stdout__.fileno() if sys.__stdout__ else 1, text.encode())
        os._exit(EXIT_CODE)

    def leave(self) -> None:
        """The orderly end, once the last lines are printed: stragglers get SIGTERM (what
        the SDK's exit hook would send them), the output is flushed, exit 130 — now, not
        after Python's own shutdown, which can take seconds on a loaded machine and during
        which the watchdog thread can no longer run."""
        kill_children(signal.SIGTERM)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        _restore(self._mode)
        os._exit(EXIT_CODE)


def kill_children(sig: int = signal.SIGKILL) -> None:
    """Signal every process this one started, and theirs (the agent's CLI and the tools it
    runs), deepest first. Linux reads ``/proc``; elsewhere the SDK's own list of live CLIs.
    A ``--notify`` command handed the run's end (``notify.DETACHED``) is spared."""
    from flower.core.notify import DETACHED

    pids = _descendants(os.getpid(), spare=DETACHED)
    if not pids:
        pids = _sdk_children()
    for pid in reversed(pids):
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def _descendants(root: int, spare: Collection[int] = ()) -> list[int]:
    """Every descendant of ``root``, parents before their children ([] without /proc);
    a ``spare`` pid and its own descendants are left out."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(0), []):
            if child in spare:
                continue
            found.append(child)
            todo.append(child)
    return found


def _sdk_children() -> list[int]:
    try:
        from claude_agent_sdk._internal.transport import subprocess_cli
    except ImportError:
        return []
    live = getattr(subprocess_cli, "_ACTIVE_CHILDREN", ())
    return [p.pid for p in list(live) if getattr(p, "pid", None)]


def _terminal_mode() -> Any:
    """The terminal's mode as the run found it, to put back on a hard exit (the input line
    keeps it raw; a shell left raw shows no typed characters and no line breaks)."""
    try:
        import termios

        return termios.tcgetattr(sys.stdin.fileno())
    except (ImportError, OSError, ValueError):
        return None


def _restore(mode: Any) -> None:
    if mode is None:
        return
    with contextlib.suppress(ImportError, OSError, ValueError):
        import termios

        termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, mode)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]

"""Ctrl-C twice ends the process within a bound even when the orderly exit is stuck (the
SDK's shielded disconnect waiting on a CLI that does not go): the step is booked, the last
lines are printed once, the children are killed, the exit code is 130."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

CHILD = r'''
import subprocess, sys, threading
from pathlib import Path
from flower.cli.tui.watchdog import ExitWatch

book, pidfile, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
sleeper = subprocess.Popen(["sleep", "60"])          # a CLI's tool, still running
pidfile.write_text(str(sleeper.pid))
watch = ExitWatch(lambda error: book.write_text(error), lambda: ["LAST LINE", "STOPPED"],
                  tty=False)
if mode == "claimed":                                # the orderly path printed them already
    assert watch.claim()
watch.arm(0.3)
watch.arm(5.0)                                       # a second press changes nothing
print("ARMED", flush=True)
threading.Event().wait()                             # the orderly exit never comes
'''


def run(tmp_path: Path, mode: str) -> tuple[int, str, float, int]:
    book, pidfile = tmp_path / "book", tmp_path / "pid"
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", CHILD, str(book), str(pidfile), mode],
                         capture_output=True, text=True, timeout=30)
    took = time.monotonic() - started
    assert book.read_text().startswith("aborted")
    return out.returncode, out.stdout, took, int(pidfile.read_text())


def dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] == "Z"
    except (ProcessLookupError, FileNotFoundError):
        return True


def gone(pid: int, within: float = 5.0) -> bool:
    """``pid`` is dead (or a zombie awaiting its new parent) within ``within`` seconds: a
    SIGKILL is delivered at once, but it is the kernel's to finish."""
    deadline = time.monotonic() + within
    while not dead(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_stuck_exit_is_ended_booked_and_printed(tmp_path: Path) -> None:
    code, out, took, sleeper = run(tmp_path, "free")
    assert code == 130
    assert out.splitlines() == ["ARMED", "LAST LINE", "STOPPED"]
    assert took < 20  # the child waits forever; only the watchdog ends it
    assert gone(sleeper)  # the running tool went with it


def test_lines_already_printed_are_not_printed_twice(tmp_path: Path) -> None:
    code, out, _, sleeper = run(tmp_path, "claimed")
    assert code == 130 and out.splitlines() == ["ARMED"]
    assert gone(sleeper)

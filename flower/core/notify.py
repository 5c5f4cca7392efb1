"""``--notify CMD``: tell the person, through their own command, when a run needs them or ends.

A long run is one nobody watches, so a question can wait half an hour in a terminal nobody
looks at. The user names a shell command (``--notify`` or ``FLOWER_NOTIFY``); flower runs it
with ``sh -c`` when a question waits (``ask``), when a cap is reached (``budget`` / ``time``)
and when the run ends (``done`` / ``failed`` / ``stopped``). The command learns what happened
from its environment: ``FLOWER_EVENT``, ``FLOWER_TEXT``, ``FLOWER_WORKSPACE``, ``FLOWER_RUN``.

Rules this module keeps, because the run matters more than the message:

* **Never on the run's path.** One daemon thread works a queue, so the run never waits for a
  command, and notifications arrive in the order they happened.
* **Bounded.** A command still running after ``KILL_AFTER_S`` seconds is killed with its whole
  process group (it started a session of its own, so ``curl`` under ``sh`` dies too). A
  failing, hanging or missing command costs one warning line through ``warn``, nothing else.
* **Bounded at exit too.** :meth:`Notifier.close` waits for the queue — the run's end must
  arrive although flower is exiting — but never longer than ``KILL_AFTER_S + GRACE_S``. An
  older notification still queued behind a slow command is dropped when running it could
  cut the end short (one warning line): the run is over, so its question no longer waits.
* **No secrets.** ``FLOWER_TEXT`` goes through the masker the logs use (``redact_keys`` with
  every secret value flower knows, ``.env`` files included). The child gets the process
  environment as the user set it; flower never exports ``.env`` values into it (the Runtime
  hands them to the agent's CLI only), so a credential kept in ``.env`` never reaches the
  command.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from flower import texts
from flower.config import effective_env
from flower.core.env import redact_keys, secret_values
from flower.core.events import Event
from flower.errors import one_line

__all__ = ["ENV", "EVENTS", "GRACE_S", "KILL_AFTER_S", "Notifier", "notify_command", "outcome"]

ENV = "FLOWER_NOTIFY"
EVENTS = ("ask", "budget", "time", "done", "failed", "stopped")
CAPS = ("budget", "time")  # payload["which"] of a ``cap`` event; also a capped step's error
KILL_AFTER_S = 10.0
GRACE_S = 2.0
_TAIL_CHARS = 200  # of the command's stderr, quoted in the warning line
_CAP_ERROR = re.compile(r"^\s*(budget|time)\b")


def notify_command(explicit: str | None = None) -> str | None:
    """The command to run: ``--notify``, else ``FLOWER_NOTIFY`` from the environment or the
    user's own ``.env`` files — never a project ``.env``, which any worker can write
    (``config.USER_ONLY``); ``None`` when neither is set."""
    for value in (explicit, effective_env().get(ENV)):
        if value and value.strip():
            return value.strip()
    return None


def outcome(*, ok: bool, interrupted: bool = False, why: str = "") -> str:
    """``FLOWER_EVENT`` for the end of a run: ``stopped`` when the user stopped it or a cap
    was reached and nobody raised it (the capped step's error is ``budget`` / ``time``),
    ``done`` when it succeeded, else ``failed``."""
    if interrupted:
        return "stopped"
    if ok:
        return "done"
    return "stopped" if _CAP_ERROR.match(why or "") else "failed"


@dataclass(frozen=True)
class Note:
    """One notification waiting in the queue."""

    event: str
    text: str


class Notifier:
    """Runs ``command`` once per notification, in order, off the caller's thread.

    ``see`` is an event sink (hand it every event of the run); ``send`` notifies directly
    (the end of the run); ``close`` waits, bounded, for what is queued. ``warn`` receives
    each warning line and may be called from the worker thread.
    """

    def __init__(self, command: str, *, workspace: str | Path, run: str,
                 warn: Callable[[str], None], secrets: Iterable[str] | None = None,
                 environ: Mapping[str, str] | None = None,
                 kill_after_s: float = KILL_AFTER_S, grace_s: float = GRACE_S) -> None:
        self.command = command
        self.workspace = str(workspace)
        self.run = run
        self.warn = warn
        self.kill_after_s = kill_after_s
        self.grace_s = grace_s
        self._secrets = list(secrets) if secrets is not None \
            else secret_values(effective_env())
        self._environ = dict(os.environ if environ is None else environ)
        self._queue: queue.Queue[Note | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._deadline: float | None = None  # set by close(): nothing starts after it
        self._newest: Note | None = None  # the last one sent: close() waits for it
        self._cap_question = ""  # the question a cap event announced: not notified twice

    # -- what to notify ------------------------------------------------------------------

    def see(self, ev: Event) -> None:
        """Notify for the events that need the person: a question that waits for an answer
        and a reached cap. The cap's own question (asked right after it) is not sent again
        as ``ask``. Never raises: a notification must not break the UI that feeds it."""
        try:
            p = ev.payload
            if ev.kind == "cap" and p.get("which") in CAPS:
                self._cap_question = ev.text.strip()
                self.send(p["which"], ev.text)
            elif ev.kind == "ask" and p.get("kind") != "mail" and p.get("state") == "asked":
                question = ev.text.strip()
                if self._cap_question and question.startswith(self._cap_question):
                    self._cap_question = ""
                    return
                self.send("ask", ev.text)
        except Exception as exc:  # a malformed payload: one warning, the run goes on
            self.warn(texts.NOTIFY_FAILED.format(event=ev.kind, why=one_line(exc)))

    def send(self, event: str, text: str) -> None:
        """Queue one notification; returns at once."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="flower-notify",
                                                daemon=True)
                self._thread.start()
        note = Note(event, redact_keys(text, self._secrets))
        self._newest = note
        self._queue.put(note)

    def send_detached(self, event: str, text: str) -> None:
        """The run's end when the process is about to end at once (Ctrl-C twice ends it
        within a bound, watchdog.py): the command starts in a session of its own under a
        small supervisor that still kills it after ``kill_after_s``, nothing waits for it,
        and notifications still queued are dropped. A failure here cannot be reported."""
        with self._lock:
            self._deadline = time.monotonic()  # the worker starts nothing more
        note = Note(event, redact_keys(text, self._secrets))
        with contextlib.suppress(OSError):
            DETACHED.add(subprocess.Popen([sys.executable, "-c", _SUPERVISOR, self.command,
                              str(self.kill_after_s)], env=self.env_for(note),
                             cwd=self.workspace, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True).pid)

    def close(self) -> None:
        """Wait for the queued notifications, the run's end last among them, at most
        ``kill_after_s + grace_s``; a command running when that passes is killed."""
        with self._lock:
            thread = self._thread
            if thread is None:
                return
            self._deadline = time.monotonic() + self.kill_after_s + self.grace_s
        self._queue.put(None)
        thread.join(self.kill_after_s + self.grace_s + 1.0)

    # -- the worker ----------------------------------------------------------------------

    def _work(self) -> None:
        dropped = 0
        while True:
            note = self._queue.get()
            if note is None:
                break
            if self._stale(note):
                dropped += 1
                continue
            try:
                self._deliver(note)
            except Exception as exc:  # never let the worker die: later notes still go out
                self.warn(texts.NOTIFY_FAILED.format(event=note.event, why=one_line(exc)))
        if dropped:
            self.warn(texts.NOTIFY_DROPPED.format(n=dropped))

    def _stale(self, note: Note) -> bool:
        """After ``close``: an older note is skipped when running it could leave the last
        one (the run's end) less than a full ``kill_after_s`` — the run is over, so the
        question it announces no longer waits. Anything is skipped past the deadline."""
        if self._deadline is None:
            return False
        left = self._deadline - time.monotonic()
        return left <= 0 or (note is not self._newest and left < self.kill_after_s)

    def env_for(self, note: Note) -> dict[str, str]:
        """The command's environment: the process's own plus the four ``FLOWER_*`` keys."""
        return {**self._environ, "FLOWER_EVENT": note.event, "FLOWER_TEXT": note.text,
                "FLOWER_WORKSPACE": self.workspace, "FLOWER_RUN": self.run}

    def _deliver(self, note: Note) -> None:
        with tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(["sh", "-c", self.command], env=self.env_for(note),
                                        cwd=self.workspace, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=err,
                                        start_new_session=True)
            except OSError as exc:  # no sh, workspace gone
                self.warn(texts.NOTIFY_FAILED.format(event=note.event, why=one_line(exc)))
                return
            limit = self.kill_after_s
            if self._deadline is not None:
                limit = min(limit, self._deadline - time.monotonic())
            try:
                code = proc.wait(timeout=max(0.0, limit))
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                self.warn(texts.NOTIFY_HUNG.format(event=note.event, s=self.kill_after_s))
                return
            if code != 0:
                why = texts.NOTIFY_EXIT.format(code=code, stderr=self._tail(err))
                self.warn(texts.NOTIFY_FAILED.format(event=note.event, why=why.strip()))

    def _tail(self, err: IO[bytes]) -> str:
        err.seek(0)
        lines = err.read().decode("utf-8", "replace").strip().splitlines()
        return redact_keys(lines[-1][:_TAIL_CHARS], self._secrets) if lines else ""


#: The supervisors ``send_detached`` started: a hard exit that kills this process's
#: children (cli/tui/watchdog.py) spares them, as they are meant to outlive it.
DETACHED: set[int] = set()
#: Runs ``sh -c CMD`` in a process group of its own and kills the group after the bound,
#: for a notification that outlives flower's process (``send_detached``).
_SUPERVISOR = """
import os, signal, subprocess, sys
p = subprocess.Popen(["sh", "-c", sys.argv[1]], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
try:
    p.wait(timeout=float(sys.argv[2]))
except subprocess.TimeoutExpired:
    os.killpg(p.pid, signal.SIGKILL)
"""


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command's process group (it leads one: ``start_new_session``), then reap."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()

"""Stopping a step from outside: a human's interrupt or hold, a signal, an abandoned CLI.

Kept apart from ``runtime.py`` because all of it runs *across* threads or processes — the
interrupt request arrives from a terminal thread, SIGTERM/SIGHUP from the OS, and an
abandoned step has to get its CLI subprocess to exit — while the step loop itself is plain
sequential code. Each piece here is small and has its own locking or time bound.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from flower import texts

if TYPE_CHECKING:
    from flower.core.runtime import StepResult

log = logging.getLogger("flower.runtime")

#: How long an abandoned step (cancelled, Ctrl-C twice) waits for its CLI to say goodbye.
ABANDON_GRACE_S = 5.0

#: ``StepResult.error`` of a round stopped by a human's interrupt (the step resumes it).
INTERRUPTED = "interrupted-by-human"


class Interrupt:
    """A thread-safe interrupt request: the human's words, taken exactly once.

    ``hold`` stops the turn at once but keeps the step waiting until ``request`` brings the
    words (a terminal's first Ctrl-C: stop now, then let the human finish typing).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._words: str | None = None
        self._held = False

    def request(self, words: str) -> None:
        with self._lock:
            self._words = words if not self._words else f"{self._words}\n{words}".strip()
            self._held = False

    def hold(self) -> None:
        with self._lock:
            self._held = True
            if self._words is None:
                self._words = ""

    @property
    def pending(self) -> bool:
        return self._words is not None

    def take(self) -> str | None:
        with self._lock:
            words, self._words, self._held = self._words, None, False
            return words

    async def words(self) -> str:
        """The words to resume with — once a hold, if any, has been released."""
        import anyio

        while True:
            with self._lock:
                if not self._held:
                    words, self._words = self._words, None
                    return words or ""
            await anyio.sleep(0.1)


class Stopper:
    """Asks the CLI to stop the current turn — once. The turn then ends with a result."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.sent = False

    async def now(self) -> None:
        if not self.sent:
            self.sent = True
            await self.client.interrupt()


async def watch(interrupt: Interrupt, stop: Stopper, result: StepResult) -> None:
    """Turn a human's interrupt request (from any thread) into a CLI interrupt, promptly:
    the turn stops even in the middle of a long tool call. Not before the session has an
    id: a turn stopped before that leaves nothing to resume the words into."""
    import anyio

    while not (interrupt.pending and result.session_id):
        await anyio.sleep(0.1)
    await stop.now()


def with_words(prompt: str, words: str | None) -> str:
    """``prompt`` with a human's pending words appended under a clear label."""
    if not words or not words.strip():
        return prompt
    return f"{prompt}\n\n{texts.HUMAN_WORDS_PENDING.format(words=words.strip())}"


@contextlib.contextmanager
def signals_rescued(rescue: Callable[[], None]) -> Iterator[None]:
    """While a step runs in the main thread, SIGTERM/SIGHUP first call ``rescue`` (which
    writes the manifest), then kill the process as the default disposition would.

    Only default dispositions are replaced: an application that installed its own
    handler keeps it (and can call ``Runtime.rescue()`` itself).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    installed: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        rescue()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            if signal.getsignal(sig) is signal.SIG_DFL:
                installed[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):
            pass
    try:
        yield
    finally:
        for sig, old in installed.items():
            with contextlib.suppress(ValueError, OSError):
                signal.signal(sig, old)


async def say_goodbye(client: Any, *, aborted: bool, scrub: Callable[[str], str]) -> None:
    """Disconnect ``client``, shielded from cancellation. A normal end waits as long as the
    CLI needs (it flushes its last transcript entries to the store); an abandoned step first
    stops the CLI and then waits at most ``ABANDON_GRACE_S`` — a control request the CLI
    never answers (an interrupt sent mid-request) must not hold the exit hostage.

    A stopped CLI writes the transcript entries it still held (the model's last words, a
    fork's copied history) to stdout on its way out, and the SDK reads stdout only until
    ``disconnect()``: so an abandoned step disconnects once the CLI has exited, or else a
    cancel loses a turn the model had already answered."""
    import anyio

    with anyio.CancelScope(shield=True):
        if aborted:  # not the SDK's graceful 5 s wait for a CLI that is mid-tool
            terminate_cli(client)
            with anyio.move_on_after(ABANDON_GRACE_S) as waited:
                await cli_exited(client)
            if waited.cancelled_caught:
                terminate_cli(client, hard=True)
        with anyio.move_on_after(ABANDON_GRACE_S if aborted else None) as bounded:
            try:
                await client.disconnect()
            except Exception as exc:
                log.warning("flower: closing the agent failed: %s", scrub(str(exc)))
        if bounded.cancelled_caught:
            terminate_cli(client, hard=True)


async def cli_exited(client: Any) -> None:
    """Return once the client's CLI subprocess has exited (at once if there is none)."""
    process = _process(client)
    if process is not None and getattr(process, "returncode", 0) is None:
        await process.wait()


def _process(client: Any) -> Any:
    transport = getattr(client, "_transport", None)
    return getattr(transport, "_process", None)


def terminate_cli(client: Any, *, hard: bool = False) -> None:
    """SIGTERM (``hard``: SIGKILL) the client's CLI subprocess now (it stops its running
    tools and exits), so the disconnect that follows does not wait out the SDK's 5 s grace
    period first. Only for an abandoned step: a normal end keeps the graceful path, whose
    wait lets the CLI flush its last transcript entries to the store."""
    process = _process(client)
    if process is None or getattr(process, "returncode", 0) is not None:
        return
    try:
        process.kill() if hard else process.terminate()
    except (ProcessLookupError, OSError) as exc:
        log.debug("flower: could not stop the CLI: %s", exc)

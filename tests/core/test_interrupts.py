"""Saying goodbye to an abandoned step's CLI: what it writes on its way out is not lost."""

from __future__ import annotations

from types import SimpleNamespace

import anyio
import anyio.lowlevel
import pytest

from flower.core import interrupts
from flower.core.interrupts import say_goodbye


class FakeCli:
    """A CLI subprocess as the SDK client sees it: on SIGTERM it writes the transcript
    entries it still held to stdout and exits; the client reads stdout until
    ``disconnect()``, as the SDK's does."""

    def __init__(self, *, obeys_sigterm: bool = True) -> None:
        self.obeys_sigterm = obeys_sigterm
        self.returncode: int | None = None
        self.signals: list[str] = []
        self._stopping = anyio.Event()
        self._exited = anyio.Event()
        self.read: list[str] = []
        self.reading = True
        self.disconnected = False
        self._transport = SimpleNamespace(_process=self)

    # -- the subprocess -------------------------------------------------------------------
    def terminate(self) -> None:
        self.signals.append("TERM")
        if self.obeys_sigterm:
            self._stopping.set()

    def kill(self) -> None:
        self.signals.append("KILL")
        self._exit(-9)

    async def wait(self) -> int:
        await self._exited.wait()
        assert self.returncode is not None
        return self.returncode

    def _exit(self, code: int) -> None:
        self.returncode = code
        self._exited.set()

    async def lives(self) -> None:
        await self._stopping.wait()
        await anyio.lowlevel.checkpoint()  # the write through the pipe takes a moment
        if self.reading:
            self.read.append("the model's last words")
        self._exit(143)

    # -- the SDK client -------------------------------------------------------------------
    async def disconnect(self) -> None:
        self.reading = False  # the SDK stops its stdout reader first thing
        self.disconnected = True


async def test_an_abandoned_step_reads_what_its_cli_writes_while_exiting() -> None:
    cli = FakeCli()
    async with anyio.create_task_group() as tg:
        tg.start_soon(cli.lives)
        await say_goodbye(cli, aborted=True, scrub=str)
    assert cli.signals == ["TERM"] and cli.disconnected
    assert cli.read == ["the model's last words"]


async def test_a_cli_that_ignores_sigterm_is_killed_after_the_grace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interrupts, "ABANDON_GRACE_S", 0.05)
    cli = FakeCli(obeys_sigterm=False)
    with anyio.fail_after(5):
        await say_goodbye(cli, aborted=True, scrub=str)
    assert cli.signals == ["TERM", "KILL"] and cli.disconnected


async def test_a_normal_end_sends_no_signal() -> None:
    cli = FakeCli()
    await say_goodbye(cli, aborted=False, scrub=str)
    assert cli.signals == [] and cli.disconnected

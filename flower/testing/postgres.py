"""A throwaway PostgreSQL server for tests and the store benchmark.

``TempPostgres()`` runs ``initdb`` + ``pg_ctl`` in a temp dir on a free port (as the
``postgres`` system user when running as root: ``initdb`` refuses root) and gives a URL::

    with TempPostgres() as pg:
        store = PostgresSessionStore(pg.url)

``find_bin()`` is None when no PostgreSQL binaries are installed (tests skip then). Data
lives in tmpfs-friendly settings (``fsync=off``): it is scratch. ``stop()``/``start()``
simulate an outage.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

__all__ = ["TempPostgres", "find_bin"]


def find_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(d) / "initdb").exists() and (Path(d) / "pg_ctl").exists():
            return Path(d)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TempPostgres:
    """One scratch server; ``url`` connects as superuser ``postgres`` without a password."""

    def __init__(self, bindir: Path | None = None) -> None:
        found = bindir or find_bin()
        if found is None:
            raise FileNotFoundError("no PostgreSQL binaries (initdb, pg_ctl) found")
        self.bindir = found
        self.root = Path(tempfile.mkdtemp(prefix="flower-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user: str | None = None
        if os.geteuid() == 0:
            self.user = "postgres"
            pw = pwd.getpwnam(self.user)
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust",
                  "-E", "UTF8", "--no-sync")

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bindir / tool), *args]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=120)

    def start(self) -> None:
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c full_page_writes=off -c max_connections=100")
        self._run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.root / "log"),
                  "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop", check=False)

    def url_for(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def createdb(self, name: str) -> str:
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return self.url_for(name)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> TempPostgres:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

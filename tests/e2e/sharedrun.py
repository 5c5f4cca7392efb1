"""One expensive run shared by the tests of a module, each starting from a copy of its state.

A whole flow is ~10 s of CLI work. Tests that only check what one run did, or wake it up
again, need not each do it anew: a module-scoped fixture runs it once with :func:`shared_run`
and each test calls :meth:`Shared.restore` first. The copy goes back to the very paths the
run used, because its state names them (the CLI's project key is the workspace path; the
lineage and the notes hold absolute paths). Every test then starts from the same state
whatever ran before it, and the tests never see each other's changes.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import pytest
from homes import point_home_at

from flower.testing import FakeServer
from flower.testing.env import foreign_keys, offline_env

T = TypeVar("T")


@dataclass
class Shared(Generic[T]):
    """What the run returned, the fake that served it, and the copy of its state."""

    base: Path  # home/, ws/, runs/ in it, laid out as the conftest's fixtures do
    snapshot: Path
    result: T
    fake: FakeServer

    def restore(self, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
        """Put the state back as the run left it and make it this test's HOME and cwd; call
        it after ``cli_env`` (this test's fake stays the one the CLI talks to). Returns
        (workspace, run dir)."""
        shutil.rmtree(self.base)
        shutil.copytree(self.snapshot, self.base, symlinks=True)
        point_home_at(monkeypatch, self.base / "home")
        monkeypatch.chdir(self.base / "ws")
        return self.base / "ws", self.base / "runs"


@contextmanager
def shared_run(factory: pytest.TempPathFactory,
               run: Callable[[Path, Path, FakeServer], T]) -> Iterator[Shared[T]]:
    """Run ``run(workspace, run_dir, fake)`` once, with its own fake, HOME and environment
    set up as the conftest's ``home``/``cli_env`` fixtures do, and snapshot what it left."""
    base = factory.mktemp("shared")
    home, ws, runs = base / "home", base / "ws", base / "runs"
    (home / ".claude").mkdir(parents=True)
    ws.mkdir()
    runs.mkdir()
    with pytest.MonkeyPatch.context() as mp, FakeServer() as fake:
        # the developer's own endpoint/credentials stay out, as do their flower settings
        for key in [*foreign_keys(os.environ), "FLOWER_ENV", "XDG_CONFIG_HOME"]:
            mp.delenv(key, raising=False)
        point_home_at(mp, home)
        for key, value in offline_env(fake.url, home=str(home), FLOWER_NO_UPDATE="1").items():
            mp.setenv(key, value)
        mp.chdir(ws)
        result = run(ws, runs, fake)
    if fake.errors:
        warnings.warn(f"fake server errors: {fake.errors}", stacklevel=1)
    snapshot = base.with_name(base.name + "-snapshot")
    shutil.copytree(base, snapshot, symlinks=True)
    yield Shared(base, snapshot, result, fake)


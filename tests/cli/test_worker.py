"""``flower worker``'s start-up: settings are read from ``.env`` files, never exported."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from flower.cli.commands import temporal
from flower.cli.context import Globals


def test_worker_reads_dotenv_without_exporting_it(home: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The token and store saved in ``~/.config/flower/.env`` count (the worker starts and
    names the store, password masked), but none of the file's keys enter the worker's own
    ``os.environ`` — where every tool subprocess and library of the process would see them."""
    pytest.importorskip("temporalio")
    monkeypatch.chdir(tmp_path)
    saved = home / ".config" / "flower" / ".env"
    saved.parent.mkdir(parents=True)
    saved.write_text("ANTHROPIC_AUTH_TOKEN=tok-saved-by-setup-0000\n"
                     "FLOWER_STORE_URL=postgresql://flower:pw-in-dotenv@db.example/flower\n"
                     "FLOWER_WORKER_ONLY_IN_DOTENV=1\n")
    during: list[dict[str, str]] = []

    async def connect(address: str) -> object:
        during.append(dict(os.environ))
        return object()

    class Worker:
        async def run(self) -> None:
            during.append(dict(os.environ))

        async def shutdown(self) -> None:
            pass

    def build_worker(client: Any, queue: str, **kw: Any) -> Worker:
        return Worker()

    monkeypatch.setattr("flower.distributed.temporal_worker.connect", connect)
    monkeypatch.setattr("flower.distributed.temporal_worker.build_worker", build_worker)
    g = Globals(workspace=str(tmp_path), run_dir=None, verbose=False, workbench=True,
                trim=False)
    assert temporal.worker(g, "127.0.0.1:7233", "q", None) == 0
    out = capsys.readouterr().out
    assert "db.example" in out and "pw-in-dotenv" not in out  # the .env store, masked
    assert len(during) == 2
    for env in [*during, dict(os.environ)]:
        for key in ("ANTHROPIC_AUTH_TOKEN", "FLOWER_STORE_URL", "FLOWER_WORKER_ONLY_IN_DOTENV"):
            assert key not in env

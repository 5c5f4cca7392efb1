"""``--no-bequest`` reaches the default job on both paths: run here, and submitted to
Temporal workers (which rebuild the workflow from the submitted kwargs). ``update`` is a
command, not an ask."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flower.cli import app as cli
from flower.cli.app import route
from flower.cli.commands import go as go_cmd
from flower.cli.commands import temporal
from flower.cli.context import Globals
from flower.workflow.starter import starter_flow

OPTS = dict(asks=-1, rounds=3, no_goal=False, judge_can_run=False, timeout=0.0,
            isolate=False, window=None, no_handoff=False, new=False, clarify_only=False,
            no_trim=False)


def _handed_over(wf: Any) -> bool:
    return "with_bequest" in wf.steps[-1].gate.__qualname__


def test_the_flags_are_on_the_command_line() -> None:
    assert "--no-bequest" in CliRunner().invoke(cli.main, ["go", "--help"]).output
    assert route(["update", "--check"]) == ["update", "--check"]
    assert "--check" in CliRunner().invoke(cli.main, ["update", "--help"]).output


@pytest.mark.parametrize("no_bequest", [False, True])
def test_local_go_builds_the_job_with_or_without_the_handover(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, no_bequest: bool) -> None:
    built: list[Any] = []
    monkeypatch.setattr(go_cmd, "credentials_ready", lambda out, g: True)
    monkeypatch.setattr(go_cmd, "drive", lambda out, g, wf, *a, **k: built.append(wf) or 0)
    g = Globals(str(tmp_path), None, False, False, False)
    assert go_cmd.go(g, "做个小工具", **OPTS, no_bequest=no_bequest) == 0
    assert _handed_over(built[0]) is not no_bequest


@pytest.mark.parametrize("no_bequest", [False, True])
def test_temporal_go_carries_the_flag_to_the_workers(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, no_bequest: bool) -> None:
    sent: dict[str, Any] = {}
    monkeypatch.setattr(temporal, "submit", lambda g, target, **kw: sent.update(kw) or 0)
    g = Globals(str(tmp_path), None, False, False, False)
    assert temporal.go(g, "做个小工具", address="127.0.0.1:1", queue="q", heartbeat=30.0,
                       **OPTS, no_bequest=no_bequest) == 0
    assert sent["kwargs"]["bequest"] is not no_bequest
    assert _handed_over(starter_flow(**sent["kwargs"])) is not no_bequest  # as a worker would

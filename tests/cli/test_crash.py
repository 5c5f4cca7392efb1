"""What an exception out of a command body becomes: one line and exit 1 — the error's own
message when the person can act on it, else a bug line naming the file with the traceback.

Driven through click's CliRunner with a command body replaced; the real process (``python
-m flower`` with an injected fault) is tests/e2e/test_commands.py.
"""

from __future__ import annotations

import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from flower import errors, texts
from flower.cli import app as cli
from flower.cli.crash import write_crash
from flower.cli.exitcodes import ExitCode

SECRET = "sk-ant-test-not-a-real-key-123456"


@pytest.fixture
def tmp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temp dir a crash report falls back to, empty and private to this test."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def body_raising(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """``flower log`` now raises ``exc`` from its body."""
    def show_log(*args: Any, **kw: Any) -> int:
        raise exc

    monkeypatch.setattr("flower.cli.commands.log.show_log", show_log)


def flower(*argv: str) -> Any:
    return CliRunner().invoke(cli.main, list(argv), catch_exceptions=False)


def crash_files(*folders: Path) -> list[Path]:
    return [p for folder in folders for p in folder.glob("*crash-*.log")]


def test_the_exit_codes_scripts_branch_on() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 130]
    assert [c.name for c in ExitCode] == ["OK", "FAILED", "USAGE", "INTERRUPTED"]


def test_a_bug_is_one_line_naming_the_crash_file_in_the_run_dir(
        tmp_path: Path, tmp_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    body_raising(monkeypatch, ZeroDivisionError("division by zero"))
    result = flower("-r", str(runs), "log")
    assert result.exit_code == ExitCode.FAILED
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    [crash] = crash_files(runs)
    assert lines[0] == "x " + texts.BUG.format(
        error="ZeroDivisionError: division by zero", path=crash)
    assert stat.S_IMODE(crash.stat().st_mode) == 0o600
    report = crash.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in report and 'File "' in report
    assert "ZeroDivisionError: division by zero" in report and "show_log" in report
    assert not crash_files(tmp_dir)


def test_without_a_run_dir_the_crash_file_goes_to_the_temp_dir(
        tmp_path: Path, tmp_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body_raising(monkeypatch, KeyError("lost"))
    result = flower("-r", str(tmp_path / "never-made"), "log")
    assert result.exit_code == ExitCode.FAILED
    [crash] = crash_files(tmp_dir)
    assert str(crash) in result.output and "KeyError: 'lost'" in result.output
    assert not (tmp_path / "never-made").exists()  # a crash report creates no folders


def test_secrets_are_masked_in_the_line_and_the_file(
        tmp_path: Path, tmp_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    body_raising(monkeypatch, RuntimeError(f"sent {SECRET} to the wrong place"))
    result = flower("-r", str(tmp_path), "log")
    [crash] = crash_files(tmp_path)
    assert SECRET not in result.output and SECRET not in crash.read_text(encoding="utf-8")
    assert "RuntimeError: sent" in result.output


@pytest.mark.parametrize("exc,line", [
    (errors.TargetError("'flows.py' 里没有 'nope'"), "x 'flows.py' 里没有 'nope'"),
    (errors.CredentialsMissing("还没有凭证"), "x 还没有凭证"),
    (PermissionError(13, "Permission denied", "/x/runs/manifest.json"),
     "x PermissionError: [Errno 13] Permission denied: '/x/runs/manifest.json'"),
])
def test_an_error_the_person_can_act_on_is_its_own_line_and_no_crash_file(
        exc: Exception, line: str, tmp_path: Path, tmp_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    body_raising(monkeypatch, exc)
    result = flower("-r", str(tmp_path), "log")
    assert result.exit_code == ExitCode.FAILED
    assert result.output.strip().splitlines() == [line]
    assert not crash_files(tmp_path, tmp_dir)


def test_an_os_error_out_of_a_task_group_is_still_one_line(
        tmp_path: Path, tmp_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def task() -> None:
        raise OSError(28, "No space left on device")

    async def grouped() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(task)

    try:
        anyio.run(grouped)
    except BaseException as exc:  # the group anyio raises
        caught = exc
    body_raising(monkeypatch, caught)
    result = flower("-r", str(tmp_path), "log")
    assert result.output.strip().splitlines() == [
        "x OSError: [Errno 28] No space left on device"]
    assert not crash_files(tmp_path, tmp_dir)


def test_ctrl_c_and_usage_errors_are_click_s_as_before(
        tmp_path: Path, tmp_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body_raising(monkeypatch, KeyboardInterrupt())
    stopped = flower("-r", str(tmp_path), "log")
    assert stopped.exit_code == 1 and "Aborted!" in stopped.output
    usage = CliRunner().invoke(cli.main, ["log", "--nope"])
    assert usage.exit_code == ExitCode.USAGE
    assert not crash_files(tmp_path, tmp_dir)


def test_a_temporal_command_that_crashes_still_leaves_through_os_exit(
        tmp_path: Path, tmp_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporalio core's threads can abort a normal interpreter exit: a command that
    talked to Temporal ends with ``_leave`` even when its body raised."""
    left: list[int] = []

    def leave(code: int) -> None:
        left.append(code)
        raise SystemExit(code)

    def status(*args: Any, **kw: Any) -> int:
        raise ZeroDivisionError("late")

    monkeypatch.setattr(cli, "_leave", leave)
    monkeypatch.setattr("flower.cli.commands.temporal.status", status)
    result = flower("-r", str(tmp_path), "status", "--temporal", "127.0.0.1:1")
    assert left == [ExitCode.FAILED] and result.exit_code == ExitCode.FAILED
    assert len(crash_files(tmp_path)) == 1


def test_a_crash_file_that_cannot_be_written_anywhere_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    try:
        raise ValueError("x")
    except ValueError as exc:
        path, why = write_crash(exc, tmp_path / "also-gone")
    assert path is None and why.startswith("FileNotFoundError")
    assert re.search(r"gone", why)

"""What the command line refuses, and that a refusal leaves nothing behind.

A mistyped command (``flower lgo``) or ``flower help`` must not become a paid run of the
default job; ``flower ""`` and ``flower </dev/null`` in an empty folder must say what to do
and create nothing; ``flower log --json`` with no runs is still JSON. Run through click's
CliRunner in a scratch folder: the assertions are what a person sees and what is on disk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flower import texts
from flower.cli import app as cli
from flower.errors import BadInput


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``go``'s body replaced by a recorder: whether the default job would have started."""
    calls: list[Any] = []

    def record(g: Any, ask: Any, **kw: Any) -> int:
        calls.append(ask)
        return 0

    monkeypatch.setattr("flower.cli.commands.go.go", record)
    return calls


@pytest.fixture
def creds(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A key and no probe: the run gets past the credential gate without a network."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("FLOWER_NO_PROBE", "1")
    monkeypatch.setenv("FLOWER_NO_UPDATE", "1")
    return workspace


def invoke(*argv: str) -> Any:
    return CliRunner().invoke(cli.main, list(argv), catch_exceptions=False, prog_name="flower")


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------ typos and help


@pytest.mark.parametrize("word,command", [
    ("lgo", "log"), ("dmeo", "demo"), ("stup", "setup"), ("anaylze", "analyze"),
    ("LOG", "log"), ("upadte", "update"), ("doctr", "doctor"),
    # words guessed for a command named otherwise here
    ("init", "setup"), ("login", "setup"), ("check", "doctor"), ("history", "log"),
    ("continue", "resume"), ("upgrade", "update"),
])
def test_a_mistyped_command_is_refused_before_anything_runs(
        word: str, command: str, ran: list[Any], workspace: Path) -> None:
    result = invoke(word)
    assert result.exit_code == 2 and ran == []
    assert result.stderr.strip() == texts.NOT_A_COMMAND.format(word=word, command=command)
    assert f"flower {command}" in result.stderr and f"flower go {word}" in result.stderr
    assert result.stdout == "" and listing(workspace) == []  # no .flower/, no runs/


def test_global_flags_do_not_hide_a_typo(ran: list[Any], workspace: Path) -> None:
    result = invoke("-v", "dmeo", "-w", str(workspace))
    assert result.exit_code == 2 and ran == [] and "flower demo" in result.stderr


@pytest.mark.parametrize("word", ["fix", "test", "refactor", "deploy", "Makefile"])
def test_one_ascii_word_is_refused_with_the_commands_and_the_way_to_send_it(
        word: str, ran: list[Any], workspace: Path) -> None:
    """A guessed command (``flower doctor``, ``flower init``) used to start a full, paid run
    with that word as the requirement."""
    result = invoke(word)
    assert result.exit_code == 2 and ran == []
    assert result.stderr.strip() == texts.ONE_WORD.format(word=word,
                                                          commands=", ".join(cli.COMMANDS))
    assert result.stdout == "" and listing(workspace) == []


@pytest.mark.parametrize("argv,same", [
    (["version"], ["--version"]), (["list"], ["log"]), (["list", "--json"], ["log", "--json"]),
])
def test_the_words_people_reach_for_are_commands(argv: list[str], same: list[str],
                                                 ran: list[Any], workspace: Path) -> None:
    got, want = invoke(*argv), invoke(*same)
    assert (got.exit_code, got.output) == (want.exit_code, want.output) and ran == []


def test_resume_is_bare_flower(ran: list[Any]) -> None:
    assert invoke("resume").exit_code == 0 and ran == [None]


@pytest.mark.parametrize("argv", [
    ["写个 md 转 html 的脚本"], ["lgo 一下"], ["make a script"], ["go", "fix"],
    ["go", "lgo"], ["--", "lgo"], ["--timeout", "0", "写个脚本"],
])
def test_real_asks_still_go_to_the_default_job(argv: list[str], ran: list[Any]) -> None:
    result = invoke(*argv)
    assert result.exit_code == 0, result.output
    assert ran == [argv[-1]]


@pytest.mark.parametrize("argv", [["help"], ["-v", "help"]])
def test_help_is_the_help(argv: list[str], ran: list[Any], workspace: Path) -> None:
    result = invoke(*argv)
    assert result.exit_code == 0 and ran == []
    assert result.output == invoke("--help").output
    assert listing(workspace) == []


def test_help_with_a_command_is_that_commands_help(ran: list[Any]) -> None:
    result = invoke("help", "log")
    assert result.exit_code == 0 and ran == []
    assert result.output == invoke("log", "--help").output


@pytest.mark.parametrize("flag", ["--bogus", "--verbos", "-x"])
def test_an_unknown_flag_before_an_ask_is_flowers_error(flag: str, ran: list[Any]) -> None:
    result = invoke(flag)
    assert result.exit_code == 2 and ran == []
    # flower's own usage line (click 8.5 writes "[COMMAND]", older ones "COMMAND"), not go's
    assert result.stderr.startswith("Usage: flower [OPTIONS] ")
    assert f"No such option '{flag}'" in result.stderr
    assert "flower go" not in result.stderr and "--rounds" not in result.stderr


def test_a_near_flag_is_suggested_from_flowers_own_options(ran: list[Any]) -> None:
    assert "'--verbose'" in invoke("--verbos").stderr  # a flower option, not go's


def test_help_before_an_ask_is_still_gos_help(ran: list[Any]) -> None:
    assert invoke("-h", "X").output == invoke("go", "--help").output


def test_go_options_before_the_ask_still_reach_go(ran: list[Any]) -> None:
    assert invoke("--new").exit_code == 0 and ran == [None]
    assert invoke("--rounds=2", "X").exit_code == 0 and ran[-1] == "X"


# ------------------------------------------------------------------ empty asks


def test_an_empty_ask_in_an_empty_folder_leaves_nothing(creds: Path) -> None:
    result = invoke("")
    assert result.exit_code == 1
    assert result.output.strip() == f"x {texts.STARTER_NEED_ASK}"
    assert listing(creds) == []


def test_no_input_in_a_fresh_folder_prints_the_hint(creds: Path) -> None:
    result = CliRunner().invoke(cli.main, [], input=None, catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output.strip() == f"x {texts.STARTER_NEED_ASK}"
    assert texts.CANCELLED not in result.output
    assert listing(creds) == []


def test_piped_ask_is_read_without_a_prompt(creds: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def starter(ask: str, **kw: Any) -> Any:
        seen.append(ask)
        raise BadInput("stopped here")  # the ask arrived; no run needed to see that

    monkeypatch.setattr("flower.workflow.starter.starter_flow", starter)
    result = CliRunner().invoke(cli.main, [], input="写个脚本\n", catch_exceptions=False)
    assert seen == ["写个脚本"] and result.output.strip() == "x stopped here"


# ------------------------------------------------------------------ flower log --json


def test_log_json_with_no_runs_is_an_empty_document(workspace: Path) -> None:
    result = invoke("log", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["runs"] == [] and doc["sessions"] == {}
    assert doc["totals"]["runs"] == 0 and doc["totals"]["steps"] == 0
    assert doc["run_dir"] == str(workspace / "runs")
    assert texts.LOG_NO_RUN_DIR.format(path=workspace / "runs") in result.stderr
    assert listing(workspace) == []


def test_log_json_keeps_the_shape_it_has_with_runs(workspace: Path) -> None:
    from flower.runlog.model import RunLog, to_json

    full = to_json(RunLog(run_dir=workspace / "runs", workspace=workspace, db="ok"))
    empty = json.loads(invoke("log", "--json").stdout)
    assert set(empty) == set(full) and set(empty["totals"]) == set(full["totals"])

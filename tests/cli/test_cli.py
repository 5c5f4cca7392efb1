"""The command line's parsing, routing and error messages (click's CliRunner, no model).

What happens after parsing is tested end to end in tests/e2e/test_cli.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flower import texts
from flower.cli import app as cli
from flower.cli import context
from flower.cli.app import lift_globals, route
from flower.workflow import target as targets


@pytest.mark.parametrize("argv,expected", [
    ([], ["go"]),
    (["-v"], ["-v", "go"]),
    (["X"], ["go", "X"]),
    (["-w", "/tmp", "X"], ["-w", "/tmp", "go", "X"]),
    (["X", "--timeout", "0"], ["go", "X", "--timeout", "0"]),
    (["--timeout", "0", "X"], ["go", "--timeout", "0", "X"]),
    (["--new"], ["go", "--new"]),
    (["run"], ["run"]),
    (["go", "run"], ["go", "run"]),
    (["setup"], ["setup"]),  # the reference turned this into the ask "setup"
    (["demo", "-w", "d"], ["-w", "d", "demo"]),  # globals after the command are lifted
    (["once", "hi", "-v", "-T"], ["-v", "-T", "once", "hi"]),
    (["--workspace=/a", "log"], ["--workspace=/a", "log"]),
    (["-r", "R", "X", "-W"], ["-r", "R", "-W", "go", "X"]),
    (["--", "-x"], ["go", "--", "-x"]),
    (["--help"], ["--help"]),
    (["-h"], ["-h"]),
    (["--version"], ["--version"]),
    (["-V"], ["-V"]),
    (["X", "--help"], ["go", "X", "--help"]),
])
def test_default_command_rule(argv: list[str], expected: list[str]) -> None:
    assert route(argv) == expected


def test_lift_globals_keeps_order_and_values() -> None:
    assert lift_globals(["a", "-w", "W", "b", "-v", "--run-dir=R"]) == (
        ["-w", "W", "-v", "--run-dir=R"], ["a", "b"])


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Replace the command bodies with recorders: parsing is what is under test."""
    seen: dict[str, Any] = {}

    def recorder(name: str):
        def record(*args: Any, **kw: Any) -> int:
            seen.update(command=name, args=args, kw=kw)
            return 0
        return record

    for module, name in (("go", "go"), ("run", "run"), ("once", "once"), ("setup", "setup"),
                         ("log", "show_log"), ("analyze", "analyze_run")):
        monkeypatch.setattr(f"flower.cli.commands.{module}.{name}", recorder(name))
    return seen


def invoke(*argv: str) -> Any:
    return CliRunner().invoke(cli.main, list(argv), catch_exceptions=False)


def test_go_flags_and_defaults(captured: dict[str, Any]) -> None:
    assert invoke("写个脚本").exit_code == 0
    g, ask = captured["args"]
    assert captured["command"] == "go" and ask == "写个脚本"
    assert captured["kw"] == {"asks": -1, "rounds": 3, "no_goal": False,
                              "judge_can_run": False, "timeout": 1800.0, "isolate": False,
                              "window": None, "no_handoff": False, "new": False,
                              "clarify_only": False, "no_trim": False, "no_bequest": False,
                              "budget": None, "max_hours": None}
    assert (g.workspace, g.run_dir, g.verbose, g.workbench, g.trim) == (
        ".", None, False, False, False)


def test_go_flags_before_and_after_the_ask(captured: dict[str, Any]) -> None:
    assert invoke("--timeout", "0", "X", "--rounds", "2", "-w", "/tmp/w", "-v",
                  "--asks", "0", "--no-goal", "--new", "--window", "90000").exit_code == 0
    g, ask = captured["args"]
    kw = captured["kw"]
    assert ask == "X" and kw["timeout"] == 0 and kw["rounds"] == 2 and kw["asks"] == 0
    assert kw["no_goal"] and kw["new"] and kw["window"] == 90000
    assert g.workspace == "/tmp/w" and g.verbose


def test_bare_flower_is_go_without_an_ask(captured: dict[str, Any]) -> None:
    assert invoke().exit_code == 0
    assert captured["command"] == "go" and captured["args"][1] is None


def test_go_run_makes_run_the_ask(captured: dict[str, Any]) -> None:
    invoke("go", "run")
    assert captured["command"] == "go" and captured["args"][1] == "run"


def test_caps_on_go_bare_flower_and_run_but_once_keeps_its_own_budget(
        captured: dict[str, Any]) -> None:
    assert invoke("X", "--budget", "20", "--max-hours", "8").exit_code == 0
    assert captured["kw"]["budget"] == 20 and captured["kw"]["max_hours"] == 8
    assert invoke("--budget", "40").exit_code == 0  # bare flower: a wake with a new cap
    assert captured["command"] == "go" and captured["args"][1] is None
    assert captured["kw"]["budget"] == 40 and captured["kw"]["max_hours"] is None
    assert invoke("run", "flows.py:main", "--budget", "3").exit_code == 0
    assert captured["command"] == "run" and captured["kw"] == {"budget": 3, "max_hours": None}
    assert invoke("once", "hi", "--budget", "0.5").exit_code == 0
    assert captured["command"] == "once" and captured["kw"]["budget"] == 0.5


def test_run_without_target_is_a_usage_error(captured: dict[str, Any]) -> None:
    result = CliRunner().invoke(cli.main, ["run"])
    assert result.exit_code == 2 and "TARGET" in result.output and not captured


def test_once_flags(captured: dict[str, Any]) -> None:
    assert invoke("once", "看看", "-t", "Read,Grep", "-p", "plan", "-b", "0.5",
                  "--resume", "abc", "--fork", "-i", "be brief", "-T").exit_code == 0
    g, prompt = captured["args"]
    assert prompt == "看看" and g.trim
    assert captured["kw"] == {"instructions": "be brief", "tools": "Read,Grep",
                              "permission_mode": "plan", "budget": 0.5, "resume": "abc",
                              "fork": True}


def test_once_rejects_an_unknown_permission_mode(captured: dict[str, Any]) -> None:
    result = CliRunner().invoke(cli.main, ["once", "x", "-p", "yolo"])
    assert result.exit_code == 2 and not captured


def test_setup_is_reachable(captured: dict[str, Any]) -> None:
    assert invoke("setup").exit_code == 0 and captured["command"] == "setup"


def test_log_takes_a_run_dir_and_json(captured: dict[str, Any]) -> None:
    invoke("log", "some/runs", "--json")
    assert captured["command"] == "show_log"
    assert captured["args"][1] == "some/runs" and captured["kw"] == {"as_json": True,
                                                                     "schema": None}


def test_analyze_takes_a_run_dir_json_and_a_schema(captured: dict[str, Any]) -> None:
    invoke("analyze", "some/runs", "--json", "--schema", "other")
    assert captured["command"] == "analyze_run"
    assert captured["args"][1] == "some/runs"
    assert captured["kw"] == {"as_json": True, "schema": "other"}


def test_unknown_flag_is_a_usage_error(captured: dict[str, Any]) -> None:
    result = CliRunner().invoke(cli.main, ["X", "--nope"])
    assert result.exit_code == 2 and not captured


def test_help_does_not_run_anything(captured: dict[str, Any]) -> None:
    result = invoke("--help")
    assert result.exit_code == 0 and "once" in result.output and not captured


# ------------------------------------------------------------------ the run dir


def test_run_dir_follows_the_workspace(tmp_path: Path) -> None:
    g = context.Globals(workspace=str(tmp_path / "w"), run_dir=None, verbose=False,
                    workbench=False, trim=False)
    assert context.dirs(g) == ((tmp_path / "w").resolve(), (tmp_path / "w" / "runs").resolve())
    g.run_dir = str(tmp_path / "elsewhere")
    assert context.dirs(g)[1] == (tmp_path / "elsewhere").resolve()


# ------------------------------------------------------------------ run TARGET errors

FLOWS = """
from flower import AgentSpec, Step, Workflow

SPEC = AgentSpec(name="a", instructions="x")

def main():
    return Workflow([Step("one", SPEC, "hi")])

ready = main()
not_a_flow = 42

def broken():
    raise RuntimeError("no config")
"""


@pytest.fixture
def flows(tmp_path: Path) -> Path:
    (tmp_path / "flows.py").write_text(FLOWS)
    (tmp_path / "bad.py").write_text("import nothing_here_at_all\n")
    return tmp_path


@pytest.mark.parametrize("target,message", [
    ("flows.py", "需要 模块:属性 形式"),
    ("missing.py:main", "找不到 missing.py"),
    ("bad.py:main", "导入 'bad.py' 失败:ModuleNotFoundError"),
    ("flows.py:nope", "'flows.py' 里没有 'nope'"),
    ("flows.py:not_a_flow", "不是 Workflow"),
    ("flows.py:broken", "调用 flows.py:broken 失败:RuntimeError: no config"),
    ("no_such_module_xyz:main", "导入 'no_such_module_xyz' 失败"),
])
def test_run_target_errors(flows: Path, target: str, message: str,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(flows)
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(targets.TargetError, match=message.replace("(", r"\(")):
        targets.load_target(target)


@pytest.mark.parametrize("target", ["flows.py:main", "flows.py:ready", "flows:main"])
def test_run_target_loads_a_workflow(flows: Path, target: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(flows)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "flows", raising=False)
    wf = targets.load_target(target)
    assert [s.name for s in wf.steps] == ["one"]


def test_run_with_a_bad_target_exits_1_with_one_line(flows: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(flows)
    result = CliRunner().invoke(cli.main, ["run", "flows.py:nope"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "x " + texts.RUN_NO_ATTR.format(module="flows.py", attr="nope")]

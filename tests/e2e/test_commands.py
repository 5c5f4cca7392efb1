"""The ``flower`` command end to end: a real process, the real SDK and CLI, the fake model.

Stdin is not a terminal here, so these are the unattended paths; the interactive terminal
is driven through a pty in test_terminal.py.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sharedrun import Shared, shared_run

from flower import texts
from flower.cli.commands.demo import ASK, DemoBrain
from flower.testing import FakeServer, match, reply, tool_use

TIMEOUT = 90


def flower(ws: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "flower", *args], cwd=ws, env=env,
                          input=stdin, capture_output=True, text=True, timeout=TIMEOUT)


def steps(ws: Path) -> list[str]:
    return [r["step"] for r in json.loads((ws / "runs" / "manifest.json").read_text())]


@pytest.fixture
def brain(fake: FakeServer, workspace: Path) -> DemoBrain:
    b = DemoBrain(workspace, pause=0.0)
    fake.fallback(b)
    return b


@pytest.fixture(scope="module")
def unattended(tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[Shared[subprocess.CompletedProcess[str]]]:
    """``flower --timeout 0 ASK`` run once to its end in an empty folder, shared by the
    tests that check its output, wake it up or read its log (one whole flow, not two)."""

    def run(ws: Path, runs: Path, fake: FakeServer) -> subprocess.CompletedProcess[str]:
        fake.fallback(DemoBrain(ws, pause=0.0))
        return flower(ws, "--timeout", "0", ASK)

    with shared_run(tmp_path_factory, run) as shared:
        yield shared


@pytest.fixture
def after_unattended(unattended: Shared[subprocess.CompletedProcess[str]], fake: FakeServer,
                     cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace exactly as that run left it, with this test's fake answering as the
    demo's brain."""
    ws, _ = unattended.restore(monkeypatch)
    fake.fallback(DemoBrain(ws, pause=0.0))
    return ws


def test_go_unattended_then_wake(unattended: Shared[subprocess.CompletedProcess[str]],
                                 after_unattended: Path) -> None:
    out, workspace = unattended.result, after_unattended
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"== 确认需求 =+  1/3", out.stdout)
    assert re.search(r"== 干活 =+  3/3", out.stdout)
    assert texts.UI_ASK_STATES["timeout"] in out.stdout  # --timeout 0: nobody is asked
    assert "总花费 $" in out.stdout and str(workspace / "runs" / "manifest.json") in out.stdout
    assert steps(workspace) == ["确认需求", "设定目标", "干活", "干活·判定#1", "干活#round2",
                                "干活·判定#2", "收尾交接"]

    again = flower(workspace, "--timeout", "0", stdin="\n")  # bare flower, Enter = carry on
    assert again.returncode == 0, again.stdout + again.stderr
    assert "接上上次" in again.stdout and "第 2 次唤醒" in again.stdout
    assert "== 确认需求" not in again.stdout  # frozen steps are skipped
    assert re.search(r"== 干活 =+  3/3  <- 接上次 · 第 2 次唤醒", again.stdout)
    assert steps(workspace)[7:] == ["干活", "干活·判定#1", "收尾交接"]


def test_new_archives_the_old_task(fake: FakeServer, workspace: Path, cli_env: dict[str, str],
                                   brain: DemoBrain) -> None:
    assert flower(workspace, "--timeout", "0", "--clarify-only", ASK).returncode == 0
    out = flower(workspace, "--timeout", "0", "--clarify-only", ASK)
    assert out.returncode == 0 and "需求已经确认过了" in out.stdout  # says so, runs nothing
    assert steps(workspace) == ["确认需求"]
    out = flower(workspace, "--new", "--timeout", "0", "--clarify-only", ASK)
    assert out.returncode == 0, out.stdout + out.stderr
    [archived] = list((workspace / ".flower" / "notes" / "archive").iterdir())
    assert {p.name for p in archived.iterdir()} >= {"需求.md", "lineage.json"}
    assert steps(workspace) == ["确认需求", "确认需求"]


def test_bare_flower_with_nothing_to_do_exits_1(fake: FakeServer, workspace: Path,
                                               cli_env: dict[str, str]) -> None:
    out = flower(workspace, stdin="\n")
    assert out.returncode == 1 and texts.EMPTY_ASK in out.stdout
    out = flower(workspace)  # EOF at the start prompt: nothing to do here, say what to do
    assert out.returncode == 1 and texts.STARTER_NEED_ASK in out.stdout
    assert fake.message_requests() == []


FLOWS = '''
from flower import AgentSpec, Step, Workflow

SPEC = AgentSpec(name="a", instructions="test", allowed_tools=["Read"])

def main():
    return Workflow([
        Step("取词", SPEC, "只回一个词"),
        Step("造句", SPEC, lambda ctx: f"用「{ctx['取词']}」造句"),
    ])
'''


def test_run_a_two_step_flow(fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    (workspace / "flows.py").write_text(FLOWS)
    fake.route(match.first_user_contains("只回一个词"), "苹果")
    fake.route(match.first_user_contains("「苹果」"), "苹果很甜")
    out = flower(workspace, "run", "flows.py:main")
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"== 取词 =+  1/2", out.stdout) and re.search(r"== 造句 =+  2/2", out.stdout)
    assert "苹果很甜" in out.stdout
    assert steps(workspace) == ["取词", "造句"]


def test_run_a_failing_flow_exits_1(fake: FakeServer, workspace: Path,
                                    cli_env: dict[str, str]) -> None:
    (workspace / "flows.py").write_text(FLOWS.replace('Step("取词", SPEC, "只回一个词")',
                                                      'Step("取词", SPEC, "只回一个词", '
                                                      'gate=lambda r, c: False)'))
    fake.fallback("不对的词")
    out = flower(workspace, "run", "flows.py:main")
    assert out.returncode == 1
    assert "在步骤 '取词' 中止" in out.stdout


def test_once(fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    (workspace / "README.md").write_text("hello from the readme\n")
    fake.script(reply(tool_use("Read", {"file_path": str(workspace / "README.md")})),
                "它说 hello")
    out = flower(workspace, "once", "-t", "Read", "读一眼 README")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "* Read" in out.stdout and "它说 hello" in out.stdout
    assert steps(workspace) == ["ad-hoc"]
    sid = json.loads((workspace / "runs" / "manifest.json").read_text())[0]["session_id"]
    assert f"--resume {sid}" in out.stdout

    fake.script("还记得")
    out = flower(workspace, "once", "--resume", sid, "还记得吗")
    assert out.returncode == 0 and "还记得" in out.stdout
    assert "hello from the readme" in fake.last_request().text()  # the same session


def test_missing_credentials_exit_1_without_a_request(fake: FakeServer, workspace: Path,
                                                      cli_env: dict[str, str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    out = flower(workspace, "--timeout", "0", ASK)
    assert out.returncode == 1 and "ANTHROPIC_API_KEY" in out.stdout + out.stderr
    assert fake.message_requests() == [] and not (workspace / "runs").exists()


def test_log_after_a_run(unattended: Shared[subprocess.CompletedProcess[str]],
                         after_unattended: Path) -> None:
    workspace = after_unattended
    assert unattended.result.returncode == 0
    out = flower(workspace, "log")
    assert out.returncode == 0, out.stdout + out.stderr
    for step in ("确认需求", "设定目标", "干活·判定#1", "干活#round2"):
        assert step in out.stdout
    data = json.loads(flower(workspace, "log", "--json").stdout)
    assert data and isinstance(data, dict)


def test_setup_with_piped_input(fake: FakeServer, workspace: Path, cli_env: dict[str, str],
                                home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`flower setup` is reachable; piped answers write the user file, mode 600, and the
    probe's verdict is shown — the token itself never is."""
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(key)
    token = "sk-ant-test-0123456789abcdef"
    out = flower(workspace, "setup", stdin=f"{token}\n{fake.url}/v1\n\n")
    assert out.returncode == 0, out.stdout + out.stderr
    path = home / ".config" / "flower" / ".env"
    assert (path.stat().st_mode & 0o777) == 0o600
    written = path.read_text()
    assert f"ANTHROPIC_API_KEY={token}" in written
    assert f"ANTHROPIC_BASE_URL={fake.url}\n" in written  # the pasted /v1 was dropped
    assert token not in out.stdout + out.stderr
    assert texts.SETUP_PROBE_OK.split("{")[0].strip() in out.stdout
    (probe,) = fake.auxiliary_requests()  # the probe's one tiny request, answered by the fake
    assert probe.headers.get("x-api-key") == token


def test_piped_stdin_is_a_script_of_answers(fake: FakeServer, workspace: Path,
                                            cli_env: dict[str, str], brain: DemoBrain) -> None:
    """A line on stdin answers the next question (a number picks the option); the question
    is asked after the line arrived, so the line waits for it — not the other way round."""
    out = flower(workspace, "--timeout", "30", "--clarify-only", ASK, stdin="2\n")
    assert out.returncode == 0, out.stdout + out.stderr
    brief = (workspace / ".flower" / "notes" / "需求.md").read_text()
    assert "再加上代码块和表格" in brief  # option 2
    assert "+ 再加上代码块和表格" in out.stdout


def test_piped_eof_never_makes_a_question_wait(fake: FakeServer, workspace: Path,
                                               cli_env: dict[str, str],
                                               brain: DemoBrain) -> None:
    """No answers on stdin and a 30-minute timeout: the question falls through at once."""
    import time

    started = time.monotonic()
    out = flower(workspace, "--clarify-only", ASK)  # default --timeout 1800
    assert out.returncode == 0, out.stdout + out.stderr
    assert time.monotonic() - started < 60
    log = (workspace / ".flower" / "notes" / "问答记录.md").read_text()
    assert "[declined]" in log or "[timeout]" in log


def test_verbose_prints_the_config_with_the_key_masked(fake: FakeServer, workspace: Path,
                                                       cli_env: dict[str, str],
                                                       brain: DemoBrain) -> None:
    key = cli_env["ANTHROPIC_API_KEY"]
    out = flower(workspace, "-v", "--timeout", "0", "--clarify-only", ASK)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ANTHROPIC_API_KEY" in out.stdout and key[:4] in out.stdout
    assert key not in out.stdout + out.stderr
    assert fake.url in out.stdout


# --- an exception: one line — a bug names the file its traceback went to --------------------

INJECT = """
# loaded at start-up (sitecustomize): the wake-up check of flower divides by zero
import flower.workflow.wake as wake


def wake_state(*args, **kwargs):
    return 1 / 0


wake.wake_state = wake_state
"""


@pytest.fixture
def scratch_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TMPDIR for the flower process: where a crash report falls back to."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    return d


def test_an_unexpected_exception_is_a_bug_line_with_the_traceback_in_a_file(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], scratch_tmp: Path,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(INJECT)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(inject), *filter(None, [os.environ.get("PYTHONPATH")])]))
    (workspace / "runs").mkdir()
    out = flower(workspace, "--timeout", "0", ASK)
    assert out.returncode == 1
    assert "Traceback" not in out.stdout + out.stderr
    [crash] = (workspace / "runs").glob("crash-*.log")
    assert (out.stdout + out.stderr).strip().splitlines() == [
        "x " + texts.BUG.format(error="ZeroDivisionError: division by zero", path=crash)]
    assert stat.S_IMODE(crash.stat().st_mode) == 0o600
    report = crash.read_text(encoding="utf-8")
    assert report.rstrip().endswith("ZeroDivisionError: division by zero")
    assert re.search(r'File ".*sitecustomize\.py", line \d+, in wake_state', report)
    assert not list(scratch_tmp.iterdir()) and fake.message_requests() == []


def test_an_error_the_person_can_act_on_is_one_line_and_no_crash_file(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str],
        scratch_tmp: Path) -> None:
    (workspace / "runs").mkdir()
    out = flower(workspace, "run", "nope:x")
    assert out.returncode == 1
    assert (out.stdout + out.stderr).strip().splitlines() == ["x " + texts.RUN_IMPORT.format(
        module="nope", error="ModuleNotFoundError: No module named 'nope'")]
    assert not list((workspace / "runs").iterdir()) and not list(scratch_tmp.iterdir())

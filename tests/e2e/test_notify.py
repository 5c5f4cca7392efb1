"""``--notify CMD`` end to end: the real ``flower`` process, the real SDK and CLI, the fake
model. The command hears of each question, cap and the end, in order, without a secret, and
a command that fails or hangs never costs the run more than a warning line and a bounded
wait at exit."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flower import texts
from flower.cli.commands.demo import ASK, QUESTION, DemoBrain
from flower.testing import FakeServer, match

TIMEOUT = 90
# one line per notification: event|run|workspace|text
RECORD = 'printf "%s|%s|%s|%s\\n" "$FLOWER_EVENT" "$FLOWER_RUN" "$FLOWER_WORKSPACE" ' \
         '"$FLOWER_TEXT" >> "{path}"'

FLOWS = '''
from pathlib import Path

from flower import AgentSpec, Event, HumanChannel, Step, Workflow

SPEC = AgentSpec(name="a", instructions="test", allowed_tools=["Read"])
CHANNEL = HumanChannel(timeout_s=30)
CAP = "预算 $1.00 已用完(已花 $1.05)— 再加多少?"


async def ask_first(ctx):
    await CHANNEL.ask(QUESTION, ["是", "否"])
    return True


async def capped(ctx):
    # what the Runtime does when a cap is reached: a cap event, then the cap's question
    ctx["_on_event"](Event("cap", text=CAP, payload={"which": "budget"}))
    await CHANNEL.ask(CAP, ["+50%", "+100%", "停下"])
    return True


def main():
    return Workflow([
        Step("问", SPEC, "只回一个词", when=ask_first),
        Step("花钱", SPEC, "只回一个词", when=capped),
    ], channel=CHANNEL)
'''


def flower(ws: Path, *args: str, stdin: str = "",
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120", **(env or {})}
    return subprocess.run([sys.executable, "-m", "flower", *args], cwd=ws, env=env,
                          input=stdin, capture_output=True, text=True, timeout=TIMEOUT)


def lines(path: Path) -> list[list[str]]:
    return [line.split("|", 3) for line in path.read_text().splitlines()] \
        if path.exists() else []


def wait_lines(path: Path, n: int, within_s: float = 15.0) -> list[list[str]]:
    """The notifications recorded once ``n`` are there (or the deadline passed)."""
    deadline = time.monotonic() + within_s
    while len(lines(path)) < n and time.monotonic() < deadline:
        time.sleep(0.05)  # polling for the detached command's line, bounded
    return lines(path)


def flows(ws: Path, question: str = "要继续吗?") -> None:
    (ws / "flows.py").write_text(FLOWS.replace("QUESTION", repr(question)))


def warnings_in(out: str) -> list[str]:
    head = texts.NOTIFY_FAILED.split("{")[0]
    return [line for line in out.splitlines() if head in line]


@pytest.fixture
def brain(fake: FakeServer, workspace: Path) -> DemoBrain:
    b = DemoBrain(workspace, pause=0.0)
    fake.fallback(b)
    return b


def test_a_question_then_the_end_each_notify_once_in_order(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], brain: DemoBrain,
        tmp_path: Path) -> None:
    """The default job's clarify question (answered from the pipe) and its end."""
    got = tmp_path / "got.txt"
    out = flower(workspace, "--notify", RECORD.format(path=got), "--timeout", "30",
                 "--clarify-only", ASK, stdin="2\n")
    assert out.returncode == 0, out.stdout + out.stderr
    seen = lines(got)
    assert [e for e, *_ in seen] == ["ask", "done"]
    assert seen[0] == ["ask", workspace.name, str(workspace), QUESTION]
    assert seen[1][3].startswith("总花费 $") and str(workspace / "runs") in seen[1][3]
    assert warnings_in(out.stdout) == []


def test_ask_budget_and_done_from_flower_run_and_the_env_var(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], tmp_path: Path) -> None:
    """``FLOWER_NOTIFY`` instead of the flag; a cap is told as ``budget`` once, not again as
    the question it asks; ``--run`` names the run."""
    flows(workspace)
    fake.fallback("苹果")
    got = tmp_path / "got.txt"
    out = flower(workspace, "--run", "夜跑", "run", "flows.py:main", stdin="1\n1\n",
                 env={"FLOWER_NOTIFY": RECORD.format(path=got)})
    assert out.returncode == 0, out.stdout + out.stderr
    seen = lines(got)
    assert [(e, run) for e, run, *_ in seen] == [("ask", "夜跑"), ("budget", "夜跑"),
                                                 ("done", "夜跑")]
    assert seen[1][3] == "预算 $1.00 已用完(已花 $1.05)— 再加多少?"


def test_a_failed_run_notifies_failed_with_its_reason(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], tmp_path: Path) -> None:
    (workspace / "flows.py").write_text(
        "from flower import AgentSpec, Step, Workflow\n"
        "SPEC = AgentSpec(name='a', instructions='test', allowed_tools=['Read'])\n"
        "main = Workflow([Step('取词', SPEC, '只回一个词', gate=lambda r, c: False)])\n")
    fake.fallback("不对的词")
    got = tmp_path / "got.txt"
    out = flower(workspace, "--notify", RECORD.format(path=got), "run", "flows.py:main")
    assert out.returncode == 1
    seen = lines(got)
    assert [e for e, *_ in seen] == ["failed"]
    assert "在步骤 '取词' 中止" in seen[0][3] and "总花费 $" in seen[0][3]


def test_no_secret_from_dotenv_reaches_the_command(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The credential lives only in ./.env; the model's question quotes it. The command's
    whole environment is dumped: the key is in neither FLOWER_TEXT nor anything inherited."""
    key = "sk-ant-api03-notify-marker-" + "x" * 20
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    (workspace / ".env").write_text(f"ANTHROPIC_API_KEY={key}\n")
    flows(workspace, question=f"这个 key 对吗:{key}")
    fake.fallback("苹果")
    dump = tmp_path / "env.txt"
    out = flower(workspace, "--notify", f'env >> "{dump}"; echo ---- >> "{dump}"',
                 "run", "flows.py:main", stdin="1\n1\n")
    assert out.returncode == 0, out.stdout + out.stderr
    assert fake.message_requests()[0].headers.get("x-api-key") == key  # .env was used
    text = dump.read_text()
    assert "FLOWER_TEXT=这个 key 对吗:sk-a" in text  # the question, masked
    assert key not in text


def test_a_command_that_fails_costs_exactly_one_warning_line(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    fake.route(match.first_user_contains("只回一个词"), "苹果")
    (workspace / "flows.py").write_text(
        "from flower import AgentSpec, Step, Workflow\n"
        "SPEC = AgentSpec(name='a', instructions='test', allowed_tools=['Read'])\n"
        "main = Workflow([Step('取词', SPEC, '只回一个词')])\n")
    out = flower(workspace, "--notify", "echo webhook down >&2; exit 7", "run", "flows.py:main")
    assert out.returncode == 0, out.stdout + out.stderr  # never the run
    warned = warnings_in(out.stdout)
    assert len(warned) == 1 and "7" in warned[0] and "webhook down" in warned[0]


def test_a_hanging_command_neither_holds_the_run_nor_keeps_flower_alive(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], tmp_path: Path) -> None:
    """Each notification's command sleeps 60 s. The run goes on past the question at once
    and flower exits within the 10 s kill + 2 s grace of the run's end."""
    flows(workspace)
    fake.fallback("苹果")
    started = tmp_path / "started.txt"
    out = flower(workspace, "--notify", f'echo "$FLOWER_EVENT $(date +%s.%N)" >> "{started}"; '
                 "sleep 60", "run", "flows.py:main", stdin="1\n1\n")
    exited = time.time()
    assert out.returncode == 0, out.stdout + out.stderr
    when = {}
    for line in started.read_text().splitlines():
        event, stamp = line.split()
        when.setdefault(event, float(stamp))
    rows = json.loads((workspace / "runs" / "manifest.json").read_text())
    ended = max(r["ended_at"] for r in rows)
    assert ended < when["ask"] + 10  # the steps after the question never waited for it
    assert exited - ended < 10 + 2 + 3  # kill bound + grace + interpreter exit
    assert re.search(texts.NOTIFY_HUNG.split("{")[0], out.stdout)


def test_stopping_the_run_while_a_question_waits_notifies_stopped(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], tmp_path: Path) -> None:
    """Nobody answers; the person, told by the ``ask`` notification, stops the run (SIGINT
    on a piped flower stops it at once, as Ctrl-C twice does): ``stopped`` follows."""
    import signal

    flows(workspace)
    fake.fallback("苹果")
    got = tmp_path / "got.txt"
    proc = subprocess.Popen([sys.executable, "-m", "flower", "--notify", RECORD.format(path=got),
                             "run", "flows.py:main"], cwd=workspace,
                            env={**os.environ, "COLUMNS": "120"}, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not lines(got) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)  # polling for the notification itself, bounded
        assert [e for e, *_ in lines(got)] == ["ask"]
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    # Ctrl-C twice ends flower at once: the last notification runs detached, after it
    seen = wait_lines(got, 2)
    assert [e for e, *_ in seen] == ["ask", "stopped"]
    assert texts.STOPPED in seen[1][3] and "总花费 $" in seen[1][3]


def test_the_demo_shows_what_the_command_hears(tmp_path: Path, home: Path) -> None:
    """``flower --notify CMD demo``: a way to try a command offline — the demo's question
    (it answers itself) and its end."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_")) and k != "FLOWER_ENV"}
    env.update({"HOME": str(home), "COLUMNS": "200", "FLOWER_DEMO_PAUSE": "0"})
    got, ws = tmp_path / "got.txt", tmp_path / "demo"
    out = subprocess.run([sys.executable, "-m", "flower", "--notify", RECORD.format(path=got),
                          "demo", "-w", str(ws)], env=env, capture_output=True, text=True,
                         timeout=4 * TIMEOUT)  # the whole default job, seven steps
    assert out.returncode == 0, out.stdout + out.stderr
    seen = lines(got)
    assert [e for e, *_ in seen] == ["ask", "done"]
    assert seen[0][1:] == [ws.name, str(ws), QUESTION]

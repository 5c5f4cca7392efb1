"""`flower demo`: the whole flow offline with no credentials — and it survives `kill -9`."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from flower import texts


@pytest.fixture
def demo_env(home: Path) -> dict[str, str]:
    """No credentials, no endpoint: the demo must bring everything it needs."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_")) and k != "FLOWER_ENV"}
    env.update({"HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1",
                "FLOWER_DEMO_PAUSE": "0.2"})  # a newcomer gets 0.6 s to press Ctrl-C
    return env


def crash(proc: subprocess.Popen) -> None:
    """A terminal crash: SIGKILL to the whole process group (flower, the CLI, its tools)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(10)


def demo(ws: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A demo run to its end. Nobody is there to press Ctrl-C, so the replies come without
    the newcomer's pause (it is a sleep per reply, ~20 of them a run, and asserts nothing);
    the runs a test kills or interrupts keep ``demo_env``'s pause so the moment lands
    mid-flow."""
    return subprocess.run([sys.executable, "-m", "flower", "demo", "-w", str(ws)],
                          env={**env, "FLOWER_DEMO_PAUSE": "0"}, capture_output=True,
                          text=True, timeout=60)


def test_demo_runs_the_whole_flow_offline(tmp_path: Path, home: Path,
                                          demo_env: dict[str, str]) -> None:
    ws = tmp_path / "demo"
    out = demo(ws, demo_env)
    assert out.returncode == 0, out.stdout + out.stderr
    story = [  # the question and its answer, brief, checklist, dispatch, report, verdicts
        "? 转换要支持哪些 Markdown 写法?", "+ 标题、段落和列表就够了", "## 验收标准",
        "## 判定清单", "> 派人 coder", "| * Bash python3 md2html.py sample.md", "< 回报",
        "结论:md2html.py", "干活·判定#1", "未达成", texts.SENT_BACK.format(step="干活", round=2),
        "干活·判定#2", "已达成",
        "收尾交接", "交接写进了 CLAUDE.md、AGENTS.md"]
    at = -1
    for shown in story:  # in this order
        assert out.stdout.find(shown, at + 1) > at, shown
        at = out.stdout.find(shown, at + 1)
    html = (ws / "sample.html").read_text(encoding="utf-8")
    assert "<h1>你好,flower</h1>" in html and "<li>能断点续跑</li>" in html
    assert (ws / ".flower" / "notes" / "需求.md").is_file()
    rows = json.loads((ws / "runs" / "manifest.json").read_text())
    assert [r["step"] for r in rows] == ["确认需求", "设定目标", "干活", "干活·判定#1",
                                         "干活#round2", "干活·判定#2", "收尾交接"]
    assert all(r["ok"] for r in rows)
    # the handover for the next tool: the generated file is named, with what generates it
    for name in ("CLAUDE.md", "AGENTS.md"):
        block = (ws / name).read_text(encoding="utf-8")
        assert "`sample.html` ← `python3 md2html.py sample.md`" in block
        assert "[降级" not in block
    assert not (home / ".claude" / "projects").exists()  # the user's config was left alone
    runs = ws / "runs"  # whole transcripts: for the user's eyes only
    assert stat.S_IMODE(runs.stat().st_mode) == 0o700
    for name in ("sessions.db", "manifest.json", "lineage.json"):
        assert stat.S_IMODE((runs / name).stat().st_mode) == 0o600, name


def test_demo_killed_with_sigkill_wakes_up_and_carries_on(
        tmp_path: Path, demo_env: dict[str, str]) -> None:
    ws = tmp_path / "demo"
    proc = subprocess.Popen([sys.executable, "-m", "flower", "demo", "-w", str(ws)],
                            env=demo_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    tick = threading.Event()
    try:
        for _ in range(1200):  # up to 60 s for the work step to have written its first file
            if (ws / "md2html.py").is_file() or proc.poll() is not None:
                break
            tick.wait(0.05)
        assert (ws / "md2html.py").is_file() and proc.poll() is None
    finally:
        crash(proc)
        proc.communicate()
    assert not (ws / "sample.html").exists()  # it really died mid-work
    before = json.loads((ws / "runs" / "lineage.json").read_text())

    out = demo(ws, demo_env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "接上上次" in out.stdout and "第 2 次唤醒" in out.stdout
    assert "确认需求" not in out.stdout and "设定目标" not in out.stdout  # frozen: skipped
    assert "转换要支持哪些" not in out.stdout  # the answered question is not asked again
    assert "Write " + str(ws / "md2html.py") not in out.stdout.split("干活·判定#1")[0]
    assert (ws / "sample.html").is_file() and "已达成" in out.stdout
    after = json.loads((ws / "runs" / "lineage.json").read_text())
    assert after["woke"] == 2 and after["steps"]["干活"] == before["steps"]["干活"]


@pytest.mark.parametrize("seed", [11, 23, 37])
def test_demo_survives_sigkill_at_a_random_moment(tmp_path: Path, demo_env: dict[str, str],
                                                   seed: int) -> None:
    """Crash consistency: wherever the kill lands, the state on disk stays readable and the
    next run finishes the job (the kill time is drawn from a seeded generator)."""
    import random

    when = random.Random(seed).uniform(0.5, 5.0)  # the whole flow takes ~6 s at 0.2 s a reply
    ws = tmp_path / "demo"
    proc = subprocess.Popen([sys.executable, "-m", "flower", "demo", "-w", str(ws)],
                            env=demo_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        proc.wait(when)
    except subprocess.TimeoutExpired:
        pass
    finally:
        crash(proc)
    for name in ("lineage.json", "manifest.json"):
        path = ws / "runs" / name
        if path.exists():
            json.loads(path.read_text())  # never torn, whatever the moment
    out = demo(ws, demo_env)
    assert out.returncode == 0, f"killed after {when:.2f}s\n{out.stdout}{out.stderr}"
    assert "<h1>你好,flower</h1>" in (ws / "sample.html").read_text(encoding="utf-8")



SHELL = {"ANTHROPIC_API_KEY": "sk-ant-api03-MARKSHELLKEY0000", "ANTHROPIC_AUTH_TOKEN":
         "MARKSHELLTOKEN-000", "ANTHROPIC_CUSTOM_HEADERS": "x-leak: MARKSHELLHEADER-000",
         "CLAUDE_CODE_OAUTH_TOKEN": "MARKSHELLOAUTH-000"}
USER_ENV = {"ANTHROPIC_API_KEY": "sk-ant-api03-MARKFILEKEY00000",
            "ANTHROPIC_CUSTOM_HEADERS": "x-leak: MARKFILEHEADER-000"}
CLAUDE_SETTINGS = {"ANTHROPIC_AUTH_TOKEN": "MARKSETTINGSTOKEN-000"}


def _marks(values: dict[str, str]) -> list[str]:
    return [v.split(": ")[-1] for v in values.values()]


@pytest.mark.parametrize("where", ["shell", "files"])
def test_demo_sends_the_fake_no_real_credential(tmp_path: Path, home: Path, where: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A newcomer with real credentials in their shell — or in their ``flower setup`` file
    and Claude Code's settings — runs ``flower demo``: none of them may reach the demo's
    fake server. Run in-process so the fake's recorded requests can be read; the CLI, the
    Runtime and the flow are the real ones."""
    import flower.testing
    from flower.cli.commands.demo import run_demo

    if where == "shell":
        marks = _marks(SHELL)
        for key, value in SHELL.items():
            monkeypatch.setenv(key, value)
    else:
        marks = _marks(USER_ENV) + _marks(CLAUDE_SETTINGS) + ["MARKHELPER-000"]
        user_env = home / ".config" / "flower" / ".env"
        user_env.parent.mkdir(parents=True)
        user_env.write_text("".join(f"{k}={v}\n" for k, v in USER_ENV.items()))
        (home / ".claude" / "settings.json").write_text(json.dumps(
            {"env": CLAUDE_SETTINGS, "apiKeyHelper": "echo MARKHELPER-000"}))
    fakes: list[flower.testing.FakeServer] = []

    class Watched(flower.testing.FakeServer):
        def __enter__(self) -> flower.testing.FakeServer:
            fakes.append(self)
            return super().__enter__()

        def fallback(self, step: object) -> None:
            step.pause = 0  # type: ignore[attr-defined]  # the demo's brain, unhurried
            super().fallback(step)  # type: ignore[arg-type]

    monkeypatch.setattr(flower.testing, "FakeServer", Watched)
    assert run_demo(str(tmp_path / "demo")) == 0
    seen = [r for f in fakes for r in f.requests]
    assert any(r.is_message for r in seen)
    for r in seen:
        sent = r.raw.decode("utf-8", "replace") + repr(dict(r.headers)) + r.path
        leaked = [m for m in marks if m in sent]
        assert not leaked, (leaked, r.path)
    for key, value in (SHELL.items() if where == "shell" else ()):
        assert os.environ[key] == value  # and the shell's own environment is as it was


def test_ctrl_c_in_the_demo_stops_it_like_a_run(tmp_path: Path,
                                                demo_env: dict[str, str]) -> None:
    """The demo runs what ``flower "…"`` runs, in the same terminal session: Ctrl-C (here,
    piped, a SIGINT) ends it with the run's own line and exit 130 — not click's
    ``Aborted!`` and exit 1 — and the manifest says the step was stopped."""
    ws = tmp_path / "demo"
    proc = subprocess.Popen([sys.executable, "-m", "flower", "demo", "-w", str(ws)],
                            env=demo_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    tick = threading.Event()
    try:
        for _ in range(2400):  # up to 120 s for the work step to be under way
            if (ws / "md2html.py").is_file() or proc.poll() is not None:
                break
            tick.wait(0.05)
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        crash(proc)
    assert proc.returncode == 130, out
    assert texts.STOPPED in out and "Aborted!" not in out
    rows = json.loads((ws / "runs" / "manifest.json").read_text())
    assert rows[-1]["step"] == "干活" and not rows[-1]["ok"]

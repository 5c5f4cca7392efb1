"""`flower demo`: the whole flow offline with no credentials — and it survives `kill -9`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest


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
    return subprocess.run([sys.executable, "-m", "flower", "demo", "-w", str(ws)], env=env,
                          capture_output=True, text=True, timeout=60)


def test_demo_runs_the_whole_flow_offline(tmp_path: Path, home: Path,
                                          demo_env: dict[str, str]) -> None:
    ws = tmp_path / "demo"
    out = demo(ws, demo_env)
    assert out.returncode == 0, out.stdout + out.stderr
    story = [  # the question and its answer, brief, checklist, dispatch, report, verdicts
        "? 转换要支持哪些 Markdown 写法?", "+ 标题、段落和列表就够了", "## 验收标准",
        "## 判定清单", "> 派人 coder", "| * Bash python3 md2html.py sample.md", "< 回报",
        "结论:md2html.py", "干活·判定#1", "未达成", "干活#round2", "干活·判定#2", "已达成",
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

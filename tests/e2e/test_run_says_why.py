"""A run says what happened, in words, through the real CLI against the fake (issue 21):
no send-back line that no attempt follows, an abort that says why (and a manifest that
agrees), a failed turn that is not shown as done, and a wrong base URL told apart from an
outage — exit 1 at once for the one, a bounded, explained wait for the other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

from flower import texts
from flower.core.agent import AgentSpec
from flower.core.runtime import Runtime
from flower.testing import FakeServer, Request, fault, match, reply, tool_use

TIMEOUT = 120
FLOW = """from flower import AgentSpec, Step, Workflow

def main():
    return Workflow([Step("写", AgentSpec("w", "x"), "先说一句"),
                     Step("再写", AgentSpec("w", "x"), "再说一句")])
"""


def flower(ws: Path, *args: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    run_env = {**os.environ, "COLUMNS": "400", **(env or {})}
    return subprocess.run([sys.executable, "-m", "flower", *args], cwd=ws, env=run_env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def rows(ws: Path) -> list[dict]:
    return json.loads((ws / "runs" / "manifest.json").read_text())


def flat(text: str) -> str:
    """``text`` without whitespace: the console may wrap a long line anywhere."""
    return "".join(text.split())


def head(template: str) -> str:
    """The fixed words before a template's first field."""
    return template.split("{")[0]


def test_a_refused_brief_aborts_with_its_reason_and_is_booked_failed(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    fake.fallback(reply("好的。"))
    out = flower(workspace, "--timeout", "0", "写个 md 转 html 的脚本")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "没通过,把缺口送回" not in out.stdout  # no second attempt follows
    why = texts.BRIEF_INCOMPLETE.format(missing="、".join(texts.BRIEF_SECTIONS))
    assert flat(texts.ABORTED_AT.format(step="确认需求", why=why)) in flat(out.stdout)
    [row] = rows(workspace)
    assert row["ok"] is False and row["error"] == why
    log = flower(workspace, "log")
    assert "x 确认需求" in log.stdout and why in log.stdout


def test_a_failed_turn_is_shown_as_failed_not_done(fake: FakeServer, workspace: Path,
                                                   cli_env: dict[str, str]) -> None:
    (workspace / "flows.py").write_text(FLOW)
    fake.fallback(fault(400, "bad request from the fake"))
    out = flower(workspace, "run", "flows:main")
    assert out.returncode == 1, out.stdout + out.stderr
    assert head(texts.UI_TURN_FAILED) in out.stdout
    assert head(texts.UI_DONE) not in out.stdout


async def test_the_turn_a_human_stopped_ends_marked_interrupted(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """The result that closes an interrupted turn says so (the terminal then prints
    "interrupted", not "done"); the resumed turn's result is an ordinary one."""
    # the command runs until the interrupt ends it (capped at 60 s): a turn whose tool had
    # already finished could close as an ordinary one before the interrupt reached the CLI
    hold = "for i in $(seq 600); do [ -e never ] && break; sleep 0.1; done; echo first"
    fake.script(reply("working", tool_use("Bash", {"command": hold})), "carrying on")
    fake.route(match.last_user_contains("换个做法"), "按新说法做完了")
    rt = Runtime(workspace=workspace, run_dir=run_dir)
    results: list[dict] = []

    def on_event(ev) -> None:
        if ev.kind == "tool_call" and not results:
            results.append({})  # once
            t = threading.Thread(target=rt.interrupt, args=("换个做法",))
            t.start()
            t.join()
        if ev.kind == "result":
            results.append(ev.payload)

    spec = AgentSpec("worker", "test agent", allowed_tools=["Bash"],
                     permission_mode="bypassPermissions")
    try:
        with anyio.fail_after(90):
            r = await rt.run(spec, "start", on_event=on_event)
    finally:
        rt.close()
    assert r.ok and "按新说法做完了" in r.text
    assert [bool(p.get("interrupted")) for p in results[1:]] == [True, False]


@pytest.mark.parametrize("where", ["environment", "dotenv"])
def test_a_base_url_refused_on_loopback_is_a_setting_not_an_outage(
        workspace: Path, cli_env: dict[str, str], where: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "flows.py").write_text(FLOW)
    dead = "http://127.0.0.1:9"  # the discard port: nothing listens there
    if where == "dotenv":
        monkeypatch.delenv("ANTHROPIC_BASE_URL")
        (workspace / ".env").write_text(f"ANTHROPIC_BASE_URL={dead}\n")
        origin = texts.SETTING_FROM_FILE.format(path=workspace / ".env")
    else:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", dead)
        origin = texts.SETTING_FROM_ENV
    started = time.monotonic()
    out = flower(workspace, "run", "flows:main")
    assert out.returncode == 1, out.stdout + out.stderr
    assert time.monotonic() - started < 60  # the CLI's own quick retries, no hour of waiting
    why = texts.BASE_URL_REFUSED.format(url=dead, origin=origin, host="127.0.0.1", port=9)
    assert flat(texts.ABORTED_AT.format(step="写", why=why)) in flat(out.stdout)
    assert "不可达" not in out.stdout  # no wait for the network
    assert "稍后重试" not in out.stdout  # no retry follows, so no retry line
    assert "ECONNREFUSED" not in out.stdout and texts.NET_REFUSED in out.stdout


def test_an_outage_after_the_endpoint_answered_is_waited_out_within_the_bound(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    (workspace / "flows.py").write_text(FLOW)
    seen: list[str] = []

    def answer(req: Request):
        seen.append(req.first_user_text())
        if "再说一句" in req.first_user_text():
            fake.outage()  # the listener closes: refused on loopback, like a down gateway
        return reply("说了。")

    fake.fallback(answer)
    out = flower(workspace, "--offline-wait", "1", "run", "flows:main")
    assert out.returncode == 1, out.stdout + out.stderr
    wait = texts.OFFLINE_WAIT_SECONDS.format(host="127.0.0.1", port=fake.port, seconds=1)
    assert flat(wait) in flat(out.stdout)  # how long, that Ctrl-C stops it, what sets the bound
    assert "--offline-wait" in wait and "Ctrl-C" in wait
    assert head(texts.BASE_URL_REFUSED) not in out.stdout
    last = rows(workspace)[-1]
    assert last["step"] == "再写" and not last["ok"]
    assert last["error"].endswith(texts.OFFLINE_GAVE_UP.split("}")[-1])

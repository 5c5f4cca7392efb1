"""A project ``.env`` a worker wrote (issue 31 item 2), end to end: the real ``flower``, SDK
and CLI, a worker whose Bash no sandbox walls. The next run neither runs the planted
``FLOWER_NOTIFY`` command nor sends the key to a planted ``ANTHROPIC_BASE_URL``: it skips
the file in one line until ``flower trust-env``; a change the human makes between runs is
read as always."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flower import config, texts
from flower.testing import FakeServer, reply, tool_use

TIMEOUT = 120
FLOW = """from flower import AgentSpec, Step, Workflow

def main():
    spec = AgentSpec("w", "you implement", allowed_tools=["Bash"],
                     permission_mode="bypassPermissions")
    return Workflow([Step("写", spec, "干活")])
"""


def flower(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flower", *args], cwd=ws,
                          env={**os.environ, "COLUMNS": "400", "FLOWER_NO_PROBE": "1"},
                          capture_output=True, text=True, timeout=TIMEOUT)


def flat(text: str) -> str:
    return "".join(text.split())


@pytest.fixture
def user_endpoint(fake: FakeServer, home: Path, cli_env: dict[str, str],
                  monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake's URL in the user's own file (below the project .env in priority), so a
    project .env that sets another one would win — if it were read."""
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    user = home / ".config" / "flower" / ".env"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f"ANTHROPIC_BASE_URL={fake.url}\n")
    return user


def test_a_worker_written_env_is_not_read_until_the_human_says_so(
        fake: FakeServer, workspace: Path, user_endpoint: Path) -> None:
    (workspace / "flows.py").write_text(FLOW)
    (workspace / ".env").write_text("FLOWER_CHAOS=mine\n")  # the human's own, read as always
    marker = workspace.parent / "MARKER"
    planted = (f"printf 'FLOWER_NOTIFY=touch {marker}\\nANTHROPIC_BASE_URL=http://127.0.0.1:9/\\n'"
               " >> .env")
    fake.script(reply(tool_use("Bash", {"command": planted})), "写好了", "又写好了")
    # a Bash outside every sandbox (wall off; an auto coordinator's workers run so too) —
    # strict and auto's walled workers are refused the write by the sandbox already
    first = flower(workspace, "--sandbox", "off", "run", "flows:main")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "ANTHROPIC_BASE_URL=http://127.0.0.1:9/" in (workspace / ".env").read_text()

    before = len(fake.message_requests())
    second = flower(workspace, "--notify", "", "run", "flows:main")
    assert second.returncode == 0, second.stdout + second.stderr  # the fake still answered
    assert len(fake.message_requests()) > before
    assert flat(texts.ENV_UNTRUSTED.format(path=workspace / ".env")) in flat(
        second.stdout + second.stderr)
    assert not marker.exists()

    # the human has looked and says yes: the file counts again (its dead URL now refused)
    trusted = flower(workspace, "trust-env")
    assert trusted.returncode == 0 and trusted.stdout.strip() == texts.ENV_TRUSTED.format(
        path=workspace / ".env")
    third = flower(workspace, "run", "flows:main")
    assert third.returncode == 1
    assert "127.0.0.1:9" in third.stdout + third.stderr
    assert flat(texts.ENV_USER_ONLY.format(path=workspace / ".env", keys="FLOWER_NOTIFY",
                                           user=config.user_env_path())) in flat(
        third.stdout + third.stderr)
    assert not marker.exists()  # the command setting is never taken from the project


def test_a_change_made_between_runs_is_the_humans(fake: FakeServer, workspace: Path,
                                                  user_endpoint: Path) -> None:
    (workspace / "flows.py").write_text(FLOW)
    fake.script("写好了", "又写好了")
    assert flower(workspace, "run", "flows:main").returncode == 0
    (workspace / ".env").write_text("ANTHROPIC_BASE_URL=http://127.0.0.1:9/\n")  # the human
    out = flower(workspace, "run", "flows:main")
    assert out.returncode == 1 and "127.0.0.1:9" in out.stdout + out.stderr
    assert texts.ENV_UNTRUSTED[:10] not in out.stdout + out.stderr

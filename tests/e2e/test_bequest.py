"""The handover to the next tool, end to end: ``flower --timeout 0 "…"`` (a real process, the
real SDK and CLI, the demo's fake model) leaves the same managed block in ``CLAUDE.md`` and
``AGENTS.md``; the user's own text around it survives every byte; a rerun changes only the
block; a bad answer gives the degraded block; ``--no-bequest`` writes nothing; and the
closing session cannot write a file even when it tries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flower import texts
from flower.cli.commands.demo import ASK, BEQUEST, DemoBrain
from flower.core.bequest import BEGIN, DEGRADED, END
from flower.testing import FakeServer, Request, reply, tool_use

TIMEOUT = 180


def flower(ws: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "flower", *args], cwd=ws, env=env,
                          input=stdin, capture_output=True, text=True, timeout=TIMEOUT)


def steps(ws: Path) -> list[str]:
    return [r["step"] for r in json.loads((ws / "runs" / "manifest.json").read_text())]


def is_bequest(req: Request) -> bool:
    return not req.agent_id and texts.BEQUEST_RULES.splitlines()[0] in req.system_text


def outside(text: str) -> tuple[str, str]:
    """The user's text before the BEGIN line and after the END line."""
    head, rest = text.split(BEGIN, 1)
    return head, rest.split(END, 1)[1]


@pytest.fixture
def brain(fake: FakeServer, workspace: Path) -> DemoBrain:
    b = DemoBrain(workspace, pause=0.0)
    fake.fallback(b)
    return b


def test_both_files_get_the_block_the_users_text_stays_and_a_rerun_changes_only_it(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], brain: DemoBrain) -> None:
    mine = "# 我的项目规则\r\n\r\n- 提交前跑 make test\r\n- 别碰 vendor/"  # CRLF, no final EOL
    (workspace / "CLAUDE.md").write_bytes(mine.encode("utf-8"))
    out = flower(workspace, "--timeout", "0", ASK)
    assert out.returncode == 0, out.stdout + out.stderr
    assert steps(workspace)[-2:] == ["干活·判定#2", "收尾交接"]
    assert "交接写进了 CLAUDE.md、AGENTS.md" in out.stdout
    claude = (workspace / "CLAUDE.md").read_bytes().decode("utf-8")
    agents = (workspace / "AGENTS.md").read_bytes().decode("utf-8")
    assert claude.startswith(mine)  # every byte of it
    block = claude[claude.index(BEGIN):claude.index(END) + len(END)]
    assert agents == block.replace("\r\n", "\n") + "\n"  # the same block in both
    assert "`sample.html` ← `python3 md2html.py sample.md`" in block
    assert DEGRADED not in block
    assert "收尾交接" not in json.loads((workspace / "runs" / "lineage.json").read_text())["steps"]
    log = flower(workspace, "log")
    assert log.returncode == 0 and "收尾交接" in log.stdout  # a row like a judge round's

    # the user edits around the block; the rerun (bare flower, Enter) replaces only the block
    edited = "前言\r\n" + claude + "\r\n后记:这一行是人写的\r\n"
    (workspace / "CLAUDE.md").write_bytes(edited.encode("utf-8"))
    again = flower(workspace, "--timeout", "0", stdin="\n")
    assert again.returncode == 0, again.stdout + again.stderr
    assert steps(workspace)[-1] == "收尾交接"
    after = (workspace / "CLAUDE.md").read_bytes().decode("utf-8")
    assert outside(after) == outside(edited)
    assert after.count(BEGIN) == 1 and after.count(END) == 1
    assert outside((workspace / "AGENTS.md").read_text(encoding="utf-8")) == ("", "\n")


def test_a_bad_answer_gives_the_degraded_block(fake: FakeServer, workspace: Path,
                                               cli_env: dict[str, str],
                                               brain: DemoBrain) -> None:
    fake.route(is_bequest, reply("好的,运行结束了。"), name="bequest")
    # one round only: the judge says "not yet", so this also ends on the round limit
    out = flower(workspace, "--timeout", "0", "--rounds", "1", ASK)
    assert out.returncode == 1  # the round limit fails the run, as before
    assert steps(workspace)[-2:] == ["干活·判定#1", "收尾交接"]
    assert "收尾交接没写成" in out.stdout
    for name in ("CLAUDE.md", "AGENTS.md"):
        block = (workspace / name).read_text(encoding="utf-8")
        assert DEGRADED in block and "缺这是什么" in block
        assert "未达成" in block  # the verdict, known mechanically
        assert "md2html.py" in block  # the brief's goal
        assert ".flower/INDEX.md" in block  # where to read on


def test_no_bequest_writes_nothing(fake: FakeServer, workspace: Path, cli_env: dict[str, str],
                                   brain: DemoBrain) -> None:
    out = flower(workspace, "--timeout", "0", "--rounds", "1", "--no-bequest", ASK)
    assert out.returncode == 1, out.stdout + out.stderr  # ends on the round limit
    assert "收尾交接" not in steps(workspace)
    assert not (workspace / "CLAUDE.md").exists() and not (workspace / "AGENTS.md").exists()
    assert not [r for r in fake.message_requests() if is_bequest(r)]


def test_the_bequest_session_cannot_write_a_file(fake: FakeServer, workspace: Path,
                                                 cli_env: dict[str, str],
                                                 brain: DemoBrain) -> None:
    evil = workspace / "正文.md"
    fake.route(is_bequest, reply("顺手改一下。", tool_use("Write", {
        "file_path": str(evil), "content": "改过了"})), reply(BEQUEST), name="bequest")
    out = flower(workspace, "--timeout", "0", ASK)
    assert out.returncode == 0, out.stdout + out.stderr
    assert not evil.exists()
    second = [r for r in fake.message_requests() if is_bequest(r)][-1]
    [use] = second.tool_uses("Write")
    refused = second.result_of(use["id"]) or ""
    assert texts.DENY_ROLE.format(role="收尾交接", tool="Write", hint="") in refused, refused
    assert "sample.html" in (workspace / "CLAUDE.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_a_planted_link_out_of_the_workspace_is_not_written_through(
        fake: FakeServer, workspace: Path, home: Path, cli_env: dict[str, str], mode: str
        ) -> None:
    """A worker plants ``AGENTS.md -> ~/.ssh/authorized_keys`` (a symlink is a write inside
    the workspace: every wall allows it). The handover refuses to follow it — one line —
    and the file outside keeps every byte; ``CLAUDE.md`` still gets its block."""
    keys = home / ".ssh" / "authorized_keys"
    keys.parent.mkdir()
    keys.write_text("ssh-ed25519 AAAA mine\n")
    brain = DemoBrain(workspace, pause=0.0)
    planted: list[str] = []

    def worker_plants_a_link(req: Request):
        if req.agent_id and not planted:
            planted.append(req.agent_id)
            return reply(tool_use("Bash", {"command": f"ln -s {keys} AGENTS.md"}))
        return brain(req)

    fake.fallback(worker_plants_a_link)
    out = flower(workspace, "--sandbox", mode, "--timeout", "0", ASK)
    assert out.returncode == 0, out.stdout + out.stderr
    assert planted and (workspace / "AGENTS.md").is_symlink()
    assert keys.read_text() == "ssh-ed25519 AAAA mine\n"
    said = "".join(out.stdout.split())
    assert "".join(texts.BEQUEST_LINK_OUT.format(name="AGENTS.md", target=keys)
                   .split()) in said
    assert BEGIN in (workspace / "CLAUDE.md").read_text(encoding="utf-8")

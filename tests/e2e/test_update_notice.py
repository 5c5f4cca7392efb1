"""Knowing a newer flower exists, end to end: ``flower update --check`` against a local git
repository standing in for the install source, and a run in a pty that ends with the
one-line notice — while ``FLOWER_NO_UPDATE`` and a stdin that is no terminal never contact
the source at all (a logging ``git`` first on PATH proves it), and a source that cannot be
reached says nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ptyterm import Pty, plain

from flower import texts
from flower.testing import FakeServer, reply

LAUNCHER = str(Path(__file__).with_name("installed.py"))
GIT = "/usr/bin/git" if Path("/usr/bin/git").exists() else "git"
FLOWS = """\
from flower import AgentSpec, Step, Workflow

wf = Workflow([Step("一步", AgentSpec("助手", "只回答一句话。"), "说一句话")])
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run([GIT, "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def source(tmp_path: Path, home: Path) -> dict:
    """A local repository flower was "installed" from (the record install.sh leaves), now
    one commit ahead of what was installed."""
    repo = tmp_path / "flower-src"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    (repo / "pyproject.toml").write_text('[project]\nname = "flower"\nversion = "0.1.0"\n')
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "installed")
    old = git(repo, "rev-parse", "HEAD")
    (repo / "NEWS").write_text("newer")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "newer")
    record = home / ".local" / "share" / "flower" / "install.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"method": "venv", "source": str(repo), "sha": old,
                                  "version": "0.1.0", "venv": sys.prefix}))
    return {"repo": repo, "old": old, "new": git(repo, "rev-parse", "HEAD"), "record": record}


@pytest.fixture
def env(cli_env: dict[str, str], tmp_path: Path, fake: FakeServer) -> dict[str, str]:
    """The fake model, a logging git first on PATH, update checks not switched off."""
    log = tmp_path / "git-calls.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\n'
                                 f'exec {GIT} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    fake.fallback(reply("好的。"))
    e = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
         "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40", "NO_COLOR": "1",
         "PROMPT_TOOLKIT_NO_CPR": "1", "FLOWER_NO_PROBE": "1", "FLOWER_GIT_LOG": str(log)}
    e.pop("FLOWER_NO_UPDATE", None)
    return e


def contacted(env: dict[str, str], repo: Path) -> list[str]:
    log = Path(env["FLOWER_GIT_LOG"])
    return [ln for ln in (log.read_text().splitlines() if log.exists() else [])
            if str(repo) in ln]


def installed(tmp_path: Path, *args: str, env: dict[str, str], cwd: Path,
              ) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, LAUNCHER, str(site), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def pty_run(tmp_path: Path, workspace: Path, env: dict[str, str]) -> str:
    """``flower run flows.py:wf`` in a pseudo-terminal, to its end; the plain output."""
    (workspace / "flows.py").write_text(FLOWS)
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    term = Pty([sys.executable, LAUNCHER, str(site), "run", "flows.py:wf"], env, workspace)
    try:
        term.expect(texts.CLOSING.split("$")[0])
        assert term.proc.wait(60) == 0
        term.eof()
    finally:
        term.close()
    return plain(term.buf).replace("\0EOF", "")


def test_check_reports_a_newer_commit_then_the_latest(source: dict, env: dict[str, str],
                                                      tmp_path: Path, workspace: Path) -> None:
    out = installed(tmp_path, "update", "--check", env=env, cwd=workspace)
    assert out.returncode == 0, out.stdout + out.stderr
    assert texts.UPDATE_NOTICE.format(new=source["new"][:7]) in out.stdout
    assert contacted(env, source["repo"])
    # never throttled: asked again right away; now the record says the new commit
    data = json.loads(source["record"].read_text())
    source["record"].write_text(json.dumps({**data, "sha": source["new"]}))
    out = installed(tmp_path, "update", "--check", env=env, cwd=workspace)
    assert out.returncode == 0 and "已经是最新" in out.stdout and source["new"][:7] in out.stdout


def test_check_with_an_unreachable_source_still_exits_0(source: dict, env: dict[str, str],
                                                        tmp_path: Path,
                                                        workspace: Path) -> None:
    data = json.loads(source["record"].read_text())
    source["record"].write_text(json.dumps({**data, "source": "git+file:///nonexistent/f"}))
    out = installed(tmp_path, "update", "--check", env=env, cwd=workspace)
    assert out.returncode == 0 and "查不到" in out.stdout, out.stdout + out.stderr
    update = installed(tmp_path, "update", env=env, cwd=workspace)
    assert update.returncode == 1


def test_a_source_checkout_is_left_to_git(env: dict[str, str], workspace: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "flower", "update", "--check"], cwd=workspace,
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "git pull" in out.stdout, out.stdout + out.stderr
    out = subprocess.run([sys.executable, "-m", "flower", "update"], cwd=workspace, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "git pull" in out.stdout


def test_a_run_in_a_terminal_ends_with_the_notice(source: dict, env: dict[str, str],
                                                  tmp_path: Path, workspace: Path) -> None:
    shown = pty_run(tmp_path, workspace, env)
    notice = texts.UPDATE_NOTICE.format(new=source["new"][:7])
    closing = shown.index(texts.CLOSING.split("$")[0])
    assert shown.index(notice) > closing  # one line, after the closing cost line
    assert shown.count(notice) == 1
    stamp = json.loads((Path(env["XDG_CONFIG_HOME"]) / "flower" / ".update").read_text())
    assert stamp["installed"] == source["old"] and stamp["latest"] == source["new"]


def test_flower_no_update_never_contacts_the_source(source: dict, env: dict[str, str],
                                                    tmp_path: Path, workspace: Path) -> None:
    shown = pty_run(tmp_path, workspace, {**env, "FLOWER_NO_UPDATE": "1"})
    assert "有新版本" not in shown
    assert contacted(env, source["repo"]) == []
    assert not (Path(env["XDG_CONFIG_HOME"]) / "flower" / ".update").exists()


def test_a_stdin_that_is_no_terminal_never_contacts_the_source(
        source: dict, env: dict[str, str], tmp_path: Path, workspace: Path) -> None:
    (workspace / "flows.py").write_text(FLOWS)
    out = installed(tmp_path, "run", "flows.py:wf", env=env, cwd=workspace)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "有新版本" not in out.stdout
    assert contacted(env, source["repo"]) == []


def test_an_unreachable_source_is_silent(source: dict, env: dict[str, str], tmp_path: Path,
                                         workspace: Path) -> None:
    data = json.loads(source["record"].read_text())
    gone = tmp_path / "gone"
    source["record"].write_text(json.dumps({**data, "source": f"git+file://{gone}"}))
    shown = pty_run(tmp_path, workspace, env)
    after = shown[shown.index(texts.CLOSING.split("$")[0]):]
    assert after.strip().count("\n") == 0, after  # nothing after the closing line
    assert "Traceback" not in shown and contacted(env, gone)  # it did try, once

"""Knowing a newer flower exists: the source (a local git repository standing in for the real
one) is asked only when it may be — never with FLOWER_NO_UPDATE, never without a terminal,
never from a source checkout, at most once in 24 h — and every failure is silent.

A ``git`` wrapper first on PATH logs every call, which is how "never contacted" is proven."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flower import config
from flower.core import update as up

GIT = "/usr/bin/git" if Path("/usr/bin/git").exists() else "git"


def git(repo: Path, *args: str) -> str:
    return subprocess.run([GIT, "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def make_repo(path: Path, version: str = "0.1.0") -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.invalid")
    git(path, "config", "user.name", "t")
    (path / "pyproject.toml").write_text(f'[project]\nname = "flower"\nversion = "{version}"\n')
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "one")
    return path


def commit(repo: Path, text: str = "two") -> str:
    (repo / "CHANGES").write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", text)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A logging ``git`` first on PATH; the file it appends its arguments to."""
    log = tmp_path / "git-calls.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec {GIT} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


@pytest.fixture
def installed(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """flower "installed" from a local repository (the record install.sh leaves), not
    running from a checkout; the repository then gets one more commit."""
    monkeypatch.delenv("FLOWER_NO_UPDATE", raising=False)
    monkeypatch.setattr(config, "_REPO_ROOT", tmp_path / "site-packages")
    repo = make_repo(tmp_path / "src")
    old = git(repo, "rev-parse", "HEAD")
    record = home / ".local" / "share" / "flower" / "install.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"method": "venv", "source": str(repo), "sha": old,
                                  "version": "0.1.0", "venv": sys.prefix}))
    new = commit(repo)
    return {"repo": repo, "old": old, "new": new, "record": record}


def contacted(log: Path, repo: Path) -> list[str]:
    return [ln for ln in (log.read_text().splitlines() if log.exists() else [])
            if str(repo) in ln]


# --- asking the source -------------------------------------------------------------------------


def test_git_specs_are_read_as_pip_reads_them() -> None:
    assert up.git_source("git+https://h.example/o/flower.git") == (
        "https://h.example/o/flower.git", "HEAD")
    assert up.git_source("git+https://h.example/o/flower.git@main#egg=flower") == (
        "https://h.example/o/flower.git", "main")
    assert up.git_source("git+ssh://git@h.example/o/flower.git") == (
        "ssh://git@h.example/o/flower.git", "HEAD")
    assert up.git_source("/home/me/flower") is None


def test_a_local_repo_one_commit_ahead_is_newer(installed: dict) -> None:
    rec = up.load_install()
    assert rec is not None and rec.source == str(installed["repo"])
    assert up.probe(rec) == (installed["new"], installed["old"])
    rec.sha = installed["new"]
    latest, mine = up.probe(rec)
    assert latest == mine  # nothing newer


def test_a_git_url_is_asked_with_ls_remote(tmp_path: Path, calls: Path) -> None:
    repo = make_repo(tmp_path / "remote")
    old = git(repo, "rev-parse", "HEAD")
    new = commit(repo)
    rec = up.Install(method="pipx", source=f"git+file://{repo}", sha=old)
    assert up.probe(rec) == (new, old)
    assert f"ls-remote file://{repo} HEAD" in calls.read_text()
    pinned = up.Install(method="pipx", source=f"git+file://{repo}@{old}", sha=old)
    assert up.probe(pinned) == (old, old)  # pinned to a commit: never newer


def test_a_folder_without_git_compares_versions(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "pyproject.toml").write_text('[project]\nname = "flower"\nversion = "0.2.0"\n')
    assert up.probe(up.Install("venv", str(src), version="0.1.0")) == ("0.2.0", "0.1.0")


@pytest.mark.parametrize("source", ["git+file:///nonexistent/flower.git", "/nonexistent/dir",
                                    "/some/flower-0.1.0-py3-none-any.whl"])
def test_a_source_that_cannot_tell_raises_update_error(source: str) -> None:
    with pytest.raises(up.UpdateError):
        up.probe(up.Install("venv", source, sha="a" * 40, version="0.1.0"))


def test_the_installer_repeats_the_install_method(tmp_path: Path) -> None:
    venv = up.Install("venv", "/src", venv=str(tmp_path / "v"), pip_args="--no-index -q")
    assert up.installer(venv, {}) == [str(tmp_path / "v" / "bin" / "python"), "-m", "pip",
                                      "install", "--quiet", "--disable-pip-version-check",
                                      "--upgrade", "--no-index", "-q", "/src"]
    assert up.installer(venv, {"FLOWER_PIP_ARGS": "--no-deps"})[-2:] == ["--no-deps", "/src"]
    assert up.installer(up.Install("pipx", "git+https://h/f.git"), {}) == [
        "pipx", "install", "--force", "git+https://h/f.git"]
    assert up.installer(up.Install("uv", "/src"), {}) == ["uv", "tool", "install", "--force",
                                                          "/src"]
    with pytest.raises(up.UpdateError):
        up.installer(up.Install("brew", "/src"), {})


def test_a_venv_record_of_another_environment_is_not_ours(installed: dict) -> None:
    data = json.loads(installed["record"].read_text())
    installed["record"].write_text(json.dumps({**data, "venv": "/elsewhere/venv"}))
    assert up.load_install() is None


# --- the background check ----------------------------------------------------------------------


def test_a_due_check_finds_the_newer_commit_and_stamps(installed: dict, calls: Path) -> None:
    check = up.background(tty=True, now=1_000_000.0)
    assert check.notice(wait=30) == installed["new"][:7]
    assert contacted(calls, installed["repo"])
    stamp = json.loads(up.stamp_path().read_text())
    assert stamp == {"checked": 1_000_000.0, "installed": installed["old"],
                     "latest": installed["new"]}


def test_flower_no_update_never_contacts_the_source(installed: dict, calls: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWER_NO_UPDATE", "1")
    assert up.background(tty=True).notice(wait=5) is None
    assert contacted(calls, installed["repo"]) == [] and not up.stamp_path().exists()


def test_without_a_terminal_the_source_is_never_contacted(installed: dict, calls: Path) -> None:
    assert not sys.stdin.isatty()  # pytest's captured stdin: the real check is exercised
    assert up.background().notice(wait=5) is None
    assert contacted(calls, installed["repo"]) == [] and not up.stamp_path().exists()


def test_a_source_checkout_is_never_checked(installed: dict, calls: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    monkeypatch.setattr(config, "_REPO_ROOT", checkout)
    assert up.source_checkout() == checkout
    assert up.background(tty=True).notice(wait=5) is None
    assert contacted(calls, installed["repo"]) == []


def test_the_24h_stamp_throttles_but_still_tells(installed: dict, calls: Path) -> None:
    assert up.background(tty=True, now=1_000_000.0).notice(wait=30)
    first = len(contacted(calls, installed["repo"]))
    # an hour later: not asked again, and what the last check found is still said
    assert up.background(tty=True, now=1_003_600.0).notice(wait=5) == installed["new"][:7]
    assert len(contacted(calls, installed["repo"])) == first
    # a day later: asked again
    assert up.background(tty=True, now=1_000_000.0 + up.INTERVAL_S + 1).notice(wait=30)
    assert len(contacted(calls, installed["repo"])) > first


def test_after_updating_the_throttled_notice_stops(installed: dict) -> None:
    assert up.background(tty=True, now=1_000_000.0).notice(wait=30)
    data = json.loads(installed["record"].read_text())
    installed["record"].write_text(json.dumps({**data, "sha": installed["new"]}))
    assert up.background(tty=True, now=1_003_600.0).notice(wait=5) is None


def test_an_unreachable_source_is_silent_and_waits_its_24h(installed: dict, calls: Path,
                                                           capfd: pytest.CaptureFixture[str],
                                                           ) -> None:
    data = json.loads(installed["record"].read_text())
    gone = installed["repo"].parent / "gone"
    installed["record"].write_text(json.dumps({**data, "source": f"git+file://{gone}"}))
    assert up.background(tty=True, now=1_000_000.0).notice(wait=30) is None
    assert capfd.readouterr().err == ""  # not a word
    stamp = json.loads(up.stamp_path().read_text())
    assert stamp["checked"] == 1_000_000.0 and stamp["latest"] == ""
    asked = len(contacted(calls, gone))
    assert asked == 1
    assert up.background(tty=True, now=1_003_600.0).notice(wait=5) is None
    assert len(contacted(calls, gone)) == asked  # not retried within the day


def test_a_corrupt_stamp_or_record_is_no_news(installed: dict) -> None:
    up.stamp_path().parent.mkdir(parents=True, exist_ok=True)
    up.stamp_path().write_text("{not json")
    assert up.background(tty=True, now=1_000_000.0).notice(wait=30) == installed["new"][:7]
    installed["record"].write_text("[]")
    assert up.background(tty=True, now=9_000_000.0).notice(wait=5) is None


@pytest.mark.parametrize("source", ["git+https://example.invalid/o/flower.git",
                                    "git+ssh://git@example.invalid/o/flower.git"])
def test_the_workspaces_git_config_runs_nothing(tmp_path: Path, home: Path, source: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker can write the project's ``.git/config``: with ``protocol.ext.allow`` and an
    ``ext::`` insteadOf for the install URL, the check used to run the command in it. Now
    git never sees that config (cwd elsewhere, no system/user config, only safe protocols),
    and the check fails in one line instead."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    marker = tmp_path / "MARKER"
    url = up.git_source(source)[0]
    with (ws / ".git" / "config").open("a") as f:
        f.write(f'[protocol "ext"]\n\tallow = always\n[core]\n\tfsmonitor = touch {marker}\n'
                f'[url "ext::sh -c touch% {marker}"]\n\tinsteadOf = {url}\n')
    monkeypatch.chdir(ws)
    rec = up.Install(method="pipx", source=source, sha="a" * 40)
    with pytest.raises(up.UpdateError) as err:
        up.probe(rec, timeout=20)
    assert not marker.exists()
    assert "\n" not in str(err.value)

"""A coordinator's glances through the real CLI: every bypass class is refused, every glance
the design pages name runs and reaches the model, nothing changes on disk, no planted secret
reaches the API, a glance that runs too long is killed inside its bound (not moved to the
background), and on resume old glance results expire while a ``Read`` of the same file does
not.

The workspace is a hostile repository: its config points every program git could run while
it reads (clean filter, textconv, external diff, fsmonitor, gpg, hooks) at a marker script.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import anyio
import pytest

from flower import EphemeralPolicy, Resilience, Runtime, coordinator, texts, worker
from flower.shell import GLANCE_SECONDS, TOOL_TIMEOUT_MS, is_ephemeral
from flower.shell.bound import NOTE_KILLED
from flower.testing import FakeServer, match, reply, tool_result_text, tool_use

QUICK = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2)
S_PROJECT = "glance-secret-project-7f3a"  # <workspace>/.env
S_FLOWER = "glance-secret-flower-9b1c"  # ~/.config/flower/.env
S_CLAUDE = "glance-secret-claude-c4d2"  # ~/.claude/settings.json
S_REMOTE = "glance-secret-remote-5e6f"  # token inside the origin URL
S_COMMITTED = "glance-secret-committed-0a9b"  # deploy/prod.env, committed by mistake
SECRETS = (S_PROJECT, S_FLOWER, S_CLAUDE, S_REMOTE, S_COMMITTED)

# (class, commands): each command is refused — by the predicate or, for the last ones of a
# class, only once the runner looks at the real file system
BYPASSES: list[tuple[str, list[str]]] = [
    ("git option smuggling", [
        "git diff -U --output=README.md", "git log --color-moved --output=README.md -1",
        "git log --max-parents --output=README.md", "git log --format --output=README.md",
        "git diff --ext-diff", "git log -p --textconv -1", "git -c core.pager=sh log -1",
        "git -C .. status", "git --git-dir=.git --work-tree=/ status",
        "git --exec-path=/tmp log -1"]),
    ("recursive reads over secret locations", [
        "grep -r PLANTED ~", "grep -rn sk-ant ~/.config", "grep -r PLANTED ~/.claude",
        "diff -rN ~/.config/flower empty", "grep -r PLANTED /", "grep -rn PLANTED /etc",
        "grep -r --include='*.env' PLANTED ~/.config", "rg PLANTED ~"]),
    ("/proc by any spelling", [
        "grep -r --include=environ PLANTED /proc/self/../self/", "cat //proc/self/environ",
        "cat /./proc/self/environ", "cat /proc/../proc/self/environ",
        "cat ../../../../../../../../../proc/self/environ",
        "grep PLANTED ../../../../../../../../../proc/self/environ", "ls /sys"]),
    ("globs over secret paths", [
        "cat ~/.c*/flower/.e*", "cat ~/.c*/setting?.json", "head ~/.cl*/*.json", "cat .e*",
        "grep PLANTED ~/.con*/*/.env"]),
    ("devices", [
        "cat //dev/zero", "wc -c /dev/zero", "head -c 10 /dev/./urandom", "cat /dev/stdin",
        "cat /dev/fd/0", "cat /proc/self/fd/0", "cat zero-link"]),
    ("never ending", [
        "tail -f a.log", "tail -F a.log", "tail +1f a.log", "tail --follow a.log", "lsof -r 1",
        "lsof -g -r 1", "watch ls", "top", "yes", "sed -n 'G;D' a.log", "sed ':a;ba' a.log",
        "awk 'BEGIN{while(1);}'", "jq -n 'repeat(1)'", "jq -n '[limit(infinite; 1)]'"]),
    ("network and plugins", [
        "kubectl get pods", "gh auth token", "curl -s http://127.0.0.1:9", "wget -q x",
        "ssh localhost true", "npm ls", "pip list", "docker ps"]),
    ("secrets by name and by link", [
        "cat .env", "cat ~/.config/flower/.env", "cat ~/.claude/settings.json",
        "ps e", "ps eww", "ps -o pid,env", "cat notes.txt", "head link-to-config/.env"]),
]
# (glance, text its output must contain)
GLANCES: list[tuple[str, str]] = [
    ("git status", "README.md"), ("git status -sb", "M README.md"),
    ("git status --porcelain=v2", "README.md"), ("git diff", "+second line"),
    ("git diff --stat", "README.md"), ("git diff --name-only", "README.md"),
    ("git diff --cached", ""), ("git log --oneline -3", "first commit"),
    ("git log -n 1 --format=%s", "first commit"), ("git log --stat -1", "README.md"),
    ("git show --stat", "first commit"), ("git show HEAD:README.md", "GLANCE-MARK"),
    ("git show HEAD", "GLANCE-MARK"), ("git ls-files", "a.py"), ("git branch", "main"),
    ("git tag -l", "v1"), ("git remote -v", "***@example.invalid"), ("git stash list", ""),
    ("git rev-parse HEAD", ""), ("git blame a.py", "x = 2"), ("ls", "README.md"),
    ("cat README.md", "second line"), ("head -n 1 README.md", "GLANCE-MARK"),
    ("tail -n 2 a.log", "line 9"), ("wc -l a.log", "10 a.log"),
    ("grep -rn GLANCE-MARK src", "src/mark.txt:1:"), ("find . -name '*.md'", "README.md"),
    ("du -sh src", "src"), ("df -h .", "/"), ("stat README.md", "README.md"),
    ("file README.md", "text"), ("ps aux", "PID"), ("python3 --version", "Python 3"),
    ("git --version", "git version"), ("grep -rn PLANTED .", ""),
    ("grep -rn --include=.env --include='*.env' PLANTED .", ""),
    ("git log -p -1", "GLANCE-MARK"), ("git log --stat -1", "prod.env"),
]


def _sh(*args: str, cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


def _hostile(ws: Path, home: Path, marks: Path) -> None:
    """A workspace whose .git names a marker script for everything git could run."""
    marks.mkdir()
    bindir = ws.parent / "bin"
    bindir.mkdir()

    def marker(name: str, body: str = "cat") -> str:
        path = bindir / name
        # record which process ran git: the CLI's own git (for the system prompt) has no
        # shell between it and git, a glance always does
        path.write_text(f"#!/bin/sh\nps -o comm= -p $(ps -o ppid= -p $PPID) >> "
                        f"'{marks}/{name}'\n{body}\n")
        path.chmod(0o755)
        return str(path)

    (ws / "README.md").write_text("GLANCE-MARK first line\n")
    (ws / "a.py").write_text("x = 1\n")
    (ws / "a.log").write_text("".join(f"line {i}\n" for i in range(10)))
    (ws / ".gitattributes").write_text("*.py filter=evil diff=evil\n*.md diff=evil\n")
    (ws / "src").mkdir()
    (ws / "src" / "mark.txt").write_text("GLANCE-MARK in src\n")
    (ws / "deploy").mkdir()
    (ws / "deploy" / "prod.env").write_text(f"PLANTED_COMMITTED={S_COMMITTED}\n")
    _sh("git", "init", "-q", "-b", "main", cwd=ws)
    for k, v in (("user.email", "t@e.st"), ("user.name", "t"), ("commit.gpgsign", "false")):
        _sh("git", "config", k, v, cwd=ws)
    _sh("git", "add", "-A", cwd=ws)
    _sh("git", "commit", "-qm", "first commit", cwd=ws)
    _sh("git", "tag", "v1", cwd=ws)
    _sh("git", "remote", "add", "origin",
        f"https://user:{S_REMOTE}@example.invalid/repo.git", cwd=ws)
    with (ws / "README.md").open("a") as fh:
        fh.write("second line\n")
    (ws / "a.py").write_text("x = 2\n")
    for k, v in {"filter.evil.clean": marker("clean"), "filter.evil.smudge": marker("smudge"),
                 "diff.evil.textconv": marker("textconv", 'cat "$1"'),
                 "diff.external": marker("external", "true"),
                 "core.fsmonitor": marker("fsmonitor", "exit 1"),
                 "gpg.program": marker("gpg", "true"), "log.showSignature": "true",
                 "core.pager": marker("pager")}.items():
        _sh("git", "config", k, v, cwd=ws)
    hook = ws / ".git" / "hooks" / "post-index-change"
    hook.write_text(Path(marker("post-index-change", "true")).read_text())
    hook.chmod(0o755)
    # the secrets, and the ways to them the text of a command does not show
    (ws / ".env").write_text(f"PLANTED_PROJECT={S_PROJECT}\n")
    (home / ".config" / "flower").mkdir(parents=True)
    (home / ".config" / "flower" / ".env").write_text(f"PLANTED_FLOWER={S_FLOWER}\n")
    (home / ".claude" / "settings.json").write_text(json.dumps({"env": {"X": S_CLAUDE}}))
    (ws / "notes.txt").symlink_to(home / ".config" / "flower" / ".env")
    (ws / "link-to-config").symlink_to(home / ".config" / "flower")
    (ws / "zero-link").symlink_to("/dev/zero")
    (ws / "empty").mkdir()


def _tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, tuple[int, str]]:
    """Every file under ``root`` with its size and content hash (symlinks: their target)."""
    out: dict[str, tuple[int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames if os.path.normpath(os.path.join(rel_dir, d))
                       not in skip]
        for name in filenames:
            p = Path(dirpath) / name
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if rel in skip:
                continue
            if rel.startswith(".git" + os.sep) and not p.is_symlink() and p.stat().st_size == 0:
                continue  # the sandbox's empty mount points for paths it hides, not a write
            if p.is_symlink():
                out[rel] = (0, os.readlink(p))
            elif p.stat().st_size > 10_000_000:
                out[rel] = (p.stat().st_size, "big")
            else:
                out[rel] = (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def _results(fake: FakeServer) -> list[tuple[str, bool]]:
    """The result of each Bash call of the main thread, in order."""
    out = []
    for q in fake.message_requests():
        if not q.agent_id:
            out += [(tool_result_text(b), bool(b.get("is_error")))
                    for b in q.last_tool_results()]
    return out


def _bash(cmd: str) -> dict:
    return tool_use("Bash", {"command": cmd, "description": "look"})


def _cli_state(home: Path) -> tuple[str, ...]:
    """Paths under HOME the CLI itself writes (its config dir, except settings.json), npm's
    debug logs — the one spot the sandbox leaves writable for the CLI's own tooling — and
    flower's own state (the project .env's trust record, written by flower, not an agent)."""
    claude = home / ".claude"
    return (*(os.path.relpath(p, home) for p in claude.iterdir() if p.name != "settings.json"),
            ".claude.json", os.path.join(".npm", "_logs"),
            os.path.join(".config", "git", "ignore"),  # the CLI adds its own ignore line
            os.path.join(".local", "state", "flower", "env-trust"))


@pytest.fixture
def hostile(workspace: Path, home: Path, tmp_path: Path) -> Path:
    marks = tmp_path / "marks"
    _hostile(workspace, home, marks)
    return marks


def _glance_marks(marks: Path) -> dict[str, list[str]]:
    """Marker hits from git processes a shell started (the CLI's own git has node above)."""
    hits: dict[str, list[str]] = {}
    for mark in marks.iterdir():
        parents = [p.strip() for p in mark.read_text().splitlines() if p.strip()]
        shelled = [p for p in parents if p not in ("node", "claude")]
        if shelled:
            hits[mark.name] = shelled
    return hits


async def test_every_bypass_class_is_refused_and_leaves_no_trace(
        fake: FakeServer, workspace: Path, home: Path, run_dir: Path, tmp_path: Path,
        cli_env: dict[str, str], hostile: Path) -> None:
    cmds = [c for _, group in BYPASSES for c in group]
    assert all(len(group) >= 3 for _, group in BYPASSES)
    fake.route(match.main_agent(), *[reply(_bash(c)) for c in cmds], "done", name="coord")
    before_ws = _tree(workspace)
    before_home = _tree(home, skip=_cli_state(home))
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    try:
        with anyio.fail_after(240):
            r = await rt.run(coordinator("协调者", "", {}), "look around")
    finally:
        rt.close()
    assert r.ok, r.error
    results = _results(fake)
    assert len(results) == len(cmds)
    for cmd, (text, is_error) in zip(cmds, results, strict=True):
        assert is_error and texts.DENY_DELEGATE_GLANCE in text, (cmd, text[:300])
    assert _tree(workspace) == before_ws
    assert _tree(home, skip=_cli_state(home)) == before_home
    assert not _glance_marks(hostile)
    for q in fake.requests:
        body = q.raw.decode("utf-8", "replace")
        assert not any(s in body for s in SECRETS), [s for s in SECRETS if s in body]


async def test_glances_run_bounded_reach_the_model_and_expire_on_resume(
        fake: FakeServer, workspace: Path, home: Path, run_dir: Path, tmp_path: Path,
        cli_env: dict[str, str], hostile: Path) -> None:
    huge = workspace / "big" / "huge.bin"  # sparse: wc -l would read a terabyte of zeros
    huge.parent.mkdir()
    with huge.open("wb") as fh:
        fh.truncate(1 << 40)
    cmds = [c for c, _ in GLANCES]
    steps = [reply(_bash(c)) for c in cmds]
    steps.append(reply(tool_use("Read", {"file_path": str(workspace / "README.md")})))
    steps.append(reply(_bash("wc -l big/huge.bin")))
    fake.route(match.main_agent(), *steps, "looked", name="coord")
    before_ws = _tree(workspace)
    before_home = _tree(home, skip=_cli_state(home))
    spec = coordinator("协调者", "", {"coder": worker("c", "p")})
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK,
                 ephemeral=EphemeralPolicy(keep_recent=3))
    try:
        with anyio.fail_after(240):
            r = await rt.run(spec, "look around")
        assert r.ok, r.error
        results = _results(fake)
        assert len(results) == len(cmds) + 2
        for (cmd, want), (text, _) in zip(GLANCES, results, strict=False):
            assert want in text, (cmd, text[:400])
            assert texts.DENY_DELEGATE_GLANCE not in text, cmd
            assert not any(s in text for s in SECRETS), (cmd, text[:400])
        read_text, _ = results[len(cmds)]
        assert "second line" in read_text
        # the never-ending glance was killed inside its bound, in the foreground
        killed, is_error = results[-1]
        assert NOTE_KILLED in killed and is_error, killed[:400]
        assert "background" not in killed
        main = [q for q in fake.message_requests() if not q.agent_id]
        took = main[-1].time - main[-2].time  # the wc call's turn, answer to next request
        assert GLANCE_SECONDS - 1 < took < TOOL_TIMEOUT_MS / 1000, took
        survivors = subprocess.run(["pgrep", "-f", "huge.bin"], capture_output=True,
                                   text=True).stdout.split()
        assert not survivors
        assert _tree(workspace) == before_ws
        assert _tree(home, skip=_cli_state(home)) == before_home
        assert not _glance_marks(hostile)
        for q in fake.requests:
            assert not any(s in q.raw.decode("utf-8", "replace") for s in SECRETS)

        # the transcript keeps the model's own command, and that is what expiry judges
        stored = _stored_bash_commands(run_dir)
        assert stored[:len(cmds)] == cmds
        assert all(is_ephemeral(c) for c in stored)

        fake.route(match.main_agent(), "resumed", name="again")
        with anyio.fail_after(120):
            r2 = await rt.run(spec, "carry on", resume=r.session_id)
        assert r2.ok, r2.error
    finally:
        rt.close()
    seen = fake.last_request(r.session_id).text()
    expired = [c for c in cmds if f"[`{c}` 的结果已过期" in seen]
    # all but the newest keep_recent (3) glance results expired: the last of GLANCES and the
    # killed wc stay
    assert len(expired) >= len(cmds) - 3, (len(expired), len(cmds))
    assert "git status" in expired and "cat README.md" in expired
    assert "second line" in seen  # the Read of README.md did not expire


def _stored_bash_commands(run_dir: Path) -> list[str]:
    db = next(run_dir.rglob("sessions.db"))
    out = []
    for (payload,) in sqlite3.connect(db).execute("SELECT payload FROM entries ORDER BY seq"):
        entry = json.loads(payload)
        if entry.get("type") != "assistant":
            continue
        for b in (entry.get("message") or {}).get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == "Bash":
                out.append(b["input"]["command"])
    return out


def test_the_bound_is_shorter_than_the_tools_own_timeout() -> None:
    """The CLI backgrounds a command that outlives its ``timeout``; the glance's own kill
    must always come first."""
    assert GLANCE_SECONDS * 1000 + 5_000 <= TOOL_TIMEOUT_MS

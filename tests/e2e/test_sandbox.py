"""The operating system's wall end to end: the real CLI, real bubblewrap, the fake model.

The scripted model runs Bash commands a role must not get away with — writes, reads of
planted credentials, network — and the tests check the machine afterwards (nothing
written, the secrets in no request the fake received) and what the model was told (the
next request's tool_result). Needs ``bwrap`` and ``socat`` on PATH, as ``auto`` does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from flower import Resilience, Runtime, coordinator, judge, oracle, texts, worker
from flower.core.roles import READ_TOOLS
from flower.core.sandbox import key_root, probe_platform
from flower.testing import FakeServer, Request, match, reply, tool_result_text, tool_use
from flower.testing.env import TEST_KEY

QUICK = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2)
MARK = f"flower-sbx-{uuid.uuid4().hex[:8]}"  # fresh per run: a failed run leaves no trap
#: Written where a role's Bash must not reach; each value must appear in no request.
PLANTED = {
    ".config/flower/.env": "FLOWER_PLANTED_TOKEN=planted-flower-env-7c1e\n",
    ".claude/settings.json": '{"note": "planted-claude-settings-51d0"}\n',
    ".bashrc": "export NOTE=planted-bashrc-0f2a\n",
    ".ssh/id_ed25519": "planted-ssh-key-aa31\n",
    ".gitconfig": "[user]\n\tname = planted-gitconfig-77b2\n",
}
WS_PLANTED = {
    ".env": "PLANTED_WS_NOTE=planted-ws-env-93ab\n",
    "sub/prod.env": "planted-sub-env-c4d5\n",
    "sub/.env.local": "planted-sub-envlocal-e6f7\n",
}
#: What the CLI itself keeps under HOME and in the workspace: not the role's doing.
CLI_STATE = {".claude", ".cache", ".npm", ".config/anthropic", ".local", ".claude.json"}



@pytest.fixture
def sandboxed() -> None:
    assert probe_platform().ok, "these tests need bubblewrap and socat on PATH"


def secrets() -> list[str]:
    """Every planted value, and the model key the CLI was given."""
    bodies = "".join([*PLANTED.values(), *WS_PLANTED.values()])
    return [*re.findall(r"planted-[a-z-]+-[0-9a-f]{4}", bodies), TEST_KEY]


def plant(home: Path, ws: Path) -> None:
    for rel, body in PLANTED.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(body)
    for rel, body in WS_PLANTED.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(body)
    (ws / "README.md").write_text("readme\n")


@pytest.fixture
def other_run_key() -> Iterator[str]:
    """A key file of another flower process (its pid is alive: our parent's)."""
    folder = key_root() / f"{os.getppid()}-other-run"
    folder.mkdir(mode=0o700)
    (folder / "k.key").write_text("planted-otherkey-1a2b")
    try:
        yield "planted-otherkey-1a2b"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def tree(root: Path, skip: set[str] = frozenset()) -> dict[str, str]:
    """Every non-empty file under ``root`` with its hash. Empty files and folders are left
    out: the CLI leaves empty mount points behind (in ``.git/``, for hidden paths)."""
    out: dict[str, str] = {}
    for dirpath, dirs, files in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        dirs[:] = [d for d in dirs if str(rel_dir / d) not in skip]
        for name in files:
            path = Path(dirpath) / name
            rel = str(rel_dir / name)
            if rel in skip or path.is_symlink() or path.stat().st_size == 0:
                continue
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def everything_sent(fake: FakeServer) -> bytes:
    return b"".join(r.raw for r in fake.requests)


def results(req: Request) -> list[tuple[str, bool]]:
    return [(tool_result_text(b), bool(b.get("is_error"))) for b in req.last_tool_results()]


def bash_steps(commands: list[str]) -> list:
    return [reply(tool_use("Bash", {"command": c})) for c in commands]


async def run_step(workspace: Path, run_dir: Path, spec, prompt: str = "go", **rt_kw):
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK, **rt_kw)
    try:
        with anyio.fail_after(120):
            return await rt.run(spec, prompt)
    finally:
        rt.close()


def seen_by_model(fake: FakeServer, commands: list[str]) -> dict[str, str]:
    """Each command's output as the model saw it (the tool_result of the next request)."""
    reqs = [q for q in fake.message_requests() if not q.agent_id]
    out = {}
    for command, req in zip(commands, reqs[1:], strict=False):
        [(text, _)] = results(req)
        out[command] = text
    return out


WRITES = [f"touch {MARK}-a; echo rc=$?", "echo hi > README.md; echo rc=$?",
          "git init; echo rc=$?",
          f"mkdir ~/{MARK}; echo rc=$?", f"touch /tmp/{MARK}; echo rc=$?",
          f"touch ../{MARK}; echo rc=$?", "echo x >> ~/.bashrc; echo rc=$?"]
READS = ["cat ~/.config/flower/.env", "cat .env sub/prod.env sub/.env.local",
         "cat ~/.claude/settings.json", "cat ~/.bashrc ~/.ssh/id_ed25519 ~/.gitconfig", "env",
         "for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f; done",
         f"cat {key_root()}/*/*"]


def net(fake: FakeServer) -> list[str]:
    return [f"curl -sS -m 5 {fake.url}/v1/models; echo rc=$?",
            "curl -sS -m 5 https://example.com/; echo rc=$?"]


def assert_nothing_leaked(fake: FakeServer) -> None:
    sent = everything_sent(fake)
    leaked = [s for s in secrets() if s.encode() in sent]
    assert leaked == []
    assert not any("curl" in r.headers.get("user-agent", "") for r in fake.requests)
    # the model credential still reached the API — from the apiKeyHelper, which the CLI
    # sends as both headers (from ANTHROPIC_API_KEY it sends x-api-key alone)
    for r in fake.message_requests():
        assert r.headers.get("x-api-key") == TEST_KEY
        assert r.headers.get("authorization") == f"Bearer {TEST_KEY}"


def assert_refused(said: str) -> None:
    assert "rc=0" not in said and "rc=" in said


async def test_a_looking_role_writes_nothing_reads_no_secret_reaches_no_host(
        fake: FakeServer, workspace: Path, run_dir: Path, home: Path,
        cli_env: dict[str, str], sandboxed: None, other_run_key: str) -> None:
    """The read-only wall (an oracle given Bash): every write fails, the credential files
    are hidden (another run's key file too), the model key is out of Bash's environment and
    the network is closed."""
    plant(home, workspace)
    commands = WRITES + READS + net(fake)
    fake.script(*bash_steps(commands), "done")
    before = (tree(workspace, CLI_STATE), tree(home, CLI_STATE))
    spec = replace(oracle(max_turns=None, max_budget_usd=None),
                   allowed_tools=[*READ_TOOLS, "Bash"])
    r = await run_step(workspace, run_dir, spec)

    assert r.ok and r.sandbox == "readonly"
    assert (tree(workspace, CLI_STATE), tree(home, CLI_STATE)) == before
    assert not (workspace / ".git").is_dir() or not any((workspace / ".git").rglob("HEAD"))
    for path in (workspace / f"{MARK}-a", home / MARK, Path("/tmp") / MARK,
                 workspace.parent / MARK):
        assert not path.exists()
    said = seen_by_model(fake, commands)
    assert "Read-only file system" in said[WRITES[0]]  # the OS refused, not a hook
    for command in WRITES:
        assert_refused(said[command])
    assert "Read-only file system" in said["git init; echo rc=$?"]  # git itself runs
    assert_refused(said[net(fake)[0]]) and assert_refused(said[net(fake)[1]])
    assert "ANTHROPIC_BASE_URL" in said["env"] and TEST_KEY not in said["env"]
    assert_nothing_leaked(fake)
    assert other_run_key.encode() not in everything_sent(fake)
    [row] = json.loads((run_dir / "manifest.json").read_text())
    assert row["sandbox"] == "readonly"


async def test_a_judge_that_runs_commands_writes_the_workspace_only(
        fake: FakeServer, workspace: Path, run_dir: Path, home: Path,
        cli_env: dict[str, str], sandboxed: None) -> None:
    plant(home, workspace)
    commands = ["echo built > out.txt; echo rc=$?", *WRITES[3:], *READS, *net(fake)]
    fake.script(*bash_steps(commands), "结论: 已达成")
    before = tree(home, CLI_STATE)
    r = await run_step(workspace, run_dir, judge("判定", None, can_run=True), "judge it")

    assert r.ok and r.sandbox == "workspace"
    assert (workspace / "out.txt").read_text() == "built\n"  # it may build and test
    assert tree(home, CLI_STATE) == before
    assert not (home / MARK).exists() and not (Path("/tmp") / MARK).exists()
    assert not (workspace.parent / MARK).exists()
    said = seen_by_model(fake, commands)
    for command in WRITES[3:6]:
        assert_refused(said[command])
    assert_refused(said[net(fake)[1]])
    assert_nothing_leaked(fake)


def coder(tools: list[str] | None = None) -> dict:
    return {"coder": worker("writes code", "you implement", tools=tools or ["Read", "Bash"])}


def dispatch(task: str) -> dict:
    return {"description": "do the work", "prompt": task, "subagent_type": "coder"}


async def test_auto_walls_the_coordinator_and_lets_its_workers_work(
        fake: FakeServer, workspace: Path, run_dir: Path, home: Path,
        cli_env: dict[str, str], sandboxed: None) -> None:
    """One CLI process runs the coordinator and its workers: the coordinator's glances are
    sandboxed, its workers' commands are not (workers are walled only under strict)."""
    plant(home, workspace)
    # glances the policy admits, each reaching something only the OS hides
    glances = ["wc -c ~/.bashrc", "ls -la ~/.config/flower ~/.claude", "grep -r planted ."]
    fake.route(match.subagent(), *bash_steps(["echo made > made.txt; echo rc=$?"]),
               "结论:made.txt 写好了", name="coder")
    fake.route(match.main_agent(), *bash_steps(glances),
               reply(tool_use("Agent", dispatch("make made.txt"))), "FINAL", name="main")
    r = await run_step(workspace, run_dir, coordinator("协调者", "", coder()))

    assert r.ok and r.sandbox == "readonly"
    said = seen_by_model(fake, glances)
    assert "Permission denied" in said["wc -c ~/.bashrc"]  # hidden by the OS, not by policy
    listing = said["ls -la ~/.config/flower ~/.claude"]
    assert ".env" not in listing and "settings.json" not in listing
    # without the wall this prints the .env files' lines; with it grep finds nothing
    assert "planted-" not in said["grep -r planted ."]
    assert (workspace / "made.txt").read_text() == "made\n"  # the worker left the sandbox
    [(out, is_error)] = results(fake.message_requests()[-2])  # the worker's own result
    assert not is_error and "rc=0" in out
    assert_nothing_leaked(fake)


async def test_a_coordinator_cannot_ask_out_of_its_sandbox(
        fake: FakeServer, workspace: Path, run_dir: Path, home: Path,
        cli_env: dict[str, str], sandboxed: None) -> None:
    (home / ".bashrc").write_text(PLANTED[".bashrc"])
    fake.script(reply(tool_use("Bash", {"command": "cat ~/.bashrc",
                                        "dangerouslyDisableSandbox": True})), "ok")
    r = await run_step(workspace, run_dir, coordinator("协调者", "", coder()))
    assert r.ok
    [(out, is_error)] = results(fake.message_requests()[-1])
    assert is_error and "dangerouslyDisableSandbox" in out
    assert b"planted-bashrc-0f2a" not in everything_sent(fake)


async def test_strict_walls_workers_to_the_workspace_and_the_allowlist(
        fake: FakeServer, workspace: Path, run_dir: Path, home: Path,
        cli_env: dict[str, str], sandboxed: None) -> None:
    plant(home, workspace)
    tries = ["echo made > made.txt; echo rc=$?", "echo x >> ~/.bashrc; echo rc=$?",
             f"touch /tmp/{MARK}; echo rc=$?", f"touch ../{MARK}; echo rc=$?",
             f"touch ~/.npm/_logs/{MARK}; echo rc=$?", "cat ~/.config/flower/.env; echo rc=$?",
             "curl -sS -m 5 https://example.com/; echo rc=$?"]
    seen: list[str] = []

    def worker_brain(req: Request):
        got = req.last_tool_results()
        if got:
            seen.append(tool_result_text(got[0]))
        if len(seen) < len(tries):
            return reply(tool_use("Bash", {"command": tries[len(seen)]}))
        return reply("结论:试完了")

    fake.route(match.subagent(), *[worker_brain] * (len(tries) + 1), name="coder")
    fake.route(match.main_agent(), reply(tool_use("Agent", dispatch("try things"))), "done",
               name="main")
    before = tree(home, CLI_STATE)
    r = await run_step(workspace, run_dir, coordinator("协调者", "", coder()), sandbox="strict")

    assert r.ok and r.sandbox == "workspace+net"
    assert len(seen) == len(tries)
    made, bashrc, tmp, outside, npm, creds, web = seen
    assert "rc=0" in made and (workspace / "made.txt").read_text() == "made\n"
    for said in (bashrc, tmp, outside, npm, creds, web):
        assert_refused(said)
    assert "allow list" in web  # refused by the allowlist, not for want of a network
    assert tree(home, CLI_STATE) == before
    assert not (Path("/tmp") / MARK).exists() and not (workspace.parent / MARK).exists()
    assert_nothing_leaked(fake)


# --- the command line: --sandbox on/auto on a machine without bubblewrap ------------------


def path_without_bwrap(tmp: Path) -> str:
    """A PATH folder with a link to every command on PATH except ``bwrap``."""
    bin_dir = tmp / "bin-no-bwrap"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            target = Path(folder) / name
            link = bin_dir / name
            if name == "bwrap" or link.exists() or not os.access(target, os.X_OK):
                continue
            link.symlink_to(target)
    assert shutil.which("bwrap", path=str(bin_dir)) is None
    return str(bin_dir)


def flower(ws: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, "-m", "flower", *args], cwd=ws, env=env,
                          input="", capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("mode", ["on", "strict"])
def test_on_without_bubblewrap_is_one_line_and_no_model_call(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], tmp_path: Path,
        mode: str) -> None:
    out = flower(workspace, "--sandbox", mode, "once", "hi", path=path_without_bwrap(tmp_path))
    assert out.returncode == 1
    lines = [line for line in (out.stdout + out.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and f"--sandbox {mode}" in lines[0] and "bwrap" in lines[0]
    assert fake.requests == []
    assert not (workspace / "runs" / "manifest.json").exists()


def test_auto_without_bubblewrap_says_so_once_and_runs(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], tmp_path: Path) -> None:
    fake.script("hello from the model")
    out = flower(workspace, "-v", "once", "hi", path=path_without_bwrap(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    notice = texts.SANDBOX_AUTO_OFF.split("(")[0]
    assert out.stdout.count(notice) == 1
    assert out.stdout.index(notice) < out.stdout.index("hello from the model")
    assert texts.SANDBOX_STEP.format(wall=texts.SANDBOX_WALLS["off"]) in out.stdout  # -v
    [row] = json.loads((workspace / "runs" / "manifest.json").read_text())
    assert row["sandbox"] == "off"


def test_verbose_and_log_json_name_the_wall(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], sandboxed: None) -> None:
    fake.script("hello")
    out = flower(workspace, "-v", "--sandbox", "strict", "once", "hi", "-t", "Read,Bash")
    assert out.returncode == 0, out.stdout + out.stderr
    assert texts.SANDBOX_STEP.format(wall=texts.SANDBOX_WALLS["workspace+net"]) in out.stdout
    assert texts.SANDBOX_AUTO_OFF.split("(")[0] not in out.stdout
    log = flower(workspace, "log", "--json")
    [row] = json.loads(log.stdout)["runs"][0]["rows"]
    assert row["sandbox"] == "workspace+net"

"""Checkpoints and rewind (issue 34) through the real CLI against the fake: a worker changes
files with Write *and* Bash (``sed -i``, ``rm``, ``mv``, a new folder); every checkpoint
restores the tree byte for byte; the user's ``.git`` is never touched; a rewind is itself
rewindable; ``--dry-run`` changes nothing; a rewind waits for no run — it refuses; and after
a rewind the next ``flower`` re-runs exactly the steps after the checkpoint."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from flower import texts
from flower.core.agent import AgentSpec
from flower.core.runtime import Runtime
from flower.testing import FakeServer, match, reply, tool_use

TIMEOUT = 120
OWN = (".git", "runs", ".flower")  # the user's repository and flower's own state


def tree(ws: Path, skip: tuple[str, ...] = OWN) -> dict[str, str]:
    """sha256 of every file (and link target) under ``ws`` outside ``skip``."""
    out = {}
    for root, dirs, files in os.walk(ws):
        rel_root = Path(root).relative_to(ws)
        if rel_root == Path("."):
            dirs[:] = [d for d in dirs if d not in skip]
        for name in files:
            p = Path(root) / name
            data = os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
            out[(rel_root / name).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


def git_tree(ws: Path) -> dict[str, str]:
    """Every file under the user's ``.git`` hashed, plus its mtime: untouched means both."""
    out = {}
    for p in sorted((ws / ".git").rglob("*")):
        if p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest() + str(p.stat().st_mtime_ns)
    return out


def flower(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flower", *args], cwd=ws,
                          env={**os.environ, "COLUMNS": "300"}, capture_output=True,
                          text=True, timeout=TIMEOUT)


def listed(ws: Path) -> list[dict]:
    out = flower(ws, "checkpoints", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def user_repo(ws: Path) -> None:
    (ws / "README.md").write_text("# 项目\n")
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "build.log").write_text("ignored, never snapshotted\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x",
           "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "mine"]):
        subprocess.run(["git", *cmd], cwd=ws, env=env, check=True)


STEPS = {  # step → the worker's calls: Write and Bash, every kind of change
    "一": [("Write", {"file_path": "src/a.py", "content": "print('a')\n"}),
           ("Bash", {"command": "mkdir -p lib/deep && printf 'x=1\\n' > lib/deep/b.txt"})],
    "二": [("Bash", {"command": "sed -i 's/x=1/x=2/' lib/deep/b.txt && rm src/a.py && "
                                "mv lib lib2 && chmod +x lib2/deep/b.txt"}),
           ("Write", {"file_path": "README.md", "content": "# 改过的\n"})],
    "三": [("Bash", {"command": "rm -r lib2 && mkdir out && echo 三 > out/c.txt && "
                                "ln -s out/c.txt link"})],
}


async def run_steps(ws: Path, run_dir: Path, fake: FakeServer,
                    **runtime: object) -> dict[str, dict[str, str]]:
    """Each step one real session whose worker makes its changes; the tree after each."""
    after = {}
    spec = AgentSpec("worker", "test agent", allowed_tools=["Bash", "Write"],
                     permission_mode="bypassPermissions")
    for step, calls in STEPS.items():
        blocks = []
        for tool, args in calls:
            if tool == "Write":
                args = {**args, "file_path": str(ws / args["file_path"])}
            blocks.append(reply("on it", tool_use(tool, args)))
        fake.script(*blocks, f"{step} done")
        rt = Runtime(workspace=ws, run_dir=run_dir, **runtime)
        try:
            with anyio.fail_after(TIMEOUT):
                r = await rt.run(spec, f"做第{step}步", step_name=step)
        finally:
            rt.close()
        assert r.ok, r.error
        after[step] = tree(ws)
    return after


async def test_every_checkpoint_restores_the_tree_and_the_users_git_stays_as_it_was(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    ws = workspace
    user_repo(ws)
    before_git = git_tree(ws)
    after = await run_steps(ws, ws / "runs", fake)
    cps = listed(ws)
    assert [(c["kind"], c["step"]) for c in cps] == [("step-end", s) for s in STEPS]
    assert (cps[1]["added"], cps[1]["changed"], cps[1]["removed"]) == (1, 1, 2)
    assert (ws / "lib2" / "deep" / "b.txt").exists() is False  # step 三 removed it
    final = tree(ws)

    dry = flower(ws, "rewind", "1", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert texts.REWIND_DRY in dry.stdout and "  + src/a.py" in dry.stdout
    assert tree(ws) == final and len(listed(ws)) == 3  # nothing moved, nothing taken

    for cp in cps:  # each checkpoint, byte for byte (the mode bit and the link included)
        out = flower(ws, "rewind", str(cp["id"]))
        assert out.returncode == 0, out.stdout + out.stderr
        assert tree(ws) == after[cp["step"]], cp
    assert flower(ws, "rewind", "2").returncode == 0
    assert os.access(ws / "lib2" / "deep" / "b.txt", os.X_OK)  # chmod +x came back too

    # the first rewind is undone by rewinding to the before-rewind it took
    first_undo = next(c for c in listed(ws) if c["kind"] == "before-rewind")
    assert first_undo["rewind"]["to"] == 1
    assert flower(ws, "rewind", str(first_undo["id"])).returncode == 0
    assert tree(ws) == final
    assert (ws / "build.log").read_text() == "ignored, never snapshotted\n"
    assert git_tree(ws) == before_git  # no index, ref, hook, config or object changed

    stat = flower(ws, "diff", "1", "3", "--stat")
    assert stat.returncode == 0 and "README.md" in stat.stdout and "out/c.txt" in stat.stdout
    patch = flower(ws, "diff", "1")
    assert "-print('a')" in patch.stdout


async def test_a_postgresql_backed_run_keeps_its_checkpoints_in_its_run_dir(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], pg_url: str) -> None:
    """The transcripts go to PostgreSQL; the snapshots stay with the files, in the run dir
    of the machine that ran the step (docs/checkpoints.md)."""
    after = await run_steps(workspace, workspace / "runs", fake, store=pg_url)
    assert not (workspace / "runs" / "sessions.db").exists()
    assert [c["step"] for c in listed(workspace)] == list(STEPS)
    assert flower(workspace, "rewind", "1").returncode == 0
    assert tree(workspace) == after["一"]


async def test_a_rewind_refuses_while_a_run_holds_the_folder(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    await run_steps(workspace, workspace / "runs", fake)
    final = tree(workspace)
    rt = Runtime(workspace=workspace, run_dir=workspace / "runs")  # a run, live
    try:
        out = flower(workspace, "rewind", "1")
    finally:
        rt.close()
    assert out.returncode == 1
    assert out.stderr.strip() == "x " + texts.CP_RUN_ACTIVE.format(run_dir=workspace / "runs")
    assert tree(workspace) == final
    assert flower(workspace, "rewind", "1").returncode == 0  # the run is over


@pytest.mark.parametrize("ident", ["99", "abc"])
def test_an_unknown_checkpoint_is_one_line_and_exit_2(workspace: Path, ident: str) -> None:
    (workspace / "runs").mkdir()
    out = flower(workspace, "rewind", ident)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "flower checkpoints" in out.stderr


def test_no_checkpoints_yet_says_when_they_come(workspace: Path) -> None:
    out = flower(workspace, "checkpoints")
    assert out.returncode == 0 and out.stdout.strip() == texts.CP_NONE.format(ws=workspace)


def demo(ws: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_")) and k != "FLOWER_ENV"}
    env.update({"HOME": str(home), "COLUMNS": "300", "NO_COLOR": "1", "FLOWER_DEMO_PAUSE": "0"})
    return subprocess.run([sys.executable, "-m", "flower", "demo", "-w", str(ws)], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def test_after_a_rewind_the_next_run_reruns_exactly_the_steps_after_the_checkpoint(
        tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "demo"
    first = demo(ws, home)
    assert first.returncode == 0, first.stdout + first.stderr
    cps = listed(ws)
    kinds = [(c["kind"], c["step"]) for c in cps]
    assert kinds[:2] == [("step-end", "确认需求"), ("step-end", "设定目标")]
    assert ("worker-report", "干活") in kinds and ("before-judge", "干活·判定#1") in kinds
    assert ("step-end", "干活#round2") in kinds
    log = flower(ws, "log")
    assert texts.CP_LOG_LINE.format(n=len(cps), id=cps[-1]["id"], kind=cps[-1]["kind"],
                                    step=cps[-1]["step"]) in log.stdout
    made = next(c for c in cps if c["kind"] == "worker-report")
    assert made["added"] >= 1  # the coder's script
    rows = json.loads((ws / "runs" / "manifest.json").read_text())
    work_sid = next(r["session_id"] for r in rows if r["step"] == "干活")
    goal = (ws / ".flower" / "notes" / "目标.md").read_text(encoding="utf-8")

    out = flower(ws, "rewind", str(cps[0]["id"]))  # back to just after the clarification
    assert out.returncode == 0, out.stdout + out.stderr
    assert texts.REWIND_STEPS.format(steps="设定目标、干活") in out.stdout
    assert not (ws / "md2html.py").exists() and not (ws / "sample.html").exists()
    assert not (ws / ".flower" / "notes" / "目标.md").exists()
    [kept] = (ws / ".flower" / "notes" / "archive").glob("rewind-*/目标.md")
    assert kept.read_text(encoding="utf-8") == goal  # moved aside, never deleted
    assert "干活" not in json.loads((ws / "runs" / "lineage.json").read_text())["steps"]

    again = demo(ws, home)
    assert again.returncode == 0, again.stdout + again.stderr
    new = json.loads((ws / "runs" / "manifest.json").read_text())[len(rows):]
    steps = [r["step"] for r in new]
    assert steps[0] == "设定目标" and "确认需求" not in steps, steps  # frozen stays frozen
    work = next(r for r in new if r["step"] == "干活")
    assert work["session_id"] != work_sid and not work.get("resumed")  # a fresh work step
    assert (ws / "sample.html").is_file()


@pytest.mark.parametrize("mode", ["strict", "auto"])
async def test_no_worker_rewrites_the_checkpoints(fake: FakeServer, workspace: Path,
                                                  cli_env: dict[str, str], mode: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The shadow repository lies in the run dir, which no role may write: a worker's git
    and rm at it fail (the sandbox refuses under ``strict`` — the hook taken away to see the
    OS do it —, the hook an unsandboxed Bash), and every checkpoint is still there — plus
    the one its report made."""
    from flower.core import sandbox
    from flower.core.roles import coordinator, worker

    if mode == "strict":
        monkeypatch.setattr(sandbox, "guard_hooks", lambda rules, state: {})

    await run_steps(workspace, workspace / "runs", fake)
    before = listed(workspace)
    repo = workspace / "runs" / "checkpoints"
    commands = [f"git --git-dir={repo} update-ref -d refs/heads/checkpoints; echo rc=$?",
                f"rm -rf {repo}/objects; echo rc=$?",
                "cd runs/checkpoints && printf forged > HEAD; echo rc=$?"]
    seen: list[str] = []

    def coder(req):
        seen.extend(r["content"] if isinstance(r["content"], str) else
                    r["content"][0]["text"] for r in req.last_tool_results())
        if len(seen) < len(commands):
            return reply(tool_use("Bash", {"command": commands[len(seen)]}))
        return reply("结论:改不动")

    fake.route(match.subagent(), *[coder] * (len(commands) + 1), name="coder")
    fake.route(match.main_agent(), reply(tool_use("Agent", {
        "description": "rewrite history", "prompt": "go", "subagent_type": "coder"})),
        "done", name="main")
    spec = coordinator("协调者", "", {"coder": worker("writes code", "you implement",
                                                   tools=["Bash"])})
    rt = Runtime(workspace=workspace, run_dir=workspace / "runs", sandbox=mode)
    try:
        with anyio.fail_after(TIMEOUT):
            r = await rt.run(spec, "go")
    finally:
        rt.close()
    assert r.ok, r.error
    assert len(seen) == len(commands) and not any("rc=0" in s for s in seen), seen
    why = "Read-only file system" if mode == "strict" else texts.DENY_RUN_STATE[:20]
    assert all(why in s or "readonly" in s for s in seen), seen
    after = listed(workspace)
    assert after[:len(before)] == before
    assert [c["kind"] for c in after[len(before):]] == ["worker-report", "step-end"]

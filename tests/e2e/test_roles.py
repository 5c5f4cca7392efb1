"""Roles end to end: walls, foreground dispatch, spill and isolation with the real CLI.

The bundled CLI offers every tool to every role (sdk-notes §12); these tests let the scripted
model *try* what a role must not do and check the hooks the Runtime installs stop it — and
that what a role may do still works.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import threading
from pathlib import Path

import anyio
import pytest

from flower import (
    HumanChannel,
    Resilience,
    Runtime,
    Workbench,
    clarify,
    coordinator,
    judge,
    texts,
    worker,
)
from flower.testing import FakeServer, Request, match, reply, tool_result_text, tool_use

QUICK = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2)
CODER = "coder"
# any glance does; tests/e2e/test_glance.py runs them all (git status included)
GIT_GLANCE = "git log --no-show-signature --oneline -3"


def git_init(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "-c", "user.email=t@t", "-c", "user.name=t",
                    "commit", "-q", "--allow-empty", "-m", "init"], check=True)


def coder() -> dict:
    return {CODER: worker("writes code", "you implement", tools=["Read", "Write", "Bash"])}


async def run_step(workspace: Path, run_dir: Path, spec, prompt: str, **rt_kw):
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK, **rt_kw)
    try:
        with anyio.fail_after(60):
            return await rt.run(spec, prompt)
    finally:
        rt.close()


def results_of(req: Request) -> list[tuple[str, bool]]:
    return [(tool_result_text(b), bool(b.get("is_error"))) for b in req.last_tool_results()]


def dispatch(task: str, **extra) -> dict:
    return {"description": "do the work", "prompt": task, "subagent_type": CODER, **extra}


async def test_coordinator_is_walled_glances_and_dispatches(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    git_init(workspace)
    (workspace / "build").mkdir()
    (workspace / "build" / "keep.o").write_text("object")
    target = workspace / "hello.py"
    fake.route(match.subagent(),
               reply(tool_use("Write", {"file_path": str(target), "content": "print('hi')\n"})),
               "结论:hello.py 写好了", name="coder")
    main = fake.route(match.main_agent(),
                      reply(tool_use("Bash", {"command": "rm -rf build"})),
                      reply(tool_use("Bash", {"command": GIT_GLANCE})),
                      reply(tool_use("Agent", dispatch("write hello.py"))),
                      "FINAL: coder wrote hello.py, verified", name="coordinator")
    spec = coordinator("协调者", "", coder())
    r = await run_step(workspace, run_dir, spec, "make hello.py")

    assert r.ok and r.text.endswith("FINAL: coder wrote hello.py, verified")
    assert main.remaining == 0
    assert (workspace / "build" / "keep.o").is_file()  # the wall held
    assert target.read_text() == "print('hi')\n"  # the worker really wrote it
    reqs = [q for q in fake.message_requests() if not q.agent_id]
    [(denied, is_error)] = results_of(reqs[1])
    assert is_error and "Agent" in denied and "subagent" in denied  # says what to do instead
    [(status, is_error)] = results_of(reqs[2])
    assert not is_error and "init" in status  # the glance ran
    [(report, _)] = results_of(reqs[3])
    assert "hello.py 写好了" in report  # the report came back inside the step


@pytest.mark.parametrize("background", [None, True])
async def test_report_arrives_before_the_step_ends(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str],
        background: bool | None) -> None:
    """The CLI backgrounds subagents by default; flower makes dispatch synchronous, even when
    the model asks for the background."""
    fake.route(match.subagent(), "REPORT-7: all done", name="coder")
    extra = {} if background is None else {"run_in_background": background}

    def answer(req: Request):
        results = req.last_tool_results()
        if not results:
            return reply(tool_use("Agent", dispatch("do it", **extra)))
        report = tool_result_text(results[0])
        return reply("answer to REPORT-7" if "REPORT-7: all done" in report
                     else f"no report, got: {report[:60]}")

    fake.route(match.main_agent(), answer, answer, name="coordinator")
    r = await run_step(workspace, run_dir, coordinator("协调者", "", coder()), "go")
    assert r.ok and r.text == "answer to REPORT-7"


async def test_coordinator_is_walled_without_a_workbench(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.route(match.main_agent(),
               reply(tool_use("Write", {"file_path": str(workspace / "x.txt"), "content": "x"})),
               "ok", name="coordinator")
    r = await run_step(workspace, run_dir, coordinator("协调者", "", coder()), "go")
    assert r.ok and not (workspace / "x.txt").exists()
    [(denied, is_error)] = results_of(fake.message_requests()[-1])
    assert is_error and "Agent" in denied


@pytest.mark.parametrize("can_run", [False, True])
async def test_judge_bash_only_when_it_can_run(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str],
        can_run: bool) -> None:
    fake.script(reply(tool_use("Bash", {"command": "echo judged-$((6*7))"})), "结论: 已达成")
    r = await run_step(workspace, run_dir, judge("判定", None, can_run=can_run), "judge it")
    assert r.ok
    [(out, is_error)] = results_of(fake.message_requests()[-1])
    if can_run:
        assert not is_error and "judged-42" in out
    else:
        assert is_error and "judged-42" not in out
        assert texts.DENY_HINTS["judge"][:12] in out  # tells it what to do instead


@pytest.mark.parametrize("tool,tool_input", [
    ("Write", {"file_path": "notes.md", "content": "x"}),
    ("Agent", {"description": "x", "prompt": "write notes.md", "subagent_type": "general-purpose"}),
])
async def test_judge_cannot_write_directly_or_by_proxy(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str],
        tool: str, tool_input: dict) -> None:
    fake.route(match.subagent(),
               reply(tool_use("Write", {"file_path": str(workspace / "notes.md"),
                                        "content": "by proxy"})), "done", name="proxy")
    tool_input = {**tool_input}
    if tool == "Write":
        tool_input["file_path"] = str(workspace / tool_input["file_path"])
    fake.route(match.main_agent(), reply(tool_use(tool, tool_input)), "结论: 未达成",
               name="judge")
    r = await run_step(workspace, run_dir, judge("判定", None, can_run=True), "judge it")
    assert r.ok and not (workspace / "notes.md").exists()
    [(out, is_error)] = results_of(fake.message_requests()[-1])
    assert is_error and tool in out


async def test_spill_guard_moves_big_results_to_the_workbench(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    body = "".join(f"line {i:05d} of the big file\n" for i in range(400))  # ~10 000 chars
    assert len(body) > 10_000
    (workspace / "big.txt").write_text(body)
    wb = Workbench(workspace).ensure()
    spilled: list[str] = []

    def worker_brain(req: Request):
        results = req.last_tool_results()
        if not results:
            return reply(tool_use("Bash", {"command": "cat big.txt"}))
        seen = tool_result_text(results[0])
        if not spilled:
            spilled.append(seen)
            path = re.search(r"(/\S+/spill/[0-9a-f]{16}\.txt)", seen).group(1)
            return reply(tool_use("Read", {"file_path": path}))
        spilled.append(seen)
        return reply("结论:看完了")

    fake.route(match.subagent(), worker_brain, worker_brain, worker_brain, name="coder")
    fake.route(match.main_agent(), reply(tool_use("Agent", dispatch("read big.txt"))),
               "done", name="coordinator")
    r = await run_step(workspace, run_dir, coordinator("协调者", "", coder()), "go",
                       workbench=wb)
    assert r.ok and len(spilled) == 2
    pointer, reread = spilled
    assert len(pointer) < 1_000 and body[:400].strip() in pointer  # pointer + first 400 chars
    assert "line 00399" not in pointer
    digest = hashlib.sha256(body.rstrip("\n").encode()).hexdigest()[:16]
    files = list(wb.spill.glob("*.txt"))
    assert [f.name for f in files] == [f"{digest}.txt"]
    assert files[0].read_text() == body.rstrip("\n")  # the full bytes
    assert "line 00399" in reread  # reading the spill file is not spilled again
    assert len(list(wb.spill.glob("*.txt"))) == 1


async def test_isolated_worker_gets_a_worktree(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    git_init(workspace)
    seen_cwd: list[str] = []

    def worker_brain(req: Request):
        results = req.last_tool_results()
        if not results:
            return reply(tool_use("Bash", {"command": "pwd"}))
        seen_cwd.append(tool_result_text(results[0]).strip())
        return reply("结论:看过了")

    fake.route(match.subagent(), worker_brain, worker_brain, name="coder")
    fake.route(match.main_agent(), reply(tool_use("Agent", dispatch("where am I?"))), "done",
               name="coordinator")
    workers = {CODER: worker("writes code", "you implement", tools=["Bash"], isolate=True)}
    wb = Workbench.isolated(workspace).ensure()
    r = await run_step(workspace, run_dir, coordinator("协调者", "", workers), "go",
                       workbench=wb)
    assert r.ok and seen_cwd
    assert seen_cwd[0] != str(workspace) and "worktree" in seen_cwd[0]


async def test_clarifier_asks_through_the_channel_and_cannot_write(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """Two questions: one answered from another thread, one left to time out; the Q&A log
    records both with their states, and the clarifier's Write is denied."""
    log = workspace / "问答记录.md"
    channel = HumanChannel(timeout_s=1.0, log_path=log)
    answered = threading.Event()

    def human(ev) -> None:
        p = ev.payload
        if ev.kind == "ask" and p.get("state") == "asked" and "谁用" in ev.text:
            threading.Thread(target=lambda: (channel.answer(p["id"], "我自己"),
                                             answered.set())).start()

    channel.on_event = human
    fake.script(
        reply(tool_use("mcp__human__ask", {"question": "给谁用?", "options": ["我自己", "团队"]})),
        reply(tool_use("mcp__human__ask", {"question": "要支持表格吗?"})),
        reply(tool_use("Write", {"file_path": str(workspace / "draft.py"), "content": "x"})),
        "## 目标\n给我自己用\n## 验收标准\n- 能跑\n## 边界\n- 不做表格\n"
        "## 未知与假设\n- 表格:没人答",
    )
    r = await run_step(workspace, run_dir, clarify("确认需求", channel), "帮我做个小工具")
    assert r.ok and answered.is_set()
    reqs = fake.message_requests()
    [(first, _)] = results_of(reqs[1])
    [(second, _)] = results_of(reqs[2])
    [(write, is_error)] = results_of(reqs[3])
    assert "我自己" in first
    assert second.strip() == texts.TIMEOUT  # the model is told to decide itself
    assert is_error and "mcp__human__ask" in write and not (workspace / "draft.py").exists()
    assert [a.state for a in channel.asks] == ["answered", "timeout"]
    text = log.read_text()
    assert "给谁用?" in text and "[answered]" in text and "要支持表格吗?" in text
    assert "[timeout]" in text

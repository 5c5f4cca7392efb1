"""Handoff end to end: the real SDK and CLI against the fake, context reported by the script.

The window is small and explicit (60K, room 20K: warning at 20K, handoff at 40K); the fake
reports ~12K for an unscripted turn (request bytes / 4), so only scripted ``usage`` crosses.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio

from flower import (
    AgentSpec,
    CompactPolicy,
    HandoffPolicy,
    Resilience,
    Runtime,
    Step,
    Workflow,
    texts,
)
from flower.core.events import Event
from flower.core.handoff import DEGRADED, Handoff, calibrated_window
from flower.testing import FakeServer, delay, fault, match, reply, tool_use

TIMEOUT = 60
QUICK = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2, probe_timeout=1.0,
                   max_offline_wait=60.0)
SMALL = HandoffPolicy(window=60_000, headroom=20_000)  # warn 20K, hand off at 40K
FULL = {"input_tokens": 45_000}  # over the handoff line
NEAR = {"input_tokens": 25_000}  # over the warning line only

WRITING_MARK = "写一份交接书"  # in HANDOFF_PROMPT: the writing round's last user message
WRITING = match.last_user_contains(WRITING_MARK)
SUCCESSOR = match.first_user_contains(texts.HANDOFF_BLOCK_HEAD[:30])
DOC = """好的,交接书如下。

## 现在在做
解析器写完了,正在补测试

## 已定的事
- 只用标准库:需求边界

## 走不通的
- 换第三方库:版本锁不住

## 下一步
运行 echo NEXT-STEP;如果失败就改 split_blocks

## 现场
- src/parse.py
"""

CHILD = str(Path(__file__).with_name("child.py"))


def spec(**kw) -> AgentSpec:
    kw.setdefault("allowed_tools", ["Bash", "Read"])
    kw.setdefault("permission_mode", "bypassPermissions")
    return AgentSpec(name=kw.pop("name", "worker"), instructions="test agent", **kw)


def runtime(workspace: Path, run_dir: Path, **kw) -> Runtime:
    kw.setdefault("resilience", QUICK)
    kw.setdefault("handoff", SMALL)
    kw.setdefault("workbench", True)
    return Runtime(workspace=workspace, run_dir=run_dir, **kw)


def handoffs(events: list[Event]) -> list[Event]:
    return [ev for ev in events if ev.kind == "handoff"]


def writing_requests(fake: FakeServer) -> list:
    return [r for r in fake.message_requests() if WRITING_MARK in r.last_user_text()]


def manifest(rt: Runtime) -> list[dict]:
    return json.loads(rt.manifest_path.read_text(encoding="utf-8"))


def step_flow(prompt: str, name: str = "干活") -> Workflow:
    return Workflow([Step(name, spec(), prompt)])


async def test_handoff_mid_step_continues_in_a_new_session(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """Crossing the line mid-step: the same session writes the document, it lands in
    notes/, a brand-new session continues from it alone, lineage follows the successor, and
    a rerun resumes the successor."""
    fake.script(reply("开工", tool_use("Bash", {"command": "echo part-1"}), usage=FULL))
    fake.route(WRITING, DOC, name="writing")
    fake.route(SUCCESSOR,
               reply("接着干", tool_use("Bash", {"command": "echo compact=$DISABLE_AUTO_COMPACT"}),
                     usage=NEAR),
               "接手后做完了", name="successor")
    events: list[Event] = []
    rt = runtime(workspace, run_dir)
    try:
        with anyio.fail_after(TIMEOUT):
            ctx = await step_flow("原始任务-ORIGINAL").run(rt, on_event=events.append)
    finally:
        rt.close()
    (r,) = rt.results
    assert r.ok, r.error
    assert ctx["干活"] == "接着干\n接手后做完了"  # the successor's prose only

    reqs = fake.message_requests()
    old = reqs[0].session_id
    (written,) = writing_requests(fake)
    assert written.session_id == old  # the SAME session writes its own handoff
    assert written.last_user_text().count("45.0K") == 1 and "60K" in written.last_user_text()
    later = [q for q in reqs if q.session_id != old]
    assert later and all(q.session_id == r.session_id for q in later)
    first = later[0]
    assert texts.HANDOFF_BLOCK_HEAD in first.first_user_text()
    assert "运行 echo NEXT-STEP" in first.first_user_text()
    assert "原始任务-ORIGINAL" not in first.text()  # the document stands on its own
    assert "compact=1" in fake.last_request().text()  # handoff on ⇒ auto-compact off

    path = rt.workbench.notes / "交接-干活.md"
    doc = Handoff.load(path)
    assert doc is not None and doc.complete() and not doc.degraded
    assert doc.doing == "解析器写完了,正在补测试" and doc.step == "干活"
    assert "## 走不通的路\n- 换第三方库:版本锁不住" in path.read_text(encoding="utf-8")

    phases = [ev.payload["phase"] for ev in handoffs(events)]
    assert phases == ["near", "writing", "done", "near"]  # one warning per generation
    near, writing, done, near2 = handoffs(events)
    assert near.payload == {"phase": "near", "step": "干活", "context": 45_000,
                            "window": 60_000, "at": 40_000}
    assert writing.payload == {"phase": "writing", "step": "干活", "context": 45_000,
                               "window": 60_000}
    assert done.payload["degraded"] is False and done.payload["path"] == str(path)
    assert done.payload["sections"] == doc.sections and done.payload["context"] == 45_000
    assert near2.payload["context"] == 25_000  # the watermark restarted with the successor
    assert not any(ev.kind == "text" and "交接书如下" in ev.text for ev in events)  # not streamed

    assert r.retired == [old] and r.session_id != old and r.attempts == 1
    assert r.errors == [] and "交接书如下" not in r.text
    assert r.num_turns >= 4 and r.cost_usd > 0  # first + writing + two successor turns
    (row,) = manifest(rt)
    assert row["retired"] == [old] and row["session_id"] == r.session_id and row["ok"]
    lineage = json.loads((run_dir / "lineage.json").read_text(encoding="utf-8"))
    assert lineage["steps"] == {"干活": r.session_id}
    assert ctx["_sessions"]["干活"] == r.session_id

    fake.script("重跑接上了")
    rt2 = runtime(workspace, run_dir)
    try:
        with anyio.fail_after(TIMEOUT):
            ctx2 = await step_flow("原始任务-ORIGINAL").run(rt2)
    finally:
        rt2.close()
    assert ctx2["_woke"] == 2 and ctx2["干活"] == "重跑接上了"
    assert fake.last_request().session_id == r.session_id  # the successor, not the retired one


async def test_writing_round_without_next_step_degrades(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.script(reply("开工", tool_use("Bash", {"command": "echo a"}), usage=FULL), "降级后做完了")
    fake.route(WRITING, "## 现在在做\n写到一半\n\n## 走不通的\n(暂无)\n", name="writing")
    events: list[Event] = []
    rt = runtime(workspace, run_dir)
    try:
        with anyio.fail_after(TIMEOUT):
            r = await rt.run(spec(), "原始任务-B" + "x" * 2000, step_name="写作",
                             on_event=events.append)
    finally:
        rt.close()
    assert r.ok and r.text == "降级后做完了"
    assert texts.HANDOFF_NOTE_DEGRADED.format(why="缺下一步") in r.errors
    assert len(r.retired) == 1 and len(writing_requests(fake)) == 1
    doc = Handoff.load(rt.workbench.notes / "交接-写作.md")
    assert doc is not None and doc.degraded and doc.complete()
    assert "缺下一步" in doc.doing and "原始任务-B" in doc.scene and "x" * 2000 not in doc.scene
    done = handoffs(events)[-1]
    assert done.payload["phase"] == "done" and done.payload["degraded"] is True
    first = fake.last_request()
    assert first.session_id == r.session_id and DEGRADED in first.first_user_text()
    assert manifest(rt)[0]["errors"] == r.errors


async def test_overflow_is_one_degraded_handoff_without_a_writing_round(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """A 400 "prompt is too long": the session cannot write anything, so the degraded document
    is used at once; the step goes on. A later unrelated 500 is a retry, not an overflow."""
    fake.script(reply("开工", tool_use("Bash", {"command": "echo a"}),
                      usage={"input_tokens": 30_000}),
                fault(400, "prompt is too long: 70000 tokens > 60000 maximum"),
                reply("新会话", tool_use("Bash", {"command": "echo b"})),
                fault(500, "model service call failed"),
                "溢出后做完了")
    events: list[Event] = []
    rt = runtime(workspace, run_dir)
    try:
        with anyio.fail_after(TIMEOUT):
            r = await rt.run(spec(), "原始任务-C", step_name="溢出", on_event=events.append)
    finally:
        rt.close()
    assert r.ok, r.error
    assert r.text == "溢出后做完了"
    assert writing_requests(fake) == []  # no writing round
    dones = [ev for ev in handoffs(events) if ev.payload["phase"] == "done"]
    assert len(dones) == 1 and dones[0].payload["degraded"] is True
    assert len(r.retired) == 1 and r.attempts == 2  # the 500 cost one attempt, the handoff none
    assert any("too long" in e.lower() for e in r.errors)
    assert texts.HANDOFF_NOTE_DEGRADED.format(why=texts.HANDOFF_WHY_OVERFLOW) in r.errors
    assert any("500" in e for e in r.errors)
    assert sum("降级" in e for e in r.errors) == 1
    assert calibrated_window() == 30_000  # where this endpoint really overflowed
    doc = Handoff.load(rt.workbench.notes / "交接-溢出.md")
    assert doc is not None and doc.degraded and "原始任务-C" in doc.scene


async def test_an_overflow_recalibrates_a_guessed_window_for_the_successor(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """No explicit window: the name-based guess (1M) is too big for this "gateway", which
    overflows after a 100K turn. The record is kept and the successor already works against
    100K — it hands off properly (a written document) instead of overflowing again."""
    fake.script(reply("开工", tool_use("Bash", {"command": "echo a"}),
                      usage={"input_tokens": 100_000}),
                fault(400, "prompt is too long: 1000100 tokens > 1000000 maximum"),
                reply("新会话", tool_use("Bash", {"command": "echo b"}),
                      usage={"input_tokens": 55_000}),
                "校准后做完了")
    fake.route(WRITING, DOC, name="writing")
    events: list[Event] = []
    rt = runtime(workspace, run_dir, handoff=True)
    try:
        with anyio.fail_after(TIMEOUT):
            r = await rt.run(spec(), "原始任务-G", step_name="校准", on_event=events.append)
    finally:
        rt.close()
    assert r.ok and r.text == "校准后做完了", r.error
    assert calibrated_window() == 100_000
    got = [(ev.payload["phase"], ev.payload["window"], ev.payload.get("degraded"))
           for ev in handoffs(events)]
    assert got == [("done", 100_000, True), ("near", 100_000, None),
                   ("writing", 100_000, None), ("done", 100_000, False)]
    assert len(r.retired) == 2 and sum("降级" in e for e in r.errors) == 1


async def test_words_said_during_the_writing_round_reach_the_successor(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    rt = runtime(workspace, run_dir)

    def writing(req):
        rt.interrupt("顺便把日志改成中文")  # a person speaks while the document is written
        return delay(1.0, DOC)  # ... and the writing takes a moment

    fake.script(reply("开工", tool_use("Bash", {"command": "echo a"}), usage=FULL),
                "接手并改成中文了")
    fake.route(WRITING, writing, name="writing")
    events: list[Event] = []
    try:
        with anyio.fail_after(TIMEOUT):
            r = await rt.run(spec(), "原始任务-H", step_name="插话", on_event=events.append)
    finally:
        rt.close()
    assert r.ok and r.text == "接手并改成中文了" and len(r.retired) == 1
    assert handoffs(events)[-1].payload["degraded"] is False  # the writing was not cut short
    first = fake.last_request()
    assert first.session_id == r.session_id
    assert texts.HANDOFF_BLOCK_HEAD in first.first_user_text()
    assert "顺便把日志改成中文" in first.first_user_text()
    assert len(fake.message_requests()) == 3  # no extra interrupt round


async def test_two_degraded_handoffs_in_a_row_stop_the_step(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    too_long = "prompt is too long: 70000 tokens > 60000 maximum"
    fake.script(fault(400, too_long), fault(400, too_long), "never reached")
    rt = runtime(workspace, run_dir)
    try:
        with anyio.fail_after(TIMEOUT):
            r = await rt.run(spec(), "原始任务-D", step_name="连降")
    finally:
        rt.close()
    assert not r.ok
    assert r.error == texts.HANDOFF_STOP_DEGRADED.format(n=2)
    assert len(r.retired) == 1 and r.session_id not in r.retired
    assert len(fake.message_requests()) == 2 and fake.remaining() == 1
    assert r.attempts == 1  # handoffs never consumed the retry budget
    assert manifest(rt)[0]["error"] == r.error


async def test_runaway_brake(fake: FakeServer, workspace: Path, run_dir: Path,
                             cli_env: dict[str, str]) -> None:
    """Every generation starts over the line: after max_generations the step stops and says
    why (startup floor) instead of burning money."""

    def model(req):
        if WRITING_MARK in req.last_user_text():
            return DOC
        return reply("又满了", tool_use("Bash", {"command": "echo x"}), usage=FULL)

    fake.fallback(model)
    rt = runtime(workspace, run_dir,
                 handoff=HandoffPolicy(window=60_000, headroom=20_000, max_generations=2))
    try:
        with anyio.fail_after(TIMEOUT):
            r = await rt.run(spec(), "原始任务-E", step_name="换代")
    finally:
        rt.close()
    assert not r.ok and len(r.retired) == 2
    gen = texts.HANDOFF_BRAKE_GEN.format(start="45.0K", rounds=1)
    assert r.error == texts.HANDOFF_BRAKE.format(
        n=2, limit=2, gens="; ".join([gen] * 3), at="40K", margin="10K", rounds=3,
        window="60K")
    assert "34K" in r.error and "--no-handoff" in r.error
    assert len(writing_requests(fake)) == 2  # no third document once the brake is hit
    assert len({q.session_id for q in fake.message_requests()}) == 3
    archived = list((rt.workbench.notes / "archive" / "交接").glob("换代-*.md"))
    assert len(archived) == 1  # the first document, moved aside by the second
    assert Handoff.load(rt.workbench.notes / "交接-换代.md").complete()


def working(handoffs: int, *, rounds: int = 4, stall_after: int | None = None):
    """A fake model for a long step: each generation makes ``rounds`` calls (tool use, the
    fake's ~12K context) and crosses the line on the last; after ``handoffs`` handoffs the
    next generation finishes. From generation ``stall_after`` on, every successor is over
    the line on its first call (the startup floor above the line)."""
    calls: dict[str, int] = {}

    def model(req):
        if WRITING_MARK in req.last_user_text():
            return DOC
        sid = req.session_id or ""
        calls[sid] = calls.get(sid, 0) + 1
        generation, n = len(calls), calls[sid]
        if generation > handoffs:
            return "全部做完"
        if stall_after is not None and generation > stall_after:
            return reply("又满了", tool_use("Bash", {"command": "echo x"}), usage=FULL)
        if n < rounds:
            return reply(f"第 {n} 轮", tool_use("Bash", {"command": f"echo {n}"}))
        return reply("到线了", tool_use("Bash", {"command": "echo full"}), usage=FULL)

    return model


async def test_a_productive_step_hands_off_more_than_max_generations_and_finishes(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """A long step on a small window: every generation starts low and works several calls
    before it reaches the line. The brake counts none of them, so eleven handoffs — more
    than the default max_generations=8 — end in an ok step, not a runaway stop."""
    fake.fallback(working(11))
    rt = runtime(workspace, run_dir)
    assert rt.handoff.max_generations == 8
    try:
        with anyio.fail_after(TIMEOUT * 5):
            r = await rt.run(spec(), "原始任务-LONG", step_name="长跑")
    finally:
        rt.close()
    assert r.ok, r.error
    assert r.text == "全部做完"
    assert len(r.retired) == 11 and r.session_id not in r.retired
    assert len(writing_requests(fake)) == 11
    assert r.attempts == 1
    assert manifest(rt)[0]["ok"] is True and len(manifest(rt)[0]["retired"]) == 11


async def test_the_brake_counts_unproductive_generations_in_a_row(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """Two productive generations, then every successor starts over the line: with
    max_generations=2 the step hands off 2 + 2 times and stops, the error naming the
    measured start and calls of the stalled generations."""
    fake.fallback(working(99, stall_after=2))
    rt = runtime(workspace, run_dir,
                 handoff=HandoffPolicy(window=60_000, headroom=20_000, max_generations=2))
    try:
        with anyio.fail_after(TIMEOUT * 2):
            r = await rt.run(spec(), "原始任务-F", step_name="换代")
    finally:
        rt.close()
    assert not r.ok and len(r.retired) == 4
    stalled = texts.HANDOFF_BRAKE_GEN.format(start="45.0K", rounds=1)
    assert r.error == texts.HANDOFF_BRAKE.format(
        n=2, limit=2, gens="; ".join([stalled] * 3), at="40K", margin="10K", rounds=3,
        window="60K")
    assert len(writing_requests(fake)) == 4  # no fifth document once the brake is hit


async def test_near_once_per_generation_and_watermark_resets_per_step(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.script(reply("一", tool_use("Bash", {"command": "echo 1"}), usage=NEAR),
                reply("二", tool_use("Bash", {"command": "echo 2"}),
                      usage={"input_tokens": 35_000}),
                "第一步完", "第二步完")
    events: list[Event] = []
    rt = runtime(workspace, run_dir, workbench=False)
    try:
        with anyio.fail_after(TIMEOUT):
            r1 = await rt.run(spec(), "一", step_name="一", on_event=events.append)
            # step 2 hands off at 30K: step 1's 35K reading must not carry over
            rt.handoff = HandoffPolicy(window=45_000, headroom=15_000)
            r2 = await rt.run(spec(), "二", step_name="二", on_event=events.append)
    finally:
        rt.close()
    assert r1.ok and r2.ok and r1.retired == [] and r2.retired == []
    near = [ev.payload for ev in handoffs(events)]
    assert [(p["phase"], p["step"]) for p in near] == [("near", "一"), ("near", "二")]
    assert near[0]["context"] == 25_000 and near[0]["at"] == 40_000
    assert near[1]["at"] == 30_000 and near[1]["context"] < 30_000
    assert writing_requests(fake) == []


async def test_compact_env_follows_handoff_and_an_explicit_policy(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    probe = "echo compact=${DISABLE_AUTO_COMPACT:-unset}"
    for _ in range(3):
        fake.script(reply("看看", tool_use("Bash", {"command": probe})), "好")
    seen = []
    for handoff, compact in ((True, CompactPolicy(mode="auto")), (False, None), (True, None)):
        rt = runtime(workspace, run_dir, handoff=handoff, workbench=False)
        try:
            with anyio.fail_after(TIMEOUT):
                r = await rt.run(spec(compact=compact), "看环境")
        finally:
            rt.close()
        assert r.ok
        seen.append(fake.last_request().text().split("compact=")[-1].split()[0])
    assert seen == ["unset", "unset", "1"]


async def test_writing_round_is_not_capped_by_the_budget(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """The step's budget would end the writing round after its first call (the fake prices a
    45K prompt well above $0.05); the handoff must still be written."""
    fake.script(reply("开工", tool_use("Bash", {"command": "echo a"}), usage=FULL),
                "接手了")
    fake.route(WRITING, reply(DOC, usage=FULL), name="writing")
    events: list[Event] = []
    rt = runtime(workspace, run_dir)
    try:
        with anyio.fail_after(TIMEOUT):
            r = await rt.run(spec(max_budget_usd=0.05), "原始任务-F", step_name="预算",
                             on_event=events.append)
    finally:
        rt.close()
    done = [ev for ev in handoffs(events) if ev.payload["phase"] == "done"]
    assert len(done) == 1 and done[0].payload["degraded"] is False, r.errors
    assert not any("降级" in e for e in r.errors)


async def test_subagent_context_never_counts(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """A worker's own prompt may be huge; the criterion is the coordinator's."""
    from flower import coordinator, worker

    fake.route(match.subagent(), reply("查一下", tool_use("Bash", {"command": "echo w"}),
                                       usage=FULL),
               reply("REPORT: 做完了", usage=FULL), name="coder")
    fake.route(match.main_agent(),
               reply(tool_use("Agent", {"description": "do it", "prompt": "do it",
                                        "subagent_type": "coder"})),
               "FINAL: 协调完成", name="coordinator")
    spec = coordinator("协调者", "", {"coder": worker("writes", "you do", tools=["Bash"])})
    events: list[Event] = []
    rt = runtime(workspace, run_dir)
    try:
        with anyio.fail_after(TIMEOUT):
            r = await rt.run(spec, "go", on_event=events.append)
    finally:
        rt.close()
    assert r.ok and r.text.endswith("FINAL: 协调完成"), r.error
    assert any(ev.payload.get("subagent") and ev.payload.get("context") == 45_000
               for ev in events)  # the worker really reported over the line
    assert handoffs(events) == [] and r.retired == [] and writing_requests(fake) == []
    assert r.context < 20_000


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, CHILD, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _reap_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def test_kill9_during_the_writing_round_then_rerun(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """SIGKILL to the whole process group while the handoff is being written: no document
    (whole or half) is left to be read, and the rerun resumes the session lineage holds."""
    fake.script(reply("开工", tool_use("Bash", {"command": "echo first"}), usage=FULL))
    fake.route(WRITING, delay(30, DOC), name="writing")  # pending until we kill
    proc = _spawn("handoff", str(workspace), str(run_dir))
    try:
        await anyio.to_thread.run_sync(
            lambda: fake.wait_for(lambda q: WRITING_MARK in q.last_user_text(), timeout=30))
        os.killpg(proc.pid, signal.SIGKILL)
        await anyio.to_thread.run_sync(proc.wait, 10)
    finally:
        _reap_group(proc)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    old = fake.message_requests()[0].session_id
    lineage = json.loads((run_dir / "lineage.json").read_text(encoding="utf-8"))
    assert lineage["steps"] == {"干活": old}  # the successor never started
    notes = run_dir / "workbench" / "notes"
    assert not list(notes.glob("*交接*"))  # nothing half-written, not even a temp file
    assert not (run_dir / "manifest.json").exists()

    fake.script("重跑做完了")
    rt = runtime(workspace, run_dir)
    try:
        with anyio.fail_after(TIMEOUT):
            ctx = await step_flow("开始干活").run(rt)
    finally:
        rt.close()
    assert ctx["干活"] == "重跑做完了" and "_failed_at" not in ctx
    assert ctx["_sessions"]["干活"] == old
    last = fake.last_request()
    assert last.session_id == old and "开工" in last.text()
    (r,) = rt.results
    assert r.ok and r.retired == []

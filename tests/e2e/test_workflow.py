"""Workflow end to end: steps, chaining, gates, continuity — real SDK + CLI against the fake."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest

from flower import AgentSpec, Resilience, Runtime, Step, StepAbort, Workbench, Workflow
from flower.testing import FakeServer, fault, match, reply, tool_use

QUICK = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2)


def agent(name: str = "agent") -> AgentSpec:
    return AgentSpec(name=name, instructions="test agent", allowed_tools=["Bash", "Read"],
                     permission_mode="bypassPermissions")


async def run_flow(wf: Workflow, workspace: Path, run_dir: Path, **kw) -> tuple[dict, Runtime]:
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=kw.pop("resilience", QUICK),
                 **kw)
    try:
        with anyio.fail_after(60):
            ctx = await wf.run(rt)
    finally:
        rt.close()
    return ctx, rt


def manifest_steps(run_dir: Path) -> list[str]:
    return [r["step"] for r in json.loads((run_dir / "manifest.json").read_text())]


async def test_two_steps_prompt_from_ctx(fake: FakeServer, workspace: Path, run_dir: Path,
                                         cli_env: dict[str, str]) -> None:
    fake.route(match.first_user_contains("只回文件里那个词"), "苹果")
    fake.route(match.last_user_contains("「苹果」"), "苹果真好吃")
    wf = Workflow([
        Step("取词", agent(), "读 seed.txt,只回文件里那个词。"),
        Step("造句", agent(), lambda ctx: f"用「{ctx['取词']}」造一个五字短句。"),
    ])
    ctx, _ = await run_flow(wf, workspace, run_dir)
    assert "_failed_at" not in ctx
    assert ctx["取词"] == "苹果" and ctx["造句"] == "苹果真好吃"
    s1, s2 = ctx["_sessions"]["取词"], ctx["_sessions"]["造句"]
    assert s1 != s2  # a fresh session sees only what its prompt carries
    second = fake.message_requests(session_id=s2)[0]
    assert "只回文件里那个词" not in second.text()
    assert ctx["_results"]["造句"].ok and ctx["_woke"] == 1
    assert manifest_steps(run_dir) == ["取词", "造句"]


async def test_resume_from_and_fork(fake: FakeServer, workspace: Path, run_dir: Path,
                                    cli_env: dict[str, str]) -> None:
    fake.script("记住了: 42", "是 42", "另一条路: 43")
    wf = Workflow([
        Step("记", agent(), "记住数字 42"),
        Step("问", agent(), "刚才的数字是?", resume_from="记"),
        Step("岔", agent(), "换个思路", resume_from="记", fork=True),
    ])
    ctx, _ = await run_flow(wf, workspace, run_dir)
    s = ctx["_sessions"]
    assert s["问"] == s["记"]  # resume: the same session
    assert s["岔"] not in (s["记"], None)  # fork: a new session id ...
    forked = fake.message_requests(session_id=s["岔"])[-1]
    assert "记住数字 42" in forked.text() and "换个思路" in forked.text()  # ... with the history
    asked = fake.message_requests(session_id=s["问"])[-1]
    assert "记住了: 42" in asked.text()


async def test_resume_from_a_step_without_session_is_an_error(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    wf = Workflow([
        Step("a", agent(), "x", when=lambda ctx: False),
        Step("b", agent(), "y", resume_from="a"),
    ])
    with pytest.raises(ValueError, match="resume_from='a'"):
        await run_flow(wf, workspace, run_dir)
    assert fake.message_requests() == []


async def test_gate_false_retries_with_labels(fake: FakeServer, workspace: Path, run_dir: Path,
                                              cli_env: dict[str, str]) -> None:
    fake.script("draft", "still draft", "final")
    calls: list[str] = []

    def gate(result, ctx) -> bool:
        calls.append(result.text)
        return result.text == "final"

    wf = Workflow([Step("写", agent(), "write it", retries=3, gate=gate)])
    ctx, _ = await run_flow(wf, workspace, run_dir)
    assert ctx["写"] == "final" and calls == ["draft", "still draft", "final"]
    assert manifest_steps(run_dir) == ["写", "写#retry1", "写#retry2"]
    sids = {m.session_id for m in fake.message_requests()}
    assert len(sids) == 3  # no on_reject: every retry starts over


async def test_on_reject_resumes_same_session_with_feedback(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.script("v1", "v2 with tests")
    wf = Workflow([Step("写", agent(), "write it", retries=2,
                        gate=lambda r, ctx: "tests" in r.text,
                        on_reject=lambda r, ctx: "还缺测试,补上")])
    ctx, _ = await run_flow(wf, workspace, run_dir)
    assert ctx["写"] == "v2 with tests"
    first, second = fake.message_requests()
    assert first.session_id == second.session_id
    assert "还缺测试,补上" in second.last_user_text() and "v1" in second.text()
    assert manifest_steps(run_dir) == ["写", "写#round2"]


async def test_step_abort_stops_retries_at_once(fake: FakeServer, workspace: Path,
                                                run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.script("环境装不了依赖", "never used", "never used")
    calls = []

    def gate(result, ctx):
        calls.append(1)
        raise StepAbort("环境缺依赖,再跑几轮也一样")

    wf = Workflow([Step("装", agent(), "install", retries=2, gate=gate),
                   Step("后", agent(), "after")])
    ctx, _ = await run_flow(wf, workspace, run_dir)
    assert calls == [1] and ctx["_aborted"] == "环境缺依赖,再跑几轮也一样"
    assert ctx["_failed_at"] == "装" and "后" not in ctx["_results"]
    assert len(fake.message_requests()) == 1


@pytest.mark.parametrize("mode", ["stop", "skip", "continue"])
async def test_on_fail_modes(fake: FakeServer, workspace: Path, run_dir: Path,
                             cli_env: dict[str, str], mode: str) -> None:
    fake.route(match.last_user_contains("first"), "partial words")
    fake.route(match.last_user_contains("second"), "second done")
    wf = Workflow([Step("一", agent(), "first", gate=lambda r, c: False, on_fail=mode),
                   Step("二", agent(), "second")])
    ctx, _ = await run_flow(wf, workspace, run_dir)
    assert not ctx["_results"]["一"].ok or ctx["_results"]["一"].text == "partial words"
    if mode == "stop":
        assert ctx["_failed_at"] == "一" and "二" not in ctx and "一" not in ctx
    elif mode == "skip":
        assert "_failed_at" not in ctx and "一" not in ctx and ctx["二"] == "second done"
    else:
        assert ctx["一"] == "partial words" and ctx["二"] == "second done"


async def test_failed_agent_never_reaches_the_gate(fake: FakeServer, workspace: Path,
                                                   run_dir: Path,
                                                   cli_env: dict[str, str]) -> None:
    fake.script(fault(401))
    gate_calls = []
    wf = Workflow([Step("一", agent(), "x", gate=lambda r, c: gate_calls.append(1) or True)])
    ctx, _ = await run_flow(wf, workspace, run_dir)
    assert gate_calls == [] and ctx["_failed_at"] == "一"


async def test_continuity_second_run_resumes_same_session(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.script("第一次的回答", "第二次的回答")

    def flow(**kw) -> Workflow:
        return Workflow([Step("取词", agent(), "读 seed.txt", resume_prompt="接着上次")], **kw)

    ctx1, _ = await run_flow(flow(), workspace, run_dir)
    ctx2, _ = await run_flow(flow(), workspace, run_dir)
    assert ctx1["_woke"] == 1 and ctx2["_woke"] == 2
    sid = ctx1["_sessions"]["取词"]
    assert ctx2["_sessions"]["取词"] == sid
    again = fake.last_request()
    assert again.session_id == sid and "第一次的回答" in again.text()
    assert "接着上次" in again.last_user_text()  # resume_prompt, not the original prompt
    lineage = json.loads((run_dir / "lineage.json").read_text())
    assert lineage == {"workspace": str(workspace.resolve()), "woke": 2, "steps": {"取词": sid}}


async def test_not_continuous_starts_fresh(fake: FakeServer, workspace: Path, run_dir: Path,
                                           cli_env: dict[str, str]) -> None:
    fake.script("a", "b")
    wf = lambda: Workflow([Step("s", agent(), "go")], continuous=False)  # noqa: E731
    ctx1, _ = await run_flow(wf(), workspace, run_dir)
    ctx2, _ = await run_flow(wf(), workspace, run_dir)
    assert ctx1["_sessions"]["s"] != ctx2["_sessions"]["s"]
    assert "_woke" not in ctx2 and not (run_dir / "lineage.json").exists()


@pytest.mark.parametrize("breakage", ["moved", "no-db", "corrupt"])
async def test_broken_continuity_falls_back_to_fresh(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str],
        tmp_path: Path, breakage: str) -> None:
    fake.script("one", "two")
    wf = lambda: Workflow([Step("s", agent(), "go")])  # noqa: E731
    ctx1, _ = await run_flow(wf(), workspace, run_dir)
    old = ctx1["_sessions"]["s"]
    ws2, rd2 = workspace, run_dir
    if breakage == "moved":
        ws2, rd2 = tmp_path / "moved-ws", tmp_path / "moved-runs"
        shutil.copytree(workspace, ws2)
        shutil.copytree(run_dir, rd2)
    elif breakage == "no-db":
        for f in run_dir.glob("sessions.db*"):
            f.unlink()
    else:
        (run_dir / "lineage.json").write_text("{broken")
    ctx2, _ = await run_flow(wf(), ws2, rd2)
    assert "_failed_at" not in ctx2
    assert ctx2["_sessions"]["s"] != old
    # a lost sessions.db still counts the wake; a moved folder or corrupt file starts over
    assert ctx2["_woke"] == (2 if breakage == "no-db" else 1)
    assert fake.last_request().session_id != old
    if breakage == "corrupt":
        (aside,) = run_dir.glob("lineage.json.corrupt-*")
        assert aside.read_text() == "{broken"


async def test_judge_in_gate_never_enters_lineage(fake: FakeServer, workspace: Path,
                                                  run_dir: Path,
                                                  cli_env: dict[str, str]) -> None:
    fake.route(match.last_user_contains("请判定"), "通过")
    fake.script("作品")
    judged: list[str] = []

    async def gate(result, ctx) -> bool:
        verdict = await ctx["_runtime"].run(agent("judge"), "请判定", step_name="干活·判定#1",
                                            on_event=ctx["_on_event"])
        judged.append(verdict.session_id)
        return verdict.text == "通过"

    wf = Workflow([Step("干活", agent(), "做", gate=gate)])
    ctx, _ = await run_flow(wf, workspace, run_dir)
    assert ctx["干活"] == "作品" and judged and judged[0]
    lineage = json.loads((run_dir / "lineage.json").read_text())
    assert lineage["steps"] == {"干活": ctx["_sessions"]["干活"]}
    assert judged[0] not in lineage["steps"].values()


async def test_frozen_step_is_skipped_but_flows_into_ctx(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.route(match.last_user_contains("按需求做"), "done")
    events = []
    wf = Workflow([
        Step("确认需求", agent(), "clarify", frozen=lambda ctx: "## 需求\n已冻结"),
        Step("干活", agent(), lambda ctx: f"按需求做:{ctx['确认需求']}"),
    ])
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    try:
        with anyio.fail_after(60):
            ctx = await wf.run(rt, on_event=events.append)
    finally:
        rt.close()
    assert ctx["确认需求"] == "## 需求\n已冻结" and "确认需求" not in ctx["_results"]
    (req,) = fake.message_requests()
    assert "已冻结" in req.last_user_text()
    steps = [e for e in events if e.kind == "step"]
    assert steps[0].payload["frozen"] and steps[1].payload["index"] == 2


async def test_workbench_index_reaches_the_model(fake: FakeServer, workspace: Path,
                                                 run_dir: Path,
                                                 cli_env: dict[str, str]) -> None:
    wb = Workbench(workspace).ensure()
    (wb.scripts / "build.sh").write_text("#!/bin/sh\n# desc: 一键构建并跑测试\nmake test\n")
    fake.script("ok", "ok again")
    await run_flow(Workflow([Step("干活", agent(), "开始")], workbench=wb), workspace, run_dir,
                   workbench=wb)
    await run_flow(Workflow([Step("干活", agent(), "开始")], workbench=wb), workspace, run_dir,
                   workbench=wb)  # wakes: the same session resumes
    assert "一键构建并跑测试" in wb.index_path.read_text()
    first, again = fake.message_requests()
    # in the first user message (cache-friendly), not in the system prompt ...
    assert "一键构建并跑测试" in first.first_user_text() and "开始" in first.last_user_text()
    assert "一键构建并跑测试" not in first.system_text
    # ... and a resumed session is not sent the block a second time
    assert again.session_id == first.session_id
    assert again.text().count("一键构建并跑测试") == 1


#: a long tool call that says when it has started (a file in the workspace, its cwd); the
#: CLI refuses a bare `sleep N`
SLEEPER = ('python3 -c "import time; open(\'tool-started\', \'w\').close(); '
           'time.sleep(30)"')


async def test_killed_fork_step_resumes_its_own_session_not_a_new_fork(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """A resume_from + fork step stopped mid-way (here: cancelled while its tool runs) keeps
    its progress: the next run continues the forked session recorded in lineage."""
    fake.script("记住了: 42", reply("岔路上走了一半", tool_use("Bash", {"command": SLEEPER})),
                "又记了一次", "岔路走完")

    def flow() -> Workflow:
        return Workflow([
            Step("记", agent(), "记住数字 42"),
            Step("岔", agent(), "换个思路", resume_from="记", fork=True,
                 resume_prompt="接着岔路往下走"),
        ])

    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    forked: list[str] = []
    try:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                async def stop_while_the_tool_runs() -> None:
                    # the tool runs only after the CLI has the model's words; the fork's id is
                    # in lineage by then (a store peek for "an assistant entry" would not do:
                    # a fork's transcript opens with a copy of its source's, answer and all)
                    lineage = run_dir / "lineage.json"
                    while not (workspace / "tool-started").exists() or \
                            "岔" not in json.loads(lineage.read_text())["steps"]:
                        await anyio.sleep(0.05)
                    forked.append(json.loads(lineage.read_text())["steps"]["岔"])
                    tg.cancel_scope.cancel()

                tg.start_soon(stop_while_the_tool_runs)
                await flow().run(rt)
    finally:
        rt.close()
    (sid,) = forked
    first_ids = {r.session_id for r in fake.message_requests()}

    ctx, _ = await run_flow(flow(), workspace, run_dir)
    assert "_failed_at" not in ctx and ctx["岔"] == "岔路走完"
    assert ctx["_sessions"]["岔"] == sid
    last = fake.last_request()
    assert last.session_id == sid  # the very forked session, not a second fork
    assert "岔路上走了一半" in last.text() and "接着岔路往下走" in last.last_user_text()
    assert {r.session_id for r in fake.message_requests()} == first_ids


async def test_second_run_of_the_same_workflow_forgets_the_first_runs_end(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.script("第一次", "第二次")
    verdicts = iter([StepAbort("这次不行"), True])

    def gate(result, ctx):
        verdict = next(verdicts)
        if isinstance(verdict, Exception):
            raise verdict
        return verdict

    wf = Workflow([Step("做", agent(), "do it", gate=gate)])
    ctx1, _ = await run_flow(wf, workspace, run_dir)
    assert ctx1["_failed_at"] == "做" and ctx1["_aborted"] == "这次不行"
    ctx2, _ = await run_flow(wf, workspace, run_dir)
    assert ctx2["做"] == "第二次"
    assert "_failed_at" not in ctx2 and "_aborted" not in ctx2


async def test_async_frozen_is_awaited(fake: FakeServer, workspace: Path, run_dir: Path,
                                       cli_env: dict[str, str]) -> None:
    fake.route(match.last_user_contains("按需求做"), "done")

    async def frozen(ctx):
        await anyio.sleep(0)
        return "## 需求\n异步冻结"

    async def not_yet(ctx):
        return None

    wf = Workflow([
        Step("确认需求", agent(), "clarify", frozen=frozen),
        Step("干活", agent(), lambda ctx: f"按需求做:{ctx['确认需求']}", frozen=not_yet),
    ])
    ctx, _ = await run_flow(wf, workspace, run_dir)
    assert ctx["确认需求"] == "## 需求\n异步冻结" and ctx["干活"] == "done"
    (req,) = fake.message_requests()
    assert "异步冻结" in req.last_user_text()


async def test_fork_step_whose_own_session_is_gone_forks_again(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed before its transcript reached the store, the fork's id is in lineage but the
    CLI cannot resume it: the step forks from its source again instead of failing."""
    fake.script("记住了: 42", "另一条路: 43", "又记了一次", "重新岔出去")
    flow = lambda: Workflow([Step("记", agent(), "记住数字 42"),  # noqa: E731
                             Step("岔", agent(), "换个思路", resume_from="记", fork=True)])
    ctx1, _ = await run_flow(flow(), workspace, run_dir)
    lineage = run_dir / "lineage.json"
    data = json.loads(lineage.read_text())
    ghost = "0b9c1f3e-0000-4000-8000-000000000000"
    data["steps"]["岔"] = ghost
    lineage.write_text(json.dumps(data))
    real = Runtime.has_session
    monkeypatch.setattr(Runtime, "has_session",
                        lambda self, sid: sid == ghost or real(self, sid))  # meta row only
    ctx2, _ = await run_flow(flow(), workspace, run_dir)
    assert "_failed_at" not in ctx2 and ctx2["岔"] == "重新岔出去"
    new = ctx2["_sessions"]["岔"]
    assert new not in (ghost, ctx1["_sessions"]["岔"], ctx2["_sessions"]["记"])
    assert "记住数字 42" in fake.last_request().text()  # forked from 记's history

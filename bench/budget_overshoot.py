"""How far past a spending cap does a step go before it stops?  (run by hand)

    PYTHONPATH=. python bench/budget_overshoot.py [--runs 20] [--budget 1.0]

Each run is one ``Runtime.run`` with ``budget=`` against flower's fake model server: the
model would go on for 60 Bash rounds, every request priced by its scripted ``usage`` (the
bundled CLI charges the fake's model $4 per million input tokens). The per-request cost is
varied across runs (from about a third of the budget down to a twentieth), so the
cap falls at different points inside a request. Nobody answers the cap question, so the
step stops. Printed: the overshoot past the cap as a fraction of one request's cost —
median and max (1.0 would mean a whole extra request). Not asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
from pathlib import Path

import anyio

from flower import AgentSpec, Runtime
from flower.testing import FakeServer, reply, tool_use
from flower.testing.env import offline_env

SPEC = AgentSpec(name="bench", instructions="bench agent", allowed_tools=["Bash"],
                 permission_mode="bypassPermissions")
PRICE_PER_TOKEN = 4e-6  # the CLI's price for the fake's model, input tokens
ROUNDS = 60


async def one(budget: float, per_request: float, root: Path) -> tuple[float, int]:
    """(spent, requests) of one capped step."""
    tokens = max(1, round(per_request / PRICE_PER_TOKEN))
    usage = {"input_tokens": tokens, "output_tokens": 0}
    with FakeServer() as fake:
        for i in range(ROUNDS):
            fake.script(reply(f"r{i}", tool_use("Bash", {"command": f"echo {i}"}),
                              usage=usage))
        env = offline_env(fake.url, home=str(root / "home"), FLOWER_NO_UPDATE="1")
        os.environ.update(env)
        (root / "home" / ".claude").mkdir(parents=True, exist_ok=True)
        rt = Runtime(workspace=root / "ws", run_dir=root / "runs", workbench=False,
                     budget=budget)
        try:
            await rt.run(SPEC, "go")
        finally:
            rt.close()
        return rt.ledger.total_usd, len(fake.message_requests())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=22)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    fractions: list[float] = []
    for n in range(args.runs):
        per = round(args.budget * rng.uniform(0.05, 0.34), 4)
        per = round(per / PRICE_PER_TOKEN) * PRICE_PER_TOKEN  # what the CLI will charge
        with tempfile.TemporaryDirectory(prefix="flower-bench-") as tmp:
            spent, requests = anyio.run(one, args.budget, per, Path(tmp))
        over = max(0.0, spent - args.budget) / per
        fractions.append(over)
        print(f"run {n + 1:2d}: ${per:.4f}/request  {requests:3d} requests  "
              f"spent ${spent:.4f}  overshoot {over:.2f} of a request", flush=True)
    print(f"\novershoot past ${args.budget:.2f}, as a fraction of one request's cost, over "
          f"{len(fractions)} runs: median {statistics.median(fractions):.2f} · "
          f"max {max(fractions):.2f}")


if __name__ == "__main__":
    main()

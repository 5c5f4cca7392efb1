"""How fast does the ``flower`` command start?  (run by hand)

    python bench/cli_startup.py [--n 15] [--runs 50]

* ``flower --help``: wall time of the whole process, median of N (the SDK must not be
  imported for it; ``python -c pass`` is printed beside it as the floor);
* ``flower log`` on a generated folder of 50 runs (6 steps each, the default job's shape)
  whose sessions are in ``sessions.db`` with 30 API rounds apiece — median of N.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flower.core.paths import project_key
from flower.stores.sqlite import SqliteSessionStore

STEPS = ["确认需求", "设定目标", "干活", "干活·判定#1", "干活#round2", "干活·判定#2"]
ROUNDS = 30


def timed(cmd: list[str], cwd: Path, n: int) -> list[float]:
    env = {**os.environ, "COLUMNS": "120", "PYTHONPATH": str(Path(__file__).parents[1])}
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=True)
        out.append(time.perf_counter() - t0)
    return out


def make_runs(ws: Path, runs: int) -> None:
    """``runs`` runs of the default job: manifest rows + a transcript per session."""
    run_dir = ws / "runs"
    run_dir.mkdir(parents=True)
    store = SqliteSessionStore(run_dir / "sessions.db")
    pk = project_key(ws)
    rows = []
    t = time.time() - runs * 600

    async def fill() -> None:
        nonlocal t
        for r in range(runs):
            run_id = time.strftime("%Y%m%d-%H%M%S", time.localtime(t)) + f"-{r:06x}"
            for step in STEPS:
                sid = str(uuid.uuid4())
                entries = []
                for k in range(ROUNDS):
                    entries.append({"type": "user", "uuid": str(uuid.uuid4()),
                                    "message": {"role": "user", "content": f"turn {k}"}})
                    entries.append({"type": "assistant", "uuid": str(uuid.uuid4()),
                                    "message": {"id": f"msg_{sid}_{k}", "role": "assistant",
                                                "content": [{"type": "text", "text": "ok"}],
                                                "usage": {"input_tokens": 12_000 + 900 * k,
                                                          "output_tokens": 200}}})
                await store.append({"project_key": pk, "session_id": sid}, entries)
                rows.append({"step": step, "session_id": sid, "ok": True, "cost_usd": 0.12,
                             "num_turns": ROUNDS, "text": "done", "error": None,
                             "started_at": t, "ended_at": t + 60, "attempts": 1,
                             "errors": [], "resumed": False, "retired": [],
                             "context": 12_000 + 900 * ROUNDS, "duration_s": 60.0,
                             "run": run_id})
                t += 60

    asyncio.run(fill())
    store.close()
    (run_dir / "manifest.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=15)
    ap.add_argument("--runs", type=int, default=50)
    a = ap.parse_args()
    ws = Path(tempfile.mkdtemp(prefix="cli-startup-"))
    make_runs(ws, a.runs)
    py = sys.executable
    floor = timed([py, "-c", "pass"], ws, a.n)
    helped = timed([py, "-m", "flower", "--help"], ws, a.n)
    logged = timed([py, "-m", "flower", "log"], ws, a.n)
    size = (ws / "runs" / "sessions.db").stat().st_size / 1e6
    print(f"python -c pass      median {statistics.median(floor) * 1000:7.0f} ms")
    print(f"flower --help       median {statistics.median(helped) * 1000:7.0f} ms "
          f"(min {min(helped) * 1000:.0f})")
    print(f"flower log          median {statistics.median(logged) * 1000:7.0f} ms "
          f"(min {min(logged) * 1000:.0f}; {a.runs} runs, {a.runs * len(STEPS)} steps, "
          f"sessions.db {size:.1f} MB)")
    print(f"ratio log/help {statistics.median(logged) / statistics.median(helped):.2f}")


if __name__ == "__main__":
    main()

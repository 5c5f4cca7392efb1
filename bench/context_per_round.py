"""How big is the context the model is sent, round after round?  (run by hand)

    python bench/context_per_round.py [--rounds 100]

A scripted coordinator session of N rounds; each round is one resumed ``Runtime.run`` of the
same session (the store's ``load`` is where trim, expiry and pruning act): a glance (``ls``,
``git log --no-show-signature --oneline -3``), or a big ``Read`` of a 24 KB file (a
different one each time), and every 10th round the API fails once first (HTTP 500; the
runtime retries, resuming the session).
The fake reports ``usage.input_tokens`` = request bytes / 4; the bench records the first
request of every round.

Three runs of the same script:
* **off** — ``Runtime(trim=False, ephemeral=False)`` on a bare ``SqliteSessionStore``: the
  transcript as the CLI wrote it;
* **layers** — ``Runtime(trim=True, ephemeral=True)``: at resume, old big results spilled to
  disk, old glances expired, API-error debris pruned (the reference's defaults: the newest 20
  results and 6 glances stay whole);
* **flower** — the same plus a workbench, as ``flower "…"`` runs it: ``spill_guard`` moves a
  result of 4000+ chars to ``spill/`` the moment it arrives, so it never fills the context.
Target: the context at round N is at least 50 % smaller with everything on.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flower import AgentSpec, Resilience, Runtime
from flower.stores.sqlite import SqliteSessionStore
from flower.testing import FakeServer, fault, reply, tool_use
from flower.testing.env import offline_env

SPEC = AgentSpec(name="coordinator", instructions="bench coordinator",
                 allowed_tools=["Bash", "Read"], permission_mode="bypassPermissions")
GLANCES = ["ls", "git log --no-show-signature --oneline -3"]
QUICK = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2)


def workspace(root: Path) -> Path:
    ws = root / "ws"
    ws.mkdir()
    for i in range(40):  # a coordinator reads different files, not one file again and again
        lines = [f"{i}:{n:05d} " + "lorem ipsum dolor sit amet " * 3 for n in range(270)]
        (ws / f"big{i}.txt").write_text("\n".join(lines) + "\n")
    git = ["git", "-C", str(ws), "-c", "user.email=b@b", "-c", "user.name=b"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "bench"], check=True)
    return ws


def script_round(fake: FakeServer, ws: Path, k: int) -> None:
    if k % 10 == 0:
        fake.script(fault(500, "bench: transient failure"))
    if k % 3 == 2:
        call = tool_use("Read", {"file_path": str(ws / f"big{(k // 3) % 40}.txt")})
    else:
        call = tool_use("Bash", {"command": GLANCES[k % 2]})
    fake.script(reply(f"round {k}: look", call), f"round {k}: noted")


async def session(mode: str, rounds: int) -> list[int]:
    on = mode != "off"
    root = Path(tempfile.mkdtemp(prefix=f"ctx-{mode}-"))
    ws, run_dir = workspace(root), root / "runs"
    home = root / "home"
    (home / ".claude").mkdir(parents=True)
    sizes: list[int] = []
    with FakeServer() as fake:
        os.environ.update(offline_env(fake.url, home=str(home)))
        os.environ.update({"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")})
        rt = Runtime(workspace=ws, run_dir=run_dir, trim=on, ephemeral=on, resilience=QUICK,
                     handoff=False, workbench=mode == "flower")
        if not on:
            rt.store = SqliteSessionStore(run_dir / "sessions-raw.db")
        sid = None
        try:
            for k in range(1, rounds + 1):
                script_round(fake, ws, k)
                seen = len(fake.message_requests())
                r = await rt.run(SPEC, f"round {k}: carry on", resume=sid,
                                 step_name=f"round-{k}")
                assert r.ok, r.error
                sid = sid or r.session_id
                assert r.session_id == sid
                sizes.append(len(fake.message_requests()[seen].raw))
        finally:
            rt.close()
    return sizes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=100)
    n = ap.parse_args().rounds
    t0 = time.perf_counter()
    runs = {mode: anyio.run(session, mode, n) for mode in ("off", "layers", "flower")}
    off = runs["off"]
    print(f"context the model is sent (request bytes; tokens ≈ bytes/4), {n} rounds, "
          f"{time.perf_counter() - t0:.0f} s")
    print(f"{'round':>6} {'off':>10} {'layers':>10} {'flower':>10} {'layers/off':>11} "
          f"{'flower/off':>11}")
    for k in sorted({1, 10, n // 4, n // 2, 3 * n // 4, n} - {0}):
        o, la, fl = off[k - 1], runs["layers"][k - 1], runs["flower"][k - 1]
        print(f"{k:>6} {o:>10,} {la:>10,} {fl:>10,} {la / o:>11.2f} {fl / o:>11.2f}")
    for mode in ("layers", "flower"):
        ratio = runs[mode][-1] / off[-1]
        print(f"round {n}, {mode}: {ratio:.2f} of off → {100 * (1 - ratio):.0f} % smaller "
              f"(target ≥ 50 %): {'OK' if ratio <= 0.5 else 'MISSED'}")

if __name__ == "__main__":
    main()

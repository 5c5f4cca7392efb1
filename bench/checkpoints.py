"""What a checkpoint costs (issue 34). Prints figures and ok/missed; asserts nothing.

1. A snapshot of a 10,000-file / 200 MB workspace with 10 changed files: median time, and
   the ratio to its floor — ``git add -A && git commit`` of the same tree and the same
   changes into a scratch repository (a plain, warm git doing the least a snapshot must).
   Targets: ≤ 150 ms and ≤ 1.3× the floor.
2. Disk growth per such snapshot against the changed bytes compressed (zlib, as git does).
3. A step's overhead: ``flower demo`` with checkpoints on against ``FLOWER_CHECKPOINTS=0``
   (medians of ``--demos`` runs each). Target ≤ 1.05×.

    PYTHONPATH=. python bench/checkpoints.py [--files 10000] [--mb 200] [--rounds 7] [--demos 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from flower.core.checkpoints import Checkpoints


def make_tree(root: Path, files: int, mb: int) -> None:
    size = mb * 1024 * 1024 // files
    rnd = os.urandom(size * 2)
    for i in range(files):
        d = root / f"d{i % 100:02d}" / f"e{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        off = (i * 7919) % size
        (d / f"f{i}.dat").write_bytes(rnd[off:off + size])


def change(root: Path, files: int, n: int, round_: int) -> int:
    changed = 0
    for k in range(n):
        i = (round_ * 131 + k * 997) % files
        p = root / f"d{i % 100:02d}" / f"e{i % 7}" / f"f{i}.dat"
        data = bytearray(p.read_bytes())
        data[:64] = os.urandom(64)
        p.write_bytes(bytes(data))
        changed += len(zlib.compress(bytes(data)))
    return changed


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def floor_git(env: dict[str, str], repo: Path) -> None:
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "x", "--no-verify"], cwd=repo, env=env, check=True)


def snapshots(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="flower-cp-bench-"))
    try:
        ws, scratch = tmp / "ws", tmp / "scratch"
        ws.mkdir()
        print(f"making {args.files} files, {args.mb} MB …", flush=True)
        make_tree(ws, args.files, args.mb)
        shutil.copytree(ws, scratch)
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
               "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
               "GIT_COMMITTER_EMAIL": "b@x"}
        subprocess.run(["git", "init", "-q"], cwd=scratch, env=env, check=True)
        floor_git(env, scratch)
        run_dir = tmp / "runs"
        run_dir.mkdir()
        cps = Checkpoints(run_dir, ws)
        cps.take("step-end", "first")
        ours, floor, growth, compressed = [], [], [], []
        for r in range(args.rounds):
            compressed.append(change(ws, args.files, 10, r))
            change(scratch, args.files, 10, r)
            before = du(run_dir / "checkpoints" / "objects")
            t = time.perf_counter()
            cps.take("step-end", f"round {r}")
            ours.append(time.perf_counter() - t)
            growth.append(du(run_dir / "checkpoints" / "objects") - before)
            t = time.perf_counter()
            floor_git(env, scratch)
            floor.append(time.perf_counter() - t)
        o, f = statistics.median(ours), statistics.median(floor)
        print(f"snapshot, 10 of {args.files} files changed: median {o * 1000:.0f} ms "
              f"(target ≤ 150 ms: {'ok' if o <= 0.150 else 'missed'})")
        print(f"floor git add -A && git commit: median {f * 1000:.0f} ms → ratio "
              f"{o / f:.2f} (target ≤ 1.30: {'ok' if o / f <= 1.3 else 'missed'})")
        g, c = statistics.median(growth), statistics.median(compressed)
        print(f"disk growth per snapshot: median {g / 1024:.0f} KiB for "
              f"{c / 1024:.0f} KiB of changed files compressed → {g / c:.2f}×")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def demo_time(env: dict[str, str]) -> float:
    tmp = Path(tempfile.mkdtemp(prefix="flower-cp-demo-"))
    try:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "flower", "demo", "-w", str(tmp / "d")],
                       env=env, check=True, capture_output=True)
        return time.perf_counter() - t
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def step_overhead(args: argparse.Namespace) -> None:
    home = Path(tempfile.mkdtemp(prefix="flower-cp-home-"))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
    base.update({"HOME": str(home), "FLOWER_DEMO_PAUSE": "0", "NO_COLOR": "1"})
    on, off = [], []
    for _ in range(args.demos):  # interleaved, so drift in the machine's load hits both
        on.append(demo_time(base))
        off.append(demo_time({**base, "FLOWER_CHECKPOINTS": "0"}))
    a, b = statistics.median(on), statistics.median(off)
    print(f"flower demo: checkpoints on {a:.2f} s · off {b:.2f} s → {a / b:.3f}× "
          f"(target ≤ 1.05: {'ok' if a / b <= 1.05 else 'missed'})")
    shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--demos", type=int, default=3)
    args = ap.parse_args()
    snapshots(args)
    if args.demos:
        step_overhead(args)


if __name__ == "__main__":
    main()

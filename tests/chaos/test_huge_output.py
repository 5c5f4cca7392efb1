"""A 50 MB ``cat`` of binary, non-UTF-8 bytes inside a step: stored, cut down on resume, no
crash, and the flower process's memory stays bounded.

Bound: the same two commands with a 1 KB file give the baseline peak RSS of the flower
process (SDK, rich, sqlite …). With the 50 MB file the peak may grow by less than 40 MB —
less than the output itself, so flower never held the whole output in memory even once
(a single ``bytes`` copy of it would already add 50 MB).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

from flower.testing import FakeServer, reply, tool_result_text, tool_use

RSS = str(Path(__file__).with_name("rss.py"))
BIG = 50 * 1024 * 1024


def flower(ws: Path, tmp: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    out_file = tmp / "rss.txt"
    env = {**os.environ, "COLUMNS": "120", "FLOWER_RSS_OUT": str(out_file)}
    proc = subprocess.run([sys.executable, RSS, *args], cwd=ws, env=env, capture_output=True,
                          text=True, timeout=120)
    return proc, int(out_file.read_text())


def write_binary(path: Path, size: int) -> None:
    rng = random.Random(7)
    chunk = bytes(rng.randrange(256) for _ in range(1 << 16))  # invalid UTF-8 throughout
    with path.open("wb") as f:
        for _ in range(size // len(chunk)):
            f.write(chunk)
        f.write(chunk[: size % len(chunk)])


def episode(fake: FakeServer, ws: Path, tmp: Path, name: str, size: int) -> tuple[int, int]:
    """``flower -T -W once`` cats the file, then ``--resume`` once; returns both peaks."""
    write_binary(ws / name, size)
    fake.script(reply("看看", tool_use("Bash", {"command": f"cat {name}"})), "看完了")
    first, rss1 = flower(ws, tmp, "-T", "-W", "once", "-t", "Bash", "-p",
                         "bypassPermissions", f"cat {name}")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Traceback" not in first.stdout + first.stderr
    rows = json.loads((ws / "runs" / "manifest.json").read_text())
    sid = rows[-1]["session_id"]
    fake.script("还在")
    again, rss2 = flower(ws, tmp, "-T", "-W", "once", "--resume", sid, "还记得吗")
    assert again.returncode == 0, again.stdout + again.stderr
    assert fake.last_request().session_id == sid
    return rss1, rss2


def test_50mb_binary_tool_output(fake: FakeServer, workspace: Path, tmp_path: Path,
                                 cli_env: dict[str, str]) -> None:
    small = episode(fake, workspace, tmp_path, "small.bin", 1024)
    big = episode(fake, workspace, tmp_path, "big.bin", BIG)
    # what the model saw of it, live and on resume: a bounded piece, never 50 MB
    seen = [r for r in fake.message_requests() if r.last_tool_results()]
    assert seen
    for r in seen:
        for block in r.last_tool_results():
            assert len(tool_result_text(block)) < 8_000  # spill threshold 4000 + a pointer
    assert len(fake.last_request().raw) < 2_000_000  # the resumed conversation stays small
    spilled = list((workspace / "runs" / "workbench" / "spill").glob("*"))
    assert spilled and all(p.stat().st_size < BIG for p in spilled)  # spilled, bounded
    con = sqlite3.connect(workspace / "runs" / "sessions.db")
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("SELECT count(*) FROM entries").fetchone()[0] > 0
    finally:
        con.close()
    grown_kib = max(big) - max(small)
    assert grown_kib < 40 * 1024, f"flower's peak RSS grew by {grown_kib // 1024} MB"

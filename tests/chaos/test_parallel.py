"""8 flower processes at once on one run dir: nobody's rows or sessions get lost.

The fake holds every process's first model turn until all eight have sent one, so the
processes really overlap at the moment they record sessions and steps.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from flower.testing import FakeServer, Request

CHILD = str(Path(__file__).with_name("child.py"))
N = 8


@pytest.mark.parametrize("layout", ["same-workspace", "different-workspaces"])
def test_eight_processes_share_one_run_dir(layout: str, fake: FakeServer, tmp_path: Path,
                                           run_dir: Path, cli_env: dict[str, str]) -> None:
    arrived: set[str] = set()
    lock, all_in = threading.Lock(), threading.Event()

    def barrier(req: Request) -> str:
        tag = req.first_user_text().rsplit("do ", 1)[-1].split("-")[0]
        with lock:
            arrived.add(tag)
            if len(arrived) == N:
                all_in.set()
        all_in.wait(60)  # everyone's first turn is in flight at once
        return f"done {tag}"

    fake.fallback(barrier)
    wss = [tmp_path / ("ws" if layout == "same-workspace" else f"ws{i}") for i in range(N)]
    for ws in wss:
        ws.mkdir(exist_ok=True)
    procs = [subprocess.Popen([sys.executable, CHILD, str(ws), str(run_dir), f"p{i}", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, ws in enumerate(wss)]
    sessions: dict[str, str] = {}
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
        sessions.update(json.loads(out.strip().splitlines()[-1]))
    assert all_in.is_set()
    want = {f"p{i}-1" for i in range(N)}
    assert set(sessions) == want

    rows = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert sorted(r["step"] for r in rows) == sorted(want)  # every row, exactly once
    assert {r["step"]: r["session_id"] for r in rows} == sessions
    assert len({r["run"] for r in rows}) == N and all(r["ok"] for r in rows)

    lineage = json.loads((run_dir / "lineage.json").read_text(encoding="utf-8"))
    if layout == "same-workspace":
        # every process's steps, none lost to another's read-modify-write
        assert lineage["steps"] == sessions
        assert lineage["woke"] == N
    else:
        # lineage.json holds one workspace by format: it is whole and belongs to one of them
        owner = int(Path(lineage["workspace"]).name[2:])
        assert lineage["steps"] == {k: v for k, v in sessions.items()
                                    if k.startswith(f"p{owner}-")}


@pytest.mark.stress
@pytest.mark.parametrize("attempt", range(20))
def test_eight_processes_in_one_workspace_again_and_again(
        attempt: int, fake: FakeServer, tmp_path: Path, run_dir: Path,
        cli_env: dict[str, str]) -> None:
    """The same-workspace case twenty times (``pytest -m stress``, run under load)."""
    test_eight_processes_share_one_run_dir("same-workspace", fake, tmp_path, run_dir, cli_env)

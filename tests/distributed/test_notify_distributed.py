"""``--notify`` on a Temporal run: the submitting terminal, where the person is, runs the
command — for the question a step asks on a worker and for the run's end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from flower.testing import FakeServer, Request, reply, tool_result_text, tool_use

from .test_distributed import _env, flows

RECORD = 'printf "%s|%s|%s|%s\\n" "$FLOWER_EVENT" "$FLOWER_RUN" "$FLOWER_WORKSPACE" ' \
         '"$FLOWER_TEXT" >> "{path}"'


def test_the_submitter_notifies_a_workers_question_and_the_end(
        fake: FakeServer, workspace: Path, run_dir: Path, workers, temporal, queue: str,
        tmp_path: Path) -> None:
    def after_answer(req: Request):
        return reply("好,用" + tool_result_text(req.last_tool_results()[0]))

    fake.script(reply(tool_use("mcp__human__ask", {"question": "用什么颜色?",
                                                    "options": ["红", "蓝"]})), after_answer)
    workers(1)
    flows(workspace)
    got = tmp_path / "got.txt"
    out = subprocess.run([sys.executable, "-m", "flower", "-r", str(run_dir), "--notify",
                          RECORD.format(path=got), "run", "flows.py:asking", "--temporal",
                          temporal.address, "--queue", queue],
                         input="2\n", capture_output=True, text=True, timeout=60, env=_env(),
                         cwd=workspace)
    assert out.returncode == 0, out.stdout + out.stderr
    seen = [line.split("|", 3) for line in got.read_text().splitlines()]
    assert [e for e, *_ in seen] == ["ask", "done"]
    (book,) = (run_dir / "temporal").iterdir()  # named after the Temporal run id
    assert {run for _, run, *_ in seen} == {book.name}
    assert seen[0][2:] == [str(workspace), "用什么颜色?"]
    assert seen[1][3].startswith("总花费 $")

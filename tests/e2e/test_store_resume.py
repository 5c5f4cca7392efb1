"""Resume through PruningSessionStore with the real CLI: what load() rewrites is exactly what
the model sees, and the stored archive stays whole."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from claude_agent_sdk import project_key_for_directory

from flower.stores.prune import PruningSessionStore
from flower.stores.trim import EphemeralPolicy, TrimPolicy
from flower.testing import FakeServer, fault, reply, tool_use
from flower.testing.sdk import collect, options, result


def _bash(cmd: str) -> dict:
    return tool_use("Bash", {"command": cmd, "description": "run"})


async def test_resume_sees_pointer_and_expiry_but_no_synthetic_error(
        fake: FakeServer, workspace: Path, cli_env: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "runs" / "sessions.db"
    store = PruningSessionStore(db, workspace, TrimPolicy(keep_recent=0),
                                ephemeral=EphemeralPolicy(keep_recent=1))
    opts = {"session_store": store, "session_store_flush": "eager"}

    fake.script(reply(_bash("seq 1 1000")), reply(_bash("git branch")), reply(_bash("ls")),
                "looked around")
    msgs, err = await collect("look around", options(workspace, cli_env, **opts))
    assert err is None
    sid = result(msgs).session_id

    fake.script(fault(500))  # CLAUDE_CODE_MAX_RETRIES=0: one synthetic API-error entry
    msgs, err = await collect("continue", options(workspace, cli_env, resume=sid, **opts))
    assert err is not None and result(msgs).is_error

    key = {"project_key": project_key_for_directory(str(workspace)), "session_id": sid}
    rows = [json.loads(p) for (p,) in sqlite3.connect(db).execute(
        "SELECT payload FROM entries WHERE store_key=? ORDER BY seq",
        (f"{key['project_key']}/{sid}",))]
    assert any(e.get("isApiErrorMessage") for e in rows)

    fake.script("resumed fine")
    msgs, err = await collect("carry on", options(workspace, cli_env, resume=sid, **opts))
    assert err is None and result(msgs).result == "resumed fine"

    seen = fake.last_request(sid)
    text = seen.text()
    spill = next((workspace / ".flower" / "spill").glob("*.txt"))  # not the memo beside them
    assert "工具结果已归档" in text and str(spill) in text
    assert spill.read_text().splitlines()[-1] == "1000"
    assert "1\n2\n3\n" not in text  # the big body itself is no longer in context
    assert "[`git branch` 的结果已过期" in text
    assert "API Error" not in text and "fake error 500" not in text
    assert "carry on" in seen.last_user_text()
    # tool_use/tool_result pairs survived intact: every result block is still there
    assert len(seen.tool_results()) == 3
    # the archive is untouched: every row that was there before the resume still is
    after = [json.loads(p) for (p,) in sqlite3.connect(db).execute(
        "SELECT payload FROM entries WHERE store_key=? ORDER BY seq",
        (f"{key['project_key']}/{sid}",))]
    assert after[: len(rows)] == rows
    store.close()

"""The real CLI writing through the PostgreSQL store: a flower process killed with kill -9,
then a second process on a *different* workspace copy resumes the session from PostgreSQL;
``flower store copy`` between SQLite and PostgreSQL; ``flower log`` and the selection rules.

How resume finds the session across workspace paths (flower.stores.url): the SDK loads a
resumed session under the project key of the CURRENT workspace path. When that key does not
hold the session and exactly one other project key in the shared store does, Runtime adopts
it (copies it under the current key; the original stays) before the CLI starts.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import psycopg
import pytest

from flower import AgentSpec, Resilience, Runtime
from flower.core.paths import project_key
from flower.stores.layered import LayeredSessionStore, PruningSessionStore
from flower.stores.postgres import PostgresSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.testing import FakeServer, match, reply, tool_use
from flower.testing.postgres import TempPostgres

CHILD = str(Path(__file__).parents[1] / "e2e" / "child.py")
SLEEPER = 'python3 -c "import time; time.sleep(30)"'
SPEC = AgentSpec(name="worker", instructions="test agent", allowed_tools=["Bash"],
                 permission_mode="bypassPermissions")


def _payloads(url: str, skey: str) -> list[dict]:
    with psycopg.connect(url) as con:
        return [json.loads(p) for (p,) in con.execute(
            "SELECT payload FROM flower.entries WHERE store_key=%s ORDER BY seq", (skey,))]


def _wait(pred, timeout: float = 60.0, what: str = "condition") -> None:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_kill9_then_resume_from_postgres_on_another_workspace_copy(
        pg: TempPostgres, fake: FakeServer, workspace: Path, run_dir: Path,
        cli_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg.createdb("e2e_resume")
    monkeypatch.setenv("FLOWER_STORE_URL", url)  # the child picks the store up from here
    fake.script(reply("先看一眼", tool_use("Bash", {"command": "echo first-look"})),
                reply("再等等", tool_use("Bash", {"command": SLEEPER})))
    fake.route(match.all_of(match.last_user_contains("从另一台机器继续"),
                            match.message_contains("先看一眼")), "接上了,继续干")
    proc = subprocess.Popen([sys.executable, CHILD, "flow", str(workspace), str(run_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    lineage = run_dir / "lineage.json"

    def sid_now() -> str | None:
        try:
            return json.loads(lineage.read_text())["steps"].get("干活")
        except (OSError, ValueError, KeyError):
            return None

    try:
        _wait(lambda: sid_now() is not None and len(fake.message_requests()) >= 2,
              what="lineage written and the second turn under way")
        sid = sid_now()
        key1 = f"{project_key(workspace)}/{sid}"
        _wait(lambda: any(e.get("type") == "assistant" for e in _payloads(url, key1)),
              what="first assistant message mirrored to PostgreSQL")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.communicate()
    assert not (run_dir / "sessions.db").exists()  # nothing went to SQLite
    before = _payloads(url, key1)

    # another machine: a copy of the workspace at another path, a fresh run dir
    ws2 = tmp_path / "elsewhere" / "ws-copy"
    shutil.copytree(workspace, ws2)
    monkeypatch.delenv("FLOWER_STORE_URL")
    rt = Runtime(workspace=ws2, run_dir=tmp_path / "runs2", store=url,
                 resilience=Resilience(base_delay=0.05, probe_interval=0.2))
    try:
        assert isinstance(rt.store, LayeredSessionStore)
        assert project_key(ws2) != project_key(workspace)
        assert rt.has_session(sid)  # adopted under the new key
        with anyio.fail_after(90):
            result = await rt.run(SPEC, "从另一台机器继续", step_name="干活", resume=sid)
    finally:
        rt.close()
    assert result.ok and result.text.strip().endswith("接上了,继续干")
    last = fake.last_request()
    assert last.session_id == sid and "先看一眼" in last.text()
    key2 = f"{project_key(ws2)}/{sid}"
    after = _payloads(url, key2)
    assert after[: len(before)] == before and len(after) > len(before)  # nothing lost
    uuids = [e["uuid"] for e in after if "uuid" in e]
    assert len(uuids) == len(set(uuids))  # nothing doubled
    assert _payloads(url, key1) == before  # the original is untouched


async def test_store_copy_sqlite_to_postgres_and_back(pg: TempPostgres, tmp_path: Path) -> None:
    url = pg.createdb("copy_target")
    db = tmp_path / "runs" / "sessions.db"
    src = SqliteSessionStore(db)
    main = {"project_key": "-home-u-p", "session_id": "s1"}
    sub = {**main, "subpath": "subagents/agent-1"}
    entries = [{"type": "user", "uuid": f"u{i}", "n": i, "t": "✓ \ud83d" if i == 3 else "x"}
               for i in range(2500)] + [{"type": "tag"}, {"type": "tag"}]
    await src.append(main, entries)
    await src.append(sub, [{"type": "agent_metadata"}, {"type": "user", "uuid": "z"}])
    await src.append({"project_key": "-other", "session_id": "s2"}, [{"type": "x"}])
    src.close()

    def flower(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "flower", *args], capture_output=True,
                              text=True, timeout=120)

    out = flower("store", "copy", str(db), url)
    assert out.returncode == 0, out.stderr + out.stdout
    assert "2 个会话" in out.stdout and "3 份记录" in out.stdout and "逐条核对一致" in out.stdout
    pgs = PostgresSessionStore(url)
    assert await pgs.load(main) == entries and await pgs.load(sub) == [
        {"type": "agent_metadata"}, {"type": "user", "uuid": "z"}]
    assert [s["session_id"] for s in await pgs.list_session_summaries("-home-u-p")] == ["s1"]
    again = flower("store", "copy", str(db), url)  # idempotent: nothing doubled
    assert again.returncode == 0 and await pgs.load(main) == entries
    back = tmp_path / "back.db"
    out = flower("--store", "ignored-by-copy", "store", "copy", url, str(back))
    assert out.returncode == 0, out.stderr + out.stdout
    restored = SqliteSessionStore(back)
    assert await restored.load(main) == entries
    # a DST transcript that differs is refused, not merged
    await restored.append({"project_key": "-other", "session_id": "s2"}, [{"type": "mine"}])
    restored.close()
    bad = flower("store", "copy", url, str(back))
    assert bad.returncode == 1 and "不一致" in bad.stdout and "\n" not in bad.stdout.strip()
    pgs.close()


def test_cli_bad_store_url_is_one_line(pg: TempPostgres, tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flower", "--store", "postgresql://u:pw@127.0.0.1:1/x",
         "store", "copy", "postgresql://u:pw@127.0.0.1:1/x", str(tmp_path / "d.db")],
        capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1 and "连不上会话库" in lines[0] and "pw" not in lines[0]


def test_selection_rules(pg: TempPostgres, tmp_path: Path, home: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg.createdb("select_rules")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000000000")
    monkeypatch.setenv("FLOWER_STORE_URL", "-")  # recorded, so teardown restores "unset"
    monkeypatch.delenv("FLOWER_STORE_URL")
    monkeypatch.chdir(tmp_path)
    ws, runs = tmp_path / "ws", tmp_path / "runs"
    rt = Runtime(workspace=ws, run_dir=runs)
    assert isinstance(rt.store, PruningSessionStore)  # the default is unchanged
    rt.close()
    (tmp_path / ".env").write_text(f"FLOWER_STORE_URL={url}\n")  # from .env
    rt = Runtime(workspace=ws, run_dir=runs)
    assert isinstance(rt.store, LayeredSessionStore)
    assert isinstance(rt.store.backend, PostgresSessionStore)
    assert rt.store.policy is rt.trim_policy
    rt.close()
    assert "FLOWER_STORE_URL" not in os.environ  # read from .env, never exported
    (tmp_path / ".env").unlink()
    mine = PostgresSessionStore(url, schema="own")
    rt = Runtime(workspace=ws, run_dir=runs, store=mine)  # an object: wrapped in the layers
    assert rt.store.backend is mine
    rt.close()
    with pytest.raises(RuntimeError, match="连不上会话库"):
        Runtime(workspace=ws, run_dir=runs, store="postgresql://x@127.0.0.1:1/db")


def test_flower_log_reads_the_postgres_store(pg: TempPostgres, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg.createdb("log_reads")
    ws, runs = tmp_path / "ws", tmp_path / "runs"
    ws.mkdir()
    runs.mkdir()
    sid = "5b0c7f34-0000-4000-8000-000000000001"
    store = PostgresSessionStore(url)
    usage = {"input_tokens": 1000, "cache_read_input_tokens": 500,
             "cache_creation_input_tokens": 0, "output_tokens": 5}
    anyio.run(store.append, {"project_key": project_key(ws), "session_id": sid}, [
        {"type": "user", "uuid": "a", "message": {"content": "go"}},
        {"type": "assistant", "uuid": "b", "message": {"id": "m1", "model": "claude",
                                                       "content": [], "usage": usage}}])
    store.close()
    (runs / "manifest.json").write_text(json.dumps([{
        "step": "干活", "ok": True, "session_id": sid, "cost_usd": 0.1, "attempts": 1,
        "run": "r1", "duration_s": 1.0}]))
    (runs / "lineage.json").write_text(json.dumps({"workspace": str(ws), "steps": {}}))
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("FLOWER_STORE_URL", None)
    out = subprocess.run([sys.executable, "-m", "flower", "--store", url, "log", str(runs),
                          "--json"], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["sessions"][sid] == [1500], doc

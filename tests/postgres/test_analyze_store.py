"""tools/analyze_run.py --store URL: the per-session detail (turns, tool calls, subagents,
resume rewrites, top tool results) read from a PostgreSQL store is the report of the same
run read from its sessions.db — the run's sessions moved with ``flower store copy``'s
helper, the analysed run folder holding no sessions.db at all."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from flower import runlog
from flower.core.paths import project_key
from flower.stores.postgres import PostgresSessionStore
from flower.stores.readers import PgReader
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.transfer import copy_sessions, key_of
from flower.testing.postgres import TempPostgres

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "analyze_run.py"
FIXTURES = ROOT / "tests" / "stores" / "fixtures"
BULKY = "b0b0b0b0-1111-4222-8333-444455556666"
ASIDE = "a51de000-1111-4222-8333-444455556666"
FOREIGN = "f0f0f0f0-1111-4222-8333-444455556666"


def _bash_session(sid: str, rounds: int = 24, odd: bool = False) -> list[dict[str, Any]]:
    """A main transcript of Bash calls: 6 ``ls`` look-ups, then bulky results (one of them
    holding a lone surrogate when ``odd``: stored with ``\\uXXXX`` escapes)."""
    entries: list[dict[str, Any]] = []

    def add(entry: dict[str, Any]) -> None:
        n = len(entries) + 1
        entry.update(uuid=f"{sid[:8]}-{n:05d}", sessionId=sid,
                     parentUuid=entries[-1]["uuid"] if entries else None,
                     timestamp=f"2026-01-01T01:{n // 60:02d}:{n % 60:02d}.000Z")
        entries.append(entry)

    add({"type": "user", "message": {"role": "user", "content": "go"}})
    for k in range(rounds):
        cmd, body = ("ls", f"file{k}.txt") if k < 6 else (f"seq {k}", "y" * (2500 + 7 * k))
        if odd and k == rounds - 1:
            body = "半个表情 \ud83d " + "z" * 9000
        tid = f"toolu_{sid[:4]}_{k:04d}"
        add({"type": "assistant", "message": {
            "id": f"msg_{sid[:4]}_{k}", "role": "assistant", "model": "claude-opus-5-5",
            "content": [{"type": "tool_use", "id": tid, "name": "Bash",
                         "input": {"command": cmd}}],
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 10_000 + 800 * k,
                      "cache_creation_input_tokens": 300, "output_tokens": 25,
                      "output_tokens_details": {"thinking_tokens": 5}}}})
        add({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": body, "is_error": False}]}})
    return entries


def _fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


@pytest.fixture
def recorded(tmp_path: Path) -> dict[str, Any]:
    """A recorded SQLite run: main sessions under other project keys (recorded elsewhere),
    one with a subagent, a bulky one with a lone surrogate, an aside without a manifest row."""
    ws = tmp_path / "ws"
    ws.mkdir()
    run_dir = tmp_path / "sqlite-run" / "runs"
    run_dir.mkdir(parents=True)
    pk = project_key(ws)
    outage, denied, sub = _fixture("outage"), _fixture("denied"), _fixture("subagent")

    async def fill() -> None:
        store = SqliteSessionStore(run_dir / runlog.DB_NAME)
        try:
            for doc in (outage, denied, sub):
                key = {"project_key": doc["project_key"], "session_id": doc["session_id"]}
                await store.append(key, doc["main"])
                for subpath, entries in sorted(doc["subkeys"].items()):
                    await store.append({**key, "subpath": subpath}, entries)
            await store.append({"project_key": pk, "session_id": BULKY},
                               _bash_session(BULKY, odd=True))
            await store.append({"project_key": pk, "session_id": ASIDE},
                               _bash_session(ASIDE, rounds=8))
        finally:
            store.close()

    anyio.run(fill)
    rows = [
        {"step": "派人", "session_id": sub["session_id"], "ok": True, "cost_usd": 0.4,
         "num_turns": 3, "attempts": 1, "run": "r1", "duration_s": 30.0, "context": 0},
        {"step": "修网络", "session_id": outage["session_id"], "ok": True, "cost_usd": 1.5,
         "num_turns": 4, "attempts": 3, "resumed": True, "run": "r1", "duration_s": 3600.0,
         "retired": [denied["session_id"]], "context": 0,
         "errors": ["API Error: Can't reach the API server (ECONNREFUSED)",
                    "交接降级(上下文已经装不下)"]},
        {"step": "整理", "session_id": BULKY, "ok": False, "cost_usd": 0.25, "num_turns": 24,
         "error": "max_turns reached", "attempts": 1, "run": "r2", "duration_s": 60.0,
         "context": 0, "errors": ["max_turns reached"]},
    ]
    (run_dir / "manifest.json").write_text(json.dumps(rows, ensure_ascii=False))
    (run_dir / "lineage.json").write_text(json.dumps({"workspace": str(ws), "steps": {}}))
    return {"ws": ws, "pk": pk, "run_dir": run_dir, "outage": outage["session_id"],
            "denied": denied["session_id"], "sub": sub["session_id"]}


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FLOWER_STORE_URL", "FLOWER_ENV")}
    env.update({"COLUMNS": "200", "NO_COLOR": "1", "HOME": str(tmp_path),
                "PYTHONPATH": str(ROOT)})
    return env


def _tool(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=env["HOME"])


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _body(report: str) -> str:
    """The report after its title lines (which name the run folder)."""
    return report[report.index("==== "):]


def test_analyze_reads_the_postgres_store(pg: TempPostgres, tmp_path: Path,
                                          recorded: dict[str, Any]) -> None:
    url = pg.createdb("analyze_reads")
    env = _env(tmp_path)
    src = recorded["run_dir"]
    want = _tool(env, str(src), "--json")
    assert want.returncode == 0, want.stderr
    want_doc = json.loads(want.stdout)
    want_text = _tool(env, str(src))
    assert want_text.returncode == 0, want_text.stderr

    result = copy_sessions(str(src / runlog.DB_NAME), url)  # what `flower store copy` does
    assert result.sessions == 5 and result.transcripts == 6
    # a session of another project in the shared store, in no manifest: not this run's
    store = PostgresSessionStore(url)
    anyio.run(store.append, {"project_key": "-elsewhere", "session_id": FOREIGN},
              _bash_session(FOREIGN, rounds=7))
    store.close()

    run_dir = tmp_path / "pg-run" / "runs"
    run_dir.mkdir(parents=True)
    for name in ("manifest.json", "lineage.json"):
        shutil.copy(src / name, run_dir / name)
    before = _snapshot(run_dir.parent)
    got = _tool(env, str(run_dir), "--store", url, "--json")
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)

    assert doc["db"] == "ok" and want_doc["db"] == "ok"
    # the per-session sections are the sessions.db report's, field for field
    sessions = {s["session_id"]: s for s in doc["sessions"]}
    assert list(sessions) == [recorded["sub"], recorded["denied"], recorded["outage"], BULKY,
                              ASIDE]
    assert doc["sessions"] == want_doc["sessions"]
    assert doc["subagents"] == want_doc["subagents"] and len(doc["subagents"]) == 1
    assert doc["top_results"] == want_doc["top_results"]
    assert doc["steps"] == want_doc["steps"]
    assert doc["context"] == want_doc["context"] and doc["cache"] == want_doc["cache"]
    assert doc["totals"] == want_doc["totals"]
    assert {k: v for k, v in doc.items() if k != "run_dir"} == \
        {k: v for k, v in want_doc.items() if k != "run_dir"}
    # the content is really there (not two equally empty reports)
    bulky = sessions[BULKY]
    assert bulky["turns"] == 24 and bulky["tool_calls"] == {"Bash": 24}
    assert bulky["entries"] == 49 and bulky["resume"] is not None
    top = doc["top_results"][0]
    assert top["session_id"] == BULKY and top["preview"].startswith("半个表情 \ufffd")
    outage = sessions[recorded["outage"]]
    assert outage["api_errors"] >= 2 and outage["resume"]["pruned"] >= 2
    assert sessions[recorded["denied"]]["denials"] == 3
    assert sessions[recorded["sub"]]["subagents"] == [doc["subagents"][0]["agent"]]
    assert FOREIGN not in sessions  # another project's session in the shared store

    text = _tool(env, str(run_dir), "--store", url)
    assert text.returncode == 0, text.stderr
    assert _body(text.stdout) == _body(want_text.stdout)
    assert _snapshot(run_dir.parent) == before  # read-only: no sessions.db, not one byte
    assert not (run_dir / runlog.DB_NAME).exists()


def test_flower_store_url_and_the_api(pg: TempPostgres, tmp_path: Path,
                                      recorded: dict[str, Any],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """FLOWER_STORE_URL alone selects the store; load_details matches flower log's rounds."""
    url = pg.createdb("analyze_env")
    src = recorded["run_dir"]
    copy_sessions(str(src / runlog.DB_NAME), url)
    run_dir = tmp_path / "pg-run" / "runs"
    run_dir.mkdir(parents=True)
    shutil.copy(src / "manifest.json", run_dir / "manifest.json")
    shutil.copy(src / "lineage.json", run_dir / "lineage.json")
    monkeypatch.setenv("FLOWER_STORE_URL", url)
    monkeypatch.chdir(tmp_path)
    log = runlog.load_runs(run_dir)
    assert log.db == "ok"
    details = runlog.load_details(log, resume=False)
    monkeypatch.delenv("FLOWER_STORE_URL")
    want = runlog.load_details(runlog.load_runs(src), resume=False)
    assert list(details) == list(want)
    for sid, d in details.items():
        assert d.main == want[sid].main and d.subagents == want[sid].subagents
    for sid, rounds in log.sessions.items():  # flower log's rounds are the same rounds
        assert [r.context for r in details[sid].main.rounds] == [r.context for r in rounds]


def test_empty_or_unreachable_store_is_read_only(pg: TempPostgres, tmp_path: Path,
                                                 recorded: dict[str, Any]) -> None:
    """A database without the flower schema: no sessions, and nothing is created."""
    url = pg.createdb("analyze_empty")
    env = _env(tmp_path)
    run_dir = tmp_path / "pg-run" / "runs"
    run_dir.mkdir(parents=True)
    shutil.copy(recorded["run_dir"] / "manifest.json", run_dir / "manifest.json")
    out = _tool(env, str(run_dir), "--store", url, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["db"] == "missing" and doc["sessions"] == [] and len(doc["steps"]) == 3
    with psycopg.connect(url) as con:
        assert con.execute("SELECT to_regnamespace('flower')").fetchone() == (None,)
    bad = _tool(env, str(run_dir), "--store", "postgresql://u:pw@127.0.0.1:1/x", "--json")
    assert bad.returncode == 0, bad.stderr
    assert json.loads(bad.stdout)["db"] == "unreadable"
    # no manifest, no sessions.db: the store alone still names the sessions of this workspace
    bare = tmp_path / "bare" / "runs"
    bare.mkdir(parents=True)
    (bare / "lineage.json").write_text(json.dumps({"workspace": str(recorded["ws"])}))
    copy_sessions(str(recorded["run_dir"] / runlog.DB_NAME), url)
    doc = json.loads(_tool(env, str(bare), "--store", url, "--json").stdout)
    assert doc["db"] == "ok" and doc["steps"] == []
    assert {s["session_id"] for s in doc["sessions"]} == {BULKY, ASIDE}  # this project's


def _flower(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flower", *args], capture_output=True,
                          text=True, timeout=120, env=env, cwd=env["HOME"])


@pytest.mark.parametrize("schema", ["other", 'Odd "Name"'])
def test_a_store_in_another_schema(pg: TempPostgres, tmp_path: Path, recorded: dict[str, Any],
                                   schema: str) -> None:
    """A store made with ``PostgresSessionStore(schema=…)`` is read by ``flower log`` and
    ``flower analyze`` (and the wake probe's reader) in that schema — any name, quoted —
    and never in ``flower``; the default schema stays absent (nothing is created)."""
    url = pg.createdb(f"analyze_schema_{len(schema)}")
    env = _env(tmp_path)
    src = recorded["run_dir"]
    sqlite = SqliteSessionStore(src / runlog.DB_NAME)
    store = PostgresSessionStore(url, schema=schema)
    try:
        for skey in sqlite.transcripts():
            key = key_of(skey)
            anyio.run(store.append, key, sqlite.read_entries(key))
    finally:
        sqlite.close()
        store.close()
    run_dir = tmp_path / "pg-run" / "runs"
    run_dir.mkdir(parents=True)
    for name in ("manifest.json", "lineage.json"):
        shutil.copy(src / name, run_dir / name)

    want_log = json.loads(_flower(env, "log", str(src), "--json").stdout)
    got_log = _flower(env, "--store", url, "log", str(run_dir), "--json", "--schema", schema)
    assert got_log.returncode == 0, got_log.stderr
    doc = json.loads(got_log.stdout)
    assert doc["db"] == "ok" and doc["sessions"] == want_log["sessions"]
    assert doc["runs"] == want_log["runs"] and any(r["rounds"] for r in doc["runs"][0]["rows"])

    want = json.loads(_tool(env, str(src), "--json").stdout)
    for got in (_flower(env, "analyze", str(run_dir), "--store", url, "--schema", schema,
                        "--json"),
                _tool(env, str(run_dir), "--store", url, "--schema", schema, "--json")):
        assert got.returncode == 0, got.stderr
        report = json.loads(got.stdout)
        assert report["sessions"] and report["db"] == "ok"
        assert {k: v for k, v in report.items() if k != "run_dir"} == \
            {k: v for k, v in want.items() if k != "run_dir"}

    # the default schema holds nothing here: the same store is not found there
    plain = json.loads(_flower(env, "analyze", str(run_dir), "--store", url, "--json").stdout)
    assert plain["db"] == "missing" and plain["sessions"] == []
    with psycopg.connect(url) as con:
        assert con.execute("SELECT to_regnamespace('flower')").fetchone() == (None,)

    status, reader = PgReader.open(url, schema=schema)
    assert status == "ok" and reader is not None
    try:
        assert reader.has(f"{recorded['pk']}/{BULKY}")
        assert reader.last_context(f"{recorded['pk']}/{BULKY}", scan=500) == 10_000 + 800 * 23 \
            + 300 + 10
        assert reader.candidates(recorded["pk"], recorded["sub"])[1:] == \
            [k for k, _ in reader.owners(recorded["sub"])]
    finally:
        reader.close()

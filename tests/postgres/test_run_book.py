"""The run book in PostgreSQL: lineage + manifest rows beside the transcripts, so a second
machine wakes a run it never saw (``flower --store URL --run NAME`` in an empty folder).

The files in the run dir stay what they were; the tables are a mirror keyed by run name.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from flower import texts
from flower.core.lineage import FILENAME, Lineage
from flower.core.manifest import Manifest
from flower.stores.book import RUN_ENV, remote_book, run_name
from flower.stores.layered import PruningSessionStore
from flower.stores.postgres import SCHEMA_VERSION, PostgresSessionStore
from flower.testing import FakeServer, match, reply
from flower.testing.postgres import TempPostgres
from flower.workflow.wake import wake_banner, wake_state

SID = "5b0c7f34-0000-4000-8000-00000000000a"
FLOWS = '''
from flower import AgentSpec, Step, Workflow

SPEC = AgentSpec(name="worker", instructions="test agent", allowed_tools=[],
                 permission_mode="bypassPermissions")
main = Workflow([Step("干活", SPEC, "开始干活")])
'''


def test_schema_v1_is_migrated_to_v2(pg: TempPostgres, schema: str) -> None:
    store = PostgresSessionStore(pg.url, schema=schema)
    store.close()
    with psycopg.connect(pg.url, autocommit=True) as con:  # make it look like a v1 schema
        con.execute(f'DROP TABLE "{schema}".lineage, "{schema}".manifest')
        con.execute(f'UPDATE "{schema}".version SET version = 1')
    store = PostgresSessionStore(pg.url, schema=schema)
    try:
        with psycopg.connect(pg.url) as con:
            assert con.execute(f'SELECT version FROM "{schema}".version').fetchall() == [
                (SCHEMA_VERSION,)] == [(2,)]
            for table in ("lineage", "manifest"):
                assert con.execute("SELECT to_regclass(%s)", (f"{schema}.{table}",)
                                   ).fetchone()[0] is not None
        book = store.book("r")
        book.put_lineage({"workspace": "/x", "woke": 1, "steps": {"a": SID}})
        assert book.flush(10)
        assert book.lineage() == {"workspace": "/x", "woke": 1, "steps": {"a": SID}}
    finally:
        store.close()


def test_sqlite_runs_have_no_book(tmp_path: Path) -> None:
    store = PruningSessionStore(tmp_path / "s.db", workspace=tmp_path)
    try:
        assert remote_book(store, "x") is None
    finally:
        store.close()


def test_run_name_flag_env_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RUN_ENV, raising=False)
    assert run_name(tmp_path / "my-proj") == "my-proj"
    monkeypatch.setenv(RUN_ENV, "from-env")
    assert run_name(tmp_path / "my-proj") == "from-env"
    assert run_name(tmp_path / "my-proj", "given") == "given"


def test_lineage_and_manifest_mirror_and_load(pg: TempPostgres, schema: str,
                                              tmp_path: Path) -> None:
    store = PostgresSessionStore(pg.url, schema=schema)
    try:
        book = store.book("demo")
        a_ws, a_runs = tmp_path / "a", tmp_path / "a" / "runs"
        lin = Lineage.open(a_runs, a_ws, book=book)
        assert (lin.steps, lin.woke, lin.remote) == ({}, 0, False)
        lin.bump()
        lin.remember("干活", SID)
        man = Manifest(a_runs / "manifest.json", "run-a", book=book,
                       scrub=lambda t: t.replace("sk-secret", "sk-***"))
        assert man.write([{"step": "干活", "session_id": SID, "text": "key sk-secret ✓"}])
        assert book.flush(10)
        assert book.lineage() == {"workspace": str(a_ws.resolve()), "woke": 1,
                                  "steps": {"干活": SID}}
        assert book.manifest() == [{"step": "干活", "session_id": SID,
                                    "text": "key sk-*** ✓", "run": "run-a"}]
        # the file is untouched in format: exactly what it always was
        assert json.loads((a_runs / FILENAME).read_text()) == {
            "workspace": str(a_ws.resolve()), "woke": 1, "steps": {"干活": SID}}

        # an empty folder elsewhere: no lineage.json → the book's (workspace guard relaxed)
        b_ws, b_runs = tmp_path / "b", tmp_path / "b" / "runs"
        seen: list[str] = []
        lin_b = Lineage.open(b_runs, b_ws, book=book, has_session=lambda s: not seen.append(s))
        assert (lin_b.steps, lin_b.woke, lin_b.remote) == ({"干活": SID}, 1, True)
        assert seen == [SID]  # still checked against the store (which adopts)
        assert lin_b.bump() == 2
        assert book.flush(10)
        assert book.lineage()["workspace"] == str(b_ws.resolve())
        # a local file, when there is one, is authoritative
        lin_a = Lineage.open(a_runs, a_ws, book=book)
        assert (lin_a.woke, lin_a.remote) == (1, False)
        # without a book, an empty folder stays empty (SQLite behaviour unchanged)
        assert Lineage.open(tmp_path / "c" / "runs", tmp_path / "c").steps == {}
        # --new: archiving resets the store's copy too
        lin_a.archive(tmp_path / "archive")
        assert book.flush(10)
        assert book.lineage()["steps"] == {} and book.lineage()["woke"] == 0
    finally:
        store.close()


def test_a_failing_book_never_breaks_lineage_or_manifest(tmp_path: Path) -> None:
    class Broken:
        name = "x"

        def lineage(self) -> None:
            raise OSError("down")

        def put_lineage(self, doc: dict) -> None:
            raise OSError("down")

        def put_manifest(self, run_id: str, rows: list) -> None:
            raise OSError("down")

    notes: list[str] = []
    lin = Lineage.open(tmp_path / "runs", tmp_path, book=Broken())
    assert lin.steps == {} and lin.bump() == 1
    lin.remember("s", SID)
    assert json.loads((tmp_path / "runs" / FILENAME).read_text())["steps"] == {"s": SID}
    man = Manifest(tmp_path / "runs" / "manifest.json", "r", book=Broken(), notice=notes.append)
    assert man.write([{"step": "s"}])
    assert json.loads((tmp_path / "runs" / "manifest.json").read_text()) == [
        {"step": "s", "run": "r"}]
    assert notes and "down" in notes[0]


def _flower(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120"}
    env.pop("FLOWER_STORE_URL", None)
    env.pop(RUN_ENV, None)
    return subprocess.run([sys.executable, "-m", "flower", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_second_machine_wakes_the_run_from_the_store(
        pg: TempPostgres, fake: FakeServer, cli_env: dict[str, str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg.createdb("wake_remote")
    (tmp_path / "flows.py").write_text(FLOWS)
    a, b = tmp_path / "machine-a" / "proj", tmp_path / "machine-b" / "elsewhere"
    a.mkdir(parents=True)
    fake.route(match.all_of(match.last_user_contains("开始干活"),
                            match.message_contains("A 先干了一半")), "B 接着干完了")
    fake.script(reply("A 先干了一半"))

    out = _flower(tmp_path, "--store", url, "--run", "demo", "-w", str(a), "run",
                  "flows.py:main")
    assert out.returncode == 0, out.stdout + out.stderr
    sid = json.loads((a / "runs" / FILENAME).read_text())["steps"]["干活"]
    assert not (a / "runs" / "sessions.db").exists()

    # machine B: an empty folder, the same store and run name
    b.mkdir(parents=True)
    monkeypatch.delenv("FLOWER_STORE_URL", raising=False)
    state = wake_state(b, run_dir=b / "runs", store=url, run="demo")
    assert state["waking"] and state["woke"] == 1 and state["steps"] == {"干活": sid}
    assert state["live_steps"] == {"干活": sid} and state["remote"] == "demo"
    assert texts.WAKE_REMOTE.format(name="demo") in wake_banner(state)
    assert not (b / "runs").exists()  # the probe wrote nothing
    assert wake_state(b, run_dir=b / "runs", store=url, run="other")["waking"] is False

    out = _flower(tmp_path, "--store", url, "--run", "demo", "-w", str(b), "run",
                  "flows.py:main")
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"== 干活 =+  1/1  <- 接上次 · 第 2 次唤醒", out.stdout), out.stdout
    assert "B 接着干完了" in out.stdout
    last = fake.last_request()
    assert last.session_id == sid and "A 先干了一半" in last.text()  # the same session
    lineage_b = json.loads((b / "runs" / FILENAME).read_text())
    assert lineage_b == {"workspace": str(b.resolve()), "woke": 2, "steps": {"干活": sid}}

    store = PostgresSessionStore(url)
    try:
        book = store.book("demo")
        assert book.lineage() == lineage_b
        rows = book.manifest()
        assert len({r["run"] for r in rows}) == 2  # one process on each machine
        assert [r["session_id"] for r in rows] == [sid, sid]
        assert sorted(r["text"] for r in rows) == ["A 先干了一半", "B 接着干完了"]
        assert all(r["ok"] for r in rows)
    finally:
        store.close()


def test_run_is_a_global_flag_anywhere() -> None:
    from flower.cli.app import lift_globals, route

    assert lift_globals(["run", "f.py:m", "--run", "demo"]) == (["--run", "demo"],
                                                                 ["run", "f.py:m"])
    assert route(["--run=demo", "写个脚本"]) == ["--run=demo", "go", "写个脚本"]

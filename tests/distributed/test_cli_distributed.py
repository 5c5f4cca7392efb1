"""The Temporal side of the command line without a server: cheap imports, the new commands,
one readable line when the server is unreachable, ctx and events as JSON."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

from flower import texts
from flower.cli.app import COMMANDS, main, route
from flower.core.events import Event
from flower.distributed.codec import dump_ctx, event_from_json, event_to_json, load_ctx

from .conftest import Worker


def test_import_flower_does_not_import_temporalio() -> None:
    out = subprocess.run([sys.executable, "-X", "importtime", "-c",
                          "import flower, flower.distributed, flower.cli"],
                         capture_output=True, text=True, check=True)
    assert "temporalio" not in out.stderr


def test_worker_and_status_are_commands() -> None:
    assert "worker" in COMMANDS and "status" in COMMANDS
    assert route(["worker", "--temporal", "h:1"])[0] == "worker"
    assert route(["--store", "u", "worker", "--temporal", "h:1"]) == [
        "--store", "u", "worker", "--temporal", "h:1"]
    result = CliRunner().invoke(main, ["worker"])
    assert result.exit_code == 2 and "--temporal" in result.output
    for cmd in ("run", "go"):
        help_text = CliRunner().invoke(main, [cmd, "--help"]).output
        assert "--temporal" in help_text and "--queue" in help_text


def test_status_unreachable_server_is_one_line() -> None:
    out = subprocess.run([sys.executable, "-m", "flower", "status", "--temporal",
                          "127.0.0.1:1"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "连不上 Temporal 服务 127.0.0.1:1" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


def test_ctx_crosses_as_json() -> None:
    from flower.core.runtime import StepResult

    base = {"lock": object(), "n": 1}
    ctx = {**base, "一": "text", "_sessions": {"一": "s1"}, "_runtime": object(),
           "_results": {"一": StepResult(step="一", session_id="s1", ok=True)},
           "bad": {1, 2}}
    data, dropped = dump_ctx(ctx, base)
    assert dropped == ["bad"]  # "lock" is re-created by every worker's import
    assert "_runtime" not in data and "lock" not in data and data["n"] == 1
    back = load_ctx(data, {"lock": "fresh"})
    assert back["lock"] == "fresh" and back["_results"]["一"].session_id == "s1"
    assert isinstance(back["_results"]["一"], StepResult)


def test_events_cross_as_json() -> None:
    ev = Event("ask", text="x" * 5000, payload={"id": "q1", "raw": object()}, raw=object())
    back = event_from_json(event_to_json(ev))
    assert back.kind == "ask" and back.payload["id"] == "q1" and back.raw is None
    assert len(back.text) < 5000 and isinstance(back.payload["raw"], str)


def test_worker_with_a_sqlite_store_starts_without_the_postgres_driver(
        temporal, queue: str, cli_env: dict[str, str], workspace: Path,
        tmp_path: Path) -> None:
    """``pip install 'flower[temporal]'`` without the postgres extra: a worker on a SQLite
    store serves (it must not import psycopg just to show its store URL)."""
    blocked = tmp_path / "blocked"
    (blocked / "psycopg").mkdir(parents=True)
    (blocked / "psycopg" / "__init__.py").write_text("raise ImportError('no psycopg here')\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(blocked), str(Path(__file__).resolve().parents[2]),
                                         env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["COLUMNS"] = "400"  # the console's widest: the ready line stays one line of stdout
    probe = subprocess.run([sys.executable, "-c", "import psycopg"], env=env,
                           capture_output=True, text=True)
    assert probe.returncode != 0 and "no psycopg here" in probe.stderr
    with tempfile.TemporaryDirectory(prefix="fw") as short:  # a path that fits on the line
        url = f"sqlite://{short}/x.db"
        w = Worker(subprocess.Popen(
            [sys.executable, "-m", "flower", "worker", "--temporal", temporal.address,
             "--queue", queue, "--store", url],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            cwd=workspace, start_new_session=True))
        try:
            assert w.ready.wait(60), "worker did not start:\n" + "\n".join(w.lines)
            (ready,) = [line for line in w.lines
                        if line.startswith(texts.DIST_WORKER_READY.split("{")[0])]
            assert ready == texts.DIST_WORKER_READY.format(address=temporal.address,
                                                           queue=queue, store=url)
            assert w.terminate() == 0
        finally:
            w.stop()

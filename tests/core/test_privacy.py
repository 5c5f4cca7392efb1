"""``runs/`` records whole transcripts: a run dir is 0700 and flower's files in it 0600 —
fresh, rewritten atomically, or left readable by an older flower (tightened, said once)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from flower import Runtime, texts
from flower.cli.crash import write_crash
from flower.core.handoff import degraded, save_document
from flower.core.lineage import Lineage
from flower.core.paths import atomic_write
from flower.stores.trimming import write_spill


def open_run_dir(run_dir: Path, workspace: Path) -> list[Path]:
    from flower.core.privacy import open_run_dir as opened

    return opened(run_dir, workspace)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def keyed(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000000000")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def runtime(base: Path, **kw: object) -> Runtime:
    return Runtime(workspace=base / "ws", run_dir=base / "runs", **kw)  # type: ignore[arg-type]


def test_a_fresh_run_dir_and_everything_flower_writes_there_are_private(
        keyed: Path, caplog: pytest.LogCaptureFixture) -> None:
    runs = keyed / "runs"
    with caplog.at_level(logging.WARNING):
        rt = runtime(keyed, workbench=True)
    try:
        rt._write_manifest()
        lineage = Lineage.open(runs, rt.workspace)
        lineage.remember("step", "s-1")
        wb = rt.workbench
        assert wb is not None
        handoff = save_document(wb.notes, "step", degraded("step", "the task"))
        spill = write_spill("a big tool result " * 100, str(wb.spill))
        crash, _ = write_crash(RuntimeError("boom"), runs)
        aside = Runtime(workspace=rt.workspace, run_dir=runs / "aside", resilience=False)
        aside.close()
        for name in ("sessions.db-wal", "sessions.db-shm"):  # exist while the store is open
            assert mode(runs / name) == 0o600, name
    finally:
        rt.close()
    assert mode(runs) == 0o700
    for name in ("sessions.db", "manifest.json", "lineage.json"):
        assert mode(runs / name) == 0o600, name
    for d in (wb.root, wb.notes, wb.spill, wb.scripts, wb.artifacts, runs / "aside"):
        assert mode(d) == 0o700, d
    for f in (handoff, Path(spill or ""), crash, runs / "aside" / "sessions.db"):
        assert f is not None and mode(f) == 0o600, f
    lineage.remember("step", "s-2")  # an atomic rewrite keeps it private
    assert mode(runs / "lineage.json") == 0o600
    assert "别人也能读" not in caplog.text  # nothing was tightened: nothing to say


def test_readable_leftovers_are_tightened_once_and_said_in_one_line(
        keyed: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An older flower (or a 022 umask) left ``runs/`` 0755 with 0644 transcripts: the
    next Runtime narrows them and says so in one line — and the one after says nothing."""
    runs = keyed / "runs"
    rt = runtime(keyed, workbench=True)
    rt._write_manifest()
    rt.close()
    Lineage.open(runs, keyed / "ws").remember("step", "s-1")
    (runs / "crash-20250101-000000-1.log").write_text("traceback")
    os.makedirs(runs / "aside", exist_ok=True)
    (runs / "aside" / "manifest.json").write_text("[]")
    handoff = runs / "workbench" / "notes" / "交接-step.md"
    handoff.write_text("# handoff")
    agent_file = runs / "workbench" / "artifacts" / "report.md"  # the agent's, not flower's
    agent_file.write_text("x")
    wide = [runs, runs / "aside", runs / "workbench", runs / "workbench" / "notes",
            runs / "sessions.db", runs / "manifest.json", runs / "lineage.json",
            runs / "crash-20250101-000000-1.log", runs / "aside" / "manifest.json", handoff]
    for p in [*wide, agent_file]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="flower.runtime"):
        runtime(keyed, workbench=True).close()
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [texts.RUN_DIR_TIGHTENED.format(path=runs, n=len(wide))]
    for p in wide:
        assert mode(p) == (0o700 if p.is_dir() else 0o600), p
    assert mode(agent_file) == 0o644  # the 0700 folders around it keep others out
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="flower.runtime"):
        runtime(keyed, workbench=True).close()
    assert caplog.records == []


def test_a_script_keeps_its_owner_bits(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "sessions.db-journal").write_text("")
    os.chmod(runs / "sessions.db-journal", 0o755)
    assert open_run_dir(runs, tmp_path / "ws") == [runs, runs / "sessions.db-journal"]
    assert mode(runs / "sessions.db-journal") == 0o700


def test_a_run_dir_holding_the_workspace_is_left_open(tmp_path: Path) -> None:
    """``-r .``: the run dir is the project itself; its folder mode is the user's business,
    flower's own records in it are still narrowed."""
    tmp_path.chmod(0o755)
    (tmp_path / "manifest.json").write_text("[]")
    (tmp_path / "notes.md").write_text("the user's")
    os.chmod(tmp_path / "manifest.json", 0o644)
    os.chmod(tmp_path / "notes.md", 0o644)
    assert open_run_dir(tmp_path, tmp_path) == [tmp_path / "manifest.json"]
    assert mode(tmp_path) == 0o755 and mode(tmp_path / "notes.md") == 0o644


def test_an_empty_run_dir_made_by_hand_is_tightened_silently(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir(mode=0o755)
    os.chmod(runs, 0o755)
    assert open_run_dir(runs, tmp_path / "ws") == []
    assert mode(runs) == 0o700


def test_atomic_write_mode_follows_the_directory(tmp_path: Path) -> None:
    private, shared = tmp_path / "private", tmp_path / "shared"
    private.mkdir(mode=0o700)
    shared.mkdir()
    os.chmod(shared, 0o755)
    (private / "old.json").write_text("{}")
    os.chmod(private / "old.json", 0o644)
    atomic_write(private / "old.json", "[]")
    atomic_write(private / "new.json", "[]")
    atomic_write(shared / "brief.md", "# brief")
    atomic_write(shared / "secret", "k", mode=0o600)
    assert mode(private / "old.json") == 0o600 and mode(private / "new.json") == 0o600
    assert mode(shared / "brief.md") == 0o644 and mode(shared / "secret") == 0o600

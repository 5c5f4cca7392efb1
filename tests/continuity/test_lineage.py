"""Lineage: the one line of state that lets a new process continue the old sessions."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import re
from pathlib import Path

import pytest

import flower.core.lineage as lineage_mod
import flower.core.paths as paths_mod
from flower.core.lineage import FILENAME, Lineage

SID1 = "47395075-bec7-466e-80cd-f4d60b360235"
SID2 = "601c8c91-6c4b-4525-8a5f-295b99bf9515"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    return d


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return tmp_path / "runs"


def _state_files(runs: Path) -> list[str]:
    """The run dir's files minus the lock file every update takes."""
    return sorted(n for n in os.listdir(runs) if n != FILENAME + ".lock")


def on_disk(runs: Path) -> dict:
    return json.loads((runs / FILENAME).read_text(encoding="utf-8"))


# --- format and round trip -------------------------------------------------------------


def test_missing_file_is_an_empty_lineage(ws: Path, runs: Path) -> None:
    lin = Lineage.open(runs, ws)
    assert (lin.steps, lin.woke) == ({}, 0)
    assert lin.path == runs / FILENAME
    assert not runs.exists()  # opening never creates anything


def test_exact_json_format_and_round_trip(ws: Path, runs: Path) -> None:
    lin = Lineage.open(runs, ws)
    assert lin.bump() == 1
    lin.remember("干活", SID1)
    raw = (runs / FILENAME).read_text(encoding="utf-8")
    data = json.loads(raw)
    assert data == {"workspace": str(ws.resolve()), "woke": 1, "steps": {"干活": SID1}}
    assert list(data) == ["workspace", "woke", "steps"]
    assert "干活" in raw  # readable, not \\u-escaped

    again = Lineage.open(runs, ws)
    assert (again.steps, again.woke) == ({"干活": SID1}, 1)
    assert again.bump() == 2
    assert on_disk(runs)["woke"] == 2


def test_reads_a_reference_file(ws: Path, runs: Path) -> None:
    """A runs/ folder written by the reference implementation continues here."""
    runs.mkdir()
    (runs / FILENAME).write_text(json.dumps(
        {"workspace": str(ws), "woke": 3, "steps": {"确认需求": SID2, "干活": SID1}}))
    lin = Lineage.open(runs, ws)
    assert (lin.woke, lin.steps) == (3, {"确认需求": SID2, "干活": SID1})


def test_remember_writes_the_moment_it_is_called(ws: Path, runs: Path) -> None:
    lin = Lineage.open(runs, ws)
    lin.remember("确认需求", SID2)
    assert on_disk(runs)["steps"] == {"确认需求": SID2}
    lin.remember("干活", SID1)
    assert on_disk(runs)["steps"] == {"确认需求": SID2, "干活": SID1}
    lin.remember("干活", SID2)  # a handoff successor takes over the step
    assert on_disk(runs)["steps"]["干活"] == SID2


def test_remember_ignores_empty_values_and_repeats(ws: Path, runs: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    lin = Lineage.open(runs, ws)
    writes: list[Path] = []
    real = lineage_mod.atomic_write
    monkeypatch.setattr(lineage_mod, "atomic_write", lambda p, t: (writes.append(p), real(p, t)))
    lin.remember("", SID1)
    lin.remember("干活", "")
    assert writes == [] and not (runs / FILENAME).exists()
    lin.remember("干活", SID1)
    lin.remember("干活", SID1)  # same id on every message: one write, not one per message
    assert len(writes) == 1


def test_empty_session_ids_in_the_file_are_dropped(ws: Path, runs: Path) -> None:
    runs.mkdir()
    (runs / FILENAME).write_text(json.dumps(
        {"workspace": str(ws), "woke": 1, "steps": {"a": "", "b": SID1}}))
    assert Lineage.open(runs, ws).steps == {"b": SID1}


# --- atomic writes, failures never break the run ---------------------------------------


def test_write_goes_through_a_temp_file_in_the_same_dir(ws: Path, runs: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src, dst):
        calls.append((os.fspath(src), os.fspath(dst)))
        assert json.loads(Path(src).read_text(encoding="utf-8"))["woke"] == 1  # complete first
        real_replace(src, dst)

    monkeypatch.setattr(paths_mod.os, "replace", spy)
    Lineage.open(runs, ws).bump()
    [(src, dst)] = calls
    assert Path(dst) == runs / FILENAME
    assert Path(src).parent == runs and Path(src).name != FILENAME
    assert _state_files(runs) == [FILENAME]  # temp file gone


@pytest.mark.parametrize("broken", ["replace", "fsync"])
def test_failed_write_keeps_old_file_and_does_not_raise(ws: Path, runs: Path, broken: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    lin = Lineage.open(runs, ws)
    lin.remember("确认需求", SID2)
    before = (runs / FILENAME).read_bytes()

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(paths_mod.os, broken, boom)
    lin.remember("干活", SID1)  # must not raise
    assert lin.bump() == 1  # in-memory state still moves on
    assert lin.flush() is False
    monkeypatch.undo()
    assert (runs / FILENAME).read_bytes() == before
    assert _state_files(runs) == [FILENAME]  # no temp litter


def test_unwritable_run_dir_does_not_raise(ws: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "runs"
    blocker.write_text("a file where the run dir should be")
    lin = Lineage.open(blocker, ws)
    lin.remember("干活", SID1)
    assert lin.bump() == 1
    assert blocker.read_text() == "a file where the run dir should be"


def test_programming_errors_are_not_swallowed(ws: Path, runs: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def bug(path, text):
        raise TypeError("bug in the writer")

    monkeypatch.setattr(lineage_mod, "atomic_write", bug)
    with pytest.raises(TypeError):
        Lineage.open(runs, ws).bump()


# --- "doesn't match" means "not there", never an error ---------------------------------


@pytest.mark.parametrize("content", [
    b"{not json",
    b"",
    b'{"workspace": "/x", "woke": 1, "steps": {"a": "b"}',  # torn write
    b"[1, 2, 3]",
    b'{"woke": 1, "steps": {}}',  # no workspace guard
    b'{"workspace": "WS", "woke": "3", "steps": {}}',
    b'{"workspace": "WS", "woke": true, "steps": {}}',
    b'{"workspace": "WS", "woke": 1, "steps": ["a"]}',
    b'{"workspace": "WS", "woke": 1, "steps": {"a": 5}}',
    b"\xff\xfe\x00garbage",
])
def test_corrupt_file_is_moved_aside_and_run_starts_fresh(
    ws: Path, runs: Path, content: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lineage_mod, "_stamp", lambda: "20260907-013000")
    runs.mkdir()
    content = content.replace(b"WS", str(ws).encode())
    (runs / FILENAME).write_bytes(content)

    lin = Lineage.open(runs, ws)

    assert (lin.steps, lin.woke) == ({}, 0)
    aside = runs / f"{FILENAME}.corrupt-20260907-013000"
    assert aside.read_bytes() == content
    assert not (runs / FILENAME).exists()
    lin.bump()  # fresh start writes a good file; the evidence stays
    assert on_disk(runs)["woke"] == 1 and aside.read_bytes() == content


def test_aside_file_is_never_overwritten(ws: Path, runs: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lineage_mod, "_stamp", lambda: "20260907-013000")
    runs.mkdir()
    (runs / FILENAME).write_bytes(b"first {")
    Lineage.open(runs, ws)
    (runs / FILENAME).write_bytes(b"second {")
    Lineage.open(runs, ws)
    assert (runs / f"{FILENAME}.corrupt-20260907-013000").read_bytes() == b"first {"
    assert (runs / f"{FILENAME}.corrupt-20260907-013000-2").read_bytes() == b"second {"


def test_aside_name_carries_a_timestamp(ws: Path, runs: Path) -> None:
    runs.mkdir()
    (runs / FILENAME).write_bytes(b"{")
    Lineage.open(runs, ws)
    [aside] = [p.name for p in runs.iterdir()]
    assert re.fullmatch(r"lineage\.json\.corrupt-\d{8}-\d{6}", aside)


def test_peek_reads_without_moving_a_corrupt_file(ws: Path, runs: Path) -> None:
    runs.mkdir()
    (runs / FILENAME).write_bytes(b"{")
    assert Lineage.peek(runs, ws).steps == {}
    assert os.listdir(runs) == [FILENAME]


def test_workspace_mismatch_is_empty_and_leaves_the_file(ws: Path, runs: Path,
                                                         tmp_path: Path) -> None:
    lin = Lineage.open(runs, ws)
    lin.bump()
    lin.remember("干活", SID1)
    before = (runs / FILENAME).read_bytes()
    other = tmp_path / "copied-proj"
    other.mkdir()
    moved = Lineage.open(runs, other)
    assert (moved.steps, moved.woke) == ({}, 0)
    assert (runs / FILENAME).read_bytes() == before


def test_same_workspace_through_a_symlink_matches(ws: Path, runs: Path, tmp_path: Path) -> None:
    Lineage.open(runs, ws).remember("干活", SID1)
    link = tmp_path / "link"
    link.symlink_to(ws)
    assert Lineage.open(runs, link).steps == {"干活": SID1}


def test_unreadable_path_is_empty_not_moved(ws: Path, runs: Path) -> None:
    (runs / FILENAME).mkdir(parents=True)  # a directory where the file should be
    lin = Lineage.open(runs, ws)
    assert lin.steps == {}
    assert (runs / FILENAME).is_dir()
    lin.remember("干活", SID1)  # the write fails quietly too


def test_has_session_drops_steps_whose_session_is_gone(ws: Path, runs: Path) -> None:
    lin = Lineage.open(runs, ws)
    lin.remember("确认需求", SID2)
    lin.remember("干活", SID1)
    asked: list[str] = []

    def has(sid: str) -> bool:
        asked.append(sid)
        return sid == SID1

    again = Lineage.open(runs, ws, has_session=has)
    assert again.steps == {"干活": SID1}
    assert sorted(asked) == sorted([SID1, SID2])


def test_store_errors_count_as_session_gone_but_bugs_raise(ws: Path, runs: Path) -> None:
    import sqlite3

    Lineage.open(runs, ws).remember("干活", SID1)

    def locked(sid: str) -> bool:
        raise sqlite3.OperationalError("database is locked")

    assert Lineage.open(runs, ws, has_session=locked).steps == {}

    def bug(sid: str) -> bool:
        raise KeyError(sid)

    with pytest.raises(KeyError):
        Lineage.open(runs, ws, has_session=bug)


# --- archive (--new) --------------------------------------------------------------------


def test_archive_moves_three_files_and_keeps_sessions_db(ws: Path, runs: Path) -> None:
    notes = ws / ".flower" / "notes"
    notes.mkdir(parents=True)
    brief, goal = notes / "需求.md", notes / "目标.md"
    brief.write_text("## 目标\n做个脚本\n", encoding="utf-8")
    goal.write_text("# 判定清单\n- 能跑\n", encoding="utf-8")
    lin = Lineage.open(runs, ws)
    lin.bump()
    lin.remember("干活", SID1)
    lineage_bytes = (runs / FILENAME).read_bytes()
    db = runs / "sessions.db"
    db.write_bytes(b"SQLite format 3\0 pretend")
    db_stat = db.stat()

    dest = lin.archive(notes / "archive", extra=[brief, goal])

    assert dest.parent == notes / "archive"
    assert re.fullmatch(r"\d{8}-\d{6}", dest.name)
    assert sorted(p.name for p in dest.iterdir()) == sorted([FILENAME, "需求.md", "目标.md"])
    assert (dest / FILENAME).read_bytes() == lineage_bytes
    assert (dest / "需求.md").read_text(encoding="utf-8") == "## 目标\n做个脚本\n"
    assert not brief.exists() and not goal.exists() and not (runs / FILENAME).exists()
    assert (lin.steps, lin.woke) == ({}, 0)
    assert db.read_bytes() == b"SQLite format 3\0 pretend"
    assert db.stat().st_mtime_ns == db_stat.st_mtime_ns
    fresh = Lineage.open(runs, ws)
    assert (fresh.steps, fresh.woke) == ({}, 0)
    assert fresh.bump() == 1


def test_archive_twice_in_one_second_does_not_collide(ws: Path, runs: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lineage_mod, "_stamp", lambda: "20260907-013000")
    into = ws / "archive"
    lin = Lineage.open(runs, ws)
    lin.remember("干活", SID1)
    first = lin.archive(into)
    lin.remember("干活", SID2)
    second = lin.archive(into, extra=[ws / "missing.md"])  # absent extras are skipped
    assert first.name == "20260907-013000" and second.name == "20260907-013000-2"
    assert json.loads((first / FILENAME).read_text())["steps"] == {"干活": SID1}
    assert json.loads((second / FILENAME).read_text())["steps"] == {"干活": SID2}


def test_archive_without_a_lineage_file(ws: Path, runs: Path) -> None:
    extra = ws / "需求.md"
    extra.write_text("x", encoding="utf-8")
    dest = Lineage.open(runs, ws).archive(ws / "archive", extra=[str(extra)])
    assert os.listdir(dest) == ["需求.md"]


# --- two processes, one file ------------------------------------------------------------


def _writer(run_dir: str, ws: str, tag: str, n: int, start) -> None:
    lin = Lineage.open(run_dir, ws)  # both open the empty state before either writes
    start.wait()
    for i in range(n):
        lin.remember(f"{tag}-{i % 7}", f"{tag}-session-{i}")
        lin.bump()


def _check_shape(data: object) -> None:
    assert isinstance(data, dict) and list(data) == ["workspace", "woke", "steps"]
    assert isinstance(data["woke"], int) and isinstance(data["steps"], dict)


def test_concurrent_writers_never_leave_a_torn_file(ws: Path, runs: Path) -> None:
    ctx = mp.get_context("fork")
    ready = ctx.Barrier(3)
    procs = [ctx.Process(target=_writer, args=(str(runs), str(ws), tag, 150, ready))
             for tag in ("a", "b")]
    for p in procs:
        p.start()
    ready.wait()
    reads = 0
    path = runs / FILENAME
    while any(p.is_alive() for p in procs):
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            continue
        _check_shape(json.loads(raw))  # never a half-written file
        reads += 1
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert reads > 0
    _check_shape(on_disk(runs))
    assert _state_files(runs) == [FILENAME]  # every temp file was replaced or removed
    final = Lineage.open(runs, ws)
    assert final.woke == 300 and final.steps  # both writers' bumps, none lost


def _distinct_writer(run_dir: str, ws: str, tag: str, n: int, start) -> None:
    lin = Lineage.open(run_dir, ws)  # all open the same (empty) state before anyone writes
    start.wait()
    for i in range(n):
        lin.bump()
        lin.remember(f"{tag}-{i}", f"{tag}-session-{i}")
        lin.remember(f"{tag}-last", f"{tag}-session-{i}")  # re-recorded: the newest wins


def test_concurrent_processes_lose_no_update(ws: Path, runs: Path) -> None:
    """Four processes bump the wake counter and record their own steps many times at once:
    every bump counts and every step is there (a stale in-memory copy never clobbers)."""
    n_procs, n = 4, 60
    ctx = mp.get_context("fork")
    ready = ctx.Barrier(n_procs)
    tags = [f"p{i}" for i in range(n_procs)]
    procs = [ctx.Process(target=_distinct_writer, args=(str(runs), str(ws), tag, n, ready))
             for tag in tags]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    data = on_disk(runs)
    assert data["woke"] == n_procs * n
    want = {f"{t}-{i}": f"{t}-session-{i}" for t in tags for i in range(n)}
    want.update({f"{t}-last": f"{t}-session-{n - 1}" for t in tags})
    assert data["steps"] == want
    assert not list(runs.glob(f"{FILENAME}.corrupt-*"))


def test_an_update_keeps_what_another_process_wrote_meanwhile(ws: Path, runs: Path) -> None:
    """Merge by key: the other object's steps and bumps survive, this object's keys win."""
    a = Lineage.open(runs, ws)
    b = Lineage.open(runs, ws)
    a.remember("确认需求", SID1)
    a.bump()
    b.remember("干活", SID2)  # b's in-memory copy never saw a's writes
    assert on_disk(runs)["steps"] == {"确认需求": SID1, "干活": SID2}
    assert b.bump() == 2
    a.remember("干活", SID1)  # a's own key now wins over b's
    assert on_disk(runs) == {"workspace": str(a.workspace), "woke": 2,
                             "steps": {"确认需求": SID1, "干活": SID1}}


def test_an_update_does_not_bring_back_a_session_found_gone(ws: Path, runs: Path) -> None:
    Lineage.open(runs, ws).remember("干活", SID1)
    lin = Lineage.open(runs, ws, has_session=lambda sid: False)
    assert lin.steps == {}
    assert lin.bump() == 1
    assert lin.steps == {} and on_disk(runs)["steps"] == {}

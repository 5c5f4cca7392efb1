"""The shadow repository on its own (flower.core.shadow / checkpoints): any tree, any
change, restored byte for byte; the workspace's attributes cannot change the bytes; big
files and nested repositories are named, never lost; the lineage forgets only what comes
after."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower.core.checkpoints import Checkpoints, Position, RunActive, hold_active, run_active
from flower.core.lineage import Lineage

NAMES = st.sampled_from(["a", "b", "c.txt", "d/e", "d/f.py", "g/h/i", "空 格.md", "j"])
CONTENT = st.binary(max_size=64) | st.sampled_from([b"", b"x\r\n", b"line\n" * 3])
TREES = st.dictionaries(NAMES, st.tuples(CONTENT, st.booleans()), max_size=6)


def write(ws: Path, files: dict[str, tuple[bytes, bool]]) -> None:
    for name, (data, exe) in files.items():
        p = ws / name
        if p.parent.exists() and not p.parent.is_dir():
            continue  # "d" as a file and "d/e" cannot both be
        if p.is_dir():
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        p.chmod(0o755 if exe else 0o644)


def snapshot(ws: Path) -> dict[str, tuple[bytes, bool]]:
    out = {}
    for root, dirs, files in os.walk(ws):
        dirs[:] = [d for d in dirs if d != "runs"]
        for name in files:
            p = Path(root) / name
            out[p.relative_to(ws).as_posix()] = (p.read_bytes(),
                                                 bool(p.stat().st_mode & stat.S_IXUSR))
    return out


def fresh(tmp: Path) -> tuple[Path, Checkpoints]:
    """A new workspace per call (hypothesis reuses one tmp_path for every example)."""
    import uuid

    ws = tmp / uuid.uuid4().hex
    (ws / "runs").mkdir(parents=True)
    return ws, Checkpoints(ws / "runs", ws)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=TREES, second=TREES, gone=st.lists(NAMES, max_size=3))
def test_any_change_rewinds_to_the_bytes_and_modes_of_then(tmp_path: Path, first, second,
                                                           gone) -> None:
    ws, cps = fresh(tmp_path)
    write(ws, first)
    then = snapshot(ws)
    one = cps.take("step-end", "一")
    write(ws, second)
    for name in gone:
        if (ws / name).is_file():
            (ws / name).unlink()
    now = snapshot(ws)
    cps.take("step-end", "二")
    cps.rewind(one)
    assert snapshot(ws) == then
    undo = cps.list()[-1]
    assert undo.kind == "before-rewind" and undo.rewind["to"] == 1
    cps.rewind(undo)
    assert snapshot(ws) == now


def test_the_workspaces_attributes_do_not_change_the_stored_bytes(tmp_path: Path) -> None:
    ws, cps = fresh(tmp_path)
    (ws / ".gitattributes").write_text("* text eol=crlf filter=lfs ident\n")
    (ws / "f.txt").write_bytes(b"one\ntwo $Id$\n")
    one = cps.take("step-end", "一")
    (ws / "f.txt").write_bytes(b"changed\n")
    cps.rewind(one)
    assert (ws / "f.txt").read_bytes() == b"one\ntwo $Id$\n"


def test_big_files_and_nested_repositories_are_named_and_left_alone(tmp_path: Path) -> None:
    ws, _ = fresh(tmp_path)
    cps = Checkpoints(ws / "runs", ws, max_bytes=100)
    (ws / "big.bin").write_bytes(b"x" * 101)
    (ws / "small").write_bytes(b"x" * 100)
    (ws / "sub").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws / "sub", check=True)
    (ws / "sub" / "code").write_text("theirs")
    one = cps.take("step-end", "一")
    assert sorted(one.skipped) == ["big.bin", "sub/"] and one.added == 1
    (ws / "big.bin").write_bytes(b"y" * 200)
    (ws / "small").write_bytes(b"changed")
    done, _, _ = cps.rewind(one)
    assert (ws / "big.bin").read_bytes() == b"y" * 200  # never held, never touched
    assert (ws / "small").read_bytes() == b"x" * 100 and done.written == ["small"]
    assert (ws / "sub" / "code").read_text() == "theirs"


def test_ignored_files_stay_and_the_run_dir_is_never_in_a_snapshot(tmp_path: Path) -> None:
    ws, cps = fresh(tmp_path)
    (ws / ".gitignore").write_text("*.log\n")
    (ws / ".flower").mkdir()
    (ws / ".flower" / "notes.md").write_text("flower's")
    (ws / "runs" / "manifest.json").write_text("[]")
    one = cps.take("step-end", "一")
    assert one.added == 1  # .gitignore only
    (ws / "x.log").write_text("kept")
    (ws / "new.txt").write_text("removed by the rewind")
    cps.rewind(one)
    assert (ws / "x.log").read_text() == "kept" and not (ws / "new.txt").exists()
    assert (ws / "runs" / "manifest.json").read_text() == "[]"


def test_the_lineage_forgets_the_steps_after_and_their_documents_move_aside(
        tmp_path: Path) -> None:
    ws, cps = fresh(tmp_path)
    notes = ws / ".flower" / "notes"
    notes.mkdir(parents=True)
    (notes / "需求.md").write_text("brief")
    (notes / "目标.md").write_text("goal")
    order = ["确认需求", "设定目标", "干活"]
    docs = {"确认需求": str(notes / "需求.md"), "设定目标": str(notes / "目标.md")}
    one = cps.take("step-end", "确认需求", Position(1, order, docs))
    lin = Lineage.open(ws / "runs", ws)
    for step in order:
        lin.remember(step, f"sid-{step}")
    _, before, forgot = cps.rewind(one, lineage=lin)
    assert forgot["steps"] == {"设定目标": "sid-设定目标", "干活": "sid-干活"}
    assert before.rewind["steps"] == forgot["steps"]  # kept in the history
    assert Lineage.open(ws / "runs", ws).steps == {"确认需求": "sid-确认需求"}
    assert (notes / "需求.md").read_text() == "brief" and not (notes / "目标.md").exists()
    assert [p.read_text() for p in notes.glob("archive/rewind-*/目标.md")] == ["goal"]


def test_a_live_run_holds_the_folder_until_it_dies(tmp_path: Path) -> None:
    ws, cps = fresh(tmp_path)
    one = cps.take("step-end", "一")
    fd = hold_active(ws / "runs")
    assert fd is not None and run_active(ws / "runs")
    try:
        cps.rewind(one)
    except RunActive:
        pass
    else:
        raise AssertionError("a rewind under a live run")
    os.close(fd)
    assert not run_active(ws / "runs")
    # a process killed with SIGKILL lets go too: the kernel drops its lock
    child = subprocess.Popen(["python3", "-c", (
        "import fcntl,os,sys,time; fd=os.open(sys.argv[1], os.O_RDWR|os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_SH); print('held', flush=True); time.sleep(60)"),
        str(ws / "runs" / "active.lock")], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    assert run_active(ws / "runs")
    child.kill()
    child.wait()
    assert not run_active(ws / "runs")

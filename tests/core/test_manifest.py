"""manifest.json: rows per run, never lost to a concurrent writer, never overwritten if corrupt."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from flower.core.manifest import Manifest


def _writer(path: str, run_id: str, n: int) -> None:
    m = Manifest(Path(path), run_id)
    rows: list[dict] = []
    for i in range(n):
        rows.append({"step": f"{run_id}-{i}"})
        m.write(rows)


def test_rows_of_other_runs_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    Manifest(path, "a").write([{"step": "a1"}])
    Manifest(path, "b").write([{"step": "b1"}, {"step": "b2"}])
    Manifest(path, "a").write([{"step": "a1"}, {"step": "a2"}])
    rows = json.loads(path.read_text())
    assert sorted((r["run"], r["step"]) for r in rows) == [
        ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")]


def test_parallel_processes_lose_no_row(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), f"run{i}", 25)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    rows = json.loads(path.read_text())
    assert len(rows) == 100
    assert {r["step"] for r in rows} == {f"run{i}-{j}" for i in range(4) for j in range(25)}


def test_corrupt_manifest_moved_aside_once(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_bytes(b"{not json")
    notices: list[str] = []
    m = Manifest(path, "r", notice=notices.append)
    m.write([{"step": "s"}])
    m.write([{"step": "s"}, {"step": "t"}])
    (aside,) = tmp_path.glob("manifest.json.corrupt-*")
    assert aside.read_bytes() == b"{not json"
    assert len(notices) == 1 and str(aside) in notices[0]
    assert [r["step"] for r in json.loads(path.read_text())] == ["s", "t"]


def test_wrong_shape_counts_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text('{"step": "x"}')
    Manifest(path, "r", notice=lambda s: None).write([{"step": "s"}])
    assert len(list(tmp_path.glob("manifest.json.corrupt-*"))) == 1


def test_scrub_masks_secrets(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    Manifest(path, "r", scrub=lambda t: t.replace("sk-secret", "sk-…")).write(
        [{"step": "s", "text": "key is sk-secret"}])
    assert "sk-secret" not in path.read_text()


def test_rescue_write_never_waits_on_its_own_lock(tmp_path: Path) -> None:
    """A signal handler that fires while this process is mid-write must not deadlock."""
    path = tmp_path / "manifest.json"
    m = Manifest(path, "r")
    m._holding = True  # as if the signal arrived inside write()
    assert m.write([{"step": "s"}], blocking=False) is False
    m._holding = False
    assert m.write([{"step": "s"}], blocking=False) is True
    assert json.loads(path.read_text())[0]["step"] == "s"


def test_undecodable_manifest_is_moved_aside_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    junk = b"\xff\xfe\x00garbage"
    path.write_bytes(junk)
    Manifest(path, "r", notice=lambda s: None).write([{"step": "s"}])
    (aside,) = tmp_path.glob("manifest.json.corrupt-*")
    assert aside.read_bytes() == junk
    assert [r["step"] for r in json.loads(path.read_text())] == ["s"]


def test_a_second_corruption_in_the_same_second_never_overwrites_the_first(
        tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    m = Manifest(path, "r", notice=lambda s: None)
    path.write_bytes(b"first")
    m.read()
    path.write_bytes(b"second")
    m.read()
    kept = sorted(p.read_bytes() for p in tmp_path.glob("manifest.json.corrupt-*"))
    assert kept == [b"first", b"second"]


def test_a_lone_surrogate_in_a_row_is_written_and_reads_back_exactly(tmp_path: Path) -> None:
    """Half an emoji in a model's text must not cost the row (it used to raise
    UnicodeEncodeError at the end of the step)."""
    text = "cut \ud83d here"
    m = Manifest(tmp_path / "manifest.json", "run-1")
    assert m.write([{"step": "干活", "text": text}])
    raw = (tmp_path / "manifest.json").read_bytes()
    raw.decode("utf-8")  # valid UTF-8 on disk
    assert m.read() == [{"step": "干活", "text": text, "run": "run-1"}]

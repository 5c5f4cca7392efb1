"""Workbench.refresh reads each file's description once per version of the file.

A refresh runs on every attempt and after every Write into the workbench; with thousands of
files, reopening each one every time cost files × writes. The seam is ``describe`` (the only
place that opens a file for its description): the tests count which paths it is asked for.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import flower.core.workbench as wb_mod
from flower.core.workbench import Workbench


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    real = wb_mod.describe

    def counting(path: Path) -> str:
        names.append(path.name)
        return real(path)

    monkeypatch.setattr(wb_mod, "describe", counting)
    return names


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def bump(path: Path, text: str) -> None:
    """Rewrite ``path`` and move its mtime on, as a later write would (one coarse clock
    tick can hold two writes of the same size)."""
    st = path.stat()
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


@pytest.fixture
def wb(tmp_path: Path) -> Workbench:
    ws = tmp_path / "proj"
    ws.mkdir()
    bench = Workbench(ws).ensure()
    put(bench.scripts / "a.py", "# desc: first tool\nprint(1)\n")
    put(bench.scripts / "b.sh", "# desc: second tool\necho 2\n")
    put(bench.notes / "n.md", "# a decision\n")
    return bench


def test_an_unchanged_file_is_not_reopened(wb: Workbench, opened: list[str]) -> None:
    wb.refresh()
    assert sorted(opened) == ["a.py", "b.sh", "n.md"]
    opened.clear()
    text = wb.refresh()
    wb.prompt_block()
    assert opened == []
    assert "first tool" in text and "second tool" in text


def test_a_changed_file_is_read_again(wb: Workbench, opened: list[str]) -> None:
    wb.refresh()
    opened.clear()
    bump(wb.scripts / "a.py", "# desc: FIRST tool\nprint(1)\n")  # same size
    put(wb.scripts / "b.sh", "# desc: the second tool, longer now\necho 2\n")
    text = wb.refresh()
    assert sorted(opened) == ["a.py", "b.sh"]
    assert "FIRST tool" in text and "the second tool, longer now" in text
    assert "first tool" not in text


def test_a_new_file_is_read_and_a_deleted_one_drops_out(wb: Workbench,
                                                        opened: list[str]) -> None:
    wb.refresh()
    opened.clear()
    (wb.scripts / "b.sh").unlink()
    put(wb.artifacts / "out.txt", "# desc: an output\n")
    text = wb.refresh()
    assert opened == ["out.txt"]
    assert "second tool" not in text and "b.sh" not in text and "an output" in text
    # back under the same name later: described afresh, not from the old entry
    put(wb.scripts / "b.sh", "# desc: reborn\n")
    assert "reborn" in wb.refresh()
    assert wb._descs[wb.scripts].keys() == {str(wb.scripts / "a.py"), str(wb.scripts / "b.sh")}


def test_a_replaced_file_of_the_same_size_and_mtime_is_read_again(
        wb: Workbench, opened: list[str]) -> None:
    """An editor saves by writing a new file and renaming it over the old one."""
    wb.refresh()
    opened.clear()
    target = wb.scripts / "a.py"
    st = target.stat()
    fresh = put(wb.scripts / ".a.py.swp", "# desc: FIRST tool\nprint(1)\n")
    os.utime(fresh, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(fresh, target)
    assert "FIRST tool" in wb.refresh()
    assert opened == ["a.py"]


def rglob_scan(wb: Workbench, d: Path) -> list[tuple[str, str, int]]:
    """What scan listed when it walked with pathlib: the order and the skips to keep."""
    out = []
    for p in sorted(d.rglob("*")):
        rel = p.relative_to(d).parts
        if any(part.startswith(".") for part in rel) or rel[0] == "archive":
            continue
        if p.is_file():
            out.append((wb.show(p), wb_mod.describe(p), p.stat().st_size))
    return out


@pytest.mark.parametrize("isolated", [False, True])
def test_scan_lists_what_the_pathlib_walk_listed(tmp_path: Path, isolated: bool) -> None:
    ws = tmp_path / "proj"
    ws.mkdir()
    wb = (Workbench.isolated(ws) if isolated else Workbench(ws)).ensure()
    d = wb.artifacts
    for rel in ("a-b.md", "a/b.md", "a/c/d.txt", "A.md", "z.md", "中文.md", "archive/old.md",
                "x/archive/kept.md", ".hidden.md", ".git/config", "x/.swp", "archive.md"):
        put(d / rel, f"# desc: {rel}\n")
    (d / "archive2").write_bytes(b"\0binary")
    (d / "link.md").symlink_to(d / "z.md")
    (d / "dirlink").symlink_to(d / "a")  # not entered
    (d / "broken.md").symlink_to(d / "nowhere")
    (tmp_path / "outside").mkdir()
    put(tmp_path / "outside" / "o.md", "# desc: outside\n")
    (d / "out").symlink_to(tmp_path / "outside")
    assert wb.scan(d) == rglob_scan(wb, d)
    assert [p for p, _, _ in wb.scan(d)][:3] == [
        wb.show(d / "A.md"), wb.show(d / "a/b.md"), wb.show(d / "a/c/d.txt")]

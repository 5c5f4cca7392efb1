"""Workbench: where it lives, what the index says, what the model is shown."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import flower.core.workbench as wb_mod
from flower import texts
from flower.core.workbench import Workbench, describe, human_size, inject_index


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    return d


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- locations --------------------------------------------------------------------------


def test_default_location_is_inside_the_workspace(ws: Path) -> None:
    wb = Workbench(ws)
    assert wb.root == ws / ".flower"
    assert not wb.external
    assert (wb.scripts, wb.artifacts, wb.notes, wb.spill, wb.index_path) == (
        ws / ".flower/scripts", ws / ".flower/artifacts", ws / ".flower/notes",
        ws / ".flower/spill", ws / ".flower/INDEX.md")
    assert Workbench(ws, dirname=".bench").root == ws / ".bench"


def test_runtime_location_is_under_the_run_dir(ws: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    inside = Workbench.for_runtime(ws, ws / "runs")
    assert inside.root == ws / "runs" / "workbench" and not inside.external
    outside = Workbench.for_runtime(ws, tmp_path / "elsewhere")
    assert outside.root == tmp_path / "elsewhere" / "workbench" and outside.external
    monkeypatch.chdir(tmp_path)  # run_dir is relative to the CWD, not the workspace
    assert Workbench.for_runtime(ws, "runs").root == tmp_path / "runs" / "workbench"


def test_isolated_location_is_beside_the_repo(ws: Path) -> None:
    wb = Workbench.isolated(ws)
    assert wb.root == ws.parent / ".flower-proj"
    assert wb.external
    assert Workbench.for_workspace(ws, isolate=True).root == wb.root
    assert Workbench.for_workspace(ws).root == ws / ".flower"


def test_home_wins_over_dirname(ws: Path, tmp_path: Path) -> None:
    assert Workbench(ws, dirname="ignored", home=tmp_path / "h").root == tmp_path / "h"


def test_show_is_relative_inside_absolute_outside(ws: Path) -> None:
    assert Workbench(ws).show(ws / ".flower/scripts/a.py") == ".flower/scripts/a.py"
    ext = Workbench.isolated(ws)
    assert ext.show(ext.scripts / "a.py") == str(ws.parent / ".flower-proj/scripts/a.py")


def test_ensure_creates_the_layout_and_chains(ws: Path) -> None:
    wb = Workbench(ws)
    assert wb.ensure() is wb
    for d in ("scripts", "artifacts", "notes", "spill"):
        assert (ws / ".flower" / d).is_dir()
    assert wb.index_path.is_file()
    iso = Workbench.isolated(ws).ensure()
    assert (ws.parent / ".flower-proj" / "INDEX.md").is_file()
    assert not (ws / ".flower-proj").exists() and iso.external


# --- descriptions -----------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "# desc: 抓取并清洗日志\nprint(1)\n",
    "#desc:抓取并清洗日志\n",
    "# DESC：抓取并清洗日志\n",
    "# Desc : 抓取并清洗日志\n",
    "// desc: 抓取并清洗日志\nconsole.log(1)\n",
    "-- desc: 抓取并清洗日志\nselect 1;\n",
    "#!/usr/bin/env bash\n# desc: 抓取并清洗日志\n",
    "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n# 随便的注释\n# desc: 抓取并清洗日志\n",
    "\n" * 7 + "# desc: 抓取并清洗日志\n",
])
def test_desc_line_variants(tmp_path: Path, text: str) -> None:
    assert describe(put(tmp_path / "s", text)) == "抓取并清洗日志"


def test_desc_only_counts_in_the_first_eight_lines(tmp_path: Path) -> None:
    text = "x = 1\n" * 8 + "# desc: too late\n"
    assert describe(put(tmp_path / "s.py", text)) == ""
    text = "# 第一行注释\n" + "x = 1\n" * 8 + "# desc: too late\n"
    assert describe(put(tmp_path / "s.py", text)) == "第一行注释"


@pytest.mark.parametrize(("text", "want"), [
    ("#!/bin/sh\n# 重建测试数据库\nrm -f x\n", "重建测试数据库"),
    ('"""Rebuild the fixtures."""\nimport os\n', "Rebuild the fixtures."),
    ('#!/usr/bin/env python3\n"""\nRebuild the fixtures.\n\nMore.\n"""\n', "Rebuild the fixtures."),
    ("# ==========\n# 真正的说明\n", "真正的说明"),
    ("# 决策:用 sqlite 不用 postgres\n\n因为……\n", "决策:用 sqlite 不用 postgres"),
    ("# desc:\n# 空的 desc 退回到注释\n", "空的 desc 退回到注释"),
    ("just text\nno comment\n", ""),
    ("", ""),
])
def test_description_fallbacks(tmp_path: Path, text: str, want: str) -> None:
    assert describe(put(tmp_path / "f", text)) == want


def test_description_is_clipped_and_binary_has_none(tmp_path: Path) -> None:
    d = describe(put(tmp_path / "long.sh", "# desc: " + "长" * 300 + "\n"))
    assert len(d) == 100 and d.endswith("…")
    blob = tmp_path / "x.bin"
    blob.write_bytes(b"# desc: nope\x00\x01\x02")
    assert describe(blob) == ""
    assert describe(tmp_path / "missing") == ""


def test_human_size() -> None:
    assert [human_size(n) for n in (0, 512, 1536, 5 * 1024 * 1024)] == [
        "0B", "512B", "1.5K", "5.0M"]


# --- scan and INDEX.md ------------------------------------------------------------------


def test_scan_is_sorted_recursive_and_skips_hidden_and_archive(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    put(wb.scripts / "b.sh", "# desc: 二\n")
    put(wb.scripts / "a.py", "# desc: 一\n")
    put(wb.scripts / "sub" / "c.py", "# desc: 三\n")
    put(wb.scripts / ".a.py.swp", "junk")
    put(wb.scripts / ".cache" / "x.py", "junk")
    put(wb.notes / "archive" / "20260101-000000" / "需求.md", "old")
    put(wb.notes / "决策-数据库.md", "# 用 sqlite\n")
    assert wb.scan(wb.scripts) == [
        (".flower/scripts/a.py", "一", 12),
        (".flower/scripts/b.sh", "二", 12),
        (".flower/scripts/sub/c.py", "三", 12),
    ]
    assert wb.scan(wb.notes) == [(".flower/notes/决策-数据库.md", "用 sqlite", 13)]
    assert wb.scan(ws / "nope") == []


def test_index_lists_everything_with_descriptions(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    put(wb.scripts / "fetch.py", "# desc: 拉取数据\n" + "x" * 2000)
    put(wb.artifacts / "report.md", "r" * 10)
    text = wb.refresh()
    assert wb.index_path.read_text(encoding="utf-8") == text
    assert "- `.flower/scripts/fetch.py` — 拉取数据 (2.0K)" in text
    assert f"- `.flower/artifacts/report.md` — {texts.WB_NO_DESC} (10B)" in text
    assert f"## {texts.WB_SECTIONS[0]} (1)" in text
    assert f"## {texts.WB_SECTIONS[2]} (0)\n{texts.WB_EMPTY}" in text


def test_refresh_rewrites_only_when_the_content_changed(ws: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    wb = Workbench(ws).ensure()
    writes: list[Path] = []
    real = wb_mod.atomic_write
    monkeypatch.setattr(wb_mod, "atomic_write", lambda p, t: (writes.append(p), real(p, t)))
    before = wb.index_path.stat()
    wb.refresh()
    wb.refresh()
    assert writes == []
    assert wb.index_path.stat().st_mtime_ns == before.st_mtime_ns
    put(wb.scripts / "new.sh", "# desc: 新脚本\n")
    assert "新脚本" in wb.refresh()
    assert writes == [wb.index_path]
    assert "新脚本" in wb.index_path.read_text(encoding="utf-8")
    assert sorted(os.listdir(wb.root)) == ["INDEX.md", "artifacts", "notes", "scripts", "spill"]


def test_refresh_survives_a_disk_error(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wb = Workbench(ws).ensure()
    put(wb.scripts / "new.sh", "# desc: 新脚本\n")

    def full(path, text):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(wb_mod, "atomic_write", full)
    assert "新脚本" in wb.refresh()


# --- the block the model sees -----------------------------------------------------------


def test_prompt_block_has_the_three_rules_and_relative_paths(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    put(wb.scripts / "run.sh", "# desc: 一键复现\n")
    block = wb.prompt_block()
    assert block.startswith(texts.WB_BLOCK_TITLE)
    assert "`.flower/scripts/run.sh` — 一键复现" in block
    assert "`.flower/scripts/`" in block and "# desc:" in block
    assert "2000" in block and "`.flower/artifacts/`" in block
    assert "`.flower/notes/`" in block
    assert ".flower/INDEX.md" in block
    assert str(ws) not in block  # inside the repo: relative paths only
    assert texts.WB_EXTERNAL not in block


def test_prompt_block_caps_each_category(ws: Path) -> None:
    wb = Workbench(ws, max_index_entries=3).ensure()
    for i in range(5):
        put(wb.scripts / f"s{i}.sh", f"# desc: 脚本{i}\n")
    put(wb.notes / "n.md", "# 一条决策\n")
    block = wb.prompt_block()
    assert [f"脚本{i}" in block for i in range(5)] == [True, True, True, False, False]
    assert texts.WB_BLOCK_MORE.format(n=2, dir=".flower/scripts") in block
    assert "一条决策" in block
    assert f"{texts.WB_SECTIONS[1]} (0):\n{texts.WB_BLOCK_EMPTY}" in block
    index = wb.refresh()  # the file itself is not capped
    assert all(f"脚本{i}" in index for i in range(5))


def test_prompt_block_for_an_external_bench_uses_absolute_paths(ws: Path) -> None:
    wb = Workbench.isolated(ws).ensure()
    put(wb.scripts / "run.sh", "# desc: 一键复现\n")
    block = wb.prompt_block()
    assert f"`{wb.scripts / 'run.sh'}` — 一键复现" in block
    assert f"`{wb.artifacts}/`" in block
    assert block.rstrip().endswith(texts.WB_EXTERNAL)


def test_prompt_block_writes_nothing(ws: Path, snapshot) -> None:
    wb = Workbench(ws).ensure()
    put(wb.scripts / "run.sh", "# desc: 一键复现\n")  # the index is now stale
    before = snapshot(ws)
    wb.prompt_block()
    assert snapshot(ws) == before


def test_a_bench_that_does_not_exist_yet_shows_as_empty(ws: Path) -> None:
    block = Workbench(ws).prompt_block()
    assert block.count(texts.WB_BLOCK_EMPTY) == 3
    assert not (ws / ".flower").exists()


# --- injection into the first user message ----------------------------------------------


def test_inject_index_puts_the_block_first_and_the_task_last(ws: Path) -> None:
    wb = Workbench(ws).ensure()
    put(wb.scripts / "run.sh", "# desc: 一键复现\n")
    out = inject_index("写个 md 转 html 的脚本", wb.prompt_block())
    assert out.startswith(texts.WB_INJECT_OPEN + "\n" + texts.WB_BLOCK_TITLE)
    assert out.endswith(texts.WB_INJECT_CLOSE + "\n\n写个 md 转 html 的脚本")
    assert "一键复现" in out


def test_inject_index_is_idempotent_and_skips_an_empty_block() -> None:
    once = inject_index("task", "## 工作台\nx")
    assert inject_index(once, "## 工作台\nx") == once
    assert inject_index("task", "") == "task"
    assert inject_index("task", "  \n") == "task"


def test_block_is_stable_while_the_disk_is(ws: Path) -> None:
    """Same files → byte-identical block, so a re-sent block never differs needlessly."""
    wb = Workbench(ws).ensure()
    put(wb.scripts / "run.sh", "# desc: 一键复现\n")
    assert wb.prompt_block() == Workbench(ws).prompt_block()

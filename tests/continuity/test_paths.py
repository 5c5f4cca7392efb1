"""project_key must equal the SDK's key, or wake_state looks for transcripts under the
wrong store_key and the banner silently loses its context number."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from claude_agent_sdk import project_key_for_directory

from flower.core.paths import atomic_write, project_key


@pytest.mark.parametrize("name", [
    "proj",
    "my_proj.v2",
    "with space-and_under.score",
    "中文目录",
    unicodedata.normalize("NFD", "café-é"),
])
def test_project_key_matches_sdk(tmp_path: Path, name: str) -> None:
    d = tmp_path / name
    d.mkdir()
    assert project_key(d) == project_key_for_directory(d)
    assert project_key(str(d)) == project_key_for_directory(str(d))


def test_project_key_long_path_is_hashed_like_the_sdk(tmp_path: Path) -> None:
    d = tmp_path.joinpath(*["segment_" + "x" * 40 + f".{i}" for i in range(6)])
    d.mkdir(parents=True)
    assert len(str(d)) > 200
    key = project_key(d)
    assert key == project_key_for_directory(d)
    assert len(key) > 200 and key[200] == "-"


def test_project_key_of_missing_long_path_matches(tmp_path: Path) -> None:
    d = tmp_path / ("ü" * 150) / ("z" * 120)
    assert project_key(d) == project_key_for_directory(d)


def test_project_key_follows_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert project_key(link) == project_key(real) == project_key_for_directory(link)


def test_atomic_write_leaves_only_the_target(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.json"
    atomic_write(target, "一\n")
    atomic_write(target, "二\n")
    assert target.read_text(encoding="utf-8") == "二\n"
    assert os.listdir(target.parent) == ["f.json"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_continuity_modules_do_not_import_the_sdk() -> None:
    code = (
        "import sys, flower.core.paths, flower.core.lineage, flower.core.workbench, "
        "flower.workflow.wake\n"
        "assert 'claude_agent_sdk' not in sys.modules, 'SDK imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

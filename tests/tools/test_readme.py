"""The README's first command, exactly as written, on what a fresh machine looks like.

A newcomer copies the first ``bash`` block of README.md into a shell in the checkout. That
shell has a new HOME and a PATH without ``~/.local/bin`` (a fresh Debian account) and no
pipx, so install.sh takes its venv path. The block is read from README.md at test time, so
editing the README cannot leave this test checking an older command.

The checkout is copied first: the block runs in the checkout's folder, and ``flower demo``
writes ``./flower-demo`` there (pip also leaves build files beside the sources). pip uses
the machine's configured index; the install takes about 20 s here, the demo about as long.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: what a copy of the checkout leaves out: VCS data, caches, earlier runs and builds
_NOT_COPIED = (".git", ".venv", "venv", "runs", "flower-demo", "site", "build", "dist",
               "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache", ".hypothesis",
               ".benchmarks", ".import_linter_cache", ".flower")


def first_block(markdown: str) -> str:
    """The first fenced ``bash`` block: the command a newcomer runs first."""
    found = re.search(r"^```bash\n(.*?)^```", markdown, re.M | re.S)
    assert found, "README.md has no ```bash block"
    return found.group(1)


def fresh_path() -> str:
    """The system PATH of a fresh account: no ~/.local/bin, no virtualenv, no pipx."""
    dirs = ["/usr/local/bin", "/usr/bin", "/bin"]
    return os.pathsep.join(d for d in dirs
                           if Path(d).is_dir() and not (Path(d) / "pipx").exists())


def test_first_block_reads_the_readme() -> None:
    assert first_block("x\n```\nnot bash\n```\n```bash\na && b\n```\n") == "a && b\n"
    assert "install.sh" in first_block(README.read_text(encoding="utf-8"))


@pytest.mark.e2e
def test_the_readmes_first_command_works_as_written(tmp_path: Path) -> None:
    block = first_block(README.read_text(encoding="utf-8"))
    checkout = tmp_path / "flower"
    shutil.copytree(ROOT, checkout, ignore=shutil.ignore_patterns(*_NOT_COPIED))
    home = tmp_path / "home"
    home.mkdir()
    # FLOWER_DEMO_PAUSE=0: the demo's pause before each fake reply (time for a person to
    # press Ctrl-C) would add ~12 s of idle waiting; the block itself runs as written
    env = {"HOME": str(home), "PATH": fresh_path(), "LANG": "C.UTF-8", "COLUMNS": "120",
           "NO_COLOR": "1", "FLOWER_DEMO_PAUSE": "0"}
    for key in ("FLOWER_PIP_ARGS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS",
                "PIP_CONFIG_FILE"):  # where this machine's pip finds packages, if set
        if key in os.environ:
            env[key] = os.environ[key]
    assert str(home / ".local" / "bin") not in env["PATH"]

    out = subprocess.run(["bash", "-c", block], cwd=checkout, env=env, capture_output=True,
                         text=True, timeout=900, stdin=subprocess.DEVNULL)

    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "已达成" in out.stdout  # the demo ran to its end: the judge passed the goal
    assert (checkout / "flower-demo" / "runs" / "manifest.json").is_file()
    assert (home / ".local" / "bin" / "flower").is_symlink()


def _pip_line(markdown: str) -> str:
    """The developer's install line: the one that runs ``pip install -e``."""
    lines = [ln.strip() for ln in markdown.splitlines() if "pip install -e" in ln]
    assert lines, "no `pip install -e` line"
    return lines[0]


def test_the_docs_site_starts_the_way_the_readme_does() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    assert first_block(index) == first_block(readme)  # the first command, same words
    assert _pip_line(index) == _pip_line(readme)  # the editable install, same extras

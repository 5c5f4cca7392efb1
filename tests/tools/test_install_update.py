"""``flower update`` in an environment ``install.sh`` made: the install records its source
(here a local git repository, a copy of this checkout), ``flower update --check`` sees the
commit added since, and ``flower update`` installs it into the same venv — the way it was
installed, nothing else touched.

Really runs pip, twice (the install and the update), as test_install.py does: the
dependencies come from the package index the machine's pip is configured with (set
FLOWER_PIP_ARGS to point it at a local wheelhouse instead).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from test_install import ROOT, SCRIPT, _env, _run

GIT = shutil.which("git") or "git"


def git(repo: Path, *args: str) -> str:
    return subprocess.run([GIT, "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def source_repo(path: Path) -> Path:
    """This checkout's package as it is now (committed or not), in a repository of its own."""
    shutil.copytree(ROOT / "flower", path / "flower",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, path / name)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.invalid")
    git(path, "config", "user.name", "t")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "as installed")
    return path


def bump(repo: Path, version: str) -> str:
    for name, pattern in (("pyproject.toml", r'^version = "[^"]+"'),
                          ("flower/__init__.py", r'^__version__ = "[^"]+"')):
        path = repo / name
        text = re.sub(pattern, pattern.split(" = ")[0].lstrip("^") + f' = "{version}"',
                      path.read_text(), count=1, flags=re.MULTILINE)
        path.write_text(text)
    git(repo, "commit", "-q", "-am", f"release {version}")
    return git(repo, "rev-parse", "HEAD")


def test_update_installs_the_newer_commit_into_the_install_sh_venv(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    repo = source_repo(tmp_path / "src")
    prefix, bin_dir = tmp_path / "prefix", tmp_path / "bin"
    env = _env(home, FLOWER_PREFIX=str(prefix), FLOWER_BIN_DIR=str(bin_dir),
               FLOWER_NO_PIPX="1")
    out = _run([str(SCRIPT), "--source", str(repo)], env, tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    record = json.loads((prefix / "install.json").read_text())
    old = git(repo, "rev-parse", "HEAD")
    assert record["method"] == "venv" and record["source"] == str(repo)
    assert record["sha"] == old and record["venv"] == str(prefix / "venv")

    flower = str(bin_dir / "flower")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([flower, *args], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=600, stdin=subprocess.DEVNULL)

    latest = run("update", "--check")
    assert latest.returncode == 0 and "已经是最新" in latest.stdout, latest.stdout

    new = bump(repo, "0.1.1")
    check = run("update", "--check")
    assert check.returncode == 0 and f"有新版本 {new[:7]}:flower update" in check.stdout
    assert run("--version").stdout.strip().endswith("0.1.0")  # --check installs nothing

    done = run("update")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "下次运行 flower 生效" in done.stdout
    assert run("--version").stdout.strip().endswith("0.1.1")  # the new commit, same venv
    assert json.loads((prefix / "install.json").read_text())["sha"] == new
    after = run("update", "--check")
    assert after.returncode == 0 and "已经是最新" in after.stdout
    assert list((prefix / "venv" / "bin").glob("flower")) and bin_dir.joinpath("flower") \
        .resolve() == (prefix / "venv" / "bin" / "flower").resolve()

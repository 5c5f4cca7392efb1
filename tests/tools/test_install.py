"""install.sh in a fresh HOME: venv + symlink from the checkout, idempotent, --uninstall,
the pipx path (with a recording stand-in for pipx), and `flower demo` from the installed copy.

The venv path really runs pip: it installs this checkout and its dependencies from the
package index (about 20 s here; set FLOWER_PIP_ARGS in the environment to point pip at a
local wheelhouse instead).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "install.sh"


def _base_path() -> str:
    """System PATH without pipx, uv or any virtualenv's bin."""
    dirs = ["/usr/local/bin", "/usr/bin", "/bin"]
    return os.pathsep.join(d for d in dirs
                           if Path(d).is_dir() and not (Path(d) / "pipx").exists())


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {"HOME": str(home), "PATH": _base_path(), "LANG": "C.UTF-8"}
    for key in ("FLOWER_PIP_ARGS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS",
                "PIP_CONFIG_FILE"):
        if key in os.environ:
            env[key] = os.environ[key]
    env.update(extra)
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300,
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".claude").mkdir(parents=True)
    return h


def test_venv_install_is_idempotent_runs_the_demo_and_uninstalls(home: Path,
                                                                  tmp_path: Path) -> None:
    env = _env(home)
    first = _run([str(SCRIPT)], env, tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    link = home / ".local" / "bin" / "flower"
    venv = home / ".local" / "share" / "flower" / "venv"
    assert link.is_symlink() and Path(os.readlink(link)) == venv / "bin" / "flower"
    assert "is not on your PATH" in first.stdout  # ~/.local/bin is not on this PATH
    version = subprocess.run([str(link), "--version"], capture_output=True, text=True, env=env)
    assert version.returncode == 0 and "0.1.0" in version.stdout
    # the installed copy is a real install, not this checkout
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import flower; print(flower.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert str(venv) in where.stdout, where.stdout + where.stderr

    again = _run([str(SCRIPT)], {**env, "PATH": f"{link.parent}:{env['PATH']}"}, tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "reusing" in again.stdout and "is not on your PATH" not in again.stdout
    assert link.is_symlink() and (venv / "bin" / "flower").is_file()

    # the installed copy runs the whole default job offline, with no credentials (without
    # the pause before each fake reply that gives a person time to press Ctrl-C: ~12 s idle)
    demo = subprocess.run([str(link), "demo", "-w", str(tmp_path / "demo")],
                          env={**env, "COLUMNS": "120", "NO_COLOR": "1",
                               "FLOWER_DEMO_PAUSE": "0"}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "已达成" in demo.stdout
    assert (tmp_path / "demo" / "runs" / "manifest.json").is_file()

    gone = _run([str(SCRIPT), "--uninstall"], env, tmp_path)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert not link.exists() and not link.is_symlink() and not venv.exists()
    again = _run([str(SCRIPT), "--uninstall"], env, tmp_path)
    assert again.returncode == 0 and "nothing to uninstall" in again.stdout


def _fake_pipx(bin_dir: Path, log: Path) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    pipx = bin_dir / "pipx"
    pipx.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >> "{log}"\n'
        'if [ "$1" = list ]; then echo "flower 0.1.0"; exit 0; fi\n'
        'if [ "$1" = install ]; then\n'
        f'  printf "#!/bin/sh\\necho flower, version 0.1.0\\n" > "{bin_dir}/flower"\n'
        f'  chmod +x "{bin_dir}/flower"\n'
        "fi\n")
    pipx.chmod(0o755)


def test_pipx_when_present(home: Path, tmp_path: Path) -> None:
    bin_dir, log = tmp_path / "pipxbin", tmp_path / "pipx.log"
    _fake_pipx(bin_dir, log)
    env = _env(home, PATH=f"{bin_dir}:{_base_path()}", FLOWER_PIP_ARGS="--no-cache-dir -q")
    out = _run([str(SCRIPT)], env, tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    calls = log.read_text().splitlines()
    assert calls == [f"install --force --pip-args --no-cache-dir -q {ROOT}"]
    assert not (home / ".local" / "share" / "flower" / "venv").exists()  # no venv of our own
    record = json.loads((home / ".local" / "share" / "flower" / "install.json").read_text())
    assert (record["method"], record["source"], record["version"]) == ("pipx", str(ROOT),
                                                                       "0.1.0")
    assert "installed: flower, version 0.1.0" in out.stdout
    out = _run([str(SCRIPT), "--uninstall"], env, tmp_path)
    assert out.returncode == 0 and "uninstall flower" in log.read_text()
    assert not (home / ".local" / "share" / "flower").exists()  # the record went too


def test_outside_a_checkout_needs_a_source(home: Path, tmp_path: Path) -> None:
    lone = tmp_path / "elsewhere" / "install.sh"
    lone.parent.mkdir()
    shutil.copy(SCRIPT, lone)
    bin_dir, log = tmp_path / "pipxbin", tmp_path / "pipx.log"
    _fake_pipx(bin_dir, log)
    env = _env(home, PATH=f"{bin_dir}:{_base_path()}")
    out = _run([str(lone)], env, tmp_path)
    assert out.returncode == 1 and "FLOWER_SOURCE" in out.stderr
    assert not log.exists()
    # piped into bash (curl … | bash): no script path at all
    piped = subprocess.run(["bash", "-s"], input=SCRIPT.read_text(), env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert piped.returncode == 1 and "FLOWER_SOURCE" in piped.stderr
    out = _run([str(lone), "--source", "/some/wheel.whl"], env, tmp_path)
    assert out.returncode == 0, out.stderr
    # FLOWER_NO_UPDATE: the record is written without asking the (unreachable) git source
    out = _run([str(lone)], {**env, "FLOWER_SOURCE": "git+https://example.invalid/f.git",
                             "FLOWER_NO_UPDATE": "1"}, tmp_path)
    assert out.returncode == 0, out.stderr
    assert log.read_text().splitlines() == ["install --force /some/wheel.whl",
                                            "install --force git+https://example.invalid/f.git"]


def test_bad_arguments_and_help(home: Path, tmp_path: Path) -> None:
    env = _env(home)
    out = _run([str(SCRIPT), "--bogus"], env, tmp_path)
    assert out.returncode == 1 and "unknown argument" in out.stderr
    out = _run([str(SCRIPT), "--source"], env, tmp_path)
    assert out.returncode == 1 and "--source needs a value" in out.stderr
    out = _run([str(SCRIPT), "--help"], env, tmp_path)
    assert out.returncode == 0 and "--uninstall" in out.stdout
    assert not (home / ".local").exists()


def test_a_foreign_flower_on_the_link_is_not_overwritten(home: Path, tmp_path: Path) -> None:
    link = home / ".local" / "bin" / "flower"
    link.parent.mkdir(parents=True)
    link.write_text("#!/bin/sh\necho someone else's\n")
    out = _run([str(SCRIPT), "--uninstall"], _env(home), tmp_path)
    assert out.returncode == 0 and "not installed by this script" in out.stdout
    assert link.read_text().startswith("#!/bin/sh")

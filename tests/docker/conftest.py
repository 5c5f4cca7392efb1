"""The box for real: a Debian base made offline with mmdebstrap (cached by its package list),
the image built from this checkout by ``docker/build --base`` with the machine's extra CA
certificates, and ``docker/flowerbox`` run as a user who is not root.

Everything here is session-scoped: one base, one image, one user for all docker tests. Without a
Docker daemon (or without mmdebstrap to make the base) the tests are skipped, saying why —
.ci/run installs both and starts dockerd, so there they always run.
"""

from __future__ import annotations

import contextlib
import grp
import hashlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOX = ROOT / "docker" / "flowerbox"
SUITE = "bookworm"
#: What flower needs in the base: python3 with venv and pip, the CA store, git (--isolate),
#: libstdc++6 (the CLI binary bundled in the SDK wheel). The Dockerfile adds bwrap and socat.
PACKAGES = ("python3", "python3-venv", "python3-pip", "ca-certificates", "git", "libstdc++6")
IMAGE = "flowerbox-test:latest"
USER = "flowerbox-test"
HOST_CAS = Path("/usr/local/share/ca-certificates")  # where Debian keeps a machine's own CAs


def docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def _daemon_or_skip() -> None:
    if shutil.which("docker") is None:
        pytest.skip("docker is not installed (.ci/run installs docker.io and starts dockerd)")
    try:
        info = docker("info", "--format", "{{.ServerVersion}}", timeout=30)
    except subprocess.TimeoutExpired:
        pytest.skip("the Docker daemon does not answer (docker info timed out)")
    if info.returncode != 0:
        last = (info.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"no Docker daemon to talk to: {last}")


def apt_mirror() -> str:
    """The Debian mirror this machine's apt uses for SUITE (a proxy or local mirror may be
    the only one reachable), else deb.debian.org."""
    files = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for f in files:
        try:
            text = f.read_text()
        except OSError:
            continue
        uris: list[str] = []
        for line in text.splitlines():
            words = line.split("#", 1)[0].split()
            if len(words) >= 3 and words[0] == "deb":
                rest = [w for w in words[1:] if not w.startswith("[")]
                if len(rest) >= 2 and rest[1] == SUITE:
                    return rest[0]
            if words[:1] == ["URIs:"]:
                uris = words[1:]
            if words[:1] == ["Suites:"] and SUITE in words[1:] and uris:
                return uris[0]
    return "http://deb.debian.org/debian"


def host_pip_index() -> str | None:
    """The package index the host's pip uses, when it is one a container can reach (http)."""
    url = os.environ.get("PIP_INDEX_URL")
    if not url:
        out = subprocess.run(["python3", "-m", "pip", "config", "list"], capture_output=True,
                             text=True, check=False).stdout
        for line in out.splitlines():
            key, _, value = line.partition("=")
            if key.endswith(".index-url") and not key.endswith("extra-index-url"):
                url = value.strip("'\"")
    return url if url and url.startswith(("http://", "https://")) else None


@pytest.fixture(scope="session")
def base_image() -> str:
    """A Debian base from packages, no registry needed; rebuilt only when PACKAGES change."""
    _daemon_or_skip()
    tag = "flowerbox-test-base:" + hashlib.sha256(
        f"{SUITE} {','.join(PACKAGES)}".encode()).hexdigest()[:12]
    if docker("image", "inspect", tag).returncode == 0:
        return tag
    if shutil.which("mmdebstrap") is None:
        pytest.skip("mmdebstrap is not installed: it makes the base image without a registry "
                    "(apt-get install mmdebstrap; .ci/run does)")
    with tempfile.TemporaryDirectory(prefix="flowerbox-base-") as tmp:
        tar = Path(tmp) / "base.tar"
        made = subprocess.run(
            ["mmdebstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE,
             str(tar), apt_mirror()], capture_output=True, text=True, timeout=900, check=False)
        assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
        imported = docker("import", str(tar), tag, timeout=300)
        assert imported.returncode == 0, imported.stderr
    return tag


@pytest.fixture(scope="session")
def image(base_image: str) -> str:
    """flower-box from this checkout, trusting the machine's extra CAs (a TLS-intercepting
    proxy here: pip inside the build fails without them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER")}
    env["FLOWER_IMAGE"] = IMAGE
    if any(HOST_CAS.glob("*.crt")):
        env["FLOWER_CA_CERTS"] = str(HOST_CAS)
    index = host_pip_index()
    if index:
        env["FLOWER_PIP_INDEX"] = index
    built = subprocess.run([str(ROOT / "docker" / "build"), "--base", base_image], env=env,
                           capture_output=True, text=True, timeout=1200, check=False)
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-3000:]
    return IMAGE


@dataclass
class Person:
    """Who runs flowerbox: a fresh non-root user when the tests run as root (root is
    Docker's default, so a uid mapping bug would go unseen), else the current user."""

    name: str
    uid: int
    gid: int
    home: Path
    via: list[str]  # the command prefix that runs as this user

    def run(self, args: list[str], cwd: Path, timeout: float = 600,
            **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.popen_args(args, env), cwd=cwd, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)

    def popen_args(self, args: list[str], env: dict[str, str]) -> list[str]:
        clean = {"HOME": str(self.home), "PATH": os.environ.get("PATH", os.defpath),
                 "LANG": "C.UTF-8", "FLOWER_IMAGE": IMAGE, **env}
        return [*self.via, "env", "-i", *(f"{k}={v}" for k, v in clean.items()), str(BOX),
                *args]

    def own(self, path: Path) -> None:
        if self.via:
            os.chown(path, self.uid, self.gid)


@pytest.fixture(scope="session")
def person(image: str) -> Iterator[Person]:
    if os.getuid() != 0:
        me = pwd.getpwuid(os.getuid())
        yield Person(me.pw_name, me.pw_uid, me.pw_gid, Path(me.pw_dir), [])
        return
    sock = Path("/var/run/docker.sock")
    group = grp.getgrgid(sock.stat().st_gid).gr_name if sock.exists() else "docker"
    created = False
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--groups", group, USER], check=True)
        created = True
    entry = pwd.getpwnam(USER)
    p = Person(USER, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir), ["runuser", "-u", USER, "--"])
    check = subprocess.run([*p.via, "docker", "version", "--format", "{{.Server.Version}}"],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, f"{USER} cannot reach the daemon: {check.stderr}"
    try:
        yield p
    finally:
        if created:
            subprocess.run(["userdel", "--remove", USER], capture_output=True, check=False)


@pytest.fixture
def scratch(person: Person) -> Iterator[Path]:
    """An empty folder the user owns, outside root's private pytest tmp (which it cannot
    enter) and under no $HOME, so flowerbox's mount probe runs too."""
    d = Path(tempfile.mkdtemp(prefix="flowerbox-ws-")).resolve()
    person.own(d)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def global_env(person: Person) -> Iterator[Path]:
    """The user's ``~/.config/flower/.env`` (what ``flower setup`` writes), removed after."""
    cfg = person.home / ".config"
    made = [d for d in (cfg, cfg / "flower") if not d.exists()]
    for d in made:
        d.mkdir()
        person.own(d)
    path = cfg / "flower" / ".env"
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()

"""``flower doctor``: what a run on this machine needs, each checked for real, one line each.

A newcomer's ``flower doctor`` used to start a paid run with "doctor" as the requirement; the
questions it asks are the ones a failed first run leaves: is there a credential and does the
gateway take it, is the bundled ``claude`` CLI there and does it start, can Bash be
sandboxed, is docker there (only ``docker/flowerbox`` needs it), does the session store
answer, is there disk. Each check says ok, or what to do. Secrets only ever appear masked.

Checks are yielded one by one, so the terminal shows each as it is known (the probe and a
PostgreSQL connect can take seconds). No check raises: a surprise is its ``fail`` line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from flower import texts
from flower.core import env as envmod
from flower.core.sandbox import probe_platform
from flower.errors import one_line
from flower.stores.url import configured_url, display_url, is_postgres_url, sqlite_path

__all__ = ["FAIL", "OK", "WARN", "Check", "bundled_cli", "checks"]

OK, WARN, FAIL = "ok", "warn", "fail"
#: below this much free space a long run's transcripts and checkpoints may not fit
LOW_DISK = 1 << 30
PROBE_TIMEOUT = 20.0
_TIMEOUT = 15.0  # `claude --version`, `docker info`, a PostgreSQL connect


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, ok/warn/fail, and what was found."""

    name: str
    state: str
    line: str


def bundled_cli() -> Path:
    """Where the SDK's bundled ``claude`` lives (the one every flower session runs)."""
    import claude_agent_sdk

    name = "claude.exe" if os.name == "nt" else "claude"
    return Path(claude_agent_sdk.__file__).parent / "_bundled" / name


def _run(argv: list[str]) -> tuple[int, str]:
    """``(exit code, first line of output)``; a start failure or a timeout is code -1."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return -1, one_line(exc, 160)
    text = (done.stdout.strip() or done.stderr.strip()).splitlines()
    return done.returncode, one_line(text[-1] if done.returncode and text else
                                     (text[0] if text else ""), 160)


def credentials(env: Mapping[str, str], probe: bool) -> Check:
    name = texts.DOCTOR_CREDS
    if envmod.check_credentials(env):
        return Check(name, FAIL, texts.DOCTOR_CREDS_MISSING.format(path=envmod.user_env_path()))
    key = next(k for k in envmod.REQUIRED_ANY if env.get(k))
    base = display_url(env.get("ANTHROPIC_BASE_URL") or envmod.DEFAULT_BASE_URL)
    said = texts.DOCTOR_CREDS_SET.format(key=key, masked=envmod.mask(env[key]), url=base)
    if not probe:
        return Check(name, OK, f"{said} · {texts.DOCTOR_PROBE_SKIPPED}")
    verdict, detail = envmod.probe_credentials(PROBE_TIMEOUT, environ=env)
    detail = envmod.redact(" ".join(detail.split()), envmod.secret_values(env))
    if verdict == envmod.PROBE_OK:
        return Check(name, OK, f"{said} · {texts.DOCTOR_PROBE_OK}")
    if verdict == envmod.PROBE_NET:
        return Check(name, WARN, f"{said} · {texts.DOCTOR_PROBE_NET.format(detail=detail)}")
    line = texts.DOCTOR_PROBE_AUTH if verdict == envmod.PROBE_AUTH else texts.DOCTOR_PROBE_CONFIG
    return Check(name, FAIL, f"{said} · {line.format(detail=detail)}")


def cli() -> Check:
    name = texts.DOCTOR_CLI
    path = bundled_cli()
    if not path.is_file():
        return Check(name, FAIL, texts.DOCTOR_CLI_MISSING.format(path=path))
    code, first = _run([str(path), "--version"])
    if code != 0:
        return Check(name, FAIL, texts.DOCTOR_CLI_BROKEN.format(path=path, detail=first))
    return Check(name, OK, texts.DOCTOR_CLI_OK.format(version=first, path=path))


def sandbox(env: Mapping[str, str]) -> Check:
    name = texts.DOCTOR_SANDBOX
    machine = probe_platform(env)
    if machine.ok:
        return Check(name, OK, texts.DOCTOR_SANDBOX_WEAK if machine.weak else
                     texts.DOCTOR_SANDBOX_OK)
    return Check(name, WARN, texts.DOCTOR_SANDBOX_NONE.format(why=machine.why, how=machine.how))


def git(env: Mapping[str, str]) -> Check:
    found = shutil.which("git", path=env.get("PATH", os.defpath))
    if found is None:
        return Check(texts.DOCTOR_GIT, WARN, texts.DOCTOR_GIT_NONE)
    code, first = _run([found, "--version"])
    return Check(texts.DOCTOR_GIT, OK if code == 0 else WARN, first or found)


def docker(env: Mapping[str, str]) -> Check:
    name = texts.DOCTOR_DOCKER
    found = shutil.which("docker", path=env.get("PATH", os.defpath))
    if found is None:
        return Check(name, WARN, texts.DOCTOR_DOCKER_NONE)
    code, first = _run([found, "info", "--format", "{{.ServerVersion}}"])
    if code != 0:
        return Check(name, WARN, texts.DOCTOR_DOCKER_DOWN.format(detail=first))
    return Check(name, OK, texts.DOCTOR_DOCKER_OK.format(version=first))


def _writable(path: Path) -> Path:
    """The nearest folder at or above ``path`` that exists (what a mkdir would write in)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def store(run_dir: Path, env: Mapping[str, str], explicit: str | None) -> Check:
    name = texts.DOCTOR_STORE
    url = configured_url(explicit, env=env)
    if url is None or not is_postgres_url(url):
        db = sqlite_path(url) if url else run_dir / "sessions.db"
        at = _writable(db.parent)
        if not os.access(at, os.W_OK):
            return Check(name, FAIL, texts.DOCTOR_STORE_READONLY.format(path=db, folder=at))
        return Check(name, OK, texts.DOCTOR_STORE_SQLITE.format(path=db))
    shown = display_url(url)
    try:
        import psycopg
    except ImportError:
        return Check(name, FAIL, texts.DOCTOR_STORE_NO_DRIVER.format(url=shown))
    try:
        with psycopg.connect(url, connect_timeout=int(_TIMEOUT)) as conn:
            version = conn.execute("show server_version").fetchone()
    except Exception as exc:  # any refusal is this line: the driver's classes vary
        detail = envmod.redact(one_line(str(exc), 160), [url, *_password(url)])
        return Check(name, FAIL, texts.DOCTOR_STORE_DOWN.format(url=shown,
                                                                detail=display_url(detail)))
    return Check(name, OK, texts.DOCTOR_STORE_PG.format(url=shown,
                                                        version=version[0] if version else "?"))


def _password(url: str) -> list[str]:
    from urllib.parse import urlsplit

    try:
        pw = urlsplit(url).password
    except ValueError:
        return []
    return [pw] if pw else []


def disk(run_dir: Path) -> Check:
    name = texts.DOCTOR_DISK
    at = _writable(run_dir)
    try:
        free = shutil.disk_usage(at).free
    except OSError as exc:
        return Check(name, WARN, one_line(exc, 160))
    gb = f"{free / (1 << 30):.1f}"
    if free < LOW_DISK:
        return Check(name, WARN, texts.DOCTOR_DISK_LOW.format(gb=gb, path=at))
    return Check(name, OK, texts.DOCTOR_DISK_OK.format(gb=gb, path=at))


def checks(run_dir: Path, *, store_url: str | None = None,
           environ: Mapping[str, str] | None = None) -> Iterator[Check]:
    """Every check, in the order a first run meets them. ``environ``: the merged settings
    (default: the process environment and flower's ``.env`` files, as a run reads them)."""
    env = envmod.effective_env() if environ is None else environ
    probe = not env.get("FLOWER_NO_PROBE")
    steps: list[tuple[str, Callable[[], Check]]] = [
        (texts.DOCTOR_CREDS, lambda: credentials(env, probe)), (texts.DOCTOR_CLI, cli),
        (texts.DOCTOR_SANDBOX, lambda: sandbox(env)), (texts.DOCTOR_GIT, lambda: git(env)),
        (texts.DOCTOR_DOCKER, lambda: docker(env)),
        (texts.DOCTOR_STORE, lambda: store(run_dir, env, store_url)),
        (texts.DOCTOR_DISK, lambda: disk(run_dir))]
    for name, step in steps:
        try:
            yield step()
        except Exception as exc:  # a check that cannot even run is its own failed line
            yield Check(name, FAIL, one_line(exc, 160))

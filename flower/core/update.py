"""Knowing that a newer flower exists — and saying so, never installing it unasked.

``install.sh`` records where it installed flower from and how (``install.json``: the
source — a git URL or a local path —, the method — ``venv``, ``pipx`` or ``uv`` —, and the
commit or version it installed). At the start of a run in a terminal, :func:`background`
asks the source in a daemon thread whether it has something newer; the terminal prints
one line after the closing cost line (``有新版本 abc1234:flower update``), and
``flower update`` upgrades the same way it was installed.

The promises the original flower made about its own updater still hold: it never blocks
work (a daemon thread; the run never waits for it), never replaces the running process,
fails silently, asks at most once per 24 h (``${XDG_CONFIG_HOME:-~/.config}/flower/.update``,
JSON, written atomically before the source is contacted), and is skipped entirely — no
record read, no source contacted — with ``FLOWER_NO_UPDATE`` set to anything, in a source
checkout (a ``.git`` beside the package), or when stdin is not a terminal.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flower import config
from flower.core.paths import atomic_write
from flower.errors import UpdateError

__all__ = ["INTERVAL_S", "Check", "Install", "UpdateError", "background", "installer",
           "load_install", "probe", "record_paths", "short", "source_checkout", "stamp_path"]

RECORD = "install.json"
INTERVAL_S = 24 * 3600.0
GIT_TIMEOUT_S = 6.0
_SHA = re.compile(r"[0-9a-f]{40}")
_VERSION = re.compile(r'^version\s*=\s*["\']([^"\']+)["\']', re.MULTILINE)


@dataclass
class Install:
    """What ``install.sh`` wrote down: enough to ask the source and to install again."""

    method: str
    source: str
    sha: str = ""
    version: str = ""
    venv: str = ""
    pip_args: str = ""
    path: Path | None = field(default=None, compare=False)

    def save(self) -> None:
        """Rewrite the record (after ``flower update`` installed something newer)."""
        if self.path is None:
            return
        data = {k: v for k, v in asdict(self).items() if k != "path"}
        atomic_write(self.path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def record_paths() -> list[Path]:
    """Where ``install.sh`` leaves the record: beside its venv (``<prefix>/install.json``,
    the running interpreter's prefix being ``<prefix>/venv``), else the default prefix."""
    return [Path(sys.prefix).parent / RECORD,
            Path.home() / ".local" / "share" / "flower" / RECORD]


def load_install() -> Install | None:
    """The record of the install that is running now, or ``None``. A venv record whose venv
    is not this interpreter's belongs to another install and is ignored."""
    for path in record_paths():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not data.get("method") or not data.get("source"):
            continue
        known = {k: str(data.get(k) or "") for k in
                 ("method", "source", "sha", "version", "venv", "pip_args")}
        rec = Install(**known, path=path)
        if rec.method == "venv" and rec.venv and not _same(rec.venv, sys.prefix):
            continue
        return rec
    return None


def _same(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def source_checkout() -> Path | None:
    """The repository flower runs from, when it runs from one (never updated by flower)."""
    root = config._REPO_ROOT
    return root if (root / ".git").exists() else None


def stamp_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "flower" / ".update"


def short(value: str) -> str:
    """A commit as its first seven characters; a version as it is."""
    return value[:7] if _SHA.fullmatch(value) else value


# --- asking the source -----------------------------------------------------------------------


def git_source(spec: str) -> tuple[str, str] | None:
    """``(url, ref)`` of a pip VCS spec ``git+URL[@ref][#fragment]`` (ref ``HEAD`` if none)."""
    if not spec.startswith("git+"):
        return None
    url = spec[4:].split("#", 1)[0]
    head, sep, ref = url.rpartition("@")
    if sep and ref and "/" not in ref:
        return head, ref
    return url, "HEAD"


#: What may pass from the environment into the update check's git: the CA settings a
#: proxy with its own CA needs; every other ``GIT_*`` (GIT_DIR, GIT_CONFIG_*, GIT_EXEC_PATH,
#: GIT_SSH_COMMAND …) could point git at another repository, config or program.
_GIT_ENV_KEEP = ("GIT_SSL_CAINFO", "GIT_SSL_CAPATH")


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") or k in _GIT_ENV_KEEP}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true",
                "GIT_SSH_COMMAND": "ssh -o BatchMode=yes", "GIT_PROTOCOL_FROM_USER": "0"})
    return env


def _protocols(url: str | None) -> list[str]:
    """Only https and file — and ssh when the recorded source itself is an ssh URL: a
    repository's ``url.*.insteadOf`` cannot turn the source into ``ext::`` (a command)."""
    allowed = ["https", "file"]
    if url and (url.startswith("ssh://") or re.match(r"^[\w.-]+@[\w.-]+:", url)):
        allowed.append("ssh")
    out = ["-c", "protocol.allow=never"]
    for name in allowed:
        out += ["-c", f"protocol.{name}.allow=always"]
    return out


def _git(*args: str, timeout: float, url: str | None = None) -> str:
    """git with no system, user or repository config in reach: its cwd is a fresh empty
    folder (the workspace's ``.git/config`` — writable by every worker — could otherwise
    rewrite the URL into a command), hooks and fsmonitor off, only safe protocols."""
    import tempfile

    safe = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
            *_protocols(url)]
    try:
        with tempfile.TemporaryDirectory(prefix="flower-update-") as cwd:
            out = subprocess.run(["git", *safe, *args], capture_output=True, text=True,
                                 timeout=timeout, stdin=subprocess.DEVNULL, env=_git_env(),
                                 cwd=cwd)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UpdateError(f"git {args[0]}: {exc}") from exc
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
        raise UpdateError(f"git {args[0]}: {why}")
    return out.stdout


def _pyproject_version(folder: Path) -> str:
    try:
        m = _VERSION.search((folder / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UpdateError(str(exc)) from exc
    if m is None:
        raise UpdateError(f"no version in {folder / 'pyproject.toml'}")
    return m.group(1)


def probe(install: Install, *, timeout: float = GIT_TIMEOUT_S) -> tuple[str, str]:
    """``(latest, installed)`` of the same kind — two commits or two versions; they differ
    exactly when the source has something newer. Raises :class:`UpdateError`."""
    git = git_source(install.source)
    if git is not None:
        url, ref = git
        if _SHA.fullmatch(ref):
            return ref, install.sha or ref  # pinned to a commit: never anything newer
        listed = _git("ls-remote", url, ref, timeout=timeout, url=url).split()
        if not listed or not _SHA.fullmatch(listed[0]):
            raise UpdateError(f"{url} has no {ref}")
        if not install.sha:
            raise UpdateError("the installed commit was not recorded")
        return listed[0], install.sha
    folder = Path(install.source).expanduser()
    if not folder.is_dir():
        raise UpdateError(f"{install.source} is neither a git URL nor a folder")
    if install.sha and (folder / ".git").exists():
        return _git("-C", str(folder), "rev-parse", "HEAD", timeout=timeout).strip(), install.sha
    if not install.version:
        raise UpdateError("the installed version was not recorded")
    return _pyproject_version(folder), install.version


def installer(install: Install, environ: dict[str, str] | None = None) -> list[str]:
    """The command that installs ``install.source`` again the way ``install.sh`` did.
    ``FLOWER_PIP_ARGS`` (now, else as recorded) goes to pip, as in ``install.sh``."""
    env = os.environ if environ is None else environ
    pip_args = (env.get("FLOWER_PIP_ARGS") or install.pip_args).split()
    if install.method == "venv":
        python = str(Path(install.venv or sys.prefix) / "bin" / "python")
        return [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                "--upgrade", *pip_args, install.source]
    if install.method == "pipx":
        extra = ["--pip-args", " ".join(pip_args)] if pip_args else []
        return ["pipx", "install", "--force", *extra, install.source]
    if install.method == "uv":
        return ["uv", "tool", "install", "--force", install.source]
    raise UpdateError(install.method)


# --- the background check ----------------------------------------------------------------------


def _read_stamp(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_stamp(path: Path, **data: Any) -> None:
    try:
        atomic_write(path, json.dumps(data, ensure_ascii=False) + "\n")
    except (OSError, ValueError):
        pass


class Check:
    """One background look at the source; :meth:`notice` is what the terminal prints."""

    def __init__(self, cached: str | None = None) -> None:
        self.found: str | None = cached  # the newer version/commit, shortened
        self._thread: threading.Thread | None = None

    def start(self, install: Install, stamp: Path, now: float) -> Check:
        def look() -> None:
            try:
                latest, installed = probe(install)
            except Exception:  # silent: a failed check is no news
                return
            if latest != installed:
                self.found = short(latest)
            _write_stamp(stamp, checked=now, installed=installed, latest=latest)

        self._thread = threading.Thread(target=look, name="flower-update", daemon=True)
        self._thread.start()
        return self

    def notice(self, wait: float = 0.0) -> str | None:
        """The newer version or commit, if one was found (waits at most ``wait`` seconds
        for a check still running, then gives up on it)."""
        if self._thread is not None:
            self._thread.join(max(0.0, wait))
        return self.found


def background(*, tty: bool | None = None, now: float | None = None) -> Check:
    """Start the check if it is due; the returned :class:`Check` is inert when it is not.

    Within 24 h of the last check the source is not asked again, but a newer version that
    check found is still reported (until ``flower update`` or a reinstall catches up).
    """
    if os.environ.get("FLOWER_NO_UPDATE") or source_checkout() is not None:
        return Check()
    interactive = tty if tty is not None else _stdin_is_tty()
    if not interactive:
        return Check()
    try:
        install = load_install()
        if install is None:
            return Check()
        stamp = stamp_path()
        t = time.time() if now is None else now
        last = _read_stamp(stamp)
        checked = last.get("checked")
        if isinstance(checked, (int, float)) and 0 <= t - checked < INTERVAL_S:
            latest, installed = str(last.get("latest") or ""), str(last.get("installed") or "")
            mine = installed in (install.sha, install.version) and bool(installed)
            return Check(short(latest) if mine and latest and latest != installed else None)
        # claimed before asking: a second run, or a source that hangs, waits its 24 h
        _write_stamp(stamp, checked=t, installed=install.sha or install.version, latest="")
        return Check().start(install, stamp, t)
    except Exception:  # silent, whatever went wrong
        return Check()


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError, OSError):
        return False

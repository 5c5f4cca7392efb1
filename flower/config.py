"""Settings from the environment plus ``.env`` files — nothing else (flower has no config format).

``load_dotenv()`` fills ``os.environ`` from up to six sources, highest priority first, and a
key keeps the first value it gets (an empty value too), so priority is decided per key: a
project ``.env`` may set only the base URL while the token comes from the user's file.

1. the process environment (never overwritten unless ``override``);
2. the file named by ``$FLOWER_ENV``;
3. ``./.env``;
4. ``${XDG_CONFIG_HOME:-~/.config}/flower/.env`` (what ``flower setup`` writes);
5. ``.env`` at the source-repo root (only when running from a checkout);
6. the ``env`` blocks of ``~/.claude/settings.json`` then ``settings.local.json`` — only the
   nine ``KNOWN`` keys: we borrow where Claude Code keeps its token, not its permissions,
   hooks or models, so ``setting_sources=[]`` stays portable.

The Runtime and the CLI do not export: they read the merged mapping (:func:`effective_env`,
``load_dotenv(export=False)``) and hand ``.env`` values to the agent subprocess only, so the
process environment — and every other subprocess — stays as the user set it.

This module sits below every layer (the store URL is a setting too, read by ``flower.stores``);
checking and describing credentials lives in ``flower.core.env``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

REQUIRED_ANY = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
KNOWN = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
    "CLAUDE_CODE_EFFORT_LEVEL",
)
_REPO_ROOT = Path(__file__).resolve().parents[1]


# --- where to look ----------------------------------------------------------------------

def user_env_path() -> Path:
    """The per-user file ``flower setup`` writes (honours ``XDG_CONFIG_HOME``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "flower" / ".env"


def source_env_path() -> Path | None:
    """``.env`` beside a source checkout, or None for an installed (site-packages) flower."""
    if (_REPO_ROOT / ".git").exists() or (_REPO_ROOT / "pyproject.toml").exists():
        return _REPO_ROOT / ".env"
    return None


def state_dir() -> Path:
    """``$XDG_STATE_HOME/flower`` (default ``~/.local/state/flower``): what flower keeps for
    itself outside every workspace — the load index's key, the project ``.env`` trust."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "flower"


# --- a project .env that agents may have written -----------------------------------------
#
# Every worker can write the workspace, so a project ``.env`` may have been written by one:
# ``FLOWER_NOTIFY=…`` would run a command, ``ANTHROPIC_BASE_URL=…`` send the key elsewhere.
# flower notes the file's hash before agents run and after (``mark_env``); a file that
# changed while they ran is not read until the human says so (``flower trust-env``). A
# change made while no agent ran is the human's own. Keys that run a command are never
# taken from a project file at all.

#: Settings that make flower run a command: from the environment or the user's own files only
USER_ONLY = ("FLOWER_NOTIFY",)
_UNTRUSTED = "untrusted"  # a run's start mark when the file was not trusted at its start


def _fingerprint(path: Path) -> str:
    import hashlib

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _trust_record(path: Path) -> Path:
    import hashlib

    key = hashlib.sha256(str(path.absolute()).encode("utf-8", "surrogateescape")).hexdigest()
    return state_dir() / "env-trust" / f"{key[:32]}.json"


def _read_trust(path: Path) -> dict[str, str | None] | None:
    try:
        data = json.loads(_trust_record(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_trust(path: Path, start: str, end: str | None) -> None:
    record = _trust_record(path)
    try:
        record.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = record.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"path": str(path.absolute()), "start": start,
                                   "end": end}), encoding="utf-8")
        os.replace(tmp, record)
    except OSError:
        pass  # trust is then decided as if flower had never looked: the file is read


def env_trusted(path: Path) -> bool:
    """False when ``path`` (a project ``.env``) is as agents left it after changing it."""
    rec = _read_trust(path)
    if rec is None:
        return True
    now, start, end = _fingerprint(path), rec.get("start"), rec.get("end")
    if end is None:  # the run never ended (killed): only what was there at its start
        return now == start
    return start == end or now != end


def untrusted_env() -> Path | None:
    """The project ``.env`` this process does not read, if any (for the one line saying so)."""
    path = Path.cwd() / ".env"
    return path if path.is_file() and not env_trusted(path) else None


def mark_env(workspace: Path, *, agents_done: bool) -> None:
    """Before agents run in ``workspace``: note its ``.env`` (when it is trusted now); after:
    note what they left. ``trust_env`` is the human's yes."""
    path = workspace / ".env"
    if not agents_done:  # a file not trusted now stays so, whatever these agents do to it
        _write_trust(path, _fingerprint(path) if env_trusted(path) else _UNTRUSTED, None)
        return
    rec = _read_trust(path)
    if rec is not None and rec.get("end") is None:
        _write_trust(path, str(rec.get("start") or ""), _fingerprint(path))


def trust_env(path: Path) -> None:
    """The human read ``path`` and wants it used: its current bytes are trusted."""
    now = _fingerprint(path)
    _write_trust(path, now, now)


def claude_settings_paths() -> tuple[Path, Path]:
    d = Path.home() / ".claude"
    return d / "settings.json", d / "settings.local.json"


def _dotenv_sources() -> list[Path]:
    paths: list[Path] = []
    if os.environ.get("FLOWER_ENV"):
        paths.append(Path(os.environ["FLOWER_ENV"]).expanduser())
    project = Path.cwd() / ".env"
    if env_trusted(project):
        paths.append(project)
    paths.append(user_env_path())
    repo = source_env_path()
    if repo is not None:
        paths.append(repo)
    return paths


# --- parsing ----------------------------------------------------------------------------

def parse_dotenv(text: str) -> list[tuple[str, str]]:
    """The exact rules: strip each line; skip blank, ``#`` and ``=``-less lines; split at the
    first ``=``; strip both sides; strip any leading/trailing quotes from the value.

    Deliberately minimal: ``export K=V`` gives the key ``export K``, ``K=v # note`` keeps the
    comment, nothing is interpolated. Predictable beats clever for a credentials file.
    """
    pairs: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip().strip("'\"")
        if key:
            pairs.append((key, value))
    return pairs


def read_dotenv(path: Path) -> list[tuple[str, str]]:
    try:
        return parse_dotenv(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return []


def read_claude_settings(path: Path) -> list[tuple[str, str]]:
    """Credential keys from one Claude Code settings file; anything broken counts as empty."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    env = data.get("env") if isinstance(data, dict) else None
    if not isinstance(env, dict):
        return []
    return [(k, env[k]) for k in KNOWN if isinstance(env.get(k), str) and env[k]]


def load_dotenv(path: str | Path | None = None, *, override: bool = False,
                export: bool = True) -> dict[str, str]:
    """Fill ``os.environ`` from the sources above; returns the keys it actually set.

    An explicit ``path`` reads only that file — no fallback to the other sources. With
    ``export=False`` nothing is written anywhere: the same mapping is only returned, for a
    caller that hands it to a subprocess itself (the Runtime's agent env) or checks
    credentials with it (:func:`effective_env`) — the process env stays as the user set it.
    """
    if path is not None:
        batches: Iterable[list[tuple[str, str]]] = [read_dotenv(Path(path).expanduser())]
    else:
        project = Path.cwd() / ".env"
        files = [[kv for kv in read_dotenv(p) if p != project or kv[0] not in USER_ONLY]
                 for p in _dotenv_sources()]
        batches = files + [read_claude_settings(p) for p in claude_settings_paths()]
    claimed: set[str] = set()
    loaded: dict[str, str] = {}
    for batch in batches:
        for key, value in batch:
            if key in claimed or (key in os.environ and not override):
                claimed.add(key)
                continue
            claimed.add(key)
            if not export:
                if "\0" in key or "=" in key or "\0" in value:  # the OS could not hold it
                    continue
            else:
                try:
                    os.environ[key] = value
                except ValueError:  # NUL or '=' in the key: the OS cannot hold it
                    continue
            loaded[key] = value
    return loaded


def origin(key: str) -> Path | None:
    """The file that gives ``key`` its value, by the same priority as :func:`load_dotenv`;
    ``None`` when the process environment sets it, or nothing does. Lets an error name the
    place to fix a setting, not only the setting."""
    if key in os.environ:
        return None
    for path in _dotenv_sources():
        if any(k == key for k, _ in read_dotenv(path)):
            return path
    for path in claude_settings_paths():
        if any(k == key for k, _ in read_claude_settings(path)):
            return path
    return None


def effective_env(path: str | Path | None = None) -> dict[str, str]:
    """The process environment plus what the ``.env`` sources add — what an agent started
    now would see — without touching ``os.environ``."""
    return {**os.environ, **load_dotenv(path, export=False)}

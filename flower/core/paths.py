"""The SDK's session-store project key, computed without importing the SDK.

``sessions.db`` keys every transcript as ``<project_key>/<session_id>``; the key is what
``claude_agent_sdk.project_key_for_directory`` derives from the workspace path. Read-only
probes (``wake_state``) need it at CLI start-up, where importing the SDK would cost
noticeable time, so this is a small faithful copy — a test pins it to the SDK's function.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

try:  # POSIX advisory locks; on other platforms writes fall back to atomic-replace only
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None  # type: ignore[assignment]

MAX_KEY_LENGTH = 200
_NON_ALNUM = re.compile(r"[^a-zA-Z0-9]")


def _hash36(text: str) -> str:
    """32-bit djb2-style hash in base 36 — the suffix the CLI uses for over-long keys."""
    h = 0
    for ch in text:
        h = ((h << 5) - h + ord(ch)) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    h = abs(h)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        h, r = divmod(h, 36)
        out = digits[r] + out
        if h == 0:
            return out


def canonical(workspace: str | Path) -> str:
    """realpath + NFC, as the SDK does (a decomposing filesystem must not change the key)."""
    try:
        resolved = os.path.realpath(os.fspath(workspace))
    except OSError:
        resolved = os.fspath(workspace)
    return unicodedata.normalize("NFC", resolved)


def project_key(workspace: str | Path) -> str:
    """The store's project key for ``workspace``: every non-alphanumeric char becomes ``-``;
    keys over 200 chars are cut and get ``-<hash>`` appended."""
    path = canonical(workspace)
    key = _NON_ALNUM.sub("-", path)
    if len(key) <= MAX_KEY_LENGTH:
        return key
    return f"{key[:MAX_KEY_LENGTH]}-{_hash36(path)}"


def atomic_write(path: Path, text: str | bytes, *, mode: int | None = None) -> None:
    """Write ``text`` (``str`` as UTF-8, or ready bytes) so readers see either the old file
    or the new one, never a torn mix.

    A uniquely named temp file in the same directory (two writers never share one) is
    fsynced and then ``os.replace``d over the target. The temp file is created 0600 and only
    then given ``mode``, so a secret written with ``mode=0o600`` is never readable by others,
    not even for a moment. Without ``mode``: 0600 in a private directory (a run dir, see
    ``flower.core.privacy`` — a manifest copied out of it stays private), else 0644.
    Raises ``OSError``; callers decide whether a failed write may break the run.
    """
    import tempfile

    from flower.core.privacy import PRIVATE_FILE, is_private

    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        mode = PRIVATE_FILE if is_private(path.parent) else 0o644
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod") and mode != 0o600:  # mkstemp makes 0600
                os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def move_aside(path: Path, stamp: str | None = None) -> Path | None:
    """Rename ``path`` to ``<name>.corrupt-<stamp>[-N]`` (stamp: ``YYYYmmdd-HHMMSS`` now)
    without ever replacing a file: a corrupt state file is evidence, kept aside rather than
    overwritten. None if it could not be moved."""
    base = f"{path.name}.corrupt-{stamp or time.strftime('%Y%m%d-%H%M%S')}"
    for n in range(1, 1000):
        dest = path.with_name(base if n == 1 else f"{base}-{n}")
        try:
            os.link(path, dest)  # fails if dest exists: no clobbering, even when racing
        except FileExistsError:
            continue
        except OSError:
            if dest.exists():  # filesystem without hard links: check, then rename
                continue
            try:
                os.rename(path, dest)
            except OSError:
                return None
            return dest
        try:
            os.unlink(path)
        except OSError:
            pass
        return dest
    return None


@contextlib.contextmanager
def file_lock(lock_path: Path, *, timeout: float = 10.0) -> Iterator[bool]:
    """Hold an exclusive cross-process lock on ``lock_path`` (created if missing) for a
    read-modify-write of a state file shared by processes; yields False if it could not be
    taken within ``timeout`` seconds (the caller decides whether to go on unlocked). Raises
    ``OSError`` when the lock file cannot be opened. Without ``fcntl`` it yields True."""
    if fcntl is None:  # pragma: no cover
        yield True
        return
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    got = False
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                got = True
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.01)
        yield got
    finally:
        if got:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

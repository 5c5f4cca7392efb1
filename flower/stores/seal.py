"""A per-user key that no role can read, for what flower keeps where an agent could write.

The load index lives in the workspace's spill dir (``.flower/spill/.loadindex/``), next
to the spill files the agents' ``Read`` must reach. Its CRC catches a torn write, not a
forged one: an agent can compute a CRC. So each record also carries an HMAC under this
key. The key lives under ``$XDG_STATE_HOME/flower/`` (``~/.local/state/flower/``): outside
every workspace and run dir (a run dir may hold the workbench, which the agents read and
write), hidden from every sandboxed Bash and from every role's Read/Grep/Glob
(``flower.core.runstate``). A workspace moved to another machine meets another key: its
indexes are then foreign, not forged, and are built again from the transcript.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from functools import lru_cache
from pathlib import Path

__all__ = ["KEY_ID_SIZE", "MAC_SIZE", "key_dir", "key_id", "mac", "state_key"]

KEY_NAME = "index.key"
KEY_ID_SIZE = 8
MAC_SIZE = 32


def key_dir() -> Path:
    """``$XDG_STATE_HOME/flower`` (default ``~/.local/state/flower``): the key's folder."""
    from flower.config import state_dir

    return state_dir()


@lru_cache(maxsize=4)
def _load(path: str) -> bytes | None:
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError:
        return None
    else:  # ours to write: two processes racing both read the winner's key below
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
    with contextlib.suppress(OSError), open(path, "rb") as fh:
        data = fh.read()
        if len(data) >= 32:
            return data
    return None


def state_key() -> bytes | None:
    """This user's key (made on first use, 32 random bytes, mode 600); None when the state
    folder cannot be written — then nothing is trusted from disk and nothing is lost but
    speed."""
    return _load(str(key_dir() / KEY_NAME))


def key_id(key: bytes) -> bytes:
    """Names the key a record was sealed with, so a foreign key is told from a forgery."""
    return hashlib.sha256(b"flower-key-id\0" + key).digest()[:KEY_ID_SIZE]


def mac(key: bytes, *parts: bytes) -> bytes:
    """HMAC-SHA256 of ``parts`` under ``key``."""
    h = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        h.update(part)
    return h.digest()

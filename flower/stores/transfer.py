"""``flower store copy SRC DST``: move sessions between SQLite and PostgreSQL, losslessly.

Every transcript (main and subagent) of SRC is appended to DST in order, through DST's own
``append`` (so uuid dedup, ``next_seq``, mtime and the summary sidecar are DST's), then read
back and compared entry by entry with SRC. A transcript DST already holds is completed when
it is a prefix of SRC's (a copy that was interrupted), skipped when equal, and refused when
it differs — never merged, never doubled (uuid-less entries would be).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import anyio

from flower import texts
from flower.errors import CopyError
from flower.stores.backend import backend_for
from flower.stores.url import is_postgres_url, sqlite_path

__all__ = ["CopyError", "CopyResult", "copy_sessions", "key_of"]

BATCH = 1000


@dataclass
class CopyResult:
    sessions: int = 0
    transcripts: int = 0
    entries: int = 0


def key_of(skey: str) -> dict[str, str]:
    """``project/session[/subpath]`` → SessionKey."""
    parts = skey.split("/", 2)
    if len(parts) < 2:
        raise CopyError(f"unexpected store key {skey!r}")
    key = {"project_key": parts[0], "session_id": parts[1]}
    if len(parts) == 3:
        key["subpath"] = parts[2]
    return key


def _ident(spec: str) -> str:
    if is_postgres_url(spec):
        return spec.strip()
    return os.path.realpath(sqlite_path(spec))


def copy_sessions(src_spec: str, dst_spec: str) -> CopyResult:
    if _ident(src_spec) == _ident(dst_spec):
        raise CopyError(texts.STORE_COPY_SAME)
    if not is_postgres_url(src_spec) and not sqlite_path(src_spec).is_file():
        raise CopyError(f"{src_spec}: no such sessions.db")
    src = backend_for(src_spec)
    try:
        dst = backend_for(dst_spec)
    except BaseException:
        src.close()
        raise
    try:
        return anyio.run(_copy, src, dst)
    finally:
        src.close()
        dst.close()


async def _copy(src: Any, dst: Any) -> CopyResult:
    result = CopyResult()
    keys = src.transcripts()
    for skey in keys:  # sorted: a main transcript comes before its subagents
        key = key_of(skey)
        entries = await anyio.to_thread.run_sync(src.read_entries, key) or []
        have = await anyio.to_thread.run_sync(dst.read_entries, key) or []
        if have != entries[: len(have)]:
            raise CopyError(texts.STORE_COPY_MISMATCH.format(key=skey,
                                                             index=_first_diff(have, entries)))
        rest = entries[len(have):]
        for i in range(0, len(rest), BATCH):
            await dst.append(key, rest[i:i + BATCH])
        back = await anyio.to_thread.run_sync(dst.read_entries, key) or []
        if back != entries:  # every entry, compared after the round trip
            raise CopyError(texts.STORE_COPY_MISMATCH.format(key=skey,
                                                             index=_first_diff(back, entries)))
        result.transcripts += 1
        result.entries += len(entries)
        if "subpath" not in key:
            result.sessions += 1
    return result


def _first_diff(a: list[Any], b: list[Any]) -> int:
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return min(len(a), len(b))

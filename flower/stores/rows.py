"""Backend-neutral append planning: which entries of a batch become which rows.

Every backend applies the same rules, so they live here once:

- rows are ``(uid, text)`` in call order; ``text`` comes from :mod:`flower.stores.codec`
  (lossless even for lone surrogates);
- an entry whose ``uuid`` is already stored, or appeared earlier in the batch, is skipped
  (the SDK retries failed batches); entries without a string uuid are never deduplicated;
- an entry that cannot be stored at all (no JSON value) is left out, logged and recorded on
  ``store.rejected`` — the rest of its batch is stored. ``append`` does not raise for it:
  the SDK would retry the whole batch and append its uuid-less entries a second time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from flower import texts
from flower.stores.codec import encode_batch, safe_text

__all__ = ["Rejected", "plan_append"]

log = logging.getLogger("flower.stores")
_MAX_REJECTED = 100  # keep the newest few; the log has all of them


@dataclass(frozen=True)
class Rejected:
    """One entry ``append`` could not store: where it was and why."""

    key: str
    position: int
    uid: str | None
    reason: str


class _HasRejected(Protocol):
    rejected: list[Rejected]


def plan_append(
    store: _HasRejected,
    key: Any,
    entries: list[Any],
    stored_uids: Callable[[list[str]], set[str]],
) -> tuple[list[Any], list[tuple[str | None, str]]]:
    """``(fresh entries, rows)`` to write for ``entries``; ``stored_uids(uids)`` says which
    of the given (database-safe) uids are already there."""
    good, bad = encode_batch(entries)
    for pos, reason in bad:
        uid = entries[pos].get("uuid") if isinstance(entries[pos], dict) else None
        uid = uid if isinstance(uid, str) else None
        where = "/".join(str(v) for v in dict(key).values())
        log.warning(texts.STORE_UNSTORABLE.format(key=where, position=pos, uid=uid,
                                                  reason=reason))
        store.rejected.append(Rejected(where, pos, uid, reason))
        del store.rejected[:-_MAX_REJECTED]
    rows: list[tuple[str | None, str]] = []
    fresh: list[Any] = []
    uids: list[str | None] = []
    for pos, _ in good:
        u = entries[pos].get("uuid") if isinstance(entries[pos], dict) else None
        uids.append(safe_text(u) if isinstance(u, str) else None)
    present = [u for u in uids if u is not None]
    seen = stored_uids(present) if present else set()
    for (pos, text), uid in zip(good, uids, strict=True):
        if uid is not None:
            if uid in seen:
                continue
            seen.add(uid)
        fresh.append(entries[pos])
        rows.append((uid, text))
    return fresh, rows

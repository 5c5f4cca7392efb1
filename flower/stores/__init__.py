"""flower.stores — the session store: SQLite archive → trim (layer 2) → prune (layer 3).

Names resolve lazily (PEP 562) so ``flower.stores.ephemeral`` (the glance predicate) can be
imported without loading ``claude_agent_sdk``. The prune layer, ``EphemeralPolicy`` and
``is_ephemeral`` live in ``flower.stores.prune`` / ``flower.stores.trim`` (and at top level).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "SqliteSessionStore": "flower.stores.sqlite",
    "TrimmingSessionStore": "flower.stores.trim",
    "TrimPolicy": "flower.stores.trim",
    "trim_report": "flower.stores.trim",
}

__all__ = ["SqliteSessionStore", "TrimPolicy", "TrimmingSessionStore", "trim_report"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flower.stores' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


if TYPE_CHECKING:  # pragma: no cover
    from flower.stores.sqlite import SqliteSessionStore
    from flower.stores.trim import TrimmingSessionStore, TrimPolicy, trim_report

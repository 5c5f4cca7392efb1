"""flower.stores — the session store: SQLite archive → trim (layer 2) → prune (layer 3).

Names resolve lazily (PEP 562) so ``flower.stores.ephemeral`` (the glance predicate) can be
imported without loading ``claude_agent_sdk``. The prune layer, ``EphemeralPolicy`` and
``is_ephemeral`` live in ``flower.stores.prune`` / ``flower.stores.trim`` (and at top level).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flower._lazy import lazy_exports

# public name -> module that defines it (the policy and the report never load the SDK)
_EXPORTS: dict[str, str] = {
    "SqliteSessionStore": "flower.stores.sqlite",
    "TrimmingSessionStore": "flower.stores.layered",
    "TrimPolicy": "flower.stores.trimming",
    "trim_report": "flower.stores.trimming",
}

__all__ = ["SqliteSessionStore", "TrimPolicy", "TrimmingSessionStore", "trim_report"]

__getattr__, __dir__ = lazy_exports("flower.stores", _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover
    from flower.stores.layered import TrimmingSessionStore
    from flower.stores.sqlite import SqliteSessionStore
    from flower.stores.trimming import TrimPolicy, trim_report

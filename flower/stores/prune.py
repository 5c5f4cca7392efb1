"""Layer 3 of the session store under the names flower always had: ``PruningSessionStore``
(Runtime's SQLite store: trim/expire, then prune failure debris in ``load()``), its policy,
the pure ``prune_entries`` and the single rules scripts of the original flower call on their
own (``is_denial``, ``is_api_error``, ``heal_orphans``).

Scripts import these from here (``flower.stores.prune.PruningSessionStore``), so this module
only gathers them: the rules are in ``pruning.py``, the store class with the other layered
stores in ``layered.py``. Neither imports this module, so importing it starts no circle.
"""

from __future__ import annotations

from flower.stores.layered import PruningSessionStore
from flower.stores.pruning import (
    DENIAL_KINDS,
    INTERRUPT_KINDS,
    PrunePolicy,
    heal_orphans,
    is_api_error,
    is_denial,
    prune_entries,
    prune_scanned,
)

__all__ = ["DENIAL_KINDS", "INTERRUPT_KINDS", "PrunePolicy", "PruningSessionStore",
           "heal_orphans", "is_api_error", "is_denial", "prune_entries", "prune_scanned"]

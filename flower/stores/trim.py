"""Layer 2 of the session store under the names flower always had: ``TrimmingSessionStore``
(SQLite with trim/expire in ``load()``), its policies and ``trim_report``.

Scripts import these from here (``flower.stores.trim.TrimmingSessionStore``,
``from flower.stores.trim import TrimPolicy``), so this module only gathers them: the rules
are in ``trimming.py``, the store class with the other layered stores in ``layered.py``.
Neither imports this module, so importing it starts no circle.
"""

from __future__ import annotations

from flower.shell import is_ephemeral
from flower.stores.layered import TrimmingSessionStore
from flower.stores.trimming import EphemeralPolicy, TrimPolicy, trim_report

__all__ = ["EphemeralPolicy", "TrimPolicy", "TrimmingSessionStore", "is_ephemeral",
           "trim_report"]

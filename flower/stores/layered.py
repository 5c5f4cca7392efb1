"""The load-time layers over any backend: ``entries → entries`` transforms plus a report.

Trim/expire (layer 2, ``trimming.py``) and prune (layer 3, ``pruning.py``) are pure
transforms of a transcript; :class:`Layers` (``layers.py``) composes them — one ``scan``
shared by both, edits in place on the freshly parsed copy, counts of what was done — and a
store applies it in ``load`` only. Appends, listings and deletes go to the backend
untouched, so the archive is always the verbatim transcript.

Two ways to get the layers:

- :class:`LayeredSessionStore` wraps any backend (``PostgresSessionStore``, or anything
  with the SDK protocol): ``LayeredSessionStore(backend, workspace, policy=…, prune=…)``.
- :class:`TrimmingSessionStore` / :class:`PruningSessionStore` are the SQLite store with the
  layers built in — the classes flower always had, same constructors, same attributes.

Both expose the same attributes (``workspace``, ``policy``, ``ephemeral``, ``prune_policy``,
``last_report``, ``pruned``, ``denials_dropped``, ``neutralized``, ``healed``) and the
copy-on-write steps ``expire``/``trim``/``prune``; ``trim_report`` works on either.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import anyio.to_thread
from claude_agent_sdk import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from flower.stores.layers import Layers
from flower.stores.pruning import PrunePolicy
from flower.stores.sqlite import SqliteSessionStore, gc_paused
from flower.stores.trimming import EphemeralPolicy, TrimPolicy

__all__ = ["LayeredSessionStore", "Layers", "PruningSessionStore", "TrimmingSessionStore"]

Entry = dict[str, Any]


def _forward(name: str) -> property:
    def get(self: Any) -> Any:
        return getattr(self.layers, name)

    def put(self: Any, value: Any) -> None:
        setattr(self.layers, name, value)

    return property(get, put, doc=f"``{name}`` of the load layers")


class _LayerAttrs:
    """The layer attributes every layered store shows, forwarded to ``self.layers``."""

    layers: Layers
    workspace = _forward("workspace")
    policy = _forward("policy")
    ephemeral = _forward("ephemeral")
    prune_policy = _forward("prune_policy")
    last_report = _forward("last_report")
    pruned = _forward("pruned")
    denials_dropped = _forward("denials_dropped")
    neutralized = _forward("neutralized")
    healed = _forward("healed")

    def expire(self, entries: list[Entry]) -> list[Entry]:
        """Replace the bodies of all but the newest ``keep_recent`` ephemeral Bash results."""
        return self.layers.expire(entries)

    def trim(self, entries: list[Entry]) -> list[Entry]:
        """Spill all but the newest ``keep_recent`` text results of ``min_chars`` or more."""
        return self.layers.trim(entries)


# --------------------------------------------------------------------------- SQLite forms


class TrimmingSessionStore(_LayerAttrs, SqliteSessionStore):
    """``SqliteSessionStore`` whose ``load()`` expires stale look-ups and spills old bulk."""

    def __init__(self, path: str | Path, workspace: str | Path,
                 policy: TrimPolicy | None = None,
                 ephemeral: EphemeralPolicy | None = None) -> None:
        self.layers = Layers(workspace, policy, ephemeral, self._prune_layer())
        SqliteSessionStore.__init__(self, path)

    def _prune_layer(self) -> PrunePolicy | None:
        return None

    def _load_sync(self, key: SessionKey, skey: str) -> list[Any] | None:
        # the base's read + ``_rewrite``, with the rows' version for the layers' kept plan
        with gc_paused():
            entries, version = self.read_versioned(skey)
            return None if entries is None else self.layers.apply(key, entries, version)


class PruningSessionStore(TrimmingSessionStore):
    """Runtime's SQLite store: trim/expire (layer 2), then prune failure debris (layer 3)."""

    def __init__(self, path: str | Path, workspace: str | Path,
                 policy: TrimPolicy | None = None, prune: PrunePolicy | None = None,
                 ephemeral: EphemeralPolicy | None = None) -> None:
        self._prune_init = prune if prune is not None else PrunePolicy()
        super().__init__(path, workspace, policy=policy, ephemeral=ephemeral)

    def _prune_layer(self) -> PrunePolicy | None:
        return self._prune_init

    def prune(self, entries: list[Entry]) -> list[Entry]:
        """Apply this store's ``PrunePolicy`` to ``entries`` (returns a new list)."""
        return self.layers.prune(entries)


# --------------------------------------------------------------------------- any backend


class LayeredSessionStore(_LayerAttrs, SessionStore):
    """The layers around any backend store; everything but ``load`` is the backend's.

    ``prune`` defaults to ``PrunePolicy()`` (Runtime's store); ``prune=False`` leaves the
    prune layer out. A backend with ``read_entries(key)`` (a sync, thread-safe read that
    returns freshly parsed entries, as flower's backends have) is read and transformed in
    one worker thread; any other backend is awaited and its result deep-copied first.
    """

    def __init__(self, backend: Any, workspace: str | Path,
                 policy: TrimPolicy | None = None,
                 prune: PrunePolicy | bool | None = None,
                 ephemeral: EphemeralPolicy | None = None) -> None:
        if prune is False:
            layer: PrunePolicy | None = None
        elif prune is None or prune is True:
            layer = PrunePolicy()
        else:
            layer = prune
        self.layers = Layers(workspace, policy, ephemeral, layer)
        self.backend = backend

    def __repr__(self) -> str:
        return f"LayeredSessionStore({self.backend!r})"

    # -- load: the only method the layers change

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        read = getattr(self.backend, "read_entries", None)
        if read is None:
            loaded = await self.backend.load(key)
            if not loaded:
                return None if loaded is None else []
            return await anyio.to_thread.run_sync(self._apply, key, copy.deepcopy(loaded))
        return await anyio.to_thread.run_sync(self._load_sync, read, key)

    def _load_sync(self, read: Any, key: SessionKey) -> list[Any] | None:
        with gc_paused():
            entries = read(key)
            return None if entries is None else self.layers.apply(key, entries)

    def _apply(self, key: SessionKey, entries: list[Any]) -> list[Any]:
        with gc_paused():
            return self.layers.apply(key, entries)

    def prune(self, entries: list[Entry]) -> list[Entry]:
        """Apply the prune policy to ``entries`` (returns a new list)."""
        return self.layers.prune(entries)

    # -- everything else: the backend's

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        await self.backend.append(key, entries)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        return await self.backend.list_sessions(project_key)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        return await self.backend.list_session_summaries(project_key)

    async def delete(self, key: SessionKey) -> None:
        await self.backend.delete(key)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        return await self.backend.list_subkeys(key)

    def projects(self) -> list[str]:
        return self.backend.projects()

    def has_session(self, project_key: str, session_id: str) -> bool:
        return self.backend.has_session(project_key, session_id)

    def session_since(self, session_id: str, after: float) -> list[dict[str, Any]]:
        """The backend's (empty when it cannot tell)."""
        since = getattr(self.backend, "session_since", None)
        return since(session_id, after) if since is not None else []

    def last_context(self, project_key: str, session_id: str, *, scan: int = 60) -> int:
        return self.backend.last_context(project_key, session_id, scan=scan)

    def adopt(self, project_key: str, session_id: str) -> bool:
        """See the backend's ``adopt`` (False when it has none)."""
        adopt = getattr(self.backend, "adopt", None)
        return bool(adopt(project_key, session_id)) if adopt is not None else False

    def book(self, name: str) -> Any:
        """The backend's run book for run ``name`` (None when it keeps none: SQLite)."""
        make = getattr(self.backend, "book", None)
        return make(name) if make is not None else None

    @property
    def rejected(self) -> list[Any]:
        return getattr(self.backend, "rejected", [])

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> LayeredSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""The load-time layers over any backend: ``entries → entries`` transforms plus a report.

Trim/expire (layer 2, ``trimming.py``) and prune (layer 3, ``pruning.py``) are pure
transforms of a transcript; :class:`Layers` composes them — one ``scan`` shared by both,
edits in place on the freshly parsed copy, counts of what was done — and a store applies it
in ``load`` only. Appends, listings and deletes go to the backend untouched, so the archive
is always the verbatim transcript.

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
import os
import threading
from dataclasses import astuple
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

from flower.stores.pruning import PrunePlan, PrunePolicy, apply_prune, plan_prune, prune_entries
from flower.stores.sqlite import SqliteSessionStore, gc_paused
from flower.stores.transcript import scan
from flower.stores.trimming import (
    EphemeralPolicy,
    SpillMemo,
    TrimPolicy,
    apply_trim,
    empty_report,
    expire_entries,
    spill_dir,
    trim_entries,
)

__all__ = ["LayeredSessionStore", "Layers", "PruningSessionStore", "TrimmingSessionStore"]

Entry = dict[str, Any]
_STATS = ("pruned", "denials_dropped", "neutralized", "healed")


class Layers:
    """Trim/expire then (optionally) prune: the copy ``load`` hands back, and what it did.

    ``apply`` edits the given entries in place — call it only on entries parsed for this
    one load. Reports describe the last MAIN-transcript load (a subagent's load must not
    overwrite the step's report). Policies are read at every call, so replacing
    ``layers.policy`` takes effect at the next load.

    Each transcript's last plan is kept (the new bodies and prune's decisions, ~9 MB for a
    100k-entry run): a load of the same rows again, which a backend vouches for with a
    ``version``, applies it without a scan (about a fifth of the layers' work).
    """

    def __init__(self, workspace: str | Path, policy: TrimPolicy | None = None,
                 ephemeral: EphemeralPolicy | None = None,
                 prune: PrunePolicy | None = None) -> None:
        self.workspace = Path(workspace).resolve()
        self.policy = policy if policy is not None else TrimPolicy()
        self.ephemeral = ephemeral if ephemeral is not None else EphemeralPolicy()
        self.prune_policy = prune  # None: no prune layer (TrimmingSessionStore)
        self.last_report: dict[str, int] = empty_report()
        self.pruned = self.denials_dropped = self.neutralized = self.healed = 0
        self.memo = SpillMemo()  # kept in the spill dir: a wake's first resume skips the hashing
        self._plans: dict[tuple[Any, ...], _Plan] = {}  # the last load's of each transcript
        self._plans_lock = threading.Lock()  # loads of several transcripts run in threads
        spill_dir(self.workspace, self.policy)  # fail at construction, not at first resume

    def apply(self, key: SessionKey, entries: list[Any], version: Any = None) -> list[Any]:
        """The layered copy of ``entries`` (edited in place; prune may return a new list).

        ``version`` (from the backend, e.g. ``SqliteSessionStore.read_versioned``) names
        the stored rows the entries were parsed from; None means unknown. A load of rows
        with the version of an earlier load, under the same policies and an unchanged
        spill directory, replays what that load decided instead of scanning and planning
        again: the same rows always give the same copy.
        """
        main = key.get("subpath") is None
        slot = (key.get("project_key"), key.get("session_id"), key.get("subpath"))
        pols = self._ident() if version is not None else None
        ident = (version, pols) if pols is not None else None
        with self._plans_lock:
            plan = self._plans.pop(slot, None)
        if (ident is not None and plan is not None and plan.ident == ident
                and plan.spill_unchanged()):
            report, out, stats = plan.replay(entries, self.prune_policy)
        else:
            report, out, stats, plan = self._compute(entries, keep=ident is not None)
        if plan is not None and ident is not None:
            plan.ident = ident
            with self._plans_lock:
                self._plans[slot] = plan  # the newest last: dicts keep order
                while len(self._plans) > _PLANS:
                    del self._plans[next(iter(self._plans))]
        if main:
            self.last_report = report
            if stats is not None:
                self.record(stats)
        return out

    def _compute(self, entries: list[Any], *, keep: bool,
                 ) -> tuple[dict[str, int], list[Any], dict[str, int] | None, _Plan | None]:
        found = scan(entries)
        report = apply_trim(found, workspace=self.workspace, policy=self.policy,
                            ephemeral=self.ephemeral, memo=self.memo)
        plan = _Plan.of(found, report, self.memo) if keep else None
        if self.prune_policy is None:
            return report, entries, None, plan
        # Trim keeps ``found`` valid (it only swaps tool_result bodies): one scan for both.
        pruning = plan_prune(entries, found, self.prune_policy)
        out, stats = apply_prune(entries, pruning, self.prune_policy, found)
        if plan is not None:
            plan.prune = pruning
        return report, out, stats, plan

    def _ident(self) -> tuple[Any, ...] | None:
        """What a plan depends on besides the rows; None when it cannot be compared (a
        policy subclass may shape its texts from anything)."""
        pols = (self.policy, self.ephemeral, self.prune_policy)
        if (type(self.policy) is not TrimPolicy or type(self.ephemeral) is not EphemeralPolicy
                or type(self.prune_policy) not in (PrunePolicy, type(None))):
            return None
        return (self.workspace, *(astuple(p) if p is not None else None for p in pols))

    def record(self, stats: dict[str, int]) -> None:
        for name in _STATS:
            setattr(self, name, stats[name])

    # copy-on-write public steps (never touch the caller's entries)

    def expire(self, entries: list[Entry]) -> list[Entry]:
        return expire_entries(entries, self.ephemeral, self.last_report)

    def trim(self, entries: list[Entry]) -> list[Entry]:
        return trim_entries(entries, self.workspace, self.policy, self.memo, self.last_report)

    def prune(self, entries: list[Entry]) -> list[Entry]:
        out, stats = prune_entries(entries, self.prune_policy or PrunePolicy())
        self.record(stats)
        return out


_PLANS = 8  # transcripts whose last load is remembered (a step's main one and subagents)


class _Plan:
    """What one load did to its rows, in indices and texts only, to do it again to a fresh
    parse of the very same rows: the new tool_result bodies, the report, prune's plan."""

    __slots__ = ("edits", "ident", "prune", "report", "spill")

    def __init__(self, edits: list[tuple[int, int, str]], report: dict[str, int],
                 spill: tuple[str, int] | None) -> None:
        self.edits = edits
        self.report = report
        self.spill = spill
        self.ident: Any = None
        self.prune: PrunePlan | None = None

    @classmethod
    def of(cls, found: Any, report: dict[str, int], memo: SpillMemo) -> _Plan | None:
        """The plan of a load just trimmed, None when it may not be replayed (spilled
        results whose directory listing is not trusted, or a spill the disk refused)."""
        spill = None
        if report["cleared"] or memo.failed:
            spill = memo.listing()
            if spill is None:
                return None
        bodies = found.bodies
        edits = ([] if bodies is None else
                 [(s[0], s[1], b) for s, b in zip(found.sites, bodies, strict=True)
                  if b is not None])
        return cls(edits, dict(report), spill)

    def spill_unchanged(self) -> bool:
        """Does the spill directory hold what it held (its mtime unchanged)?"""
        if self.spill is None:
            return True
        directory, stamp = self.spill
        try:
            return os.stat(directory).st_mtime_ns == stamp
        except OSError:
            return False

    def replay(self, entries: list[Any], policy: PrunePolicy | None,
               ) -> tuple[dict[str, int], list[Any], dict[str, int] | None]:
        for i, j, body in self.edits:
            entries[i]["message"]["content"][j]["content"] = body
        if policy is None or self.prune is None:
            return dict(self.report), entries, None
        out, stats = apply_prune(entries, self.prune, policy)
        return dict(self.report), out, stats


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

    def _rewrite(self, key: SessionKey, entries: list[Any]) -> list[Any]:
        return self.layers.apply(key, entries)

    def _load_sync(self, key: SessionKey, skey: str) -> list[Any] | None:
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

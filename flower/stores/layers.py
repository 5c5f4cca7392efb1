"""The load layers themselves: trim/expire then prune over one parse of a transcript.

Kept apart from the store classes (``layered.py``) because it needs nothing of the SDK:
``flower analyze`` runs the same layers over a run's transcripts to say what a resume would
rewrite, and importing the SDK (its MCP types) alone costs a process ~1.7 s of CPU.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import astuple
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower.stores.indexfile import index_path, read_index, write_index
from flower.stores.loadindex import IndexMemo, LoadIndex
from flower.stores.pruning import PrunePlan, PrunePolicy, apply_prune, prune_entries
from flower.stores.trimming import (
    EphemeralPolicy,
    SpillMemo,
    StaleScan,
    TrimPolicy,
    empty_report,
    expire_entries,
    plan_bodies,
    set_bodies,
    spill_dir,
    trim_entries,
)

if TYPE_CHECKING:  # a TypedDict of the SDK: for the annotations only
    from claude_agent_sdk import SessionKey

__all__ = ["Layers"]

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
    ``version``, applies it without a scan (about a fifth of the layers' work). Its
    index is kept too (~10 MB at 100k entries), for any backend, and written beside the
    spill files once the transcript has ``PERSIST_FROM`` rows: a load of the same rows with
    more appended — in this process or the next — walks only those (see ``loadindex``).
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
        self._indexes: dict[tuple[Any, ...], LoadIndex] = {}  # what each one's loads found
        self._plans_lock = threading.Lock()  # loads of several transcripts run in threads
        # fail at construction, not at first resume
        self._spill = str(spill_dir(self.workspace, self.policy))

    def apply(self, key: SessionKey, entries: list[Any], version: Any = None) -> list[Any]:
        """The layered copy of ``entries`` (edited in place; prune may return a new list).

        ``version`` (from the backend, e.g. ``SqliteSessionStore.read_versioned``) names
        the stored rows the entries were parsed from; None means unknown. A load of rows
        with the version of an earlier load, under the same policies and an unchanged
        spill directory, replays what that load decided instead of planning again: the
        same rows always give the same copy. Any other load extends the transcript's
        index by the rows appended since it was last extended (see ``loadindex``).
        """
        main = key.get("subpath") is None
        slot = (key.get("project_key"), key.get("session_id"), key.get("subpath"))
        pols = self._ident()
        ident = (version, pols) if version is not None and pols is not None else None
        with self._plans_lock:
            plan = self._plans.pop(slot, None)
            index = self._indexes.pop(slot, None)
        if (ident is not None and plan is not None and plan.ident == ident
                and plan.spill_unchanged()):
            report, out, stats = plan.replay(entries, self.prune_policy)
        else:
            report, out, stats, plan, index = self._planned(slot, entries, index, pols,
                                                             keep=ident is not None)
        with self._plans_lock:
            if plan is not None and ident is not None:
                plan.ident = ident
                _keep_newest(self._plans, slot, plan)
            if index is not None and index.ident is not None:
                _keep_newest(self._indexes, slot, index)
        if main:
            self.last_report = report
            if stats is not None:
                self.record(stats)
        return out

    def _planned(self, slot: tuple[Any, ...], entries: list[Any], index: LoadIndex | None,
                 pols: tuple[Any, ...] | None, *, keep: bool,
                 ) -> tuple[dict[str, int], list[Any], dict[str, int] | None, _Plan | None,
                            LoadIndex]:
        """Plan with the transcript's index — this process's, else the one on disk —
        extended by the new rows; with a new one of all rows when there is none that
        fits, or when the new rows change an earlier decision or it proves not to be
        of these rows (``StaleScan``: nothing was changed yet)."""
        fingerprint = _fingerprint(pols)
        path = index_path(self._spill, slot) if fingerprint is not None else None
        if (index is None or index.ident != fingerprint) and path is not None:
            index = read_index(path, slot, fingerprint)
        prune, min_chars = self.prune_policy, self.policy.min_chars
        if index is not None and index.ident == fingerprint and index.fits(entries):
            try:
                if index.extend(entries, min_chars, prune):
                    done = self._compute(entries, index, reused=True, keep=keep)
                    return self._saved(path, slot, index, *done)
            except (StaleScan, LookupError, TypeError, AttributeError):
                pass  # an index of other rows (``extend`` read what is not there)
        index = LoadIndex(fingerprint)
        index.extend(entries, min_chars, prune)
        return self._saved(path, slot, index,
                           *self._compute(entries, index, reused=False, keep=keep))

    def _saved(self, path: str | None, slot: tuple[Any, ...], index: LoadIndex,
               report: dict[str, int], out: list[Any], stats: dict[str, int] | None,
               plan: _Plan | None) -> tuple[dict[str, int], list[Any], dict[str, int] | None,
                                            _Plan | None, LoadIndex]:
        if path is not None and index.count >= PERSIST_FROM:
            write_index(path, index, slot)
        return report, out, stats, plan, index

    def _compute(self, entries: list[Any], index: LoadIndex, *, reused: bool, keep: bool,
                 ) -> tuple[dict[str, int], list[Any], dict[str, int] | None, _Plan | None]:
        """Plan trim and prune, then edit ``entries``. Planning only reads them: when a
        ``reused`` index turns out not to be of these rows, ``StaleScan`` leaves them as
        they were for a new one."""
        report = empty_report()
        trimming = self.policy.enabled or self.ephemeral.enabled
        found = index.scan_view()
        memo = IndexMemo(index, entries, self.memo, ask=not reused)
        try:
            if trimming:
                found.bodies = plan_bodies(found, entries, workspace=self.workspace,
                                           policy=self.policy, ephemeral=self.ephemeral,
                                           memo=memo, report=report)
            # prune plans on the stored texts (its outage test reads them), trim's new
            # bodies in hand, and applies its plan to the trimmed entries
            pruning = (index.prune_plan(entries, found.bodies, self.prune_policy)
                       if self.prune_policy is not None else None)
        except (LookupError, TypeError, AttributeError) as exc:
            if not reused:
                raise  # an index of these very entries: a bug, not a stale one
            raise StaleScan from exc
        plan = _Plan.of(found, report, memo) if keep else None
        if trimming:
            set_bodies(entries, found.sites, found.bodies)  # StaleScan: all undone
        if pruning is None:
            return report, entries, None, plan
        out, stats = apply_prune(entries, pruning, self.prune_policy,
                                 children=index.children(entries))
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
# rows from which a transcript's index is written to disk: a shorter one is planned from
# scratch in a few milliseconds, and a short step leaves no file behind
PERSIST_FROM = 1_000


def _fingerprint(pols: tuple[Any, ...] | None) -> str | None:
    """The policies and workspace (``Layers._ident``) an index is kept under, as a short
    string; None when they cannot be compared (then nothing is kept between loads)."""
    if pols is None:
        return None
    return hashlib.sha256(repr(pols).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _keep_newest(kept: dict[tuple[Any, ...], Any], slot: tuple[Any, ...], value: Any) -> None:
    """Remember ``value`` for ``slot`` as the newest, forgetting the oldest beyond _PLANS
    (dicts keep insertion order; the caller popped ``slot`` before)."""
    kept[slot] = value
    while len(kept) > _PLANS:
        del kept[next(iter(kept))]


class _Plan:
    """What one load did to its rows, in indices and texts only, to do it again to a fresh
    parse of the very same rows: the new tool_result bodies, the report, prune's plan."""

    __slots__ = ("bodies", "ident", "prune", "report", "sites", "spill")

    def __init__(self, sites: list[Any], bodies: list[str | None] | None,
                 report: dict[str, int], spill: tuple[str, int] | None) -> None:
        # the sites and their new bodies, not a list of edits drawn from them: an index's
        # sites only ever grow at the end, and ``zip`` stops at the bodies' length
        self.sites = sites
        self.bodies = bodies
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
        return cls(found.sites, found.bodies, dict(report), spill)

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
        if self.bodies is not None:
            for site, body in zip(self.sites, self.bodies):  # noqa: B905 (see __init__)
                if body is not None:
                    entries[site[0]]["message"]["content"][site[1]]["content"] = body
        if policy is None or self.prune is None:
            return dict(self.report), entries, None
        out, stats = apply_prune(entries, self.prune, policy)
        return dict(self.report), out, stats

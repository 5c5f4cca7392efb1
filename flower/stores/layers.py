"""The load layers themselves: trim/expire then prune over one parse of a transcript.

Kept apart from the store classes (``layered.py``) because it needs nothing of the SDK:
``flower analyze`` runs the same layers over a run's transcripts to say what a resume would
rewrite, and importing the SDK (its MCP types) alone costs a process ~1.7 s of CPU.
"""

from __future__ import annotations

import os
import threading
from dataclasses import astuple
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower.stores.pruning import PrunePlan, PrunePolicy, apply_prune, plan_prune, prune_entries
from flower.stores.scancache import Kept, samples
from flower.stores.transcript import Scan, scan
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
    ``version``, applies it without a scan (about a fifth of the layers' work). Its last
    scan is kept too (~40 MB at 100k entries with the strings it holds), for any backend:
    a load of the same rows with more appended walks only those (see ``scancache``), then
    plans afresh.
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
        self._scans: dict[tuple[Any, ...], Kept] = {}  # the last load's scan of each
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
            kept = self._scans.pop(slot, None)
        if (ident is not None and plan is not None and plan.ident == ident
                and plan.spill_unchanged()):
            report, out, stats = plan.replay(entries, self.prune_policy)
        else:
            kept, reused = self._scan(entries, kept)
            try:
                report, out, stats, plan = self._compute(entries, kept.scan, reused,
                                                         keep=ident is not None)
            except StaleScan:  # the kept scan was not of these rows: nothing was changed
                kept = Kept(scan(entries), [])
                report, out, stats, plan = self._compute(entries, kept.scan, False,
                                                         keep=ident is not None)
            kept.marks = samples(entries, kept.scan.count)
        with self._plans_lock:
            if plan is not None and ident is not None:
                plan.ident = ident
                _keep_newest(self._plans, slot, plan)
            if kept is not None:
                _keep_newest(self._scans, slot, kept)
        if main:
            self.last_report = report
            if stats is not None:
                self.record(stats)
        return out

    def _scan(self, entries: list[Any], kept: Kept | None) -> tuple[Kept, bool]:
        """The scan of ``entries`` and whether it was kept from before: this process's last
        scan of the transcript extended by the rows appended since, when it fits, else a
        walk over all of them."""
        if kept is not None and kept.fits(entries):
            scan(entries, into=kept.scan)
            return kept, True
        return Kept(scan(entries), []), False

    def _compute(self, entries: list[Any], found: Scan, reused: bool, *, keep: bool,
                 ) -> tuple[dict[str, int], list[Any], dict[str, int] | None, _Plan | None]:
        """Plan trim and prune, then edit ``entries``. Planning only reads them: when a
        ``reused`` scan turns out not to be of these rows, ``StaleScan`` leaves them as
        they were for a fresh scan."""
        report = empty_report()
        trimming = self.policy.enabled or self.ephemeral.enabled
        try:
            if trimming:
                found.bodies = plan_bodies(found, entries, workspace=self.workspace,
                                           policy=self.policy, ephemeral=self.ephemeral,
                                           memo=self.memo, report=report)
            # prune plans on the stored texts (its outage test reads them), trim's new
            # bodies in hand, and applies its plan to the trimmed entries: one scan for both
            pruning = (plan_prune(entries, found, self.prune_policy)
                       if self.prune_policy is not None else None)
        except (LookupError, TypeError, AttributeError) as exc:
            if not reused:
                raise  # a fresh scan of these very entries: a bug, not a stale cache
            raise StaleScan from exc
        plan = _Plan.of(found, report, self.memo) if keep else None
        if trimming:
            set_bodies(entries, found.sites, found.bodies)  # StaleScan: all undone
        if pruning is None:
            return report, entries, None, plan
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


def _keep_newest(kept: dict[tuple[Any, ...], Any], slot: tuple[Any, ...], value: Any) -> None:
    """Remember ``value`` for ``slot`` as the newest, forgetting the oldest beyond _PLANS
    (dicts keep insertion order; the caller popped ``slot`` before)."""
    kept[slot] = value
    while len(kept) > _PLANS:
        del kept[next(iter(kept))]


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

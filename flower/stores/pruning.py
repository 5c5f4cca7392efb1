"""Layer 3 of the session store, the rules alone: keep failure debris out of the context fed
back on resume.

Pure ``entries → entries`` transforms and their policy; ``PruningSessionStore`` (Runtime's
store), which applies them in ``load()``, is in ``layered.py``, and ``prune.py`` gathers both
under the names scripts import. Trim (layer 2) drops by size and staleness; prune drops by
"is it an error". In the copy ``load()`` returns (SQLite is never modified):

1. synthetic API-error messages (``isApiErrorMessage`` / model ``<synthetic>``) and the
   CLI's ``system``/``api_error`` retry records are removed — after a network outage the
   model should not resume "discussing" a connection error;
2. denied tool calls (structural marker ``toolDenialKind == "permission-rule"``, written by
   this CLI for both ``can_use_tool`` denials and PreToolUse-hook denials) are removed as a
   pair — tool_use and tool_result — except the newest ``keep_denials``; what hung below
   a removed result stays below the rest of its response (``_within_response``), or the
   resume would lose the denied call's parallel siblings;
3. results left by an interrupted call (kinds ``interrupted``/``user-rejected``/``cancelled``
   or ``[Request interrupted`` text) get a neutral body — the CLI's own wording tells the
   model to "STOP and wait for the user"; so does an ``Agent`` result saying the subagent
   "terminated early due to an API error" (an outage mid-task is not news for the model);
4. a tool_use that never got a result is healed by inserting a result entry after it (the
   API rejects an unpaired tool_use; deleting it could take healthy text/thinking along).

Removed entries are cut out of the ``parentUuid`` chain with ``relink`` over the FULL list.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from flower import texts
from flower.stores.transcript import (
    AGENT_API_ERROR,
    ASSISTANT,
    NO_TEXT,
    PROTECTED_USER,
    USER,
    Scan,
    content_blocks,
    is_api_error,
    is_protected,
    relink,
    scan,
    site_block,
    site_text,
    tool_uses,
    with_content,
)

__all__ = ["DENIAL_KINDS", "INTERRUPT_KINDS", "PrunePlan", "PrunePolicy", "apply_prune",
           "heal_orphans", "is_api_error", "is_denial", "names_outage", "plan_prune",
           "prune_entries", "prune_scanned"]

Entry = dict[str, Any]

# Observed in CLI 2.1.332 transcripts (tests/stores/fixtures): a can_use_tool deny and a
# PreToolUse deny both write "permission-rule"; an interrupt mid-tool writes "user-rejected",
# a session killed mid-tool is healed by the CLI with "interrupted".
DENIAL_KINDS = frozenset({"permission-rule", "automode-blocked"})
INTERRUPT_KINDS = frozenset({"interrupted", "user-rejected", "cancelled"})
_INTERRUPT_MARK = "[Request interrupted"
_HEAL_NS = uuid.UUID("6f1c1f5e-4b8a-4f0e-9a57-f10e2c0d0a11")
_COPY_FROM_ANCHOR = ("isSidechain", "agentId", "sessionId", "cwd", "version", "gitBranch",
                     "userType", "entrypoint", "timestamp")


@dataclass
class PrunePolicy:
    """What prune removes or rewrites in the resumed copy."""

    drop_api_errors: bool = True
    neutralize_interrupts: bool = True
    interrupt_text: str = texts.INTERRUPTED_RESULT
    heal_orphans: bool = True
    orphan_text: str = texts.ORPHAN_RESULT
    keep_denials: int = 1


def _results(e: Entry) -> list[tuple[int, dict[str, Any]]]:
    return [(j, b) for j, b in enumerate(content_blocks(e))
            if isinstance(b, dict) and b.get("type") == "tool_result"]


def is_denial(entry: Entry) -> str | None:
    """The tool_use_id of the call ``entry`` denies, or None if it is no denial result.

    Decided by the CLI's structural marker (``toolDenialKind``, or a rejecting
    ``permissionDecision``), never by the wording, which changes between CLI versions.
    It returns the id, not a yes/no, because the id is what prune removes (the call's
    tool_use with its result) and what the original flower's ``is_denial`` returned;
    ``if is_denial(e)`` reads as before. A marked entry that does not hold exactly one
    tool_result naming a call gives None: the CLI writes one, and with several we cannot
    tell which was denied, so prune removes nothing (removing a real result is far worse).
    Prune keeps only the newest ``keep_denials`` of these.
    """
    if entry.get("type") != "user" or is_protected(entry):
        return None
    kind = entry.get("toolDenialKind")
    decision = entry.get("permissionDecision")
    if not ((isinstance(kind, str) and kind in DENIAL_KINDS) or (
            kind is None and isinstance(decision, dict) and decision.get("decision") == "reject")):
        return None
    results = _results(entry)
    tid = results[0][1].get("tool_use_id") if len(results) == 1 else None
    return tid if isinstance(tid, str) and tid else None


def marked_interrupt(e: Entry) -> bool:
    """Does the CLI's ``toolDenialKind`` mark ``e`` as an interrupted call? (Any other value,
    a list or a dict from a damaged row included, is no such mark — never a TypeError.)"""
    kind = e.get("toolDenialKind")
    return isinstance(kind, str) and kind in INTERRUPT_KINDS


def _is_interrupt(e: Entry, block: dict[str, Any]) -> bool:
    if marked_interrupt(e):
        return True
    body = block.get("content")
    if isinstance(body, list):
        body = " ".join(b.get("text", "") for b in body if isinstance(b, dict))
    if not isinstance(body, str):
        return False
    return (block.get("is_error") is True and _INTERRUPT_MARK in body) or AGENT_API_ERROR in body


def _blocks_of(e: Entry) -> list[Any] | None:
    message = e.get("message")
    content = message.get("content") if type(message) is dict else None
    return content if type(content) is list else None


def prune_entries(entries: list[Entry], policy: PrunePolicy) -> tuple[list[Entry], dict[str, int]]:
    """The pruned copy of ``entries`` and counts of what was done. Never mutates the input."""
    return prune_scanned(entries, scan(entries), policy)


def prune_scanned(entries: list[Entry], found: Scan, policy: PrunePolicy,
           ) -> tuple[list[Entry], dict[str, int]]:
    """``prune_entries`` given the scan of ``entries``; copy-on-write.

    It runs on every resume of a run that may hold 50k entries, so it never walks them
    again: ``found`` says which few entries are denials, API errors or interrupt
    candidates, and orphans are found by replaying the scan's compact block records.
    Per entry the rules apply in the order they always did: API error (dropped) → denied
    blocks removed → interrupted results neutralized → tool_use/tool_result pairing.
    """
    return apply_prune(entries, plan_prune(entries, found, policy), policy, found)


@dataclass(slots=True)
class PrunePlan:
    """What prune decided from a scan, in indices and ids only (no entry is referenced):
    the same stored rows always give the same plan, so a load of rows it was made from can
    apply it to their fresh parse without scanning them again (see ``Layers``)."""

    gone: set[str]  # tool_use ids of the denied calls removed
    errors: list[int]  # API-error entries (dropped when the policy says so)
    touched: set[int]  # entries with a block of a ``gone`` call
    suspects: set[int]  # interrupt candidates
    pending: dict[str, int]  # unanswered tool_use id -> entry index (to heal)
    leaves: list[int]  # entries with a ``leafUuid`` (relink)
    relinked: dict[str, Any] = field(default_factory=dict)  # what relink found, for reuse


def plan_prune(entries: list[Entry], found: Scan, policy: PrunePolicy) -> PrunePlan:
    """Prune's decisions for ``entries`` (after trim) given their scan."""
    gone = _gone(entries, found, policy)
    drop = set(found.errors) if policy.drop_api_errors else set()
    touched, pending = _replay(found, gone, drop)
    suspects = _suspects(entries, found, drop) if policy.neutralize_interrupts else set()
    return PrunePlan(gone, list(found.errors), touched, suspects, pending, list(found.leaves))


def apply_prune(entries: list[Entry], plan: PrunePlan, policy: PrunePolicy,
                found: Scan | None = None,
                children: Callable[[Iterable[Any]], Iterable[int]] | None = None,
                ) -> tuple[list[Entry], dict[str, int]]:
    """The pruned copy of ``entries`` as ``plan`` decided it, and the counts.

    Without ``found`` (the scan ``plan`` came from), relink reuses what it found when the
    plan was first applied (only for the rows the plan was made from), or asks
    ``children`` which entries hang below the ones that move.
    """
    gone = plan.gone
    stats = {"pruned": 0, "denials_dropped": len(gone), "neutralized": 0, "healed": 0}
    drop = set(plan.errors) if policy.drop_api_errors else set()
    touched, suspects = plan.touched, plan.suspects
    work = list(entries)
    emptied: list[int] = []
    for i in sorted(touched | suspects):
        e = work[i]
        blocks = _blocks_of(e)
        if not blocks:
            continue
        if i in touched:
            kept = [b for b in blocks if not (
                type(b) is dict and (b.get("id") in gone or b.get("tool_use_id") in gone)
                and b.get("type") in ("tool_use", "tool_result"))]
            if not kept:
                drop.add(i)
                emptied.append(i)
                continue
            work[i] = e = with_content(e, kept, drop=("toolUseResult",))
            blocks = kept
        if i in suspects:
            _neutralize(work, i, e, blocks, policy.interrupt_text, stats)
    stats["pruned"] = len(drop)
    pending = plan.pending
    inserts = (_heal(work, pending, drop, policy.orphan_text, stats)
               if policy.heal_orphans and pending else None)
    via = _within_response(work, emptied, drop) if emptied else None
    return relink(work, drop, inserts, found=found, leaves=plan.leaves,
                  memo=plan.relinked, children=children, via=via), stats


def heal_orphans(entries: list[Entry], text: str = texts.ORPHAN_RESULT) -> list[Entry]:
    """A copy of ``entries`` in which every tool_use without a result gets one (``text``).

    The API rejects a transcript with an unanswered tool_use ("every resume after an
    interrupt is a 400"), and deleting the call could take healthy text or thinking along,
    so a result entry is inserted after the call's message and the chain relinked through
    it. This is the healing ``prune_entries`` does as its last rule, on its own; the input
    is never mutated.
    """
    found = scan(entries)
    _, pending = _replay(found, set(), set())
    if not pending:
        return list(entries)
    work = list(entries)
    inserts = _heal(work, pending, set(), text, {"healed": 0})
    return relink(work, set(), inserts, found=found)


def _message_id(e: Entry) -> Any:
    message = e.get("message")
    return message.get("id") if e.get("type") == "assistant" and type(message) is dict else None


def _answers(e: Entry) -> set[Any]:
    """The tool_use ids a user entry's results answer."""
    return {b.get("tool_use_id") for _, b in _results(e)} if e.get("type") == "user" else set()


def _calls(e: Entry) -> set[Any]:
    """The tool_use ids an assistant entry makes."""
    return {b.get("id") for b in tool_uses(e)}


def _within_response(entries: list[Entry], emptied: list[int], drop: set[int],
                     ) -> dict[int, str]:
    """Where the children of a removed denial result go: below the newest surviving result
    of the same response before it, else its newest surviving line (for ``relink``'s
    ``via``; entries with no such survivor keep relink's rule, their parent's survivor).

    The CLI writes one line per block of a response and each parallel call's result
    below that call's own line, and the turn goes on below the result written last; it
    finds the other calls and results on resume because a line of their response is on
    the chain. Relinked to the removed result's parent — the denied call's line, itself
    removed, whose parent is whatever came before the response when it was the first
    call — the turn would hang below none of them, and the resume would lose them all.
    """
    via: dict[int, str] = {}
    for j in emptied:
        answered = _answers(entries[j])
        if not answered:
            continue  # the denied call's own line: its parent is where the response began
        call = next((k for k in range(j - 1, -1, -1) if answered & _calls(entries[k])), None)
        mid = _message_id(entries[call]) if call is not None else None
        if mid is None:
            continue
        lo = call  # the response's first line: back over its lines, results, bookkeeping
        while lo > 0:
            before = entries[lo - 1]
            other = _message_id(before)
            if (other is not None and other != mid) or (
                    before.get("type") == "user" and not _answers(before)):
                break
            lo -= 1
        span = range(j - 1, lo - 1, -1)
        calls = {c for k in span if _message_id(entries[k]) == mid for c in _calls(entries[k])}
        target = next((k for k in span if k not in drop and calls & _answers(entries[k])),
                      None)
        if target is None:
            target = next((k for k in span if k not in drop and _message_id(entries[k]) == mid),
                          None)
        uid = entries[target].get("uuid") if target is not None else None
        if type(uid) is str:
            via[j] = uid
    return via


def _gone(entries: list[Entry], found: Scan, policy: PrunePolicy) -> set[str]:
    """tool_use ids of the denied calls to remove: all but the newest ``keep_denials``."""
    denied = [d for i in found.marked for d in (is_denial(entries[i]),) if d]
    keep = max(policy.keep_denials, 0)
    return set(denied[: len(denied) - keep] if keep else denied)


def _replay(found: Scan, gone: set[str], drop: set[int], touched: set[int] | None = None,
            pending: dict[str, int] | None = None) -> tuple[set[int], dict[str, int]]:
    """Replay the scan's block records in transcript order, skipping ``drop``ped entries.

    Returns the unprotected entries with a block that refers to a ``gone`` call (they get
    those blocks removed) and, as tool_use id -> entry index, every call that no later
    result answers (orphans to heal). Removed blocks neither make nor answer a call; an
    entry whose blocks all go is dropped later, and all its blocks were skipped here.

    A fold over the records: given ``touched`` and ``pending`` as a replay of the records
    before ``found``'s left them (same ``gone``), it carries on from there, in place.
    """
    touched = set() if touched is None else touched
    pending = {} if pending is None else pending
    for i, role, btype, bid, tid in found.refs:
        if i in drop:
            continue
        if gone and role != PROTECTED_USER and (bid in gone or tid in gone):
            touched.add(i)
            if btype == "tool_use" or btype == "tool_result":
                continue
        if btype == "tool_use":
            if role == ASSISTANT and type(bid) is str:
                pending[bid] = i
        elif btype == "tool_result" and role <= USER:
            pending.pop(tid, None)  # type: ignore[arg-type]
    return touched, pending


def _suspects(entries: list[Entry], found: Scan, drop: set[int]) -> set[int]:
    """Unprotected user entries that may hold an interrupted result (``_neutralize`` checks
    each block; a candidate whose erring block was removed as denied changes nothing)."""
    marked = (i for i in found.marked if marked_interrupt(entries[i]))
    out = {i for i in (*found.erring, *marked) if i not in drop}
    out.update(outage_results(entries, found, out | drop))
    return out


def outage_results(entries: list[Entry], found: Scan, skip: set[int]) -> set[int]:
    """Entries not in ``skip`` holding a result whose text, as stored, says a subagent died
    of an outage (AGENT_API_ERROR): interrupt candidates like the erring ones.

    Asked before trim's new bodies (``found.bodies``) are set, so ``entries`` still hold
    the stored texts. Searching every stored body for the phrase was a fifth of the scan
    of a long run (~150 MB of text). Only an entry some of whose tool_result blocks carry
    the phrase once trimmed can be changed by ``_neutralize`` — no ``is_error`` block and
    no interrupt kind, as ``skip`` guarantees, leaves only the phrase test of
    ``_is_interrupt`` — so the stored texts are searched for those entries alone, and the
    bodies trim replaces by a short pointer or note are never read.
    """
    sites, bodies = found.sites, found.bodies
    look = (range(len(sites)) if bodies is None else
            [k for k, b in enumerate(bodies) if b is None or AGENT_API_ERROR in b])
    maybe: set[int] = set()
    for k in look:
        i = sites[k][0]
        if i in skip or i in maybe:
            continue
        body = bodies[k] if bodies is not None else None  # what trim puts there, if it does
        if body is None:
            body = site_block(entries, sites[k]).get("content")
        if names_outage(body):
            maybe.add(i)
    if not maybe:
        return maybe
    return {site[0] for site in sites if site[0] in maybe and site[2] != NO_TEXT
            and AGENT_API_ERROR in site_text(entries, site)}  # type: ignore[operator]


def names_outage(body: Any) -> bool:
    """Could ``body``, a tool_result's content, change in ``_neutralize`` for naming an
    outage (AGENT_API_ERROR in its text, list parts joined as ``_is_interrupt`` joins
    them)? A part whose text is no string says yes: the stored text decides then."""
    if type(body) is list:
        try:
            body = " ".join(b.get("text", "") for b in body if isinstance(b, dict))
        except TypeError:
            return True
    return type(body) is str and AGENT_API_ERROR in body


def _neutralize(work: list[Entry], i: int, e: Entry, blocks: list[Any], text: str,
                stats: dict[str, int]) -> list[Any]:
    fixed = [
        {**b, "content": text, "is_error": False}
        if isinstance(b, dict) and b.get("type") == "tool_result" and _is_interrupt(e, b)
        else b
        for b in blocks
    ]
    changed = sum(a is not b for a, b in zip(fixed, blocks, strict=True))
    if changed:
        work[i] = with_content(e, fixed)
        stats["neutralized"] += changed
    return fixed


def _anchor(entries: list[Entry], i: int, drop: set[int]) -> int:
    """Last surviving entry of the assistant message that entry ``i`` belongs to.

    The CLI writes one entry per content block (same ``message.id``); the supplied results
    go after the whole message so it is not split in two.
    """
    msg_id = entries[i].get("message", {}).get("id")
    anchor = i
    for k in range(i + 1, len(entries)):
        e = entries[k]
        if k in drop or "uuid" not in e:  # dropped, or bookkeeping (last-prompt …)
            continue
        message = e.get("message")
        if (e.get("type") == "assistant" and isinstance(message, dict) and msg_id is not None
                and message.get("id") == msg_id):
            anchor = k
            continue
        break
    return anchor


def _heal(work: list[Entry], pending: dict[str, int], drop: set[int], text: str,
          stats: dict[str, int]) -> dict[int, Entry]:
    """One supplied-result entry per orphaned assistant message, keyed by where it goes."""
    by_entry: dict[int, list[str]] = {}
    for tid, i in pending.items():
        by_entry.setdefault(i, []).append(tid)
    by_anchor: dict[int, list[str]] = {}
    for i in sorted(by_entry):
        by_anchor.setdefault(_anchor(work, i, drop), []).extend(by_entry[i])
    inserts: dict[int, Entry] = {}
    for a, ids in by_anchor.items():
        anchor = work[a]
        parent = anchor.get("uuid")
        if not isinstance(parent, str):
            continue
        # Deterministic uuid: the same stored transcript always loads to the same copy.
        heal_id = str(uuid.uuid5(_HEAL_NS, parent + "/" + ",".join(ids)))
        heal: Entry = {"type": "user", "uuid": heal_id, "parentUuid": parent}
        heal.update({k: anchor[k] for k in _COPY_FROM_ANCHOR if k in anchor})
        heal["message"] = {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": t, "content": text, "is_error": False}
            for t in ids]}
        heal["sourceToolAssistantUUID"] = parent
        inserts[a] = heal
        stats["healed"] += len(ids)
    return inserts


"""Small, pure helpers over CLI transcript entries, shared by the trim and prune layers.

Entries are the dicts the CLI mirrors into the session store: one content block per ``assistant``
entry, tool results as ``user`` entries, a single ``parentUuid`` chain. Every helper here is
copy-on-write: it returns new dicts along the changed path and never mutates its input, so a
caller's list (and anything it shares with the store) stays exactly as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from flower.shell import is_ephemeral

__all__ = [
    "Scan",
    "block_text",
    "content_blocks",
    "is_api_error",
    "is_protected",
    "relink",
    "result_text",
    "scan",
    "site_block",
    "site_text",
    "tool_uses",
    "with_content",
]

Entry = dict[str, Any]


def is_protected(entry: Entry) -> bool:
    """Compact summaries and meta entries are the only copy of compacted history: never edit."""
    return entry.get("isCompactSummary") is True or entry.get("isMeta") is True


def content_blocks(entry: Entry) -> list[Any]:
    """The ``message.content`` list of an entry, or ``[]`` (string content has no blocks)."""
    message = entry.get("message")
    if isinstance(message, dict):
        content = message.get("content")
        if isinstance(content, list):
            return content
    return []


def tool_uses(entry: Entry) -> Iterable[dict[str, Any]]:
    """``tool_use`` blocks of an assistant entry."""
    if entry.get("type") != "assistant":
        return ()
    return (b for b in content_blocks(entry) if isinstance(b, dict) and b.get("type") == "tool_use")


def result_text(block: dict[str, Any]) -> str | None:
    """The plain-text body of a tool_result block, or None if it holds images/documents.

    A list of text blocks counts as text (joined with newlines), as the CLI produces for
    some tools; anything else is left alone by trim.
    """
    body = block.get("content")
    if isinstance(body, str):
        return body
    if isinstance(body, list) and all(
        isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        for b in body
    ):
        return "\n".join(b["text"] for b in body)
    return None


def site_block(entries: list[Entry], site: tuple[Any, ...]) -> dict[str, Any]:
    """The tool_result block a scan's ``Site`` names in ``entries`` (a parse of its rows)."""
    return entries[site[0]]["message"]["content"][site[1]]


def site_text(entries: list[Entry], site: tuple[Any, ...]) -> str | None:
    """The text body of a ``Site`` in ``entries`` (None when it holds no text)."""
    return block_text(site_block(entries, site))


def block_text(block: dict[str, Any]) -> str | None:
    """``result_text`` with the common case (a string body) first."""
    body = block.get("content")
    return body if type(body) is str else result_text(block)


def with_content(entry: Entry, content: list[Any], *, drop: Iterable[str] = ()) -> Entry:
    """A copy of ``entry`` whose ``message.content`` is ``content`` (and without ``drop`` keys)."""
    new = dict(entry)
    for key in drop:
        new.pop(key, None)
    new["message"] = {**entry["message"], "content": content}
    return new


def relink(entries: list[Entry], drop: set[int],
           insert_after: dict[int, Entry] | None = None, *,
           found: Scan | None = None, leaves: list[int] | None = None,
           memo: dict[str, Any] | None = None,
           children: Callable[[Iterable[Any]], Iterable[int]] | None = None,
           via: dict[int, Any] | None = None) -> list[Entry]:
    """Remove ``entries[i]`` for ``i in drop`` and re-attach orphans to a surviving ancestor.

    Must be given the FULL list including the entries being dropped: their ``parentUuid`` is
    the only record of where the chain continues. Filtering first and relinking after loses
    that, which breaks the chain silently whenever the dropped entry is mid-list (the CLI
    walks back from the leaf and everything before the break disappears from context).
    ``leafUuid`` pointers (``last-prompt`` entries) are repaired the same way. Cycle-safe.

    ``insert_after[i]`` splices a new entry (whose ``parentUuid`` is ``entries[i]``) into the
    chain right after ``entries[i]``: whatever hung below ``entries[i]`` now hangs below it.
    Both jobs share one pass because this runs on every resume of very long transcripts.

    ``found``, the ``scan`` of a list with the same ``parentUuid``/``leafUuid`` values,
    spares re-reading those from every entry (a walk over 50k cold dicts costs ~20 ms).
    ``leaves`` (the indices of entries with a ``leafUuid``) does the same for those; a
    ``memo`` dict keeps which entries pointed at a removed one, for a later call on the
    same entries with the same ``drop`` and ``insert_after`` (a fresh parse of the same
    rows), which then walks no ``parentUuid`` at all. ``children``, given the uuids that
    move, names every entry whose ``parentUuid`` is one of them (a ``LoadIndex`` knows without
    a walk); any others it names are ignored.

    ``via[i]``, for a dropped ``entries[i]``, is the uuid its children go to instead of its
    ``parentUuid`` (still resolved to a survivor): prune's choice for a removed result of
    a parallel call, whose parent is a line its siblings are not below.
    """
    inserts = insert_after or {}
    if not drop and not inserts:
        return list(entries)
    parent: dict[Any, Any] = {}
    via = via or {}
    for i in drop:
        uid = entries[i].get("uuid")
        if uid.__class__ is str:
            parent[uid] = via[i] if i in via else entries[i].get("parentUuid")
    dropped = parent.keys()
    redirect = {entries[a].get("uuid"): new["uuid"] for a, new in inserts.items()}
    redirect.pop(None, None)
    resolved: dict[Any, Any] = {}

    def survivor(uid: Any) -> Any:
        if uid not in dropped:
            return redirect.get(uid, uid)
        if uid in resolved:
            return resolved[uid]
        path, cur = [], uid
        while cur in dropped and cur not in resolved:
            if cur in path:  # a cycle among dropped entries: nothing survives above it
                cur = None
                break
            path.append(cur)
            cur = parent[cur]
        result = resolved[cur] if cur in resolved else redirect.get(cur, cur)
        for p in path:
            resolved[p] = result
        return result

    moved = dropped | redirect.keys()
    pointing = memo.get("pointing") if memo is not None else None
    if pointing is None:
        if children is not None:
            pointing = sorted({i for i in children(moved) if i not in drop
                               and entries[i].get("parentUuid") in moved})
        else:
            parents = (found.parents if found is not None
                       else [e.get("parentUuid") for e in entries])
            pointing = _pointing_at(parents, drop, moved)
        if memo is not None:
            memo["pointing"] = pointing
    if leaves is None:
        leaves = (found.leaves if found is not None
                  else [i for i, e in enumerate(entries) if "leafUuid" in e])
    work = list(entries)
    for i in pointing:
        work[i] = {**work[i], "parentUuid": survivor(work[i]["parentUuid"])}
    for i in leaves:  # few: only bookkeeping entries (``last-prompt``) have one
        leaf = work[i].get("leafUuid")
        if leaf is not None and i not in drop and leaf in moved:
            work[i] = {**work[i], "leafUuid": survivor(leaf)}
    return _splice(work, drop, inserts)


def _pointing_at(parents: list[Any], drop: set[int], moved: set[Any]) -> list[int]:
    """Indices of surviving entries whose ``parentUuid`` names a ``moved`` entry."""
    return [i for i, p in enumerate(parents) if p is not None and i not in drop and p in moved]


def _splice(entries: list[Entry], drop: set[int], inserts: dict[int, Entry]) -> list[Entry]:
    """``entries`` without ``drop``, each ``inserts[i]`` right after a surviving entry ``i``."""
    out: list[Entry] = []
    start = 0
    for k in sorted(drop | inserts.keys()):
        out.extend(entries[start:k])
        if k not in drop:
            out.append(entries[k])
            out.append(inserts[k])
        start = k + 1
    out.extend(entries[start:])
    return out


# --------------------------------------------------------------------------- one shared walk


@lru_cache(maxsize=4096)
def _ephemeral(cmd: str) -> bool:
    # Long runs repeat the same few commands thousands of times; lexing each once is enough.
    return is_ephemeral(cmd)


# A tool_result block of an unprotected user entry, for trim:
# (entry index, block index, length of its text body or -1 when it holds no text,
#  tool_use_id if it answers an ephemeral Bash call issued earlier else None, the entry's
#  uuid). Indices and values only, no object of the parse: a scan stays valid for any
#  fresh parse of the same rows, so a load can reuse the scan of the rows it saw before.
Site = tuple[int, int, int, Any, Any]
NO_TEXT = -1  # a Site's length when the body is images or documents (never trimmed)

# A content block prune may have to look at again, for denial removal and orphan detection:
# (entry index, role, block type, block "id", block "tool_use_id"). The values are copied out
# so prune never has to touch the (cold) block again.
Ref = tuple[int, int, Any, Any, Any]
PROTECTED_USER = 0  # role: tool_result blocks of protected user entries still pair up calls
USER = 1
ASSISTANT = 2
SYSTEM = 3


_ROLES = {"user": USER, "assistant": ASSISTANT, "system": SYSTEM}


def is_api_error(entry: Entry) -> bool:
    """Is ``entry`` failure debris of an API call — the CLI's synthetic error message
    (``isApiErrorMessage``, or an assistant message from model ``<synthetic>``) or its
    ``system``/``api_error`` retry record? Prune drops these from what a resume sees, so
    after an outage the model does not pick up "discussing" the connection error. Compact
    summaries and meta entries never count (they are the only copy of compacted history)."""
    role = _ROLES.get(entry.get("type"))  # type: ignore[arg-type]
    if role is None or is_protected(entry):
        return False
    return _api_error(entry, role, entry.get("message"))


def _api_error(e: Entry, role: int, message: Any) -> bool:
    # the rule itself, for an unprotected entry whose role and message are already known
    return (e.get("isApiErrorMessage") is True
            or (role == SYSTEM and e.get("subtype") == "api_error")
            or (role == ASSISTANT and isinstance(message, dict)
                and message.get("model") == "<synthetic>"))


#: What the CLI puts in an ``Agent`` result when the subagent died of an API error (an
#: outage mid-task): an infrastructure failure, not information — prune neutralizes it.
AGENT_API_ERROR = "terminated early due to an API error"

@dataclass(slots=True)
class Scan:
    """What trim and prune need from a transcript, found in ONE walk over it.

    A long run's transcript is ~50k entries spread over ~100 MB of freshly parsed objects;
    every walk over it is dominated by cache misses, not by the Python doing the checks.
    So ``scan`` visits each entry once and records indices and the few values the layers
    decide on; afterwards they touch only the entries they actually change.

    Everything recorded stays valid for the output of trim, which only replaces the
    ``content`` of tool_result blocks (never keys of an entry, ``is_error``, ids or the
    length of the list) — so prune can reuse the scan of trim's input.
    """

    sites: list[Site] = field(default_factory=list)
    commands: dict[str, str] = field(default_factory=dict)  # ephemeral Bash by tool_use id
    calls: list[tuple[str, int]] = field(default_factory=list)  # (id, entry) of each of them
    marked: list[int] = field(default_factory=list)  # unprotected user entries with a
    # toolDenialKind / permissionDecision key: denial (or interrupt) candidates
    errors: list[int] = field(default_factory=list)  # unprotected API-error entries
    erring: list[int] = field(default_factory=list)  # unprotected user entries holding a
    # block with is_error true: interrupt candidates (see also ``outage_results``)
    refs: list[Ref] = field(default_factory=list)  # blocks in transcript order
    parents: list[Any] = field(default_factory=list)  # parentUuid of every entry (relink)
    leaves: list[int] = field(default_factory=list)  # entries with a leafUuid key (relink)
    bodies: list[str | None] | None = None  # set by trim: each site's new body, or None
    # where it kept the stored one (so prune need not read the blocks again)
    count: int = 0  # entries scanned: a later ``scan(entries, into=this)`` walks the rest


def scan(entries: list[Entry], into: Scan | None = None) -> Scan:
    """Walk ``entries`` once and record what trim and prune decide on (see ``Scan``).

    Semantics per entry mirror the layers exactly: only ``user``/``assistant``/``system``
    entries count, ``isCompactSummary``/``isMeta`` ones are protected, and only a list
    ``message.content`` has blocks. Type checks are inlined: this is the hot loop of a
    resume.

    ``into``, the scan of the first ``into.count`` of these very entries (rows only ever
    get appended), is extended in place by a walk over the rest alone: what it recorded
    depends only on those entries and the ones before them.
    """
    found = Scan() if into is None else into
    start = found.count
    found.count = len(entries)
    found.bodies = None
    sites, commands, refs, calls = found.sites, found.commands, found.refs, found.calls
    verdicts: dict[str, bool] = {}  # is_ephemeral per distinct command, for this walk
    parents, leaves, marked, errors = found.parents, found.leaves, found.marked, found.errors
    for i, e in enumerate(entries[start:] if start else entries, start):
        parents.append(e.get("parentUuid"))
        if "leafUuid" in e:
            leaves.append(i)
        kind = e.get("type")
        if kind == "user":
            role = USER
        elif kind == "assistant":
            role = ASSISTANT
        elif kind == "system":
            role = SYSTEM
        else:
            continue
        protected = e.get("isCompactSummary") is True or e.get("isMeta") is True
        message = e.get("message")
        is_dict = type(message) is dict
        if not protected:
            if role == USER:
                if "toolDenialKind" in e or "permissionDecision" in e:
                    marked.append(i)
                if e.get("isApiErrorMessage") is True:
                    errors.append(i)
            elif (e.get("isApiErrorMessage") is True  # ``_api_error``, spelt out: one
                  or (role == SYSTEM and e.get("subtype") == "api_error")  # call per
                  or (role == ASSISTANT and (isinstance(message, dict)  # entry is ~10%
                                             and message.get("model") == "<synthetic>"))):
                errors.append(i)
        content = message.get("content") if is_dict else None
        if type(content) is not list or not content:
            continue
        if role == USER:
            if protected:
                for b in content:
                    if type(b) is dict and b.get("type") == "tool_result":
                        refs.append((i, PROTECTED_USER, "tool_result", None,
                                     b.get("tool_use_id")))
                continue
            uid = e.get("uuid")
            erring = False
            for j, b in enumerate(content):
                if type(b) is not dict:
                    continue
                btype = b.get("type")
                tid = b.get("tool_use_id")
                refs.append((i, USER, btype, b.get("id"), tid))
                if b.get("is_error") is True:
                    erring = True
                if btype == "tool_result":
                    body = b.get("content")
                    if type(body) is not str:
                        body = result_text(b)
                    sites.append((i, j, NO_TEXT if body is None else len(body),
                                  tid if tid in commands else None, uid))
                    # An Agent result naming an outage (AGENT_API_ERROR) makes the entry an
                    # interrupt candidate too; prune looks for it (``outage_results``)
                    # once trim has planned, when most big bodies become a short pointer.
            if erring:
                found.erring.append(i)
        elif role == ASSISTANT:
            for b in content:
                if type(b) is not dict:
                    continue
                btype = b.get("type")
                bid = b.get("id")
                if btype == "tool_use" and b.get("name") == "Bash":
                    inp = b.get("input")
                    cmd = inp.get("command") if type(inp) is dict else None
                    if type(cmd) is str and type(bid) is str:
                        verdict = verdicts.get(cmd)
                        if verdict is None:  # a plain dict is ~10x cheaper than lru_cache
                            verdict = verdicts[cmd] = _ephemeral(cmd)
                        if verdict:
                            commands[bid] = cmd
                            calls.append((bid, i))
                if not protected:
                    refs.append((i, ASSISTANT, btype, bid, b.get("tool_use_id")))
        elif not protected:
            refs.extend((i, SYSTEM, b.get("type"), b.get("id"), b.get("tool_use_id"))
                        for b in content if type(b) is dict)
    return found

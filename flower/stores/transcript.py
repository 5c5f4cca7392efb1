"""Small, pure helpers over CLI transcript entries, shared by the trim and prune layers.

Entries are the dicts the CLI mirrors (sdk-notes §4.4): one content block per ``assistant``
entry, tool results as ``user`` entries, a single ``parentUuid`` chain. Every helper here is
copy-on-write: it returns new dicts along the changed path and never mutates its input, so a
caller's list (and anything it shares with the store) stays exactly as it was.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "content_blocks",
    "is_protected",
    "relink",
    "result_text",
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


def with_content(entry: Entry, content: list[Any], *, drop: Iterable[str] = ()) -> Entry:
    """A copy of ``entry`` whose ``message.content`` is ``content`` (and without ``drop`` keys)."""
    new = dict(entry)
    for key in drop:
        new.pop(key, None)
    new["message"] = {**entry["message"], "content": content}
    return new


def relink(entries: list[Entry], drop: set[int],
           insert_after: dict[int, Entry] | None = None) -> list[Entry]:
    """Remove ``entries[i]`` for ``i in drop`` and re-attach orphans to a surviving ancestor.

    Must be given the FULL list including the entries being dropped: their ``parentUuid`` is
    the only record of where the chain continues. Filtering first and relinking after loses
    that, which breaks the chain silently whenever the dropped entry is mid-list (the CLI
    walks back from the leaf and everything before the break disappears from context).
    ``leafUuid`` pointers (``last-prompt`` entries) are repaired the same way. Cycle-safe.

    ``insert_after[i]`` splices a new entry (whose ``parentUuid`` is ``entries[i]``) into the
    chain right after ``entries[i]``: whatever hung below ``entries[i]`` now hangs below it.
    Both jobs share one pass because this runs on every resume of very long transcripts.
    """
    inserts = insert_after or {}
    if not drop and not inserts:
        return list(entries)
    parent: dict[Any, Any] = {}
    for i in drop:
        uid = entries[i].get("uuid")
        if uid.__class__ is str:
            parent[uid] = entries[i].get("parentUuid")
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

    out: list[Entry] = []
    for i, e in enumerate(entries):
        if i in drop:
            continue
        p = e.get("parentUuid")
        if p in dropped or p in redirect:
            e = {**e, "parentUuid": survivor(p)}
        leaf = e.get("leafUuid")
        if leaf in dropped or leaf in redirect:
            e = {**e, "leafUuid": survivor(leaf)}
        out.append(e)
        if i in inserts:
            out.append(inserts[i])
    return out

"""The request the CLI builds when it resumes a transcript, modelled from entries alone.

A resume is valid when the request it makes is one the API accepts, and the CLI decides
which entries make that request: it picks a leaf, walks ``parentUuid`` up from it and
turns what it passes into messages. The property tests (test_resume_valid.py) need that
request for thousands of generated transcripts, where starting the CLI is out of the
question, so this models it; tests/e2e/test_transcript_shapes.py holds the model against
what the real CLI sent for every fixture shape (same prompts, same tool calls).

What the model does, as CLI 2.1.332 was seen doing it:

- the leaf is the last ``user``/``assistant`` line of the file, sidechain lines left out
  for a main transcript (a 1.0.x subagent's inline lines, a last ``progress`` line);
- the chain is that leaf and its ``parentUuid`` ancestors, until a root (``null``, or a
  uuid no line has: a compaction agent's parent lives in the main file);
- a response on the chain brings all of its lines (one per content block, sharing a
  ``message.id``) and the results answering them, wherever they hang: the CLI writes
  each parallel call's result below that call's own line and carries on below the
  result written last, so the other calls and their results are siblings off the walk
  (the CLI's "parallel tool result recovery"); they are sent as one assistant message
  and the results after it;
- of that, ``user`` and ``assistant`` lines become one message each, in order, except
  the synthetic ``isApiErrorMessage`` assistant of a failed call; ``system``,
  ``progress`` and ``attachment`` lines are passed through but send nothing;
- the resumed turn's prompt is the last message.

Merging consecutive messages of one role is the API's rule (``flower.testing.rules``
applies it), so the lines of one response sharing a ``message.id`` need no rule here.
What the CLI repairs on its own — it drops a call nobody answered and an empty text
block — is not modelled: a model request with those is invalid where the CLI's is not,
so the properties hold flower's load to the stricter test.
"""

from __future__ import annotations

import json
from typing import Any

Entry = dict[str, Any]
MESSAGES = ("user", "assistant")


def parse_jsonl(text: str) -> list[Entry]:
    """The entries of a transcript file as the CLI reads them: a line that does not parse
    (one torn by a kill) is skipped."""
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def leaf(entries: list[Entry], *, sidechain: bool = False) -> Entry | None:
    for e in reversed(entries):
        if e.get("type") in MESSAGES and "uuid" in e and (sidechain or not e.get("isSidechain")):
            return e
    return None


def chain(entries: list[Entry], *, sidechain: bool = False) -> list[Entry]:
    """The leaf and its ancestors, oldest first (cycle-safe)."""
    by_uuid = {e["uuid"]: e for e in entries if isinstance(e.get("uuid"), str)}
    out: list[Entry] = []
    seen: set[str] = set()
    cur = leaf(entries, sidechain=sidechain)
    while cur is not None and cur["uuid"] not in seen:
        seen.add(cur["uuid"])
        out.append(cur)
        parent = cur.get("parentUuid")
        cur = by_uuid.get(parent) if isinstance(parent, str) else None
    return out[::-1]


def _ids(entry: Entry, kind: str, key: str) -> list[Any]:
    return [b.get(key) for b in _content(entry) if isinstance(b, dict) and b.get("type") == kind]


def _side(entry: Entry) -> tuple[bool, Any]:
    return bool(entry.get("isSidechain")), entry.get("agentId")


def resumed(entries: list[Entry], *, sidechain: bool = False) -> list[Entry]:
    """The chain with each response on it made whole: its lines, then its results."""
    walked = chain(entries, sidechain=sidechain)
    lines: dict[Any, list[Entry]] = {}
    for e in entries:
        mid = (e.get("message") or {}).get("id") if e.get("type") == "assistant" else None
        if mid is not None:
            lines.setdefault(mid, []).append(e)
    results = [e for e in entries if e.get("type") == "user" and _ids(e, "tool_result",
                                                                       "tool_use_id")]
    out: list[Entry] = []
    done: set[int] = set()
    for e in walked:
        if id(e) in done:
            continue
        mid = (e.get("message") or {}).get("id") if e.get("type") == "assistant" else None
        if mid is None:
            out.append(e)
            done.add(id(e))
            continue
        group = [x for x in lines[mid] if _side(x) == _side(e)]
        uuids = {x.get("uuid") for x in group}
        calls = {c for x in group for c in _ids(x, "tool_use", "id")}
        answers = [r for r in results if _side(r) == _side(e) and (
            r.get("parentUuid") in uuids or r.get("sourceToolAssistantUUID") in uuids
            or any(t in calls for t in _ids(r, "tool_result", "tool_use_id")))]
        for x in (*group, *answers):
            if id(x) not in done:
                out.append(x)
                done.add(id(x))
    return out


def _content(entry: Entry) -> list[Any]:
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def messages(entries: list[Entry], *, sidechain: bool = False) -> list[Entry]:
    out = []
    for e in resumed(entries, sidechain=sidechain):
        if e.get("type") not in MESSAGES or e.get("isApiErrorMessage") is True:
            continue
        out.append({"role": e["type"], "content": _content(e)})
    return out


def request(entries: list[Entry], prompt: str = "carry on", *,
            sidechain: bool = False) -> dict[str, Any]:
    """The body the resumed turn sends, for ``flower.testing.rules.violations``."""
    return {"messages": [*messages(entries, sidechain=sidechain),
                         {"role": "user", "content": [{"type": "text", "text": prompt}]}]}


def prompt_text(entry: Entry) -> str | None:
    """The text of a user line that is neither a tool result nor the CLI's meta or
    compaction summary: a typed prompt (or the CLI's ``[Request interrupted …]`` note,
    which is sent like one)."""
    if entry.get("type") != "user" or entry.get("isMeta") or entry.get("isCompactSummary"):
        return None
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        return None
    if any(not isinstance(b, dict) or b.get("type") != "text" for b in content):
        return None
    return "\n".join(str(b.get("text")) for b in content)


def prompts(entries: list[Entry]) -> list[str]:
    """Every typed prompt among ``entries``, in order."""
    return [t for e in entries if (t := prompt_text(e)) is not None]


def chain_prompts(entries: list[Entry], *, sidechain: bool = False) -> list[str]:
    """The typed prompts a resume of ``entries`` must show the model."""
    return prompts(chain(entries, sidechain=sidechain))


def sent_prompts(body: dict[str, Any], candidates: list[str]) -> list[str]:
    """Which of ``candidates`` the request's user text carries, in the order it does (the
    CLI merges a prompt with reminders into one message, so text is searched, not
    matched; tool results and inputs are not searched)."""
    parts = []
    for m in body.get("messages", []):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        parts += [b.get("text", "") for b in blocks or []
                  if isinstance(b, dict) and b.get("type") == "text"]
    text = "\x00".join(parts)
    found = {c: text.find(c) for c in set(candidates)}
    return sorted((c for c, at in found.items() if at >= 0), key=found.__getitem__)


def tool_calls(body: dict[str, Any]) -> list[str]:
    """The ``tool_use`` ids of a request, in order."""
    return [b["id"] for m in body.get("messages", []) if m.get("role") == "assistant"
            and isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]


def tool_answers(body: dict[str, Any]) -> set[str]:
    """The ``tool_use_id`` of every ``tool_result`` of a request."""
    return {b["tool_use_id"] for m in body.get("messages", []) if m.get("role") == "user"
            and isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"}

"""The Messages API's request rules the fake enforces, with the API's own wording.

A resume that drops a ``tool_result`` or keeps an orphan one is the bug users of long agent
runs meet most (the CLI answers it with ``API Error: 400 … tool_use ids were found without
tool_result blocks``). A fake that accepts anything cannot show such a bug, so
``FakeServer`` checks every model turn against these rules (``strict=True``, the default)
and answers a violation as the API does: HTTP 400, ``invalid_request_error``.

The rules, as the API applies them:

- messages with ``role: "system"`` (the CLI's per-turn environment note) take no part;
- consecutive messages of one role are merged into one before anything else is checked;
- the first message is the user's;
- no message is empty, no text block is empty or only whitespace;
- every ``tool_use`` id is unique in the request;
- an assistant message with ``tool_use`` blocks is followed by a user message that *begins*
  with a ``tool_result`` for each of them;
- every ``tool_result`` answers a ``tool_use`` of the assistant message just before it.

``violations(body)`` returns the messages the API would answer, first one first (the API
reports only the first; the rest help a test say what else is wrong). Pure and stdlib-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FIRST_USER = 'messages: first message must use the "user" role'
EMPTY_TEXT = "messages: text content blocks must be non-empty"
BLANK_TEXT = "messages: text content blocks must contain non-whitespace text"
EMPTY_MESSAGE = ("messages.{n}: all messages must have non-empty content except for the "
                 "optional final assistant message")
DUPLICATE_ID = "messages.{n}.content.{m}: `tool_use` ids must be unique"
MISSING_RESULTS = ("messages.{n}: `tool_use` ids were found without `tool_result` blocks "
                   "immediately after: {ids}. Each `tool_use` block must have a corresponding "
                   "`tool_result` block in the next message.")
UNEXPECTED_RESULT = ("messages.{n}.content.{m}: unexpected `tool_use_id` found in "
                     "`tool_result` blocks: {id}. Each `tool_result` block must have a "
                     "corresponding `tool_use` block in the previous message.")
RESULTS_NOT_FIRST = ("messages.{n}: Did not find {count} `tool_result` block(s) at the "
                     "beginning of this message. Messages following `tool_use` blocks must "
                     "begin with a matching number of `tool_result` blocks.")


@dataclass
class _Turn:
    """Consecutive messages of one role, merged as the API merges them. ``index`` is the
    request index of the first of them (what the API's ``messages.N`` counts); each block
    keeps the request position it came from."""

    role: str
    index: int
    blocks: list[tuple[int, int, Any]] = field(default_factory=list)  # (msg, content, block)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _turns(messages: list[Any]) -> list[_Turn]:
    turns: list[_Turn] = []
    for n, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") == "system":
            continue
        role = msg.get("role")
        if not turns or turns[-1].role != role:
            turns.append(_Turn(str(role), n))
        turns[-1].blocks += [(n, m, b) for m, b in enumerate(_blocks(msg.get("content")))]
    return turns


def _kind(block: Any) -> str | None:
    return block.get("type") if isinstance(block, dict) else None


def _content_rules(messages: list[Any]) -> list[str]:
    """Empty messages and empty or blank text blocks."""
    found: list[str] = []
    last = len(messages) - 1
    for n, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") == "system":
            continue
        content = msg.get("content")
        final_assistant = n == last and msg.get("role") == "assistant"
        if content in ("", []) and not final_assistant:
            found.append(EMPTY_MESSAGE.format(n=n))
            continue
        for block in _blocks(content) if not isinstance(content, str) else []:
            if _kind(block) != "text":
                continue
            text = block.get("text")
            if not isinstance(text, str) or text == "":
                found.append(EMPTY_TEXT)
            elif not text.strip() and not final_assistant:
                found.append(BLANK_TEXT)
    return found


def _pairing_rules(turns: list[_Turn]) -> list[str]:
    """Unique ids; each assistant's calls answered first thing in the next user turn; no
    result without its call."""
    found: list[str] = []
    seen: set[str] = set()
    for turn in turns:
        for n, m, block in turn.blocks:
            if _kind(block) == "tool_use":
                call = block.get("id")
                if call in seen:
                    found.append(DUPLICATE_ID.format(n=n, m=m))
                seen.add(call)
    for i, turn in enumerate(turns):
        prev = turns[i - 1] if i and turns[i - 1].role == "assistant" else None
        blocks = prev.blocks if prev else []
        where = {b.get("id"): n for n, _, b in blocks if _kind(b) == "tool_use"}
        calls = list(where)
        if turn.role == "assistant":
            mine = [b.get("id") for _, _, b in turn.blocks if _kind(b) == "tool_use"]
            if mine and i == len(turns) - 1:
                found.append(MISSING_RESULTS.format(n=turn.index, ids=", ".join(map(str, mine))))
            continue
        if calls:
            lead = []
            for _, _, block in turn.blocks:
                if _kind(block) != "tool_result":
                    break
                lead.append(block.get("tool_use_id"))
            missing = [c for c in calls if c not in lead]
            if not lead:
                found.append(RESULTS_NOT_FIRST.format(n=turn.index, count=len(calls)))
            elif missing:
                found.append(MISSING_RESULTS.format(n=where[missing[0]],
                                                    ids=", ".join(map(str, missing))))
        for n, m, block in turn.blocks:
            if _kind(block) == "tool_result" and block.get("tool_use_id") not in calls:
                found.append(UNEXPECTED_RESULT.format(n=n, m=m, id=block.get("tool_use_id")))
    return found


def violations(body: Any) -> list[str]:
    """What the API would refuse in this request body, in the API's words (empty: valid)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return []  # not a Messages request this module knows how to judge
    turns = _turns(messages)
    found: list[str] = []
    if turns and turns[0].role != "user":
        found.append(FIRST_USER)
    found += _content_rules(messages)
    found += _pairing_rules(turns)
    return found

"""Request predicates for ``FakeServer.route``: small, composable, and readable in a test."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flower.testing.server import Request

Predicate = Callable[["Request"], bool]


def system_contains(s: str) -> Predicate:
    """The system prompt (all blocks joined) contains ``s``."""
    return lambda req: s in req.system_text


def message_contains(s: str) -> Predicate:
    """Any message text (including tool_result contents) contains ``s``."""
    return lambda req: s in req.text()


def last_user_contains(s: str) -> Predicate:
    """The last user message (the newest prompt or tool results) contains ``s``."""
    return lambda req: s in req.last_user_text()


def first_user_contains(s: str) -> Predicate:
    """The first user message contains ``s``: it identifies a conversation (e.g. a subagent's
    task prompt) for all of its turns, unlike the last user message."""
    return lambda req: s in req.first_user_text()


def session(sid: str) -> Predicate:
    """The request belongs to session ``sid`` (``x-claude-code-session-id``)."""
    return lambda req: req.session_id == sid


def subagent(agent_id: str | None = None) -> Predicate:
    """A subagent's request (the CLI marks those, and only those, with the
    ``x-claude-code-agent-id`` header; the system prompt also says ``cc_is_subagent=true``)."""
    return lambda req: req.agent_id is not None and agent_id in (None, req.agent_id)


def main_agent() -> Predicate:
    """A request of the top-level agent, not of a subagent."""
    return lambda req: req.agent_id is None


def header(name: str, value: str | None = None) -> Predicate:
    """Header ``name`` is present (and equals ``value`` if given)."""
    return lambda req: name in req.headers and value in (None, req.headers[name])


def has_tool(name: str) -> Predicate:
    """``name`` is among the tools offered to the model."""
    return lambda req: name in req.tool_names


def all_of(*preds: Predicate) -> Predicate:
    return lambda req: all(p(req) for p in preds)


def any_of(*preds: Predicate) -> Predicate:
    return lambda req: any(p(req) for p in preds)


def not_(pred: Predicate) -> Predicate:
    return lambda req: not pred(req)


def from_json(obj: dict) -> Predicate:
    """``{"system_contains": "x", "session": "..."}`` → all_of(...); ``{"any_of": [...]}``."""
    preds: list[Predicate] = []
    simple = {
        "system_contains": system_contains, "message_contains": message_contains,
        "last_user_contains": last_user_contains, "first_user_contains": first_user_contains,
        "session": session, "has_tool": has_tool,
    }
    for key, value in obj.items():
        if key in simple:
            preds.append(simple[key](value))
        elif key == "subagent":
            preds.append(subagent(None if value is True else value) if value else main_agent())
        elif key == "any_of":
            preds.append(any_of(*[from_json(o) for o in value]))
        elif key == "all_of":
            preds.append(all_of(*[from_json(o) for o in value]))
        elif key == "not":
            preds.append(not_(from_json(value)))
        else:
            raise ValueError(f"unknown match key {key!r}")
    return all_of(*preds)

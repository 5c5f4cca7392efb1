"""``Request``: one recorded HTTP request, with helpers for asserting what the model saw."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


class Headers(Mapping[str, str]):
    """Case-insensitive, read-only header map (HTTP header names are case-insensitive)."""

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self._d: dict[str, str] = {}
        for k, v in items:
            self._d[k.lower()] = v

    def __getitem__(self, key: str) -> str:
        return self._d[key.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._d

    def __repr__(self) -> str:
        return f"Headers({self._d!r})"


def _content_text(content: Any) -> list[str]:
    """Flatten message content to strings: text blocks and tool_result contents."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for b in content or []:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "text":
            out.append(b.get("text", ""))
        elif b.get("type") == "tool_result":
            out += _content_text(b.get("content"))
    return out


@dataclass
class Request:
    """A request the fake received. ``body`` is the parsed JSON (None if absent/invalid)."""

    method: str
    path: str
    query: dict[str, str]
    headers: Headers
    raw: bytes
    body: Any
    time: float
    index: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # which turn this is (FakeServer.conversation_key), set once for a scripted turn: the
    # fake looks an earlier answer up and remembers this one's under it
    turn: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def session_id(self) -> str | None:
        """From ``x-claude-code-session-id``, else the JSON in ``metadata.user_id``."""
        sid = self.headers.get("x-claude-code-session-id")
        if sid:
            return sid
        try:
            uid = self.body["metadata"]["user_id"]
            return json.loads(uid).get("session_id")
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    @property
    def agent_id(self) -> str | None:
        """``x-claude-code-agent-id``: set only on a subagent's requests (the parent's are
        unmarked), so it is the reliable way to tell them apart."""
        return self.headers.get("x-claude-code-agent-id") or None

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        m = self.body.get("messages") if isinstance(self.body, dict) else None
        return m if isinstance(m, list) else []

    @property
    def system_text(self) -> str:
        """All system blocks joined with newlines (a plain string system works too)."""
        s = self.body.get("system") if isinstance(self.body, dict) else None
        if isinstance(s, str):
            return s
        return "\n".join(b.get("text", "") for b in s or [] if isinstance(b, dict))

    @property
    def tool_names(self) -> list[str]:
        t = self.body.get("tools") if isinstance(self.body, dict) else None
        return [x.get("name", "") for x in t or [] if isinstance(x, dict)]

    @property
    def is_message(self) -> bool:
        """A model turn (``POST /v1/messages``), as opposed to count_tokens or a probe."""
        return self.method == "POST" and self.path.rstrip("/").endswith("/v1/messages")

    @property
    def auxiliary(self) -> str | None:
        """``"title"``, ``"probe"`` or ``"quota"`` when the fake answered this request on
        its own (it was no turn of the script); None otherwise."""
        return self.extra.get("auxiliary")

    @property
    def rejected(self) -> str | None:
        """The API's words for why the fake refused this turn (HTTP 400, as the API
        refuses it; flower/testing/rules.py), or None when it was not refused."""
        return self.extra.get("rejected")

    @property
    def retry(self) -> bool:
        """True when this turn repeats one the fake had already answered in full (same
        session, agent and messages): it got that answer again instead of a new step."""
        return bool(self.extra.get("retry_of"))

    def text(self) -> str:
        """Every message's text (incl. tool_result contents and role:system entries), joined."""
        return "\n".join(t for m in self.messages for t in _content_text(m.get("content")))

    def _role_text(self, index: int) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return "\n".join(_content_text(users[index].get("content"))) if users else ""

    def last_user_text(self) -> str:
        return self._role_text(-1)

    def first_user_text(self) -> str:
        return self._role_text(0)

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result block in the request, oldest first."""
        return [
            b for m in self.messages if isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
        ]

    def tool_uses(self, name: str | None = None) -> list[dict[str, Any]]:
        """Every tool_use block the model sent earlier in this conversation (optionally only
        those of tool ``name``), oldest first."""
        return [
            b for m in self.messages
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"
            and name in (None, b.get("name"))
        ]

    def result_of(self, tool_use_id: str) -> str | None:
        """The text of the tool_result answering ``tool_use_id``; None if there is none yet."""
        for block in self.tool_results():
            if block.get("tool_use_id") == tool_use_id:
                return tool_result_text(block)
        return None

    def last_tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks of the last user message (the round trip just finished)."""
        users = [m for m in self.messages if m.get("role") == "user"]
        content = users[-1].get("content") if users else None
        if not isinstance(content, list):
            return []
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]

    def to_json(self) -> dict[str, Any]:
        """A JSON-able summary (used by ``--log``)."""
        return {
            "index": self.index, "time": self.time, "method": self.method, "path": self.path,
            "query": self.query, "headers": dict(self.headers.items()),
            "session_id": self.session_id, "stream": self.stream, "body": self.body,
            **({"extra": self.extra} if self.extra else {}),
        }


def tool_result_text(block: dict[str, Any]) -> str:
    """The text of a tool_result block (its content may be a string or a list of blocks)."""
    return "\n".join(_content_text(block.get("content")))

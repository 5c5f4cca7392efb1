"""One event vocabulary between the SDK and everything that shows or records a run.

UI code, the manifest and workflows see only :class:`Event`; they never import SDK types.
``normalize`` is the single place that knows the SDK's message classes, and it imports them
lazily so ``flower --help`` stays free of ``claude_agent_sdk``.

Two invariants live here:

* A synthetic API error (the CLI's ``model="<synthetic>"`` message, ``isApiErrorMessage`` in
  the transcript) becomes exactly one ``error`` event, never ``text`` — otherwise "API Error:
  …" would leak into ``StepResult.text`` and from there into the next step's prompt.
* ``payload["context"]`` on assistant events is the prompt size of *that API call*
  (input + cache read + cache creation). Several AssistantMessages of one call
  share a ``message_id``; :class:`ContextMeter` counts each id once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from flower import texts
from flower.errors import one_line
from flower.usage import context_of

EventKind = Literal[
    "text",
    "thinking",
    "tool_call",
    "tool_result",
    "prompt",
    "task",
    "system",
    "reset",
    "result",
    "error",
    "unknown",
    "retry",
    "step",
    "handoff",
    "ask",
]

SYNTHETIC_MODEL = "<synthetic>"
_SUMMARY_KEYS = (
    "file_path", "command", "pattern", "path", "notebook_path", "url", "query",
    "description", "prompt", "skill",
)
_TOOL_TEXT_MAX = 200
_RESULT_TEXT_MAX = 500


@dataclass
class Event:
    """A normalized thing that happened; ``raw`` keeps the original object for debugging."""

    kind: EventKind
    text: str = ""
    tool: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    raw: Any = None

    def __str__(self) -> str:
        if self.kind == "tool_call":
            return f"[{self.tool}] {self.text}"
        return self.text or f"<{self.kind}>"


def is_synthetic(message: Any) -> bool:
    """True for the CLI's stand-in assistant message that carries an API error."""
    if isinstance(message, dict):
        inner = message.get("message")
        inner_model = inner.get("model") if isinstance(inner, dict) else None
        return bool(
            message.get("isApiErrorMessage")
            or message.get("model") == SYNTHETIC_MODEL
            or inner_model == SYNTHETIC_MODEL
        )
    return bool(
        getattr(message, "isApiErrorMessage", False)
        or getattr(message, "model", None) == SYNTHETIC_MODEL
    )


def _block_text(block: Any) -> str:
    if isinstance(block, dict):
        return block.get("text", "") if block.get("type") == "text" else ""
    text = getattr(block, "text", None)
    return text if isinstance(text, str) else ""


def _joined_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_block_text(b) for b in content) if t)
    return ""


def _synthetic_event(message: Any) -> Event:
    if isinstance(message, dict):
        inner = message.get("message")
        content = inner.get("content") if isinstance(inner, dict) else message.get("content")
        error = message.get("error")
        parent = message.get("parent_tool_use_id")
    else:
        content = getattr(message, "content", None)
        error = getattr(message, "error", None)
        parent = getattr(message, "parent_tool_use_id", None)
    payload: dict[str, Any] = {"synthetic": True, "subagent": bool(parent)}
    if parent:
        payload["parent_tool_use_id"] = parent
    if error:
        payload["error"] = error
    return Event("error", text=_joined_text(content).strip(), payload=payload, raw=message)


_HAND_BACK = "[Subagent hand-back]"
_REPORT_START = "The report follows:"


def hand_back_report(text: str) -> str | None:
    """The worker's own words inside the CLI's hand-back frame of an ``Agent`` result
    (between "The report follows:" and the ``agentId:`` line, de-indented); ``None`` when
    ``text`` is not a hand-back. Kept whole: the display must not cut a four-section report
    at the 500 chars other tool results are cut at."""
    if _HAND_BACK not in text:
        return None
    _, _, body = text.partition(_REPORT_START)
    lines = []
    for line in body.splitlines():
        if line.startswith(("agentId:", "<usage>")):
            break
        lines.append(line[2:] if line.startswith("  ") else line)
    return "\n".join(lines).strip()


def _summary(tool_input: Any) -> str:
    if not isinstance(tool_input, dict):
        return ""
    for key in _SUMMARY_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value[:_TOOL_TEXT_MAX]
    return ""


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content[:_RESULT_TEXT_MAX]
    if isinstance(content, list):
        return _joined_text(content)[:_RESULT_TEXT_MAX]
    return ""


def _meta(message: Any, types: Any) -> dict[str, Any]:
    parent = getattr(message, "parent_tool_use_id", None)
    meta: dict[str, Any] = {"subagent": bool(parent)}
    if parent:
        meta["parent_tool_use_id"] = parent
    if isinstance(message, types.AssistantMessage):
        ctx = context_of(message.usage)
        if ctx is not None:
            meta["context"] = ctx
        if message.model:
            meta["model"] = message.model
        if message.message_id:
            meta["message_id"] = message.message_id
    return meta


def _blocks(message: Any, text_kind: EventKind, types: Any) -> list[Event]:
    meta = _meta(message, types)
    content = message.content
    if isinstance(content, str):
        return [Event(text_kind, text=content, payload=dict(meta), raw=message)] if content else []
    events: list[Event] = []
    for block in content or []:
        if isinstance(block, types.TextBlock):
            events.append(Event(text_kind, text=block.text, payload=dict(meta), raw=block))
        elif isinstance(block, types.ThinkingBlock):
            events.append(Event("thinking", text=block.thinking, payload=dict(meta), raw=block))
        elif isinstance(block, (types.ToolUseBlock, types.ServerToolUseBlock)):
            payload = {"id": block.id, "input": block.input, **meta}
            events.append(Event("tool_call", text=_summary(block.input), tool=str(block.name),
                                payload=payload, raw=block))
        elif isinstance(block, (types.ToolResultBlock, types.ServerToolResultBlock)):
            payload = {"tool_use_id": block.tool_use_id,
                       "is_error": bool(getattr(block, "is_error", False)), **meta}
            report = hand_back_report(_joined_text(block.content) if isinstance(
                block.content, list) else str(block.content or ""))
            if report is not None:
                payload["report"] = report
            events.append(Event("tool_result", text=_result_text(block.content),
                                payload=payload, raw=block))
        else:
            events.append(Event("unknown", text=type(block).__name__, payload=dict(meta),
                                raw=block))
    return events


def _compact(message: Any) -> Event:
    data = message.data if isinstance(message.data, dict) else {}
    meta = data.get("compact_metadata") or data.get("microcompact_metadata") or data
    pre, post = meta.get("pre_tokens"), meta.get("post_tokens")
    micro = message.subtype == "microcompact_boundary"
    payload = {"trigger": meta.get("trigger"), "pre_tokens": pre, "post_tokens": post,
               "micro": micro, "subtype": message.subtype}
    label = "microcompact" if micro else "compact"
    text = f"{label}: {pre} → {post} tokens" if pre is not None else label
    return Event("reset", text=text, payload=payload, raw=message)


def _mirror_error(message: Any) -> Event:
    """The store refused a transcript batch (``MirrorErrorMessage``): an ``error`` event the
    UI shows as a warning and the Runtime adds to ``StepResult.errors``."""
    data = message.data if isinstance(getattr(message, "data", None), dict) else {}
    error = str(getattr(message, "error", "") or data.get("error") or "?")
    key = getattr(message, "key", None) or data.get("key")
    payload: dict[str, Any] = {"mirror_error": True, "warning": True, "error": error}
    if isinstance(key, dict):
        payload["key"] = dict(key)
    return Event("error", text=texts.MIRROR_FAILED.format(error=one_line(error)),
                 payload=payload, raw=message)


def normalize(message: Any) -> list[Event]:
    """Turn one SDK message (or raw transcript dict) into zero or more events."""
    from claude_agent_sdk import types  # lazy: keep `flower --help` SDK-free

    if is_synthetic(message):
        return [_synthetic_event(message)]
    if isinstance(message, types.AssistantMessage):
        return _blocks(message, "text", types)
    if isinstance(message, types.UserMessage):
        return _blocks(message, "prompt", types)
    if isinstance(message, types.ResultMessage):
        payload: dict[str, Any] = {
            "session_id": message.session_id,
            "cost_usd": message.total_cost_usd,
            "num_turns": message.num_turns,
            "is_error": message.is_error,
            "terminal_reason": message.terminal_reason,
            "api_error_status": message.api_error_status,
        }
        if message.is_error:
            payload["result"] = message.result
            payload["errors"] = message.errors
        return [Event("result", text=message.subtype, payload=payload, raw=message)]
    task_types = (types.TaskStartedMessage, types.TaskProgressMessage,
                  types.TaskUpdatedMessage, types.TaskNotificationMessage)
    if isinstance(message, task_types):
        payload = {"kind": type(message).__name__, "task_id": message.task_id}
        return [Event("task", text="", payload=payload, raw=message)]
    if isinstance(message, types.ConversationResetMessage):
        return [Event("reset", text="conversation reset", raw=message)]
    if isinstance(message, types.MirrorErrorMessage) or (
            isinstance(message, types.SystemMessage) and message.subtype == "mirror_error"):
        return [_mirror_error(message)]
    if isinstance(message, types.SystemMessage):
        if message.subtype in ("compact_boundary", "microcompact_boundary"):
            return [_compact(message)]
        data = message.data if isinstance(message.data, dict) else {}
        return [Event("system", text=message.subtype, payload=dict(data), raw=message)]
    return [Event("unknown", text=type(message).__name__, raw=message)]


class ContextMeter:
    """Main-thread context size per API call, each ``message_id`` counted once.

    Feed it every event (or SDK AssistantMessage) of a step. ``observe`` returns the new
    reading when it saw a *new* main-thread API call and None otherwise, so a caller can fire
    threshold checks exactly once per call. Subagent calls and synthetic errors are ignored:
    the handoff criterion is the coordinator's own prompt, not its workers'.
    """

    def __init__(self) -> None:
        self.last = 0
        self.peak = 0
        self.calls = 0
        self._seen: set[str] = set()

    def reset(self) -> None:
        """Start a new step (the watermark is per step)."""
        self.last = self.peak = self.calls = 0
        self._seen.clear()

    def observe(self, item: Any) -> int | None:
        """Record one event/message; the new reading if it was a new main-thread call."""
        if isinstance(item, Event):
            if item.kind == "error" or item.payload.get("subagent"):
                return None
            ctx = item.payload.get("context")
            message_id = item.payload.get("message_id")
        else:
            if is_synthetic(item) or getattr(item, "parent_tool_use_id", None):
                return None
            ctx = context_of(getattr(item, "usage", None))
            message_id = getattr(item, "message_id", None)
        if not isinstance(ctx, int) or ctx <= 0:
            return None
        if message_id:
            if message_id in self._seen:
                return None
            self._seen.add(message_id)
        self.calls += 1
        self.last = ctx
        self.peak = max(self.peak, ctx)
        return ctx

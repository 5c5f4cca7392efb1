"""flower.testing — a scripted fake of the Anthropic Messages API for the real ``claude`` CLI.

Point the CLI at ``FakeServer().url`` (``ANTHROPIC_BASE_URL``) and script what the "model"
answers: text, thinking, tool calls, faults, cut or stalled streams, outages. Everything the
CLI sends is recorded. Stdlib only — importing this never imports ``claude_agent_sdk``
(``flower.testing.sdk`` does, lazily). Guide: docs/testing.md.
"""

from __future__ import annotations

from flower.testing import match, rules
from flower.testing.request import Headers, Request, tool_result_text
from flower.testing.script import (
    EXHAUSTED_TEXT,
    Cut,
    Delay,
    Fault,
    Reply,
    SseError,
    Stall,
    Step,
    cut,
    delay,
    fault,
    reply,
    sse_error,
    stall,
    step_from_json,
    text,
    thinking,
    tool_use,
)
from flower.testing.server import FakeServer, Route

__all__ = [
    "EXHAUSTED_TEXT", "Cut", "Delay", "FakeServer", "Fault", "Headers", "Reply", "Request",
    "Route", "SseError", "Stall", "Step", "cut", "delay", "fault", "match", "reply", "rules",
    "sse_error", "stall", "step_from_json", "text", "thinking", "tool_result_text", "tool_use",
]

"""Wire encoding: a ``Reply`` as the SSE event sequence or JSON ``Message`` the CLI parses.

The sequence is the one the real streaming API sends (message_start, per-block start/delta/stop,
message_delta, message_stop). Tool input is streamed as at least two ``input_json_delta``
chunks because the real API splits it and the CLI must reassemble it.
"""

from __future__ import annotations

import json
from typing import Any

Event = tuple[str, dict[str, Any]]


def encode(name: str, data: dict[str, Any]) -> bytes:
    """One SSE frame: ``event:`` line, one-line JSON ``data:``, blank line."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def error_body(error_type: str, message: str) -> dict[str, Any]:
    """The API's error JSON (HTTP body and SSE ``error`` event share it)."""
    return {"type": "error", "error": {"type": error_type, "message": message}}


def _split(s: str) -> list[str]:
    """Split into two non-empty halves (when possible) so clients must concatenate."""
    if len(s) < 2:
        return [s]
    mid = len(s) // 2
    return [s[:mid], s[mid:]]


def message_start(msg_id: str, model: str, usage: dict[str, int]) -> Event:
    return "message_start", {
        "type": "message_start",
        "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        },
    }


def block_events(index: int, block: dict[str, Any]) -> list[Event]:
    """content_block_start / delta(s) / stop for one finished content block."""
    kind = block["type"]
    if kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block["text"]}]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block.get("signature", "sig")},
        ]
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        deltas = [
            {"type": "input_json_delta", "partial_json": part}
            for part in _split(json.dumps(block["input"], ensure_ascii=False))
        ]
    else:  # anything exotic: announce it whole, no deltas
        start, deltas = dict(block), []
    events: list[Event] = [
        ("content_block_start", {"type": "content_block_start", "index": index,
                                 "content_block": start})
    ]
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
        for d in deltas
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def stream_events(
    msg_id: str, model: str, blocks: list[dict[str, Any]], stop_reason: str,
    usage: dict[str, int], output_tokens: int,
) -> list[Event]:
    """The full event list for one message."""
    events = [message_start(msg_id, model, usage)]
    for i, b in enumerate(blocks):
        events += block_events(i, b)
    events.append(("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": output_tokens},
    }))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def message_json(
    msg_id: str, model: str, blocks: list[dict[str, Any]], stop_reason: str,
    usage: dict[str, int], output_tokens: int,
) -> dict[str, Any]:
    """The non-streaming ``Message`` object."""
    return {
        "id": msg_id, "type": "message", "role": "assistant", "model": model,
        "content": blocks, "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {**usage, "output_tokens": output_tokens},
    }

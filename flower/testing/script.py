"""Script steps: what the fake model does for one ``POST /v1/messages``.

Every request pops exactly one step (from the first matching route, else the default queue).
A step is plain data, independent of how it will be delivered: the same ``Reply`` is encoded as
an SSE stream for ``stream:true`` and as a JSON ``Message`` for ``stream:false`` (the CLI's
fallback after a broken stream), so scripts never need to know which one the CLI will send.
Stdlib only: ``import flower.testing`` must stay cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flower.testing.server import Request

Block = dict[str, Any]

# Error ``type`` the real API uses for each status (the CLI reads it to decide on a retry).
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
# The reverse, for an SSE error step that lands on a non-streaming request.
STATUS_FOR_TYPE: dict[str, int] = {v: k for k, v in ERROR_TYPES.items()}


def text(s: str) -> Block:
    """A text content block."""
    return {"type": "text", "text": s}


def thinking(s: str, signature: str = "sig") -> Block:
    """A thinking block. The CLI sends it back verbatim; any signature string works."""
    return {"type": "thinking", "thinking": s, "signature": signature}


def tool_use(name: str, input: Mapping[str, Any] | None = None, id: str | None = None) -> Block:
    """A tool call. ``id=None`` gets a fresh ``toolu_fake_<n>`` each time the step is played."""
    return {"type": "tool_use", "id": id, "name": name, "input": dict(input or {})}


@dataclass
class Reply:
    """A successful model message (blocks + stop reason + usage overrides)."""

    blocks: list[Block]
    stop_reason: str | None = None
    usage: dict[str, int] | None = None
    model: str | None = None

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"


@dataclass
class Fault:
    """An HTTP error response with the real error JSON shape."""

    status: int
    message: str | None = None
    retry_after: float | None = None
    error_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def type(self) -> str:
        return self.error_type or ERROR_TYPES.get(self.status, "api_error")

    @property
    def text(self) -> str:
        return self.message or f"fake error {self.status}"


@dataclass
class Cut:
    """Start delivering ``step`` then drop the connection after ``after`` SSE events.

    ``replay=True`` pushes ``step`` back to the front of the queue it came from, so the
    CLI's retry (stream or non-stream fallback) receives it intact."""

    after: int = 3
    step: Step | None = None
    replay: bool = False


@dataclass
class SseError:
    """``message_start`` then an in-stream ``event: error`` (what an overloaded API does)."""

    error_type: str = "overloaded_error"
    message: str = "Overloaded"


@dataclass
class Delay:
    """Wait ``seconds`` before sending headers (exercises ``API_TIMEOUT_MS``), then play."""

    seconds: float
    step: Step | None = None


@dataclass
class Stall:
    """Send ``after`` events, then go silent until the client hangs up or the server stops
    (exercises ``CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS``)."""

    after: int = 1
    step: Step | None = None


Step = str | Reply | Fault | Cut | SseError | Delay | Stall | Callable[["Request"], Any]
STEP_TYPES = (Reply, Fault, Cut, SseError, Delay, Stall)
EXHAUSTED_TEXT = "(fake: script exhausted)"


def reply(
    *blocks: str | Block,
    stop_reason: str | None = None,
    usage: Mapping[str, int] | None = None,
    model: str | None = None,
) -> Reply:
    """A model message; ``str`` arguments become text blocks."""
    bl = [text(b) if isinstance(b, str) else dict(b) for b in blocks]
    return Reply(bl, stop_reason, dict(usage) if usage else None, model)


def fault(
    status: int,
    message: str | None = None,
    retry_after: float | None = None,
    error_type: str | None = None,
) -> Fault:
    return Fault(status, message, retry_after, error_type)


def cut(after: int = 3, step: Step | None = None, replay: bool = False) -> Cut:
    return Cut(after, step, replay)


def sse_error(error_type: str = "overloaded_error", message: str = "Overloaded") -> SseError:
    return SseError(error_type, message)


def delay(seconds: float, step: Step | None = None) -> Delay:
    return Delay(seconds, step)


def stall(after: int = 1, step: Step | None = None) -> Stall:
    return Stall(after, step)


def resolve(step: Any, req: Request, depth: int = 0) -> Any:
    """Turn a popped step into a concrete step object: strings become replies and callables
    are called with the request (a callable may return another callable, a string, or None
    for the exhausted reply)."""
    if step is None:
        return None
    if isinstance(step, str):
        return reply(step)
    if isinstance(step, STEP_TYPES):
        return step
    if callable(step):
        if depth > 8:
            raise RecursionError("callable steps nested too deep")
        return resolve(step(req), req, depth + 1)
    raise TypeError(f"not a script step: {step!r}")


# ---------------------------------------------------------------- JSON script format


def _block_from_json(obj: Any) -> Block:
    if isinstance(obj, str):
        return text(obj)
    if "type" in obj:
        return dict(obj)
    if "text" in obj:
        return text(obj["text"])
    if "thinking" in obj:
        return thinking(obj["thinking"], obj.get("signature", "sig"))
    if "tool_use" in obj:
        t = obj["tool_use"]
        return tool_use(t["name"], t.get("input"), t.get("id"))
    raise ValueError(f"unknown block in script: {obj!r}")


def step_from_json(obj: Any) -> Step:
    """Build a step from the JSON script format documented in docs/testing.md."""
    if isinstance(obj, str):
        return reply(obj)
    if not isinstance(obj, dict):
        raise ValueError(f"a step must be a string or an object, got {obj!r}")
    kw = {k: obj[k] for k in ("stop_reason", "usage", "model") if k in obj}
    if "fault" in obj:
        f = obj["fault"]
        f = {"status": f} if isinstance(f, int) else f
        return fault(f["status"], f.get("message"), f.get("retry_after"), f.get("error_type"))
    if "cut" in obj:
        c = obj["cut"] or {}
        inner = step_from_json(c["step"]) if c.get("step") is not None else None
        return cut(c.get("after", 3), inner, c.get("replay", False))
    if "sse_error" in obj:
        e = obj["sse_error"] or {}
        return sse_error(e.get("error_type", "overloaded_error"), e.get("message", "Overloaded"))
    if "delay" in obj:
        d = obj["delay"]
        inner = step_from_json(d["step"]) if d.get("step") is not None else None
        return delay(d["seconds"], inner)
    if "stall" in obj:
        s = obj["stall"] or {}
        inner = step_from_json(s["step"]) if s.get("step") is not None else None
        return stall(s.get("after", 1), inner)
    if "blocks" in obj:
        return reply(*[_block_from_json(b) for b in obj["blocks"]], **kw)
    blocks: list[Block] = []
    if "thinking" in obj:
        blocks.append(thinking(obj["thinking"], obj.get("signature", "sig")))
    if "text" in obj:
        blocks.append(text(obj["text"]))
    if "tool_use" in obj:
        tu = obj["tool_use"]
        for t in tu if isinstance(tu, list) else [tu]:
            blocks.append(tool_use(t["name"], t.get("input"), t.get("id")))
    if not blocks:
        raise ValueError(f"unknown step in script: {obj!r}")
    return reply(*blocks, **kw)

"""Helpers for driving the real CLI through ``claude_agent_sdk`` in tests.

``claude_agent_sdk`` is imported lazily inside each function: ``flower.testing`` is imported
on light start-up paths (``flower demo``) and must not pay for the SDK import there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import aclosing
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT = 60.0  # no e2e query may hang longer than this


def options(cwd: str | os.PathLike[str], env: Mapping[str, str], **overrides: Any) -> Any:
    """``ClaudeAgentOptions`` isolated for tests: no settings files, bypassPermissions
    (needs ``IS_SANDBOX=1`` as root, which ``cli_env`` sets), near-empty system prompt."""
    from claude_agent_sdk import ClaudeAgentOptions

    kw: dict[str, Any] = {
        "cwd": str(Path(cwd)), "env": dict(env), "setting_sources": [],
        "permission_mode": "bypassPermissions", "system_prompt": None,
    }
    kw.update(overrides)
    return ClaudeAgentOptions(**kw)


async def collect(prompt: str, opts: Any, timeout: float = DEFAULT_TIMEOUT,
                  ) -> tuple[list[Any], BaseException | None]:
    """Run one ``query()`` and return ``(messages, error)``.

    SDK errors (``ResultError`` after an is_error result, ``ProcessError``…) are returned,
    not raised, so a test can assert on both the stream and the failure. Exceeding
    ``timeout`` raises ``TimeoutError``; the CLI subprocess is closed either way."""
    import anyio
    from claude_agent_sdk import ClaudeSDKError, query

    messages: list[Any] = []
    error: BaseException | None = None
    with anyio.fail_after(timeout):
        try:
            async with aclosing(query(prompt=prompt, options=opts)) as stream:
                async for m in stream:
                    messages.append(m)
        except ClaudeSDKError as e:
            error = e
    return messages, error


def of_type(messages: list[Any], name: str) -> list[Any]:
    """Messages whose class is called ``name`` (e.g. "AssistantMessage")."""
    return [m for m in messages if type(m).__name__ == name]


def result(messages: list[Any]) -> Any:
    """The last ``ResultMessage`` (None if none was yielded)."""
    found = of_type(messages, "ResultMessage")
    return found[-1] if found else None


def system(messages: list[Any], subtype: str) -> list[Any]:
    """``SystemMessage``s (and subclasses) of one subtype, e.g. "api_retry"."""
    return [m for m in messages if getattr(m, "subtype", None) == subtype
            and "SystemMessage" in [c.__name__ for c in type(m).__mro__]]


def assistant_text(messages: list[Any]) -> str:
    """All assistant text blocks joined (what the "model" said, as the SDK yielded it)."""
    out = []
    for m in of_type(messages, "AssistantMessage"):
        out += [b.text for b in m.content if type(b).__name__ == "TextBlock"]
    return "\n".join(out)


def tool_results(messages: list[Any]) -> list[Any]:
    """``ToolResultBlock``s from the yielded user messages, oldest first."""
    out = []
    for m in of_type(messages, "UserMessage"):
        if isinstance(m.content, list):
            out += [b for b in m.content if type(b).__name__ == "ToolResultBlock"]
    return out

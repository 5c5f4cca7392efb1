"""Context size of one API call — one definition for live events, the store and the wake probe.

The size of the prompt the model saw is ``input + cache_read + cache_creation`` tokens of a
single call (the API bills and caches each call separately); ``ResultMessage.usage`` sums a
whole turn and is not a size.
SDK-free: the wake probe runs at CLI start-up.
"""

from __future__ import annotations

from typing import Any

_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def context_of(usage: dict[str, Any] | None) -> int | None:
    """Prompt size of one API call, or None when the usage says nothing (synthetic: zeros)."""
    if not isinstance(usage, dict):
        return None
    total = 0
    for key in _KEYS:
        value = usage.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total += int(value)
    return total or None


def entry_context(entry: Any) -> int | None:
    """Context size recorded by one transcript entry; None unless it is a real API call
    (a synthetic outage message reports zero usage, which is not the context)."""
    if not isinstance(entry, dict) or entry.get("type") != "assistant":
        return None
    if entry.get("isApiErrorMessage"):
        return None
    message = entry.get("message")
    return context_of(message.get("usage") if isinstance(message, dict) else None)


def human_tokens(n: int) -> str:
    """``80213`` → ``80.2K``; ``1234567`` → ``1.2M``; small numbers as they are."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}K"
    return f"{n / 1_000_000:.1f}M"

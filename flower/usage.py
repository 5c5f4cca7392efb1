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


# --- what one API call costs ----------------------------------------------------------------
#
# The CLI reports a session's cost only with its result, and a session can last hours: a
# process killed before the result would leave its spend uncounted. So every call is priced
# as it arrives — with this table as the starting point, then at the rate the CLI's own
# totals show (Ledger.settle), so a table that lags the CLI's prices corrects itself.

#: $ per million tokens (input, output) by model family, from Anthropic's public price list
#: (Opus 4.5 and later, Opus 4/4.1, Sonnet, Haiku 4.5, Haiku 3.5); the first match wins.
PRICES = (("opus-4-5", 5.0, 25.0), ("opus-4-6", 5.0, 25.0), ("opus-5", 5.0, 25.0),
          ("opus", 15.0, 75.0), ("sonnet", 3.0, 15.0), ("haiku-4", 1.0, 5.0),
          ("haiku", 0.8, 4.0))
DEFAULT_PRICE = (3.0, 15.0)
#: input-price multiples of the prompt cache: a 5-minute write, a 1-hour write, a read
CACHE_WRITE_5M, CACHE_WRITE_1H, CACHE_READ = 1.25, 2.0, 0.1


def _count(usage: dict[str, Any], key: str) -> float:
    value = usage.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and value > 0 else 0.0


def call_cost(usage: dict[str, Any] | None, model: str | None) -> float:
    """Dollars of one API call from its ``usage`` at list prices (0 for no usage)."""
    if not isinstance(usage, dict):
        return 0.0
    name = (model or "").lower()
    price_in, price_out = next(((i, o) for key, i, o in PRICES if key in name), DEFAULT_PRICE)
    written = _count(usage, "cache_creation_input_tokens")
    split = usage.get("cache_creation")
    hour = _count(split, "ephemeral_1h_input_tokens") if isinstance(split, dict) else 0.0
    tokens_in = (_count(usage, "input_tokens") + (written - hour) * CACHE_WRITE_5M
                 + hour * CACHE_WRITE_1H + _count(usage, "cache_read_input_tokens") * CACHE_READ)
    return (tokens_in * price_in + _count(usage, "output_tokens") * price_out) / 1_000_000

"""flower.core — the runtime and its parts (agent specs, events, credentials, resilience)."""

from __future__ import annotations

from flower._lazy import lazy_exports

_EXPORTS = {
    "AgentSpec": "flower.core.agent",
    "CompactPolicy": "flower.core.agent",
    "build_options": "flower.core.agent",
    "check_credentials": "flower.core.env",
    "describe": "flower.core.env",
    "load_dotenv": "flower.core.env",
    "Event": "flower.core.events",
    "EventKind": "flower.core.events",
    "normalize": "flower.core.events",
    "Runtime": "flower.core.runtime",
    "StepResult": "flower.core.runtime",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports('flower.core', _EXPORTS, globals())

"""flower.core — the runtime and its parts (agent specs, events, credentials, resilience)."""

from __future__ import annotations

from typing import Any

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


def __getattr__(name: str) -> Any:
    """Lazy (PEP 562): importing a light submodule must not drag in the SDK via the runtime."""
    import importlib

    if name not in _EXPORTS:
        raise AttributeError(f"module 'flower.core' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)

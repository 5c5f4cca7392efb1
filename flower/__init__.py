"""flower — long-horizon agent runs on claude-agent-sdk.

Every public name is resolved lazily (PEP 562): ``import flower`` and ``flower --help``
stay fast and never import ``claude_agent_sdk``; the SDK loads the first time a name
that needs it (``Runtime``, ``build_options`` …) is touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # run an agent
    "Runtime": "flower.core.runtime",
    "StepResult": "flower.core.runtime",
    # workflow
    "Step": "flower.workflow.base",
    "Workflow": "flower.workflow.base",
    "StepAbort": "flower.workflow.base",
    "wake_state": "flower.workflow.wake",
    # agent definition
    "AgentSpec": "flower.core.agent",
    "build_options": "flower.core.agent",
    "CompactPolicy": "flower.core.agent",
    "HandoffPolicy": "flower.core.agent",
    "default_window": "flower.core.agent",
    # workbench, lineage
    "Workbench": "flower.core.workbench",
    "Lineage": "flower.core.lineage",
    # session stores
    "SqliteSessionStore": "flower.stores.sqlite",
    "TrimmingSessionStore": "flower.stores.trim",
    "PruningSessionStore": "flower.stores.prune",
    "TrimPolicy": "flower.stores.trim",
    "EphemeralPolicy": "flower.stores.trim",
    "PrunePolicy": "flower.stores.prune",
    "is_ephemeral": "flower.stores.ephemeral",
    "trim_report": "flower.stores.trim",
    # resilience
    "Resilience": "flower.core.resilience",
    "classify": "flower.core.resilience",
    "endpoint": "flower.core.resilience",
    "reachable": "flower.core.resilience",
    # events
    "Event": "flower.core.events",
    "normalize": "flower.core.events",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flower' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # cache: the next access is a plain attribute lookup
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - static view for type checkers and IDEs
    from flower.core.agent import (
        AgentSpec,
        CompactPolicy,
        HandoffPolicy,
        build_options,
        default_window,
    )
    from flower.core.events import Event, normalize
    from flower.core.lineage import Lineage
    from flower.core.resilience import Resilience, classify, endpoint, reachable
    from flower.core.runtime import Runtime, StepResult
    from flower.core.workbench import Workbench
    from flower.stores.ephemeral import is_ephemeral
    from flower.stores.prune import PrunePolicy, PruningSessionStore
    from flower.stores.sqlite import SqliteSessionStore
    from flower.stores.trim import EphemeralPolicy, TrimmingSessionStore, TrimPolicy, trim_report
    from flower.workflow.base import Step, StepAbort, Workflow
    from flower.workflow.wake import wake_state

"""flower — long-horizon agent runs on claude-agent-sdk.

Every public name is resolved lazily (PEP 562): ``import flower`` and ``flower --help``
stay fast and never import ``claude_agent_sdk``; the SDK loads the first time a name
that needs it (``Runtime``, ``build_options`` …) is touched.
"""

from __future__ import annotations

from flower._lazy import lazy_exports

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
    # a person in the loop
    "HumanChannel": "flower.core.human",
    "Ask": "flower.core.human",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports("flower", _EXPORTS, globals())

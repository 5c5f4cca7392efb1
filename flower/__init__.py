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
    "clarify_step": "flower.workflow.clarify",
    "BRIEF_KEY": "flower.workflow.clarify",
    "MISSING_KEY": "flower.workflow.clarify",
    "CLARIFY_RESUME": "flower.workflow.clarify",
    "goal_step": "flower.workflow.goal",
    "with_goal": "flower.workflow.goal",
    "GOAL_KEY": "flower.workflow.goal",
    "VERDICT_KEY": "flower.workflow.goal",
    "ROUND_KEY": "flower.workflow.goal",
    "starter_flow": "flower.workflow.starter",
    # role factories
    "coordinator": "flower.core.roles",
    "worker": "flower.core.roles",
    "clarify": "flower.core.roles",
    "judge": "flower.core.roles",
    "oracle": "flower.core.roles",
    "COORDINATOR_RULES": "flower.core.roles",
    "WORKER_RULES": "flower.core.roles",
    "CLARIFIER_RULES": "flower.core.roles",
    "JUDGE_RULES": "flower.core.roles",
    "ORACLE_RULES": "flower.core.roles",
    # hook layer
    "whitelist_guard": "flower.core.guard",
    "delegate_guard": "flower.core.guard",
    "dispatch_guard": "flower.core.guard",
    "spill_guard": "flower.core.guard",
    "index_guard": "flower.core.guard",
    "isolate_guard": "flower.core.guard",
    "isolated": "flower.core.guard",
    "wants_isolation": "flower.core.guard",
    "workbench_hooks": "flower.core.guard",
    "merge_hooks": "flower.core.guard",
    # agent definition
    "AgentSpec": "flower.core.agent",
    "build_options": "flower.core.agent",
    "CompactPolicy": "flower.core.agent",
    "HandoffPolicy": "flower.core.agent",
    "default_window": "flower.core.agent",
    # documents
    "Brief": "flower.core.brief",
    "Handoff": "flower.core.handoff",
    "Goal": "flower.core.checklist",
    "Verdict": "flower.core.checklist",
    # workbench, lineage
    "Workbench": "flower.core.workbench",
    "Lineage": "flower.core.lineage",
    # session stores
    "SqliteSessionStore": "flower.stores.sqlite",
    "TrimmingSessionStore": "flower.stores.trim",
    "PruningSessionStore": "flower.stores.prune",
    "TrimPolicy": "flower.stores.trimming",
    "EphemeralPolicy": "flower.stores.trimming",
    "PrunePolicy": "flower.stores.pruning",
    "is_ephemeral": "flower.stores.ephemeral",
    "trim_report": "flower.stores.trimming",
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

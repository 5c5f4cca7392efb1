"""flower.workflow — steps, workflows and the continuity helpers built on them."""

from __future__ import annotations

from flower._lazy import lazy_exports

_EXPORTS = {
    "Ctx": "flower.workflow.base",
    "Step": "flower.workflow.base",
    "StepAbort": "flower.workflow.base",
    "Workflow": "flower.workflow.base",
    "wake_state": "flower.workflow.wake",
    "clarify_step": "flower.workflow.clarify",
    "BRIEF_KEY": "flower.workflow.clarify",
    "MISSING_KEY": "flower.workflow.clarify",
    "goal_step": "flower.workflow.goal",
    "with_goal": "flower.workflow.goal",
    "starter_flow": "flower.workflow.starter",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports('flower.workflow', _EXPORTS, globals())

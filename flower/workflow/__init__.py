"""flower.workflow — steps, workflows and the continuity helpers built on them."""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "Ctx": "flower.workflow.base",
    "Step": "flower.workflow.base",
    "StepAbort": "flower.workflow.base",
    "Workflow": "flower.workflow.base",
    "wake_state": "flower.workflow.wake",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    import importlib

    if name not in _EXPORTS:
        raise AttributeError(f"module 'flower.workflow' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)

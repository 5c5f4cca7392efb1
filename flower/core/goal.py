"""The original flower's module path for the goal documents (``Goal``, ``Verdict``).

Scripts written for it import from here; the code lives in ``flower.core.checklist``, named
apart from ``flower.workflow.goal`` (the goal and judge *steps*) so the two are not confused.
"""

from __future__ import annotations

from flower.core.checklist import STATES, Goal, Verdict

__all__ = ["STATES", "Goal", "Verdict"]

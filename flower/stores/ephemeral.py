"""``is_ephemeral(cmd)``: kept at this path because scripts import it from here.

The predicate lives in ``flower.shell`` (which the coordinator's guard uses as well): one
function decides both whether a coordinator may run a command itself and whether its old
result expires on resume.
"""

from __future__ import annotations

from flower.shell import is_ephemeral, why_not

__all__ = ["is_ephemeral", "why_not"]

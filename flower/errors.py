"""Every error flower raises on purpose, under one base, and the one way an error becomes a line.

The CLI turns a ``FlowerError`` into one readable line; any other exception is a bug and is
reported as one (with the traceback written to a file), never dressed up as a tidy message.
"""

from __future__ import annotations

__all__ = ["FlowerError", "TargetError"]


class FlowerError(Exception):
    """A failure flower expected and can explain in one line (its message says what to do)."""


class TargetError(FlowerError):
    """``flower run TARGET`` could not produce a workflow (the message says why)."""

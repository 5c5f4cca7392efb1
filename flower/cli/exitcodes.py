"""The exit codes of ``flower``, by name: scripts and CI branch on them.

Kept import-light (only the standard library), like the rest of what ``app`` loads.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    """What a ``flower`` command's exit status means."""

    #: the run (or the command) finished
    OK = 0
    #: a step failed or was aborted, the input was bad, a credential is missing, the disk
    #: refused a write — one readable line says which; also a bug in flower (reported as one)
    FAILED = 1
    #: click's own answer to arguments it cannot parse (a missing TARGET, an unknown flag)
    USAGE = 2
    #: Ctrl-C twice (or once on a detached follower): stopped, the manifest written; 128 +
    #: SIGINT, as shells report a process ended by Ctrl-C
    INTERRUPTED = 130

"""Every error flower raises on purpose, under one base, and the one way an error becomes a line.

The CLI turns a ``FlowerError`` into one readable line; any other exception is a bug and is
reported as one (with the traceback written to a file), never dressed up as a tidy message.

Classes that used to live in other modules are defined here and re-exported there under the
same names (``flower.stores.sqlite.StoreCorruptError`` still imports). Each keeps the builtin
base it had (``RuntimeError``, ``ValueError``), so code that caught it by that base still does.
Workflow control flow (``StepAbort``) is not an error to show and is not here.

This module imports nothing of flower: it sits below every other layer.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

__all__ = ["LIMIT", "BadInput", "CopyError", "CorruptManifest", "CorruptState",
           "CredentialsMissing", "FlowerError", "NoRuns", "SandboxUnavailable",
           "StoreCorruptError", "StoreOffline", "StoreUnavailable", "StoreVersionError",
           "TargetError", "Unstorable", "UpdateError", "one_line"]


class FlowerError(Exception):
    """A failure flower expected and can explain in one line (its message says what to do)."""


class TargetError(FlowerError):
    """``flower run TARGET`` could not produce a workflow (the message says why)."""


class BadInput(FlowerError, ValueError):
    """Arguments a run cannot start from (``--isolate`` outside git, nothing to do). Still a
    ``ValueError``: ``starter_flow`` documented that before this class existed."""


class CredentialsMissing(FlowerError, RuntimeError):
    """No credential is configured; the message lists where one can go. Still a
    ``RuntimeError``: a ``Runtime`` raised exactly that before this class existed."""


class SandboxUnavailable(FlowerError, RuntimeError):
    """``--sandbox on``/``strict`` (or a spec's ``sandbox``) on a machine without a command
    sandbox; the message says what is missing and how to get it."""


class StoreUnavailable(FlowerError, RuntimeError):
    """The session store cannot be used: bad URL, unreachable server, no driver installed."""


class StoreOffline(StoreUnavailable):
    """The server did not answer within ``retry_for`` seconds (an outage, not a bad URL)."""


class StoreVersionError(FlowerError, RuntimeError):
    """The schema was written by a newer flower; nothing is read or written."""


class CorruptState(FlowerError):
    """A file flower keeps its state in is not what flower writes there; it was left as it is."""


class StoreCorruptError(CorruptState, RuntimeError):
    """The file at the store path is not a usable flower session database.

    Raised before anything is written, so the file is still byte-for-byte what it was.
    """

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"{path} is not a readable flower session database ({reason}); "
            "move it aside or delete it to start fresh"
        )


class CorruptManifest(CorruptState):
    """``manifest.json`` exists but is not a manifest; it was left as it is."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class NoRuns(FlowerError):
    """No run dir, or no ``manifest.json`` in it."""

    def __init__(self, path: Path, *, folder: bool) -> None:
        self.path = path
        self.folder = folder  # True: the run dir itself is missing
        super().__init__(str(path))


class CopyError(FlowerError, RuntimeError):
    """The copy cannot go ahead, or DST does not read back exactly what SRC holds."""


class Unstorable(FlowerError, ValueError):
    """An entry that cannot be stored at all (not JSON: a set, a non-string key …)."""


class UpdateError(FlowerError):
    """The install source could not say what its latest version is (unreachable, not a
    repository, nothing recorded at install time), or flower cannot reinstall that way."""


# ------------------------------------------------------------------ the one line

LIMIT = 200  # characters; a terminal line at the width the CLI clamps to, twice over
ELLIPSIS = "…"


def one_line(error: BaseException | str, limit: int = LIMIT) -> str:
    """``error`` as one readable line of at most ``limit`` characters.

    An exception reads ``Type: message``; the type is left out where it adds nothing — a
    ``FlowerError`` (its message is written for the reader), or a message that already starts
    with it. An empty message is the type alone. Whitespace (newlines included) collapses to
    single spaces. A longer line is cut before a word with ``…``; text without spaces between
    its words (Chinese) is cut between two characters, and a single word longer than the
    whole line is cut where the limit falls.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    text = _typed(error) if isinstance(error, BaseException) else str(error)
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    room = limit - len(ELLIPSIS)
    for cut in range(room, 0, -1):  # keep line[:cut]
        if _between_words(line[cut - 1], line[cut]):
            kept = line[:cut].rstrip()
            if kept:
                return kept + ELLIPSIS
    return line[:room] + ELLIPSIS


def _typed(exc: BaseException) -> str:
    name = type(exc).__name__
    try:
        message = " ".join(str(exc).split())
    except Exception:  # a broken __str__ must not hide the error it belongs to
        message = ""
    if not message:
        return name
    if isinstance(exc, FlowerError) or message.startswith(name):
        return message
    return f"{name}: {message}"


def _between_words(before: str, after: str) -> bool:
    """May a line be cut between these two characters? At a space, or next to a wide
    character (CJK ideographs, kana, full-width punctuation), each of which is a word."""
    return before.isspace() or after.isspace() or _wide(before) or _wide(after)


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")

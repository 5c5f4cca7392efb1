"""Handoff: what a session near a full context leaves the fresh session that replaces it.

Instead of letting the CLI compact the conversation behind everyone's back, the runtime asks
the *same* session to write a five-section document (:data:`HANDOFF_PROMPT`), saves it to
``<workbench>/notes/交接-<step>.md`` and starts a brand-new session whose only prompt is
:meth:`Handoff.prompt_block`. A person can read and edit the file; the successor reads
exactly it. When no usable document can be written (the writing round failed, a required
section is missing, or the API already refused the prompt as too long) a mechanical
:func:`degraded` one stands in, so a handoff never fails a step.

Also here: :func:`is_overflow` (does an error text mean "the prompt no longer fits"?) and the
self-calibration file (``${XDG_CONFIG_HOME:-~/.config}/flower/.windows``): the context size
at which an endpoint+model actually overflowed, min-wins, used as the window when neither
an explicit window nor ``FLOWER_WINDOW`` is given.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flower import texts
from flower.core.brief import (
    FrozenDocument,
    SectionedDocument,
    first_filled,
    split_sections,
    strip_fences,
)
from flower.core.paths import atomic_write

log = logging.getLogger("flower.handoff")

__all__ = [
    "DEGRADED", "HANDOFF_PROMPT", "REQUIRED", "Handoff", "calibrated_window", "degraded",
    "fmt_tokens", "is_overflow", "remember_overflow", "windows_path",
]

#: Marker carried by a mechanically written (degraded) document.
DEGRADED = texts.HANDOFF_DEGRADED
#: Sent to the session that is about to retire; format with ``used=`` and ``window=``.
HANDOFF_PROMPT = texts.HANDOFF_PROMPT
#: Sections without which the successor cannot act. Dead ends are deliberately optional:
#: requiring them pushes models to invent entries, and early on there are none.
REQUIRED = ("doing", "next")
#: How much of the original task prompt a degraded document carries in ``scene``.
SCENE_CHARS = 1200

_KEYS = ("doing", "decided", "deadends", "next", "scene")
_NAMES = dict(zip(_KEYS, texts.HANDOFF_SECTIONS, strict=True))
_UNSAFE = re.compile(r'[/\\:*?"<>|]')


def fmt_tokens(n: int) -> str:
    """``152000`` → ``152.0K``; whole thousands of a window read better as ``200K``."""
    return f"{n / 1000:.1f}K"


def fmt_window(n: int) -> str:
    return f"{n // 1000}K" if n % 1000 == 0 else fmt_tokens(n)


@dataclass
class Handoff(SectionedDocument, FrozenDocument):
    """The five sections a successor needs; each guards against one kind of mistake
    (redoing finished work, reopening settled decisions, walking a known dead end, stalling,
    not finding things). ``step`` only names the document."""

    SECTION_NAMES = _NAMES
    REQUIRED_SECTIONS = REQUIRED
    DEGRADED_MARK = DEGRADED

    doing: str = ""
    decided: str = ""
    deadends: str = ""
    next: str = ""
    scene: str = ""
    step: str = ""
    path: Path | None = field(default=None, compare=False)



    @property
    def sections(self) -> dict[str, str]:
        """The four sections a UI shows (the ``done`` event payload)."""
        return {k: getattr(self, k) for k in ("doing", "decided", "deadends", "next")}

    @classmethod
    def parse(cls, text: str, *, step: str = "") -> Handoff:
        """Read a model reply or a hand-edited file. Headings inside fenced code are not
        headings; an unclosed fence (a cut-off reply) drops the rest, so it comes out
        incomplete rather than half-parsed."""
        found = split_sections(strip_fences(text or ""), texts.HANDOFF_ALIASES)
        bodies = {k: first_filled(found.get(k, []), texts.HANDOFF_EMPTY) for k in _KEYS}
        return cls(**bodies, step=step)

    def to_markdown(self) -> str:
        """The file a person reads and may edit; an empty section shows ``(空)``."""
        parts = [texts.HANDOFF_TITLE.format(step=self.step or "step"), texts.HANDOFF_NOTE]
        parts += [f"## {name}\n{body.strip() or texts.HANDOFF_EMPTY}"
                  for name, body in self._sections()]
        return "\n\n".join(parts) + "\n"

    def prompt_block(self) -> str:
        """The successor's whole first message: who it is, the filled sections, what to do.
        The original task is not in it — the document has to stand on its own."""
        body = [f"## {name}\n{text.strip()}" for name, text in self._sections() if text.strip()]
        return "\n\n".join([texts.HANDOFF_BLOCK_HEAD, *body, texts.HANDOFF_BLOCK_TAIL])

    def _loaded(self, text: str) -> None:
        m = re.search(r"^#\s*交接书[(（](.*)[)）]\s*$", text, re.MULTILINE)
        self.step = m.group(1) if m else ""


def degraded(step: str, prompt: str, *, why: str = "") -> Handoff:
    """A mechanical stand-in for a document that could not be written: says so, tells the
    successor to inspect the scene first, and carries the start of the original task."""
    why = why or texts.HANDOFF_WHY_UNKNOWN
    head = (prompt or "")[:SCENE_CHARS]
    return Handoff(
        doing=texts.HANDOFF_DEGRADED_DOING.format(marker=DEGRADED, step=step or "step",
                                                 why=why),
        next=texts.HANDOFF_DEGRADED_NEXT,
        scene=texts.HANDOFF_DEGRADED_SCENE.format(n=SCENE_CHARS, prompt=_quote(head))
        if head else "",
        step=step,
    )


def _quote(text: str) -> str:
    """Quote the task as a blockquote: a heading or a fence in it must not become part of the
    document's structure when the file is read back."""
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines())


def file_name(step: str) -> str:
    """``交接-<step>.md`` with characters no filesystem likes removed."""
    return f"交接-{safe_name(step)}.md"


def safe_name(step: str) -> str:
    return _UNSAFE.sub("", step or "").strip() or "step"


def save_document(notes: Path, step: str, doc: Handoff) -> Path | None:
    """Save ``doc`` as ``<notes>/交接-<step>.md`` — an older one archived first under
    ``notes/archive/交接/<step>-<time>.md`` — and return the path; ``None`` when the disk
    refused (the handoff goes on regardless: the successor's prompt carries the document)."""
    target = notes / file_name(step)
    try:
        if target.exists():
            shelf = notes / "archive" / "交接"
            shelf.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            dest = shelf / f"{safe_name(step)}-{stamp}.md"
            n = 1
            while dest.exists():
                n += 1
                dest = shelf / f"{safe_name(step)}-{stamp}-{n}.md"
            os.replace(target, dest)
        doc.write(target)
    except OSError as exc:
        log.warning(
            "flower: could not save the handoff to %s: %s", target, exc)
        return None
    return target


# --- overflow detection --------------------------------------------------------------------

_OVERFLOW = re.compile(
    r"prompt is too long"
    r"|context[ _-]?length[ _-]?exceeded"
    r"|maximum context length"
    r"|exceeds? (?:the )?context (?:window|limit)"
    r"|too many total text bytes"
    r"|input length and `?max_tokens`? exceed",
    re.IGNORECASE,
)


def is_overflow(*texts_: str | None) -> bool:
    """Does any of these error texts say the prompt no longer fits the window?

    Pass only the *current* round's errors: a step's history may hold one real overflow
    followed by dozens of unrelated failures, and those must not all read as overflows.
    """
    return any(t and _OVERFLOW.search(t) for t in texts_)


# --- self-calibration ----------------------------------------------------------------------


def windows_path() -> Path:
    """``${XDG_CONFIG_HOME:-~/.config}/flower/.windows`` (next to ``.env`` and ``.update``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "flower" / ".windows"


def _endpoint_key(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    base = env.get("ANTHROPIC_BASE_URL") or "default"
    model = env.get("ANTHROPIC_MODEL") or env.get("ANTHROPIC_DEFAULT_OPUS_MODEL") or ""
    return f"{base}|{model}"


def _read_windows(path: Path) -> dict[str, int]:
    """The calibration table; anything unreadable or malformed counts as empty."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items()
            if isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v > 0}


def calibrated_window(environ: Mapping[str, str] | None = None) -> int | None:
    """The window measured for the current base URL + model, or ``None``."""
    return _read_windows(windows_path()).get(_endpoint_key(environ))


def remember_overflow(context: int, environ: Mapping[str, str] | None = None) -> int | None:
    """Record that the current endpoint+model overflowed at ``context`` tokens.

    The smaller of the old and new value is kept (a larger overflow point never relaxes the
    record). Best effort: returns the stored value, or ``None`` when nothing was recorded.
    """
    if not isinstance(context, int) or context <= 0:
        return None
    path = windows_path()
    table = _read_windows(path)
    key = _endpoint_key(environ)
    old = table.get(key)
    if old is not None and old <= context:
        return old
    table[key] = context
    try:
        atomic_write(path, json.dumps(table, ensure_ascii=False, indent=2, sort_keys=True)
                     + "\n")
    except (OSError, ValueError):
        return None
    return context

"""The brief (需求确认书): the clarify step's frozen answer to "what exactly are we building?".

Everything downstream sees only the brief, never the clarifying Q&A, so its four sections
must survive whatever shape a model's reply takes — and a truncated reply must come out
*incomplete* (so the gate rejects it), never silently half-parsed.

This module also owns the one section splitter every frozen document uses (brief, goal,
verdict, handoff): :func:`strip_fences`, :func:`split_sections`, :func:`first_filled`.

Heading rules (one line each):

- forms: ``## 目标`` (any ``#`` level), ``**目标**``, ``目标:`` / ``目标：``, ``3. 目标`` /
  ``3、目标`` / ``3) 目标``, and combinations (``## 1. **目标**``). A bare line ``目标``
  with no marker at all is body text: a judge's conclusion ``未通过`` must not turn into
  the 未通过 heading;
- the alias must be the *whole* heading text: ``目标是做一个工具`` is body text. A trailing
  parenthetical note is allowed (``## 目标(一句话)`` → 目标), because models copy template
  headings with their hints; anything else after the name needs a colon, and what follows
  the colon is the start of the body (``目标: 做个X``, ``**目标**:做个X``);
- a plain or numbered heading naming the section that is already open is body text, so a
  ``假设: 只处理 UTF-8`` line inside 未知与假设 stays in it instead of opening a duplicate;
- an unrecognised markdown heading (``## 杂项``) closes the open section if it is at the
  same or a higher level (a section opened by a non-``#`` form is closed by any ``#``
  heading): an extra chapter never bleeds into the section above it, while ``###``
  sub-headings under a ``##`` section stay part of its body.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flower import texts
from flower.core.paths import atomic_write, move_aside

__all__ = ["Brief", "first_filled", "read_document", "split_sections", "strip_fences"]

PREAMBLE = ""  # split_sections key for the text before the first recognised heading

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
_RULE = re.compile(r"^\s{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_MD_HEADING = re.compile(r"^\s{0,3}(#{1,6})(?:\s|$)")
_HASHES = re.compile(r"^(#{1,6})[ \t]*")
_NUMBER = re.compile(r"^\d{1,3}[ \t]*[.、)）．](?!\d)[ \t]*")
_PAREN = re.compile(r"^[ \t]*[(（][^()（）]*[)）]")
_BLANKS = re.compile(r"\n{3,}")


# --- the shared section splitter -----------------------------------------------------------


def strip_fences(text: str) -> list[str]:
    """Lines of ``text`` outside fenced code blocks (``` or ~~~, closed by the same char).

    Pasted code must never land in a section; an unclosed fence means the reply was cut
    off, so everything after it is dropped and the later sections come out missing.
    """
    out: list[str] = []
    fence = ""
    for line in text.splitlines():
        m = _FENCE.match(line)
        if not fence:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                fence = m.group(1)
            else:
                out.append(line)
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                and not m.group(2).strip():
            fence = ""
    return out


@dataclass(frozen=True)
class _Heading:
    key: str
    body: str  # text after the colon on the heading line
    level: int  # number of '#', 0 for the other forms
    plain: bool  # neither '#' nor bold: only these can be body text of their own section


def _alias_table(aliases: Mapping[str, Collection[str]]) -> tuple[re.Pattern[str], dict[str, str]]:
    """One regex over all aliases, longest first, so 未知 never matches 未知与假设."""
    lookup = {alias: key for key, names in aliases.items() for alias in names}
    ordered = sorted(lookup, key=len, reverse=True)
    return re.compile("|".join(re.escape(a) for a in ordered)), lookup


def _colon(rest: str) -> tuple[bool, str]:
    rest = rest.lstrip()
    if rest[:1] in (":", "："):
        return True, rest[1:].lstrip()
    return False, rest


def _heading(line: str, pattern: re.Pattern[str], lookup: dict[str, str]) -> _Heading | None:
    """Parse ``line`` as a heading of a known section, or ``None`` (see the module doc)."""
    s = line.strip()
    m = _HASHES.match(s)
    level = len(m.group(1)) if m else 0
    s = s[m.end():] if m else s
    unnumbered = s
    s = _NUMBER.sub("", s, count=1)
    bold = s.startswith("**")
    if bold:
        s = _NUMBER.sub("", s[2:].lstrip(), count=1)
    marked = bool(level) or bold or s != unnumbered
    m = pattern.match(s)
    if m is None:
        return None
    rest = _PAREN.sub("", s[m.end():], count=1)
    colon, rest = _colon(rest)
    if bold:
        if not rest.startswith("**"):
            return None
        if colon:
            rest = rest[2:].strip()
        else:
            colon, rest = _colon(rest[2:])
    if level and re.fullmatch(r"#*", rest):  # "## 目标 ##": closing hashes
        rest = ""
    if (rest or not marked) and not colon:  # a bare "目标" line is text, not a heading
        return None
    return _Heading(lookup[m.group(0)], rest, level, plain=not level and not bold)


def _closes(line: str, level: int) -> bool:
    """Does this unrecognised line end a section opened at ``level`` (0: not a '#' form)?"""
    m = _MD_HEADING.match(line)
    return bool(m) and (level == 0 or len(m.group(1)) <= level)


def _normalise(lines: list[str]) -> str:
    """Trailing spaces dropped, blank runs collapsed to one, the whole stripped."""
    return _BLANKS.sub("\n\n", "\n".join(ln.rstrip() for ln in lines)).strip()


def split_sections(lines: list[str], aliases: Mapping[str, Collection[str]], *,
                   skip: Collection[str] = ()) -> dict[str, list[str]]:
    """Body of every occurrence of each known section, in document order.

    ``aliases`` maps a key to the heading names that mean it. The text before the first
    recognised heading is kept under :data:`PREAMBLE`. Horizontal rules and lines in
    ``skip`` (exact, stripped) are dropped. Pass fence-stripped lines.
    """
    pattern, lookup = _alias_table(aliases)
    preamble: list[str] = []
    found: dict[str, list[list[str]]] = {PREAMBLE: [preamble]}
    current: list[str] | None = preamble
    key, level = PREAMBLE, 0
    for line in lines:
        if _RULE.match(line) or line.strip() in skip:
            continue
        h = _heading(line, pattern, lookup)
        if h is not None and not (h.plain and h.key == key):
            current = [h.body] if h.body else []
            found.setdefault(h.key, []).append(current)
            key, level = h.key, h.level
        elif key != PREAMBLE and _closes(line, level):
            current, key = None, "\0closed"
        elif current is not None:
            current.append(line)
    return {k: [_normalise(body) for body in bodies] for k, bodies in found.items()}


def _bare(text: str) -> str:
    return text.strip().replace("（", "(").replace("）", ")")


def first_filled(bodies: list[str], placeholder: str = "") -> str:
    """The first body that says something: a repeated heading never wipes a filled section,
    and a body that is only ``placeholder`` (``(未填)``, also full-width) counts as empty."""
    for body in bodies:
        if body and _bare(body) != placeholder:
            return body
    return ""


def read_document(path: str | Path) -> str | None:
    """The text of a frozen document, or ``None`` when it cannot be one: missing,
    unreadable, not UTF-8, or binary (NUL bytes)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return None if "\0" in text else text


def _complete(doc: Any) -> bool:
    return doc is not None and bool(doc.complete())


# --- Brief ---------------------------------------------------------------------------------


_KEYS = ("goal", "accept", "bounds", "unknowns")
_NAMES = dict(zip(_KEYS, texts.BRIEF_SECTIONS, strict=True))


class SectionedDocument:
    """One copy of what a handoff and a bequest ask of their sections: which required ones
    are empty, whether all are there, and whether it carries the marker of a document
    written mechanically because the session's answer was unusable. Subclasses set
    ``SECTION_NAMES`` (field -> Chinese heading, in order), ``REQUIRED_SECTIONS`` and
    ``DEGRADED_MARK`` as plain class attributes."""

    SECTION_NAMES: Mapping[str, str] = {}
    REQUIRED_SECTIONS: tuple[str, ...] = ()
    DEGRADED_MARK = ""

    def _sections(self) -> list[tuple[str, str]]:
        return [(name, getattr(self, key)) for key, name in self.SECTION_NAMES.items()]

    def missing(self) -> list[str]:
        """Chinese names of the empty *required* sections."""
        return [self.SECTION_NAMES[k] for k in self.REQUIRED_SECTIONS
                if not getattr(self, k).strip()]

    def complete(self) -> bool:
        return not self.missing()

    @property
    def degraded(self) -> bool:
        return any(self.DEGRADED_MARK in body for _, body in self._sections())


class FrozenDocument:
    """``write``/``load`` shared by the frozen documents (brief, goal, handoff): an atomic
    write — a crash never leaves half a document that would later read as complete — and a
    load that gives ``None`` when there is no readable file. Subclasses are dataclasses with
    a ``path`` field and ``parse``/``to_markdown``."""

    path: Path | None

    @classmethod
    def parse(cls, text: str) -> Any:
        raise NotImplementedError

    def to_markdown(self) -> str:
        raise NotImplementedError

    def write(self, path: str | Path) -> Path:
        """Freeze to ``path`` atomically; returns the resolved path.

        A file already there that is no complete document (truncated, not UTF-8, garbage,
        a directory in its place) is moved aside as ``<name>.corrupt-<stamp>`` first, never
        overwritten: it may be a person's half-finished edit. A complete one is replaced.
        """
        target = Path(path)
        if target.exists() and not _complete(type(self).load(target)):
            move_aside(target)
        atomic_write(target, self.to_markdown())
        self.path = target.resolve()
        return self.path

    @classmethod
    def load(cls, path: str | Path) -> Any:
        """The document at ``path``, or ``None`` if there is no readable one."""
        text = read_document(path)
        if text is None:
            return None
        doc = cls.parse(text)
        doc._loaded(text)
        doc.path = Path(path).resolve()
        return doc

    def _loaded(self, text: str) -> None:
        """Hook: pick up what ``parse`` does not (e.g. a header) from the file's text."""


@dataclass
class Brief(FrozenDocument):
    """The four sections every downstream step works from; each blocks one failure class
    (wrong thing built, "works well" criteria, scope creep, silent wrong premises)."""

    goal: str = ""
    accept: str = ""
    bounds: str = ""
    unknowns: str = ""
    path: Path | None = field(default=None, compare=False)
    #: the human's original words, kept in the note (never a section): rerunning the same
    #: command then finds them in the file and does not count them as a new remark
    request: str = field(default="", compare=False)

    def _sections(self) -> list[tuple[str, str]]:
        return [(_NAMES[k], getattr(self, k)) for k in _KEYS]

    def missing(self) -> list[str]:
        """Chinese names of the empty sections, in document order (what the gate reports)."""
        return [name for name, body in self._sections() if not body.strip()]

    def complete(self) -> bool:
        """All four sections filled: only then is the brief frozen and the step skipped."""
        return not self.missing()

    @classmethod
    def parse(cls, text: str) -> Brief:
        """Read a model reply or a hand-edited file; unparsed sections stay empty."""
        skip = (texts.BRIEF_NOTE.strip(),)
        found = split_sections(strip_fences(text), texts.BRIEF_ALIASES, skip=skip)
        return cls(**{k: first_filled(found.get(k, []), texts.BRIEF_UNFILLED) for k in _KEYS})

    def to_markdown(self) -> str:
        """The file a human reads and edits; an empty section shows ``(未填)``."""
        note = texts.BRIEF_NOTE
        if self.request.strip():
            note += "\n" + texts.BRIEF_REQUEST.format(request=" ".join(self.request.split()))
        parts = [texts.BRIEF_TITLE, note]
        parts += [f"## {name}\n{body or texts.BRIEF_UNFILLED}" for name, body in self._sections()]
        return "\n\n".join(parts) + "\n"

    def prompt_block(self) -> str:
        """Compact form for the next step's prompt: filled sections only, no header."""
        return "\n\n".join(f"## {name}\n{body}" for name, body in self._sections() if body)


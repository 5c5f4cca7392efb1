"""The bequest: what a finished run leaves the *next* tool, in ``CLAUDE.md`` and ``AGENTS.md``.

Whoever picks a project up after a long run usually does so with Claude Code or Codex, not
flower, and those tools read ``CLAUDE.md`` / ``AGENTS.md`` at the root into every session.
So at the end of the default job one short read-only session writes five sections — what
this is, which acceptance checks passed, which files are generated and by what, the dead
ends, where the workbench is — and flower keeps them there as a *managed block* between
:data:`BEGIN` and :data:`END`. (A generated file whose "don't edit me" note lived only in
its script's docstring is exactly what a next tool edits by mistake.)

The block is the only part flower owns. :func:`write_managed` keeps every byte of the
user's text — line endings, a BOM, a missing final newline — and touches only what lies
between exactly one well-ordered pair of markers; with no markers, or broken ones (a lone
BEGIN, two pairs, END before BEGIN), it appends a fresh block and deletes nothing.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from flower import texts
from flower.core.brief import SectionedDocument, first_filled, split_sections, strip_fences
from flower.core.paths import atomic_write

__all__ = ["BEGIN", "DEGRADED", "END", "FILES", "REQUIRED", "Bequest", "Outcome", "mechanical",
           "write_both", "write_managed"]

#: The marker lines around flower's block (the original text of each is in ``texts``).
BEGIN = texts.BEQUEST_BEGIN
END = texts.BEQUEST_END
#: Carried by a mechanically written (degraded) block.
DEGRADED = texts.BEQUEST_DEGRADED
#: The files the next tools read at the workspace root: Claude Code's and Codex's.
FILES = ("CLAUDE.md", "AGENTS.md")
#: Sections without which the block is no handover: what this is, and where to read on.
REQUIRED = ("what", "workbench")
#: Every tool loads the block into every session: a section longer than this is cut.
MAX_SECTION_LINES = 12
MAX_LINE_CHARS = 300

_KEYS = ("what", "accept", "generated", "deadends", "workbench")
_NAMES = dict(zip(_KEYS, texts.BEQUEST_SECTIONS, strict=True))
_EOL = re.compile(r"\r\n|\r|\n")
# a marker line holds nothing but the marker (surrounding blanks allowed)
_IS_BEGIN = re.compile(r"\s*<!--\s*flower:begin(?:\s.*)?-->\s*")
_IS_END = re.compile(r"\s*<!--\s*flower:end\s*-->\s*")


@dataclass
class Bequest(SectionedDocument):
    """The five sections; empty means "not said" (shown as ``(无)`` in the block)."""

    SECTION_NAMES = _NAMES
    REQUIRED_SECTIONS = REQUIRED
    DEGRADED_MARK = DEGRADED

    what: str = ""
    accept: str = ""
    generated: str = ""
    deadends: str = ""
    workbench: str = ""


    @classmethod
    def parse(cls, text: str) -> Bequest:
        """Read the model's answer (or a block this module wrote). A section that only says
        ``(无)`` counts as empty; headings in fenced code are not headings."""
        found = split_sections(strip_fences(text or ""), texts.BEQUEST_ALIASES)
        return cls(**{k: _unescape(first_filled(found.get(k, []), texts.BEQUEST_NONE))
                      for k in _KEYS})


    def block_body(self, when: str = "") -> str:
        """The text between the markers: a title, an optional time line, the five sections
        (``###``, under the block's ``##`` title), each cut to a few lines."""
        parts = [texts.BEQUEST_TITLE]
        if when:
            parts.append(texts.BEQUEST_STAMP.format(when=when))
        parts += [f"### {name}\n{_escape(_clip(body)) or texts.BEQUEST_NONE}"
                  for name, body in self._sections()]
        return "\n\n".join(parts)


# A line that opens a code fence (```, ~~~), with any backslashes already before it.
_FENCE_LINE = re.compile(r"^(\s*)(\\*)(`{3,}|~{3,})", re.MULTILINE)


def _escape(body: str) -> str:
    """Fence lines in a section get one more backslash before them: a verdict or goal that
    carries a fence would otherwise open a code block that hides the sections after it —
    from :meth:`Bequest.parse` and from the next tool that renders the file."""
    return _FENCE_LINE.sub(lambda m: f"{m[1]}\\{m[2]}{m[3]}", body)


def _unescape(body: str) -> str:
    """:func:`_escape` undone: one backslash fewer before an escaped fence line."""
    return re.sub(r"^(\s*)\\(\\*)(`{3,}|~{3,})", r"\1\2\3", body, flags=re.MULTILINE)


def _clip(body: str) -> str:
    lines = [ln if len(ln) <= MAX_LINE_CHARS else ln[:MAX_LINE_CHARS] + "…"
             for ln in body.strip().splitlines()]
    if len(lines) > MAX_SECTION_LINES:
        extra = len(lines) - MAX_SECTION_LINES + 1
        lines = [*lines[:MAX_SECTION_LINES - 1], texts.BEQUEST_CUT.format(n=extra)]
    return "\n".join(lines)


def mechanical(*, goal: str = "", verdict: str = "", workbench: str | Path = "",
               index: str | Path = "", why: str = "") -> Bequest:
    """The block flower writes without a model: the brief's goal, the last verdict and the
    workbench — what it knows for certain — marked :data:`DEGRADED`, saying where to look."""
    goal_line = " ".join((goal or "").split()) or texts.BEQUEST_NO_GOAL
    return Bequest(
        what=texts.BEQUEST_MECH_WHAT.format(marker=DEGRADED, why=why or texts.BEQUEST_WHY_EMPTY,
                                            goal=goal_line),
        accept=texts.BEQUEST_MECH_ACCEPT.format(verdict=verdict or texts.BEQUEST_NO_VERDICT),
        generated=texts.BEQUEST_MECH_UNKNOWN,
        deadends=texts.BEQUEST_MECH_UNKNOWN,
        workbench=texts.BEQUEST_MECH_WORKBENCH.format(root=workbench, index=index),
    )


# --- the managed block ---------------------------------------------------------------------


def _lines(text: str) -> list[tuple[str, str]]:
    """``(content, line ending)`` pairs; joined back they give ``text`` exactly."""
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _EOL.finditer(text):
        out.append((text[pos:m.start()], m.group()))
        pos = m.end()
    if pos < len(text):
        out.append((text[pos:], ""))
    return out


def _dominant_eol(lines: list[tuple[str, str]]) -> str:
    counts: dict[str, int] = {}
    for _, eol in lines:
        if eol:
            counts[eol] = counts.get(eol, 0) + 1
    return max(counts, key=lambda e: counts[e]) if counts else "\n"


def _defused(body: str) -> list[str]:
    """Body lines, with any line that would read as a marker altered: a model quoting the
    markers must not break the pair the next run looks for."""
    out = []
    for line in _EOL.split(body.strip("\r\n")):
        if _IS_BEGIN.fullmatch(line) or _IS_END.fullmatch(line):
            line = line.replace("<!--", "<!- -")
        out.append(line)
    return out


def _compose(text: str, body: str) -> tuple[str, str]:
    """The new file text and what happened: created, replaced, appended or malformed."""
    lines = _lines(text)
    eol = _dominant_eol(lines)
    begins = [i for i, (c, _) in enumerate(lines) if _IS_BEGIN.fullmatch(c)]
    ends = [i for i, (c, _) in enumerate(lines) if _IS_END.fullmatch(c)]
    if len(begins) == 1 and len(ends) == 1 and begins[0] < ends[0]:
        b, e = begins[0], ends[0]
        # the block keeps the line ending it has; a new one takes the file's commonest
        block = (lines[b][1] or eol).join([BEGIN, *_defused(body), END])
        head = "".join(c + x for c, x in lines[:b])
        tail = "".join(c + x for c, x in lines[e + 1:])
        return head + block + lines[e][1] + tail, "replaced"
    block = eol.join([BEGIN, *_defused(body), END])
    if not text:
        return block + eol, "created"
    sep = "" if lines[-1][1] else eol
    if lines[-1][0].strip():  # one blank line between the user's text and the block
        sep += eol
    return text + sep + block + eol, ("malformed" if begins or ends else "appended")


class NotOurs(OSError):
    """The handover file is a link out of the workspace, or no regular file: not written."""


def _own_file(path: Path, root: Path | None) -> Path:
    """Where writing ``path`` really lands, if that is a regular file (or nothing yet)
    inside ``root``; else :class:`NotOurs`. An agent can plant ``AGENTS.md ->
    ~/.ssh/authorized_keys``: following it would append model-written lines there."""
    target = path.resolve()
    if root is not None and not target.is_relative_to(Path(root).resolve()):
        raise NotOurs(texts.BEQUEST_LINK_OUT.format(name=path.name, target=target))
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return target
    if not stat.S_ISREG(st.st_mode):
        raise NotOurs(texts.BEQUEST_NOT_REGULAR.format(name=path.name))
    return target


def write_managed(path: str | Path, body: str, *, root: str | Path | None = None) -> str:
    """Put ``body`` between flower's markers in the file at ``path``; returns ``"created"``,
    ``"replaced"``, ``"appended"`` or ``"malformed"`` (markers present but not one ordered
    pair: a fresh block was appended, the old text left as it was).

    A symlink is followed only to a regular file inside ``root`` (a common
    ``AGENTS.md -> CLAUDE.md`` stays a link); a link out of it, a FIFO, a device or a
    folder is :class:`NotOurs` and left untouched. The write is atomic (a new file renamed
    over the old, so a hard link to a file elsewhere is cut, never written through) and
    keeps the file's permission bits. Raises ``OSError``, or ``ValueError`` when the file
    is not UTF-8 text — then it is left untouched.
    """
    target = _own_file(Path(path), Path(root) if root is not None else None)
    try:
        raw = target.read_bytes()
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        raw, mode = None, 0o644
    text = raw.decode("utf-8") if raw is not None else ""  # UnicodeDecodeError is a ValueError
    new, status = _compose(text, body)
    if raw is None:
        status = "created"
    if new != text or raw is None:
        atomic_write(target, new, mode=mode)
    return status


class Outcome(NamedTuple):
    """What :func:`write_both` did to one file: a status of :func:`write_managed`, ``"same"``
    (a link to a file already written) or ``"error"`` with the reason."""

    path: Path
    status: str
    error: str = ""


def write_both(root: str | Path, body: str) -> list[Outcome]:
    """The block into ``CLAUDE.md`` and ``AGENTS.md`` under ``root``. One file failing does
    not keep the other from being written; two names for one file are written once."""
    done: set[Path] = set()
    out: list[Outcome] = []
    for name in FILES:
        path = Path(root) / name
        real = path.resolve()
        if real in done:
            out.append(Outcome(path, "same"))
            continue
        try:
            out.append(Outcome(path, write_managed(path, body, root=root)))
            done.add(real)
        except NotOurs as exc:
            out.append(Outcome(path, "error", str(exc)))
        except (OSError, ValueError) as exc:
            out.append(Outcome(path, "error", f"{type(exc).__name__}: {exc}"))
    return out

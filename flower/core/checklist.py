"""The goal (目标.md) a judge checks a round against, and the judge's verdict.

``Goal`` is derived once from the brief and frozen: a statement plus a checklist of items
that can be verified on the spot. ``Verdict`` reads the judge's three sections (结论 / 理由 /
未通过). Its one hard rule: anything that is not a clear "achieved" is not achieved — an
unparsable verdict fails the round, and "cannot verify here" is never a pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from flower import texts
from flower.core.brief import (
    PREAMBLE,
    FrozenDocument,
    first_filled,
    split_sections,
    strip_fences,
)

__all__ = ["Goal", "Verdict"]

_BULLET = re.compile(r"^(?:[-*+•](?:[ \t]+|(?=\[))|\d{1,3}[ \t]*(?:[.．](?!\d)|[、)）])[ \t]*)")
_CHECKBOX = re.compile(r"^\[[ xX✓✔]?\][ \t]*")
_CHECKBOX_LINE = re.compile(r"^\s*[-*+]\s*\[[ xX✓✔]?\]")
_UNVERIFIABLE = re.compile(
    r"[\[［]\s*(?:" + "|".join(re.escape(m) for m in texts.GOAL_UNVERIFIABLE_MARKS) + ")"
)


def strip_bullet(line: str) -> str:
    """``- x``, ``* x``, ``+ x``, ``1. x``, ``1、x``, ``1) x``, ``- [ ] x`` → ``x``."""
    s = _BULLET.sub("", line.strip(), count=1)
    return _CHECKBOX.sub("", s, count=1).strip()


def _items(body: str, empty: tuple[str, ...]) -> list[str]:
    """One item per non-blank line, bullets stripped; lines that mean "none" skipped."""
    out = []
    for line in body.splitlines():
        item = strip_bullet(line)
        if item and _folded(item) not in empty:
            out.append(item)
    return out


def _folded(s: str) -> str:
    """Case, full-width parentheses and trailing full stops don't change what a word means."""
    return s.strip().replace("（", "(").replace("）", ")").rstrip("。.!！").lower()


# --- Goal ----------------------------------------------------------------------------------


@dataclass
class Goal(FrozenDocument):
    """What "done" means, in checkable pieces; the judge walks ``checks`` item by item."""

    statement: str = ""
    checks: list[str] = field(default_factory=list)
    path: Path | None = field(default=None, compare=False)

    @property
    def unverifiable(self) -> list[str]:
        """Checks flagged ``[此环境无法验证:…]``: doomed to fail judging, so the human
        hears about them before any work is paid for."""
        return [c for c in self.checks if _UNVERIFIABLE.search(c)]

    def missing(self) -> list[str]:
        """A goal can only be judged with a statement AND at least one check."""
        statement, checks = texts.GOAL_SECTIONS
        return ([statement] if not self.statement.strip() else []) + \
            ([checks] if not self.checks else [])

    def complete(self) -> bool:
        """Nothing missing: the goal may be frozen and the goal step skipped on a rerun."""
        return not self.missing()

    @classmethod
    def parse(cls, text: str) -> Goal:
        """Read the judge's goal reply or a hand-edited goal file.

        Without any checklist heading, checkbox lines (``- [ ] x``) anywhere are the checks:
        a hand-written todo list is still a checklist.
        """
        lines = strip_fences(text)
        found = split_sections(lines, texts.GOAL_ALIASES)
        statement = first_filled(found.get("statement", []), texts.GOAL_EMPTY)
        if "checks" in found:
            empty = (_folded(texts.GOAL_EMPTY),)
            lists = [_items(body, empty) for body in found["checks"]]
            checks = next((items for items in lists if items), [])
        else:
            checks = [strip_bullet(ln) for ln in lines if _CHECKBOX_LINE.match(ln)]
            checks = [c for c in checks if c]
        return cls(statement, checks)

    def to_markdown(self) -> str:
        """The frozen file: ``# 目标`` + statement, ``# 判定清单`` + ``- item`` lines."""
        statement, checks = texts.GOAL_SECTIONS
        items = "\n".join(f"- {c}" for c in self.checks) or texts.GOAL_EMPTY
        return f"# {statement}\n{self.statement or texts.GOAL_EMPTY}\n\n# {checks}\n{items}\n"

    def prompt_block(self) -> str:
        """Compact form for a prompt: the filled parts only."""
        statement, checks = texts.GOAL_SECTIONS
        parts = [f"## {statement}\n{self.statement}"] if self.statement else []
        if self.checks:
            parts.append(f"## {checks}\n" + "\n".join(f"- {c}" for c in self.checks))
        return "\n\n".join(parts)

    def amend(self, extra: str) -> Goal:
        """Append a human's change to the statement — never overwrite: the judge should
        see both what was asked and what changed."""
        self.statement += f"\n\n{texts.GOAL_AMENDED}{extra}"
        return self


# --- Verdict matching ----------------------------------------------------------------------

ACHIEVED, NOT_YET, UNREACHABLE = "achieved", "not_yet", "unreachable"
STATES = (ACHIEVED, NOT_YET, UNREACHABLE, "")

# English negation of a pass word ("has not been achieved", "didn't pass") is not-yet.
_NEGATED = (r"(?<![a-z0-9])(?:not|never|n't|isn't|wasn't|hasn't|haven't|didn't|doesn't)"
            r"(?:\s+(?:been|yet|fully|quite|really|entirely|all|be))*"
            r"\s+(?:achieved|passed|pass|met|done|complete|completed)(?![a-z0-9])")
_CLAUSE = re.compile(r"[,，;；。!！?？:：、—–()（）]|\s-\s|\.(?:\s|$)")
_DIGIT = re.compile(r"(?<![\w.])([01])(?![\w.])")
_BOOL = {"1": ACHIEVED, "true": ACHIEVED, "0": NOT_YET, "false": NOT_YET}


def _word(w: str) -> str:
    """ASCII words match whole words only ("no" never inside "nothing"); CJK as substring."""
    body = r"\s+".join(re.escape(part) for part in w.split())
    return rf"(?<![a-z0-9]){body}(?![a-z0-9])" if w.isascii() else body


def _table() -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for state, words in texts.VERDICT_WORDS:
        alts = [_word(w.lower()) for w in sorted(words, key=len, reverse=True)]
        if state == NOT_YET:
            alts.append(_NEGATED)
        out.append((state, re.compile("|".join(alts))))
    return out


_TABLE = _table()


def _candidates(conclusion: str) -> list[str]:
    """Where the judge states its conclusion, most specific first: first clause of the
    first line, the first line, everything."""
    lines = [ln.strip() for ln in conclusion.splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    clause = next((c.strip() for c in _CLAUSE.split(first) if c.strip()), "")
    return [clause, first, conclusion]


def _state(conclusion: str) -> str:
    """Match the (lower-cased) conclusion against the ordered word table.

    Any "cannot verify / unreachable" word anywhere wins (never a pass, never another round);
    otherwise the first candidate with a hit decides, not-yet before achieved.
    """
    text = conclusion.lower()
    unreachable, *rest = _TABLE
    if unreachable[1].search(text):
        return UNREACHABLE
    for cand in _candidates(text):
        if _folded(re.sub(r"[^\w]+", " ", cand)) == texts.VERDICT_BARE_NO:
            return NOT_YET
        for state, pattern in rest:
            if pattern.search(cand):
                return state
    m = _DIGIT.search(text)
    return _BOOL[m.group(1)] if m else ""


def _bool(text: str) -> str:
    """A reply that is only ``1``/``true``/``0``/``false`` (case-insensitive)."""
    return _BOOL.get(text.strip().rstrip("。.!！").strip().lower(), "")


# --- Verdict -------------------------------------------------------------------------------


@dataclass
class Verdict:
    """The judge's answer for one round: a state, why, and which checks failed."""

    state: str = ""
    reason: str = ""
    failed: list[str] = field(default_factory=list)

    @property
    def achieved(self) -> bool:
        """The only state that passes the round."""
        return self.state == ACHIEVED

    @property
    def unreachable(self) -> bool:
        """Cannot be reached or verified here: stop and ask a human, don't spend rounds."""
        return self.state == UNREACHABLE

    @property
    def ok(self) -> bool:
        """A conclusion was understood. ``ok=False`` must be treated as not achieved."""
        return bool(self.state)

    @classmethod
    def parse(cls, text: str) -> Verdict:
        """Read the judge's reply (order: 结论 heading; bare ``1``/``true``/``0``/``false``;
        conclusion words; a lone ``1``/``0``; else unparsable)."""
        found = split_sections(strip_fences(text), texts.VERDICT_ALIASES)
        reason = first_filled(found.get("reason", []))
        none = tuple(_folded(w) for w in texts.VERDICT_NONE)
        failed = _items(first_filled(found.get("failed", [])), none)
        if "state" in found:
            state = _state(first_filled(found["state"]))
        else:
            head = first_filled(found[PREAMBLE])
            state = _bool(head) or _state(head)
        return cls(state, reason, failed)

    def feedback(self) -> str:
        """What goes back to the worker's session: the gaps, never a solution."""
        reason = self.reason or texts.VERDICT_NO_REASON
        parts = [texts.VERDICT_FEEDBACK_HEAD, texts.VERDICT_FEEDBACK_REASON.format(reason=reason)]
        if self.failed:
            items = (texts.VERDICT_FEEDBACK_ITEM.format(item=f) for f in self.failed)
            parts.append("\n".join([texts.VERDICT_FEEDBACK_FAILED, *items]))
        parts.append(texts.VERDICT_FEEDBACK_TAIL)
        return "\n\n".join(parts)

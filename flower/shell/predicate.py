"""The predicate: is this shell command a glance? (See the package docstring.)"""

from __future__ import annotations

import re

from flower.shell import commands, git
from flower.shell.bound import unwrap
from flower.shell.commands import Use
from flower.shell.lexer import Refused, Word, segments

__all__ = ["analyse", "is_ephemeral", "why_not"]

_ENV_NAME = re.compile(r"(LANG|LANGUAGE|LC_[A-Z]+|TZ|NO_COLOR|COLUMNS|LINES|TERM|CLICOLOR)$")
_ENV_VALUE = re.compile(r"[A-Za-z0-9_.:@/+-]*$")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
# Globs: these verbs cannot be turned into a writer by any name a glob expands to; content
# readers may glob only behind a literal start (no expansion can begin with "-") and only
# to names that cannot be credential files (``Ctx.read``).
_GLOB_FREE = frozenset({"ls", "ll", "dir", "wc", "stat", "du", "df"})
_GLOB_READERS = frozenset({"cat", "head", "tail", "grep", "egrep", "fgrep", "nl", "cut",
                           "sort", "rev", "column", "file"})


def _assignment(word: Word) -> None:
    """``NAME=value cmd``: only locale/display knobs; pagers only as ``cat``.

    Anything else is code execution (``LD_PRELOAD``, ``GIT_EXTERNAL_DIFF``, ``PATH``,
    ``BASH_ENV``, ``GIT_DIR`` …).
    """
    name, _, value = word.text.partition("=")
    if name in ("PAGER", "GIT_PAGER") and value in ("", "cat"):
        return
    if _ENV_NAME.match(name) and _ENV_VALUE.match(value):
        return
    raise Refused(f"environment prefix {name}")


def _segment(words: list[Word], piped: bool) -> Use:
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i].raw):
        _assignment(words[i])
        i += 1
    if i >= len(words):
        raise Refused("bare assignment")
    verb, args = words[i], words[i + 1:]
    if verb.glob:
        raise Refused(f"glob as a command name ({verb.text})")
    for w in args:
        if not w.glob or verb.text in _GLOB_FREE:
            continue
        # a file named "-i" turns `sed -n p *` into an in-place edit, and one pattern can
        # become several operands (`uniq a*` writes the second match)
        if verb.text not in _GLOB_READERS or w.text[:1] in "-*?[":
            raise Refused(f"unquoted glob in the arguments of {verb.text}")
    if verb.text == "git":
        return Use("git", git=git.check_git(verb, args))
    return commands.check_command(verb, args, piped)


def analyse(cmd: str) -> list[Use]:
    """What each simple command of glance ``cmd`` touches; raises ``Refused`` if it is not
    a glance. A command already in the runner's bounded form is judged by what it wraps."""
    if not isinstance(cmd, str) or not cmd.strip():
        raise Refused("empty command")
    inner = unwrap(cmd)
    if inner is not None:
        if unwrap(inner) is not None:
            raise Refused("a glance wrapped twice")
        cmd = inner
    segs = segments(cmd)
    if not segs:
        raise Refused("no command")
    return [_segment(s.words, s.piped) for s in segs]


def why_not(cmd: str) -> str | None:
    """None if ``cmd`` is a glance, else the first reason it is not (for tests and logs)."""
    try:
        analyse(cmd)
    except Refused as exc:
        return str(exc)
    except RecursionError:  # pragma: no cover - defensive
        return "unparseable"
    return None


def is_ephemeral(cmd: str) -> bool:
    """True only for read-only shell commands whose output goes stale (``git status``, ``ls``).

    Decides both "the coordinator may run it itself" (a glance) and "its old result expires
    on resume". Conservative: anything not provably a harmless look is False.
    """
    return why_not(cmd) is None


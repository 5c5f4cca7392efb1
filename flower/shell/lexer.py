"""Shell words and operators, for the small subset of shell a glance may use.

The lexer only has to be right about what it *accepts*: anything it does not fully
understand — parameter or command substitution, process substitution, subshells, brace
groups and brace expansion, here-docs, input redirection, redirection to a file, comments,
backgrounding, control characters — raises ``Refused``. What is left is a list of simple
commands separated by ``;``, ``&&``, ``||``, ``|``, ``|&`` or newlines, each a list of words
with their quotes removed. Every word remembers where it stood in the command text
(``start``/``end``), so the glance runner can insert hardening options at exact positions
without re-quoting what the model wrote.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEV_NULL", "SEPARATORS", "Refused", "Segment", "Word", "lex", "segments"]


class Refused(Exception):
    """The command is not provably a harmless look; the message says why."""


SEPARATORS = frozenset({";", "&&", "||", "|", "|&", "\n"})
DEV_NULL = "/dev/null"
_GLOB_CHARS = frozenset("*?[")
_NEVER_UNQUOTED = {
    "(": "subshell", ")": "subshell", "{": "brace group/expansion",
    "}": "brace group/expansion", "`": "command substitution", "$": "expansion",
}
_REDIRECTS = ("&>>", "&>", ">>", ">|", ">&", ">", "<")


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word: ``text`` after quote removal, ``raw`` as written at ``start:end``.

    ``glob`` is True when an unquoted ``*``, ``?`` or ``[`` appears (the shell will expand
    the word to file names, so ``text`` is a pattern, not a name).
    """

    text: str
    raw: str
    glob: bool
    start: int
    end: int


@dataclass(slots=True)
class Segment:
    """A simple command and whether a pipe feeds its standard input."""

    words: list[Word]
    piped: bool


def lex(cmd: str) -> list[Word | str]:
    """Words and operator strings of ``cmd``; raises ``Refused`` outside the safe subset."""
    return _Lexer(cmd).run()


def segments(cmd: str) -> list[Segment]:
    """The simple commands of ``cmd`` in order (empty ones between ``;`` dropped)."""
    out: list[Segment] = [Segment([], False)]
    for token in lex(cmd):
        if isinstance(token, str):
            out.append(Segment([], token in ("|", "|&")))
        else:
            out[-1].words.append(token)
    for seg in out:
        if seg.piped and not seg.words:
            raise Refused("empty command in a pipeline")
    if out[0].words == [] and len(out) > 1 and out[1].piped:
        raise Refused("pipeline without a first command")
    return [s for s in out if s.words]


class _Lexer:
    __slots__ = ("buf", "cmd", "glob", "i", "out", "start")

    def __init__(self, cmd: str) -> None:
        self.cmd = cmd
        self.i = 0
        self.out: list[Word | str] = []
        self.buf: list[str] = []
        self.start = -1
        self.glob = False

    def flush(self) -> None:
        if self.start >= 0:
            self.out.append(Word("".join(self.buf), self.cmd[self.start:self.i], self.glob,
                                 self.start, self.i))
        self.buf, self.start, self.glob = [], -1, False

    def run(self) -> list[Word | str]:
        cmd, n = self.cmd, len(self.cmd)
        while self.i < n:
            c = cmd[self.i]
            if (ord(c) < 32 and c not in "\t\n") or ord(c) == 127:
                raise Refused("control character")
            if c in " \t":
                self.flush()
                self.i += 1
            elif c == "\n":
                self.flush()
                self.out.append("\n")
                self.i += 1
            elif c in ";&|":
                self.operator(c)
            elif c in "<>":
                fd = ""
                if self.start >= 0 and cmd[self.start:self.i].isdigit() and not self.glob:
                    fd = cmd[self.start:self.i]
                    self.buf, self.start = [], -1
                self.flush()
                self.redirect(fd)
            elif c in _NEVER_UNQUOTED:
                raise Refused(_NEVER_UNQUOTED[c])
            elif c == "#" and self.start < 0:
                raise Refused("comment")
            elif c == "\\" and cmd[self.i + 1:self.i + 2] == "\n":
                self.i += 2  # line continuation: removed entirely
            else:
                self.word_char(c)
        self.flush()
        return self.out

    def operator(self, c: str) -> None:
        cmd = self.cmd
        self.flush()
        two = cmd[self.i:self.i + 2]
        if two in ("&&", "||", "|&"):
            self.out.append(two)
            self.i += 2
        elif two in (";;", ";&"):
            raise Refused("case terminator")
        elif c == "&" and cmd[self.i + 1:self.i + 2] == ">":
            self.redirect("")
        elif c == "&":
            raise Refused("backgrounding")
        else:
            self.out.append(c)
            self.i += 1

    def word_char(self, c: str) -> None:
        cmd, n = self.cmd, len(self.cmd)
        if self.start < 0:
            self.start = self.i
        if c == "\\":
            if self.i + 1 >= n:
                raise Refused("trailing backslash")
            self.buf.append(cmd[self.i + 1])
            self.i += 2
        elif c == "'":
            end = cmd.find("'", self.i + 1)
            if end < 0:
                raise Refused("unterminated quote")
            self.buf.append(cmd[self.i + 1:end])
            self.i = end + 1
        elif c == '"':
            self.double_quoted()
        else:
            if c in _GLOB_CHARS:
                self.glob = True
            self.buf.append(c)
            self.i += 1

    def double_quoted(self) -> None:
        cmd, n = self.cmd, len(self.cmd)
        i = self.i + 1
        while i < n:
            c = cmd[i]
            if c == '"':
                self.i = i + 1
                return
            if c in "$`":
                raise Refused("expansion inside double quotes")
            if c == "\\" and i + 1 < n and cmd[i + 1] in '"\\\n':
                if cmd[i + 1] != "\n":
                    self.buf.append(cmd[i + 1])
                i += 2
                continue
            self.buf.append(c)
            i += 1
        raise Refused("unterminated quote")

    def redirect(self, fd: str) -> None:
        """Only ``>&N``, ``>&/dev/null`` and ``>/dev/null`` (any output op) pass."""
        cmd = self.cmd
        rest = cmd[self.i:]
        op = next(o for o in _REDIRECTS if rest.startswith(o))
        if op == "<":
            raise Refused("input redirection / here-doc / process substitution")
        j = self.i + len(op)
        if cmd[j:j + 1] == "(":
            raise Refused("process substitution")
        while j < len(cmd) and cmd[j] in " \t":
            j += 1
        k = j
        while k < len(cmd) and cmd[k] not in " \t\n;&|<>()":
            k += 1
        target = _Lexer(cmd[j:k]).run() if k > j else []
        word = target[0] if len(target) == 1 and isinstance(target[0], Word) else None
        if word is None:
            raise Refused("redirection without a target")
        if word.glob:
            raise Refused("glob as a redirection target")
        if op == ">&" and word.text.isdigit():
            self.i = k
            return
        if word.text == DEV_NULL:
            self.i = k
            return
        raise Refused(f"redirection to a file ({fd}{op}{word.text})")

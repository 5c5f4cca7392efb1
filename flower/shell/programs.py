"""Rules for the three filters whose argument is a program: ``sed``, ``awk`` and ``jq``.

Whether a program ends is undecidable in general, so each language is cut down to a part
where it obviously does: no loops, no branches, no recursion, nothing that reads more
input than the files named, nothing that writes or runs commands. What falls outside —
including plenty of harmless programs — is refused; a worker can run it instead.

* sed: only ``p``, ``d``, ``q``/``Q``, ``=``, ``s///`` (flags ``g p i I m M`` and a count)
  and ``y///``, with line, ``$``, ``/regex/`` and step addresses. ``G;D``, ``b``/``t``
  loops, ``n``/``N`` reads, ``w``/``W``/``e``/``r`` and ``-i``/``-f`` all refuse.
* awk: no ``while``/``do``/``for``/``function`` (loops and recursion), no ``system``,
  ``getline``, pipes, ``close``/``fflush``, ``ENVIRON``/``PROCINFO``/``ARGV`` and no ``>``
  inside an action (output redirection). ``$3 > 100 {print $1}`` still passes.
* jq: no ``repeat``/``while``/``until``/``recurse``/``range``/``def``/``inf``,
  no ``input``/``inputs``/``debug``/``stderr``/``input_filename``, no ``env``/``$ENV``/
  ``$__loc__``, no ``import``/``include`` and no file-reading options.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from flower.shell.lexer import Refused
from flower.shell.options import Spec, parse

if TYPE_CHECKING:
    from flower.shell.commands import Ctx

__all__ = ["awk", "jq", "sed", "sed_script"]

# --------------------------------------------------------------------------- jq

_JQ = Spec("nrjacsSCMeR", "", "null-input raw-output join-output ascii-output "
           "compact-output slurp sort-keys color-output monochrome-output exit-status "
           "raw-input tab seq stream", "indent")
_JQ_BANNED = re.compile(
    r"\b(repeat|while|until|recurse|recurse_down|range|def|infinite|inf|input|inputs|"
    r"debug|stderr|input_filename|input_line_number|env|ENV|import|include|"
    r"get_search_list|modulemeta|getpath|splits|ltrimstr|halt_error)\b|\$__|\$ENV")


def jq(c: Ctx) -> None:
    plain: list[str] = []
    args = c.args
    i = 0
    while i < len(args):
        if args[i] in ("--arg", "--argjson"):
            if i + 2 >= len(args):
                raise Refused("jq --arg without name and value")
            i += 3
            continue
        if args[i] in ("--args", "--jsonargs"):
            raise Refused("jq positional args")
        plain.append(args[i])
        i += 1
    p = parse(_JQ, plain, "jq")
    if not p.operands:
        raise Refused("jq without a filter")
    if _JQ_BANNED.search(p.operands[0]):
        raise Refused("jq filter may loop, read more input or the environment")
    files = p.operands[1:]
    if p.has("-n", "--null-input") and not files:
        return
    c.stdin(files)
    c.read(files, "jq")


# --------------------------------------------------------------------------- awk

_AWK_BANNED = re.compile(
    r"\b(while|do|for|function|func|system|getline|close|fflush|ENVIRON|PROCINFO|ARGV|ARGC|"
    r"include|load|namespace|extension|nextfile)\b|\||@|\\\n")


def awk(c: Ctx) -> None:
    args = c.args
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        if a in ("-F", "-v"):
            i += 2
            continue
        if a[:2] in ("-F", "-v"):
            i += 1
            continue
        raise Refused(f"awk option {a}")
    if i >= len(args):
        raise Refused("awk without a program")
    prog = args[i]
    brace = prog.find("{")
    if _AWK_BANNED.search(prog) or (brace >= 0 and ">" in prog[brace:]):
        raise Refused("awk program may loop, write, pipe or run commands")
    files = [a for a in args[i + 1:] if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", a)]
    if not files and not c.piped and re.fullmatch(r"\s*BEGIN\s*\{[^{}]*\}\s*", prog):
        return
    c.stdin(files)
    c.read(files, "awk")


# --------------------------------------------------------------------------- sed

_SED_FLAGS = set("nEruzs")
_SED_LONG = {"--quiet", "--silent", "--regexp-extended", "--posix", "--null-data",
             "--zero-terminated", "--unbuffered", "--separate", "--debug", "--sandbox"}
_SED_SIMPLE = set("pdqQ=")


def sed(c: Ctx) -> None:
    scripts: list[str] = []
    positionals: list[str] = []
    args = c.args
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            positionals.extend(args[i + 1:])
            break
        if a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
        elif a == "--expression":
            if i + 1 >= len(args):
                raise Refused("sed -e without script")
            scripts.append(args[i + 1])
            i += 1
        elif a.startswith("--"):
            if a not in _SED_LONG:
                raise Refused(f"sed option {a}")
        elif a.startswith("-") and a != "-":
            i = _sed_cluster(a, args, i, scripts)
        else:
            positionals.append(a)
        i += 1
    if not scripts:
        if not positionals:
            raise Refused("sed without a script")
        scripts.append(positionals.pop(0))
    for script in scripts:
        sed_script(script)
    c.stdin(positionals)
    c.read(positionals, "sed")


def _sed_cluster(a: str, args: list[str], i: int, scripts: list[str]) -> int:
    for j, ch in enumerate(a[1:], 1):
        if ch == "e":
            rest = a[j + 1:]
            if rest:
                scripts.append(rest)
            elif i + 1 < len(args):
                scripts.append(args[i + 1])
                i += 1
            else:
                raise Refused("sed -e without script")
            return i
        if ch not in _SED_FLAGS:
            raise Refused(f"sed option -{ch}")
    return i


def _sed_regex(s: str, i: int, delim: str) -> int:
    """Index just past the closing ``delim`` of a regex/replacement starting at ``i``.

    Bracket expressions are tracked as GNU sed does; a delimiter inside one is refused
    outright so a disagreement about where the regex ends can never hide a flag.
    """
    n = len(s)
    bracket = False
    while i < n:
        ch = s[i]
        if ch == "\n":
            raise Refused("newline inside sed regex")
        if ch == "\\":
            i += 2
            continue
        if bracket:
            if ch == delim:
                raise Refused("sed delimiter inside a bracket expression")
            if ch == "[" and i + 1 < n and s[i + 1] in ":.=":
                close = s.find(s[i + 1] + "]", i + 2)
                if close < 0:
                    raise Refused("unterminated sed class")
                if delim in s[i:close]:
                    raise Refused("sed delimiter inside a bracket expression")
                i = close + 2
                continue
            if ch == "]":
                bracket = False
            i += 1
            continue
        if ch == delim:
            return i + 1
        if ch == "[":
            bracket = True
            i += 1
            if i < n and s[i] == "^":
                i += 1
            if i < n and s[i] == "]":
                i += 1
            continue
        i += 1
    raise Refused("unterminated sed regex")


def _sed_address(s: str, i: int) -> int:
    n = len(s)
    if i < n and s[i].isdigit():
        while i < n and (s[i].isdigit() or s[i] == "~"):
            i += 1
        return i
    if i < n and s[i] == "$":
        return i + 1
    if i < n and s[i] == "/":
        i = _sed_regex(s, i + 1, "/")
        while i < n and s[i] in "IM":
            i += 1
        return i
    return i


def sed_script(s: str) -> None:
    """Refuse any sed script outside the loop-free, write-free subset (module docstring)."""
    i, n = 0, len(s)
    while i < n:
        while i < n and s[i] in " \t\n;":
            i += 1
        if i >= n:
            return
        i = _sed_address(s, i)
        if i < n and s[i] == ",":
            i += 1
            if i < n and s[i] in "+~":
                i += 1
            start = i
            i = _sed_address(s, i)
            if i == start:
                raise Refused("sed: bad second address")
        while i < n and s[i] in " \t":
            i += 1
        if i < n and s[i] == "!":
            i += 1
        while i < n and s[i] in " \t":
            i += 1
        if i >= n:
            raise Refused("sed: address without command")
        cmd = s[i]
        i += 1
        if cmd in "sy":
            if i >= n or s[i] in "\\\n":
                raise Refused("sed: bad delimiter")
            delim = s[i]
            i = _sed_regex(s, i + 1, delim)
            i = _sed_regex(s, i, delim)
            if cmd == "s":
                while i < n and (s[i] in "gpiImM" or s[i].isdigit()):
                    i += 1
        elif cmd in "qQ":
            while i < n and s[i].isdigit():
                i += 1
        elif cmd not in _SED_SIMPLE:
            raise Refused(f"sed command {cmd!r}")
        while i < n and s[i] in " \t":
            i += 1
        if i < n and s[i] not in ";\n":
            raise Refused(f"sed: unexpected {s[i]!r}")

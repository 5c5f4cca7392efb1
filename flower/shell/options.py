"""Per-program option grammar: which options exist, and which of them take a value how.

The parser must never believe an option swallows the next word when the program does not:
that word would go unchecked while the program reads it as an option of its own (git's
``-U --output=README.md`` wrote the file: ``-U`` takes its count attached or not at all).
So every option is declared in one of three forms, and unknown options refuse:

* flags — no value;
* required value (``short_val``/``long_val``) — attached (``-n5``, ``--lines=5``) or, when the
  program really consumes it, the next word (``-n 5``); ``joined=True`` refuses the
  separate form for the whole spec, and ``separate`` lists the exceptions that keep it;
* optional value (``short_opt``/``long_opt``) — attached only (``-U3``, ``--stat=80``); a
  separate word after it is parsed as a word of its own.

Long options must be spelled out: the GNU and git parsers accept unique prefixes
(``--out`` for ``--output``), so a prefix that is not itself on the list refuses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from flower.shell.lexer import Refused

__all__ = ["Opts", "Parsed", "Spec", "parse"]

Opts = list[tuple[str, "str | None"]]


class Spec:
    """The options one program (or git subcommand) may take; nothing outside passes."""

    __slots__ = ("clusters", "joined", "long", "long_opt", "long_val", "numeric", "posix",
                 "separate", "short", "short_opt", "short_val")

    def __init__(self, short: str = "", short_val: str = "", long: str = "",
                 long_val: str = "", long_opt: str = "", *, short_opt: str = "",
                 numeric: bool = False, posix: bool = False, joined: bool = False,
                 separate: str = "", clusters: bool = True) -> None:
        self.short, self.short_val, self.short_opt = set(short), set(short_val), set(short_opt)
        self.long, self.long_val, self.long_opt = (set(long.split()), set(long_val.split()),
                                                   set(long_opt.split()))
        self.numeric, self.posix, self.joined, self.clusters = numeric, posix, joined, clusters
        self.separate = set(separate.split())
        overlap = (self.short & self.short_val) | (self.short & self.short_opt) | (
            self.long & self.long_val)
        if overlap:  # a table typo would silently pick one reading
            raise ValueError(f"option declared twice: {sorted(overlap)}")

    def takes_separate(self, name: str) -> bool:
        """May the value of required option ``name`` (``-n``/``--lines``) be the next word?"""
        return not self.joined or name in self.separate


@dataclass
class Parsed:
    """Options in order (name with its dashes, value or None) and the operands."""

    opts: Opts = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    # index in the argument list of each operand, for callers that insert text near one
    operand_index: list[int] = field(default_factory=list)
    # how many operands came before a ``--`` (all of them when there was none)
    before_dashes: int | None = None

    def has(self, *names: str) -> bool:
        return any(o in names for o, _ in self.opts)

    def values(self, *names: str) -> list[str]:
        return [v for o, v in self.opts if o in names and v is not None]

    def count(self, name: str) -> int:
        return sum(1 for o, _ in self.opts if o == name)


def parse(spec: Spec, args: Sequence[str], prog: str) -> Parsed:
    """Split ``args`` into options and operands by ``spec``; anything undeclared refuses."""
    out = Parsed()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            out.before_dashes = len(out.operands)
            out.operands.extend(args[i + 1:])
            out.operand_index.extend(range(i + 1, len(args)))
            break
        if a.startswith("--"):
            i = _long(spec, args, i, prog, out)
        elif a.startswith("-") and a != "-":
            i = _short(spec, args, i, prog, out)
        else:
            out.operands.append(a)
            out.operand_index.append(i)
            if spec.posix:
                out.operands.extend(args[i + 1:])
                out.operand_index.extend(range(i + 1, len(args)))
                break
        i += 1
    if out.before_dashes is None:
        out.before_dashes = len(out.operands)
    return out


def _long(spec: Spec, args: Sequence[str], i: int, prog: str, out: Parsed) -> int:
    a = args[i]
    name, eq, val = a[2:].partition("=")
    if name in spec.long and not eq:
        out.opts.append(("--" + name, None))
    elif name in spec.long_opt:
        out.opts.append(("--" + name, val if eq else None))
    elif name in spec.long_val:
        if not eq:
            if not spec.takes_separate("--" + name):
                raise Refused(f"{prog} {a}: give the value attached ({a}=…)")
            if i + 1 >= len(args):
                raise Refused(f"{prog} {a} without a value")
            i += 1
            val = args[i]
        out.opts.append(("--" + name, val))
    else:
        raise Refused(f"{prog} option {a}")
    return i


def _short(spec: Spec, args: Sequence[str], i: int, prog: str, out: Parsed) -> int:
    a = args[i]
    if spec.numeric and a[1:].isdigit():
        out.opts.append(("-n", a[1:]))
        return i
    if not spec.clusters and len(a) > 2 and a[1] not in spec.short_val | spec.short_opt:
        raise Refused(f"{prog} takes no option clusters ({a})")
    j = 1
    while j < len(a):
        ch = a[j]
        if ch in spec.short:
            out.opts.append(("-" + ch, None))
        elif ch in spec.short_opt:
            out.opts.append(("-" + ch, a[j + 1:] or None))
            return i
        elif ch in spec.short_val:
            val = a[j + 1:]
            if not val:
                if not spec.takes_separate("-" + ch):
                    raise Refused(f"{prog} -{ch}: give the value attached (-{ch}…)")
                if i + 1 >= len(args):
                    raise Refused(f"{prog} -{ch} without a value")
                i += 1
                val = args[i]
            out.opts.append(("-" + ch, val))
            return i
        else:
            raise Refused(f"{prog} option -{ch}")
        j += 1
    return i

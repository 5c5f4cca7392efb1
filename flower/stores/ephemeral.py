"""``is_ephemeral(cmd)``: is this shell command a read-only look whose answer goes stale?

One predicate, two users: the trim layer expires the results of these commands on resume,
and the coordinator's glance permission lets exactly these run on its main thread. The two
sets must stay identical (allowed-but-never-expired leaves a stale ``git status`` in context
forever; expired-but-not-allowed sends a subagent to run ``ls``).

Because the coordinator's permission rests on it, this is a security boundary. It is built
the conservative way round: a small shell lexer splits the command into simple commands,
and *every* one must be a whitelisted verb whose arguments pass that verb's check. Anything
the lexer does not fully understand — expansions, substitutions, redirections to files,
subshells, brace expansion, here-docs, backgrounding — makes the whole command
non-ephemeral. Unknown means False.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

__all__ = ["is_ephemeral"]


class _Reject(Exception):
    """Internal: the command is not provably read-only (message says why)."""


# --------------------------------------------------------------------------- lexer

_SEPARATORS = {";", "&&", "||", "|", "|&", "\n"}
_GLOB = set("*?[")
_NEVER_UNQUOTED = {
    "(": "subshell", ")": "subshell", "{": "brace group/expansion",
    "}": "brace group/expansion", "`": "command substitution", "$": "expansion",
}


class _Word:
    """One shell word after quote removal, with what the raw text revealed about it."""

    __slots__ = ("glob", "raw", "text")

    def __init__(self, text: str, raw: str, glob: bool) -> None:
        self.text, self.raw, self.glob = text, raw, glob  # glob: has an unquoted * ? [


def _lex(cmd: str) -> list[_Word | str]:
    """Words and operators of ``cmd``; raises _Reject on anything outside the safe subset."""
    out: list[_Word | str] = []
    i, n = 0, len(cmd)
    buf: list[str] = []
    raw_start = -1
    glob = False

    def flush() -> None:
        nonlocal buf, raw_start, glob
        if raw_start >= 0:
            out.append(_Word("".join(buf), cmd[raw_start:i], glob))
        buf, raw_start, glob = [], -1, False

    while i < n:
        c = cmd[i]
        if (ord(c) < 32 and c not in "\t\n") or ord(c) == 127:
            raise _Reject("control character")
        if c in " \t":
            flush()
            i += 1
            continue
        if c == "\n":
            flush()
            out.append("\n")
            i += 1
            continue
        if c in ";&|":
            flush()
            two = cmd[i:i + 2]
            if two in ("&&", "||", "|&"):
                out.append(two)
                i += 2
            elif two in (";;", ";&"):
                raise _Reject("case terminator")
            elif c == "&" and cmd[i + 1:i + 2] == ">":
                i = _redirect(cmd, i, "", out)
            elif c == "&":
                raise _Reject("backgrounding")
            else:
                out.append(c)
                i += 1
            continue
        if c in "<>":
            fd = ""
            if raw_start >= 0 and cmd[raw_start:i].isdigit():
                fd = cmd[raw_start:i]
                buf, raw_start, glob = [], -1, False
            flush()
            i = _redirect(cmd, i, fd, out)
            continue
        if c in _NEVER_UNQUOTED:
            raise _Reject(_NEVER_UNQUOTED[c])
        if c == "#" and raw_start < 0:
            raise _Reject("comment")
        if raw_start < 0:
            raw_start = i
        if c == "\\":
            if i + 1 >= n:
                raise _Reject("trailing backslash")
            if cmd[i + 1] == "\n":  # line continuation
                i += 2
                continue
            buf.append(cmd[i + 1])
            i += 2
            continue
        if c == "'":
            end = cmd.find("'", i + 1)
            if end < 0:
                raise _Reject("unterminated quote")
            buf.append(cmd[i + 1:end])
            i = end + 1
            continue
        if c == '"':
            i = _double_quoted(cmd, i + 1, buf)
            continue
        if c in _GLOB:
            glob = True
        buf.append(c)
        i += 1
    flush()
    return out


def _double_quoted(cmd: str, i: int, buf: list[str]) -> int:
    """Consume a double-quoted string starting after its opening quote."""
    n = len(cmd)
    while i < n:
        c = cmd[i]
        if c == '"':
            return i + 1
        if c in "$`":
            raise _Reject("expansion inside double quotes")
        if c == "\\" and i + 1 < n and cmd[i + 1] in '"\\\n':
            if cmd[i + 1] != "\n":
                buf.append(cmd[i + 1])
            i += 2
            continue
        buf.append(c)
        i += 1
    raise _Reject("unterminated quote")


_DEV_NULL = "/dev/null"


def _redirect(cmd: str, i: int, fd: str, out: list[_Word | str]) -> int:
    """Validate one redirection at ``cmd[i]``; only fd duplication and /dev/null pass."""
    rest = cmd[i:]
    op = next(o for o in ("&>>", "&>", ">>", ">|", ">&", ">", "<") if rest.startswith(o))
    if op == "<":
        raise _Reject("input redirection / here-doc / process substitution")
    if cmd[i + len(op):i + len(op) + 1] == "(":
        raise _Reject("process substitution")
    j = i + len(op)
    while j < len(cmd) and cmd[j] in " \t":
        j += 1
    target: list[_Word | str] = []
    k = j
    while k < len(cmd) and cmd[k] not in " \t\n;&|<>()":
        k += 1
    target = _lex(cmd[j:k]) if k > j else []
    word = target[0].text if len(target) == 1 and isinstance(target[0], _Word) else None
    if word is None:
        raise _Reject("redirection without a target")
    if op == ">&" and (word.isdigit() or word == _DEV_NULL):
        return k
    if op != ">&" and word == _DEV_NULL:
        return k
    raise _Reject(f"redirection to a file ({fd}{op}{word})")


def _segments(cmd: str) -> list[list[_Word]]:
    """Simple commands of ``cmd`` (split on ; && || | |& and newlines)."""
    segments: list[list[_Word]] = [[]]
    for token in _lex(cmd):
        if isinstance(token, str):
            segments.append([])
        else:
            segments[-1].append(token)
    return [s for s in segments if s]


# --------------------------------------------------------------------------- arguments


def _short_flags(args: Sequence[str]) -> set[str]:
    """Letters of every ``-abc`` style cluster (long options excluded)."""
    return {ch for a in args if a.startswith("-") and not a.startswith("--") for ch in a[1:]}


def _long_hits(arg: str, banned: Sequence[str]) -> bool:
    """Does long option ``arg`` name one of ``banned``?

    GNU getopt and git's parse-options accept unambiguous abbreviations (``sort --out=x``
    is ``--output``), so any prefix of a banned name counts too.
    """
    if not arg.startswith("--") or len(arg) < 3:
        return False
    name = arg.split("=", 1)[0]
    return any(b.startswith(name) or name.startswith(b) for b in banned)


def _forbid(args: Sequence[str], *, short: str = "", long: Sequence[str] = ()) -> None:
    """Reject a forbidden short letter (also inside clusters) or long option (or prefix)."""
    hit = _short_flags(args) & set(short)
    if hit:
        raise _Reject(f"forbidden option -{''.join(sorted(hit))}")
    for a in args:
        if _long_hits(a, long):
            raise _Reject(f"forbidden option {a}")


def _positionals(args: Sequence[str]) -> list[str]:
    return [a for a in args if not a.startswith("-") or a == "-"]


def _any(args: Sequence[str]) -> None:
    """Verbs that only read, whatever their arguments."""


def _sub_first(*allowed: str) -> Callable[[Sequence[str]], None]:
    def check(args: Sequence[str]) -> None:
        if not args or args[0] not in allowed:
            raise _Reject(f"only {'/'.join(allowed)}")
    return check


def _date(args: Sequence[str]) -> None:
    _forbid(args, short="s", long=("--set",))
    valued = {"-d", "-f", "-r", "--date", "--file", "--reference"}
    i = 0
    while i < len(args):
        a = args[i]
        if a in valued:
            i += 2
            continue
        if not a.startswith("-") and not a.startswith("+"):
            raise _Reject("date with an operand sets the clock")
        i += 1


def _hostname(args: Sequence[str]) -> None:
    if _positionals(args):
        raise _Reject("hostname with an operand sets the hostname")
    allowed = {"--short", "--fqdn", "--long", "--domain", "--ip-address",
               "--all-ip-addresses", "--alias", "--all-fqdns"}
    if any(a.startswith("--") and a not in allowed for a in args):
        raise _Reject("hostname option")
    if _short_flags(args) - set("sfdiIaA"):
        raise _Reject("hostname option")


def _tree(args: Sequence[str]) -> None:
    _forbid(args, short="oR", long=("--output",))


def _file(args: Sequence[str]) -> None:
    _forbid(args, short="C", long=("--compile",))


def _ss(args: Sequence[str]) -> None:
    _forbid(args, short="KD", long=("--kill", "--diag"))


def _rg(args: Sequence[str]) -> None:
    _forbid(args, long=("--pre",))


def _sort(args: Sequence[str]) -> None:
    _forbid(args, short="o", long=("--output", "--compress-program"))


def _uniq(args: Sequence[str]) -> None:
    if len(_positionals(args)) > 1:
        raise _Reject("uniq with two operands writes the second")


def _find(args: Sequence[str]) -> None:
    bad = {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0",
           "-fprintf", "-fls"}
    for a in args:
        if a in bad:
            raise _Reject(f"find {a}")


def _command(args: Sequence[str]) -> None:
    if not args or args[0] not in ("-v", "-V"):
        raise _Reject("command without -v runs the command")


# --- awk: options -F/-v only; the program may not write, pipe, run or read other files.

_AWK_BANNED = re.compile(r"system|getline|ENVIRON|\||@|\bprintf?\b[^;}\n]*>")


def _awk(args: Sequence[str]) -> None:
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
        raise _Reject(f"awk option {a}")
    if i >= len(args):
        raise _Reject("awk without a program")
    if _AWK_BANNED.search(args[i]):
        raise _Reject("awk program can write, pipe or run commands")


# --- sed: no -i/-f; every script must parse as a whitelisted subset (no w/W/e/r/a/i/c).

_SED_SHORT = set("nEruzs")
_SED_LONG = {"--quiet", "--silent", "--regexp-extended", "--posix", "--null-data",
             "--zero-terminated", "--unbuffered", "--separate", "--debug", "--sandbox"}
_SED_SIMPLE_CMDS = set("pdqQ=lnNgGhHxPDz{}")


def _sed(args: Sequence[str]) -> None:
    scripts: list[str] = []
    positionals: list[str] = []
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
                raise _Reject("sed -e without script")
            scripts.append(args[i + 1])
            i += 1
        elif a.startswith("--"):
            if a not in _SED_LONG:
                raise _Reject(f"sed option {a}")
        elif a.startswith("-") and a != "-":
            j = 1
            while j < len(a):
                ch = a[j]
                if ch == "e":
                    rest = a[j + 1:]
                    if rest:
                        scripts.append(rest)
                    elif i + 1 < len(args):
                        scripts.append(args[i + 1])
                        i += 1
                    else:
                        raise _Reject("sed -e without script")
                    break
                if ch not in _SED_SHORT:
                    raise _Reject(f"sed option -{ch}")
                j += 1
        else:
            positionals.append(a)
        i += 1
    if not scripts:
        if not positionals:
            raise _Reject("sed without a script")
        scripts.append(positionals[0])
    for script in scripts:
        _sed_script(script)


def _sed_regex(s: str, i: int, delim: str) -> int:
    """Index just past the closing ``delim`` of a regex/replacement starting at ``i``.

    Bracket expressions are tracked as GNU sed does; a delimiter inside one is rejected
    outright so a disagreement about where the regex ends can never hide a flag.
    """
    n = len(s)
    bracket = False
    while i < n:
        c = s[i]
        if c == "\n":
            raise _Reject("newline inside sed regex")
        if c == "\\":
            i += 2
            continue
        if bracket:
            if c == delim:
                raise _Reject("sed delimiter inside a bracket expression")
            if c == "[" and i + 1 < n and s[i + 1] in ":.=":
                close = s.find(s[i + 1] + "]", i + 2)
                if close < 0:
                    raise _Reject("unterminated sed class")
                if delim in s[i:close]:
                    raise _Reject("sed delimiter inside a bracket expression")
                i = close + 2
                continue
            if c == "]":
                bracket = False
            i += 1
            continue
        if c == delim:
            return i + 1
        if c == "[":
            bracket = True
            i += 1
            if i < n and s[i] == "^":
                i += 1
            if i < n and s[i] == "]":
                i += 1
            continue
        i += 1
    raise _Reject("unterminated sed regex")


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


def _sed_script(s: str) -> None:
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
                raise _Reject("sed: bad second address")
        while i < n and s[i] in " \t":
            i += 1
        if i < n and s[i] == "!":
            i += 1
        while i < n and s[i] in " \t":
            i += 1
        if i >= n:
            raise _Reject("sed: address without command")
        c = s[i]
        i += 1
        if c in "sy":
            if i >= n or s[i] in "\\\n":
                raise _Reject("sed: bad delimiter")
            delim = s[i]
            i = _sed_regex(s, i + 1, delim)
            i = _sed_regex(s, i, delim)
            if c == "s":
                while i < n and (s[i] in "gpiImM" or s[i].isdigit()):
                    i += 1
        elif c in "qQ":
            while i < n and s[i].isdigit():
                i += 1
        elif c not in _SED_SIMPLE_CMDS:
            raise _Reject(f"sed command {c!r}")
        while i < n and s[i] in " \t":
            i += 1
        if i < n and s[i] not in ";\n}":
            raise _Reject(f"sed: unexpected {s[i]!r}")


# --- git: read-only subcommands; global options limited to -C/--no-pager.

_GIT_ALWAYS_BANNED: tuple[str, ...] = (
    "--force", "--hard", "--prune", "--output", "--exec", "--upload-pack", "--receive-pack",
    "--ext-diff",
)


def _git_branch(args: Sequence[str]) -> None:
    bad_short = set("dDmMcCfut")
    bad_long = ("--delete", "--move", "--copy", "--set-upstream", "--unset-upstream",
                "--edit-description", "--track", "--no-track", "--create-reflog", "--recurse")
    _forbid(args, short="".join(bad_short), long=bad_long)
    listing = {"--list", "-l", "--contains", "--no-contains", "--merged", "--no-merged",
               "--points-at"}
    listing_given = any(a.split("=", 1)[0] in listing for a in args)
    if _positionals(args) and not listing_given:
        raise _Reject("git branch <name> creates a branch")


def _git_remote(args: Sequence[str]) -> None:
    if args and args not in (["-v"], ["--verbose"]) and args[0] != "get-url":
        raise _Reject("git remote with a subcommand")


def _git_reflog(args: Sequence[str]) -> None:
    if any(a in ("expire", "delete", "drop", "write") for a in args):
        raise _Reject("git reflog edit")


def _git_symbolic_ref(args: Sequence[str]) -> None:
    _forbid(args, short="dm", long=("--delete",))
    if len(_positionals(args)) > 1:
        raise _Reject("git symbolic-ref <name> <ref> writes")


def _git_hash_object(args: Sequence[str]) -> None:
    if "-w" in args:
        raise _Reject("git hash-object -w writes")


def _git_config(args: Sequence[str]) -> None:
    reads = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"}
    query = (bool(args) and args[0] in ("get", "list")) or any(a in reads for a in args)
    writes = ("--add", "--unset", "--replace-all", "--edit", "--rename-section",
              "--remove-section")
    verbs = ("set", "unset", "edit", "rename-section", "remove-section", "-e")
    if not query or any(a in verbs or _long_hits(a, writes) for a in args):
        raise _Reject("git config may write")


_GIT_SUBS: dict[str, Callable[[Sequence[str]], None]] = {
    **{s: _any for s in ("status", "diff", "log", "show", "rev-parse", "describe", "ls-files",
                         "blame", "shortlog", "cherry", "for-each-ref", "whatchanged",
                         "cat-file", "count-objects", "check-ignore", "var")},
    "branch": _git_branch,
    "stash": _sub_first("list", "show"),
    "worktree": _sub_first("list"),
    "remote": _git_remote,
    "reflog": _git_reflog,
    "symbolic-ref": _git_symbolic_ref,
    "hash-object": _git_hash_object,
    "config": _git_config,
}


def _git(args: Sequence[str]) -> None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] in ("--no-pager", "-P", "--no-optional-locks"):
            i += 1
        elif args[i] == "-C" and i + 1 < len(args):
            i += 2
        else:
            raise _Reject(f"git global option {args[i]}")  # -c, --exec-path, --git-dir=…
    if i >= len(args) or args[i] not in _GIT_SUBS:
        raise _Reject("git subcommand not read-only")
    rest = args[i + 1:]
    for a in rest:
        if _long_hits(a, _GIT_ALWAYS_BANNED):
            raise _Reject(f"git {a}")
    _GIT_SUBS[args[i]](rest)


# --------------------------------------------------------------------------- whitelist

_VERBS: dict[str, Callable[[Sequence[str]], None]] = {
    # directory / system information
    # (no `env`/`printenv`: dumping the environment would put credentials into the model's
    # context and the stored transcript)
    **{v: _any for v in ("ls", "ll", "dir", "pwd", "df", "du", "free", "uptime", "whoami",
                         "id", "uname", "arch", "locale", "nproc", "getconf", "sw_vers")},
    "date": _date,
    "hostname": _hostname,
    # processes and containers
    **{v: _any for v in ("ps", "top", "htop", "jobs", "lsof", "netstat", "pgrep")},
    "ss": _ss,
    "systemctl": _sub_first("status"),
    "docker": _sub_first("ps", "images", "stats"),
    "kubectl": _sub_first("get"),
    # viewing files
    **{v: _any for v in ("cat", "head", "tail", "wc", "stat", "echo")},
    "file": _file,
    "find": _find,
    "tree": _tree,
    # path lookup
    **{v: _any for v in ("which", "whereis", "type")},
    "command": _command,
    # text filters
    **{v: _any for v in ("grep", "egrep", "fgrep", "cut", "tr", "column", "jq", "nl", "rev",
                         "comm", "diff")},
    "rg": _rg,
    "sort": _sort,
    "uniq": _uniq,
    "awk": _awk,
    "sed": _sed,
    "git": _git,
}

_ENV_NAME = re.compile(r"(LANG|LANGUAGE|LC_[A-Z]+|TZ|NO_COLOR|COLUMNS|LINES|TERM|CLICOLOR)$")
_ENV_VALUE = re.compile(r"[A-Za-z0-9_.:@/+-]*$")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")


def _check_assignment(word: _Word) -> None:
    """``NAME=value cmd``: only locale/display knobs; PAGER-like ones only as ``cat``.

    Arbitrary prefixes are code execution (``LD_PRELOAD``, ``GIT_EXTERNAL_DIFF``,
    ``PATH``, ``BASH_ENV`` …).
    """
    name, _, value = word.text.partition("=")
    if name in ("PAGER", "GIT_PAGER") and value in ("", "cat"):
        return
    if _ENV_NAME.match(name) and _ENV_VALUE.match(value):
        return
    raise _Reject(f"environment prefix {name}")


def _check_segment(words: list[_Word]) -> None:
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i].raw):
        _check_assignment(words[i])
        i += 1
    if i >= len(words):
        raise _Reject("bare assignment")
    verb = words[i]
    if verb.glob or verb.text not in _VERBS:
        raise _Reject(f"{verb.text!r} is not a whitelisted read-only command")
    check = _VERBS[verb.text]
    if check is not _any and any(w.glob for w in words[i + 1:]):
        # A filename like "-delete" or "-i" turns `find . *` / `sed -n p *` into a write,
        # and one pattern can become several operands; only option-free verbs may glob.
        raise _Reject(f"unquoted glob in arguments of {verb.text}")
    check([w.text for w in words[i + 1:]])


def _why_not(cmd: str) -> str | None:
    """None if ``cmd`` is ephemeral, else the first reason it is not (for tests/logs)."""
    if not isinstance(cmd, str) or not cmd.strip():
        return "empty command"
    try:
        segments = _segments(cmd)
        if not segments:
            return "no command"
        for seg in segments:
            _check_segment(seg)
    except _Reject as exc:
        return str(exc)
    except (RecursionError, StopIteration):  # pragma: no cover - defensive
        return "unparseable"
    return None


def is_ephemeral(cmd: str) -> bool:
    """True only for read-only shell commands whose output goes stale (``git status``, ``ls``).

    Decides both "the coordinator may run it itself" (glance) and "its old result expires on
    resume". Conservative: anything not provably read-only is False.
    """
    return _why_not(cmd) is None

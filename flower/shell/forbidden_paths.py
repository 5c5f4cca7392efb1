"""Which paths a glance may not read: credentials, the kernel's views, devices, wide trees.

Everything here is lexical — it looks at the path as written, after folding ``//``, ``/./``
and ``..`` the way the kernel would. A glob in any component counts as every name it could
match: ``globs_meet`` decides exactly whether it shares a name with a secret pattern
(with bash's rule that ``*`` never matches a leading dot); for ``SECRET_WORDS`` it is held
to the names it spells. The glance runner repeats the same checks on the resolved path
(symlinks, the real working directory, the real home) before a command runs, because only
there can ``../../proc`` or a symlink named ``notes`` be seen for what they are.

Three verdicts:

* ``kernel_path`` — ``/proc``, ``/sys``, ``/dev`` by any spelling: per-process files hold
  other processes' environments, ``/proc/self/root`` reaches any file under an innocent
  name, ``/dev/zero`` and ``/dev/stdin`` never end. Refused for every verb.
* ``secret_path`` — a file whose *contents* must not reach the transcript: ``.env`` files,
  keys, shell rc files, ``.netrc``, anything under ``.ssh``/``.aws``/``.config``/``.claude*``
  and the like, anywhere. Refused for verbs that print contents.
* ``wide_root`` — a tree a recursive reader may not sweep because it holds the above: ``/``,
  the home directory, ``/etc``, ``/home/<user>``, pure climbs such as ``../..``.
"""

from __future__ import annotations

import fnmatch
import functools
import itertools
import re

__all__ = [
    "KERNEL_TOPS",
    "SECRET_DIRS",
    "SECRET_NAMES",
    "SECRET_WORDS",
    "kernel_path",
    "normalise",
    "secret_name",
    "secret_path",
    "wide_root",
]

#: File names (case-insensitive shell patterns) whose contents are credentials anywhere.
SECRET_NAMES: tuple[str, ...] = (
    ".env", ".env.*", "*.env", ".envrc", ".netrc", "_netrc", ".pgpass", ".my.cnf",
    ".git-credentials", ".gitconfig", ".npmrc", ".pypirc", ".yarnrc", ".yarnrc.yml",
    ".vault-token", ".boto", ".s3cfg", ".dockercfg", ".htpasswd", ".terraformrc",
    ".*history", ".*_history", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
    "*.keystore", "*.kdbx", "*.ppk", "*.gpg", "*.asc", "*.ovpn", "*.tfstate",
    "*.tfvars", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk",
    "id_*.pub", "shadow", "gshadow", "sudoers", "master.key", "environ", "kubeconfig",
    "*.kubeconfig", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
    ".zshrc", ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc",
    ".claude*",
)
#: Names that are credentials by what they say rather than by their shape. A glob is held
#: against these through the names it spells (``*secret*`` yes, ``*.py`` no: almost any
#: glob *could* match ``my_secret.py``); the glance runner then checks every real match.
SECRET_WORDS: tuple[str, ...] = (
    "id_*", "*credential*", "*secret*", "*password*", "token", "tokens", "*[._-]token",
    "*[._-]tokens", "token.*", "tokens.*", "*[._-]token.*", "*[._-]tokens.*", "*.tfstate.*",
)
#: Directory names whose whole tree is secret, anywhere (``.config`` holds flower's own
#: credentials in ``~/.config/flower/.env``, gh tokens, gcloud keys …).
SECRET_DIRS: tuple[str, ...] = (
    ".ssh", ".gnupg", ".aws", ".azure", ".docker", ".kube", ".password-store",
    ".terraform.d", ".config", ".claude*", ".gcloud", ".local",
)
#: First components of absolute paths no glance may touch at all.
KERNEL_TOPS = frozenset({"proc", "sys", "dev"})
#: ``<dir>/<file>`` pairs that are secret although neither part is (remote URLs with
#: tokens, ``http.extraheader``).
_SECRET_PAIRS = ((".git", "config"),)
#: Absolute trees that hold secrets besides the home directory.
_SECRET_ABS = (("run", "secrets"), ("var", "run", "secrets"))
_WIDE_TOPS = frozenset({"root", "etc", "proc", "sys", "dev", "var", "run", "tmp", "private",
                        "mnt", "media", "srv", "snap", "boot", "lib", "usr", "opt", "nix"})
_HOMES = frozenset({"home", "Users"})
_WIDE_PAIRS = (("var", "run"), ("private", "var"), ("private", "etc"))

_GLOB_CHARS = frozenset("*?[")


def normalise(path: str) -> tuple[str, list[str]]:
    """``(anchor, parts)`` of ``path`` with ``//``, ``.`` and ``..`` folded.

    ``anchor`` is ``"/"`` (absolute), ``"~"`` (any ``~`` or ``~user`` start), ``""``
    (relative; climbs above the start stay as leading ``..``) or ``"?"`` (climbed above
    ``~``: somewhere absolute, unknown where). Glob components stay as they are.
    """
    if path.startswith("/"):
        anchor, rest = "/", path
    elif path.startswith("~"):
        anchor, _, rest = "~", *path.partition("/")[1:]
    else:
        anchor, rest = "", path
    parts: list[str] = []
    for p in rest.split("/"):
        if p in ("", "."):
            continue
        if p != "..":
            parts.append(p)
        elif parts and parts[-1] != "..":
            parts.pop()
        elif anchor == "/":
            continue  # /.. is /
        elif anchor == "~":
            anchor = "?"
        else:
            parts.append("..")
    return anchor, parts


def is_glob(part: str) -> bool:
    return any(c in _GLOB_CHARS for c in part)


# --------------------------------------------------------------------------- glob ∩ glob
# "Could this glob match a secret name?" is asked of two patterns (the command's and a name
# in SECRET_NAMES): they share a match iff a string exists that both accept. Decided exactly
# by walking both patterns at once (a ``*`` may absorb any one token of the other side).

_Token = tuple[str, object]  # ("lit", ch) | ("any", None) | ("star", None) | ("set", (chars, neg))


def _tokens(pattern: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if not out or out[-1][0] != "star":
                out.append(("star", None))
        elif c == "?":
            out.append(("any", None))
        elif c == "[":
            j = i + 1
            neg = j < n and pattern[j] in "!^"
            j += neg
            end = pattern.find("]", j + 1 if j < n and pattern[j] == "]" else j)
            if end < 0:  # no closing bracket: a literal "["
                out.append(("lit", c))
                i += 1
                continue
            body, chars, k = pattern[j:end], set(), 0
            while k < len(body):
                if k + 2 < len(body) and body[k + 1] == "-":
                    chars.update(chr(x) for x in range(ord(body[k]), ord(body[k + 2]) + 1))
                    k += 3
                else:
                    chars.add(body[k])
                    k += 1
            out.append(("set", (frozenset(chars), neg)))
            i = end
        else:
            out.append(("lit", c))
        i += 1
    return out


def _admits(tok: _Token) -> tuple[frozenset[str], bool]:
    """The characters a single-character token accepts, as (set, negated)."""
    kind, val = tok
    if kind == "lit":
        return frozenset({val}), False  # type: ignore[arg-type]
    if kind == "any":
        return frozenset(), True
    return val  # type: ignore[return-value]


def _meet(*toks: _Token) -> bool:
    """Is there one character every token accepts?"""
    pos: frozenset[str] | None = None
    neg: set[str] = set()
    for chars, negated in map(_admits, toks):
        if negated:
            neg |= chars
        else:
            pos = chars if pos is None else pos & chars
    return pos is None or bool(pos - neg)


_NO_DOT: _Token = ("set", (frozenset({"."}), True))
_DOT: _Token = ("lit", ".")


def globs_meet(glob: str, pattern: str) -> bool:
    """Does the shell glob ``glob`` match at least one name that ``pattern`` matches?

    ``glob`` follows bash's default rule that a leading ``.`` must be matched by a literal
    dot (``*.env`` does not expand to ``.env``); the glance runs in a fresh bash, so no
    ``dotglob`` from the user's shell applies.
    """
    ta, tb = _tokens(glob), _tokens(pattern)

    def dot_rule(a: _Token, first: bool) -> tuple[_Token, ...]:
        return (_NO_DOT,) if first and a != _DOT else ()

    @functools.cache
    def go(i: int, j: int, first: bool) -> bool:
        a = ta[i] if i < len(ta) else None
        b = tb[j] if j < len(tb) else None
        if a is None and b is None:
            return True
        if a is not None and a[0] == "star":
            if go(i + 1, j, first):
                return True
            if b is not None and b[0] != "star" and _meet(b, *dot_rule(a, first)) and \
                    go(i, j + 1, False):
                return True
        if b is not None and b[0] == "star":
            if go(i, j + 1, first):
                return True
            if a is not None and a[0] != "star" and _meet(a, *dot_rule(a, first)) and \
                    go(i + 1, j, False):
                return True
        if a is not None and b is not None and a[0] != "star" and b[0] != "star":
            return _meet(a, b, *dot_rule(a, first)) and go(i + 1, j + 1, False)
        return False

    return go(0, 0, True)


def _spellings(glob: str) -> list[str]:
    """Two names ``glob`` stands for: wildcards left out, and filled in."""
    out = []
    for fill in ("", "x"):
        name = re.sub(r"\[[!^]?\]?[^]]*\]", lambda m: _first_of(m.group(0)), glob)
        out.append(name.replace("*", fill).replace("?", "x"))
    return out


def _first_of(bracket: str) -> str:
    body = bracket[1:-1]
    return "x" if not body or body[0] in "!^" else body[0]


def could_be(part: str, pattern: str) -> bool:
    """Could path component ``part`` (a name or a glob) name something ``pattern`` matches?
    Case is ignored on both sides: a secret is a secret in any spelling."""
    low, pat = part.lower(), pattern.lower()
    if not is_glob(part):
        return fnmatch.fnmatchcase(low, pat)
    return globs_meet(low, pat)


def secret_name(name: str) -> bool:
    """Could a file called ``name`` (or a name the glob ``name`` matches) be a credential?"""
    if any(could_be(name, pat) for pat in SECRET_NAMES):
        return True
    names = _spellings(name.lower()) if is_glob(name) else [name.lower()]
    return any(fnmatch.fnmatchcase(n, pat) for n in names for pat in SECRET_WORDS)


def _secret_dir(name: str) -> bool:
    return any(could_be(name, pat) for pat in SECRET_DIRS)


def _may_climb(parts: list[str]) -> bool:
    """A glob component that could be ``..`` (``.*``) leaves the path's meaning open."""
    return any(is_glob(p) and could_be(p, "..") for p in parts)


def kernel_path(path: str) -> bool:
    """Does ``path`` (any spelling, any glob) point into ``/proc``, ``/sys`` or ``/dev``?

    Relative paths that climb out of their start and then name one of those count too:
    from a workspace ``../../proc`` may well be ``/proc``.
    """
    anchor, parts = normalise(path)
    if _may_climb(parts):
        return True
    if anchor == "/" and parts and any(could_be(parts[0], t) for t in KERNEL_TOPS):
        return True
    if anchor in ("", "?") and (parts[:1] == [".."] or anchor == "?"):
        climbed = [p for p in parts if p != ".."]
        if climbed and any(could_be(climbed[0], t) for t in KERNEL_TOPS):
            return True
    return False


def secret_path(path: str) -> bool:
    """Could printing the file(s) at ``path`` put a credential into the transcript?"""
    if kernel_path(path):
        return True
    anchor, parts = normalise(path)
    names = [p for p in parts if p != ".."]
    if any(secret_name(p) or _secret_dir(p) for p in names):
        return True
    if any(could_be(a, pa) and could_be(b, pb) for pa, pb in _SECRET_PAIRS
           for a, b in itertools.pairwise(names)):
        return True
    return anchor == "/" and any(
        len(parts) >= len(t) and all(could_be(parts[k], t[k]) for k in range(len(t)))
        for t in _SECRET_ABS)


def wide_root(path: str) -> bool:
    """Would a recursive reader starting at ``path`` sweep a tree that holds secrets?"""
    if secret_path(path):
        return True
    anchor, parts = normalise(path)
    if anchor == "~" and not parts:
        return True
    if anchor in ("", "?") and all(p == ".." for p in parts) and (parts or anchor == "?"):
        return True
    if anchor != "/":
        return False
    if not parts:
        return True
    top = parts[0]
    if any(could_be(top, h) for h in _HOMES) and len(parts) <= 2:
        return True
    if any(could_be(top, t) for t in _WIDE_TOPS):
        if len(parts) == 1:
            return True
        return len(parts) == 2 and any(could_be(top, a) and could_be(parts[1], b)
                                       for a, b in _WIDE_PAIRS)
    return False


# --------------------------------------------------------------------------- run time
# Options the glance runner adds to recursive readers, so a sweep of an allowed tree (the
# workspace) still skips every secret name in it. All three programs match these against
# base names, as ``secret_name`` does.

def _quoted(pattern: str) -> str:
    return "'" + pattern + "'"


def grep_excludes() -> str:
    """``--exclude``/``--exclude-dir`` options for ``grep -r`` (GNU and BSD grep)."""
    files = " ".join(f"--exclude={_quoted(p)}" for p in SECRET_NAMES + SECRET_WORDS)
    dirs = " ".join(f"--exclude-dir={_quoted(p)}" for p in SECRET_DIRS)
    return f"{files} {dirs}"


def rg_excludes() -> str:
    """``--iglob '!…'`` options for ripgrep (names and whole directories, any case)."""
    return " ".join(f"--iglob={_quoted('!' + p)}"
                    for p in SECRET_NAMES + SECRET_WORDS + SECRET_DIRS)


def diff_excludes() -> str:
    """``--no-dereference`` and ``-x`` options for ``diff -r`` (GNU diff)."""
    return "--no-dereference " + " ".join(f"--exclude={_quoted(p)}"
                                           for p in SECRET_NAMES + SECRET_WORDS + SECRET_DIRS)

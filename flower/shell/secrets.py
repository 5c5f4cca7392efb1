"""Which paths a glance may not read: credentials, the kernel's views, devices, wide trees.

Everything here is lexical — it looks at the path as written, after folding ``//``, ``/./``
and ``..`` the way the kernel would, and treats every glob as the set of names it could
match. The glance runner repeats the same checks on the resolved path (symlinks, the real
working directory, the real home) before a command runs, because only there can
``../../proc`` or a symlink named ``notes`` be seen for what they are.

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
import itertools
import re
from collections.abc import Iterable

__all__ = [
    "KERNEL_TOPS",
    "SECRET_DIRS",
    "SECRET_NAMES",
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
    ".*history", ".*_history", "id_*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
    "*.keystore", "*.kdbx", "*.ppk", "*.gpg", "*.asc", "*.ovpn", "*.tfstate", "*.tfstate.*",
    "*.tfvars", "*credential*", "*secret*", "*password*", "token", "tokens", "*[._-]token",
    "*[._-]tokens", "token.*", "tokens.*", "*[._-]token.*", "*[._-]tokens.*", "shadow",
    "gshadow", "sudoers", "master.key", "environ", "kubeconfig", "*.kubeconfig",
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
    ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".claude*",
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

# Concrete names a glob is tried against: every name above in a typical spelling, and the
# names that are secret only in context (``config`` after ``.git``, ``proc`` after ``/``).
_PROBES: tuple[str, ...] = (
    ".env", "a.env", ".env.local", ".envrc", ".netrc", ".pgpass", ".gitconfig",
    ".git-credentials", ".npmrc", ".pypirc", ".bash_history", ".python_history", "id_rsa",
    "id_rsa.pub", "id_ed25519", "id_ecdsa", "key.pem", "server.key", "cert.p12",
    "credentials", "credentials.json", ".credentials.json", "client_secret.json",
    "secrets.yaml", "secret.yml", "secrets.toml", "password.txt", "token", "token.txt",
    "tokens.json", "api-token", "shadow", "environ", "kubeconfig", "state.tfstate",
    ".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile", ".claude", ".claude.json",
    ".ssh", ".aws", ".docker", ".kube", ".gnupg", ".config", ".local", "config", ".git",
    "proc", "sys", "dev", "run", "var", "secrets", "etc", "root", "home", "Users", "tmp",
    "..",
)
_GLOB_CHARS = frozenset("*?[")
_CANDIDATE_CAP = 64


def normalise(path: str) -> tuple[str, list[str]]:
    """``(anchor, parts)`` of ``path`` with ``//``, ``.`` and ``..`` folded.

    ``anchor`` is ``"/"`` (absolute), ``"~"`` (any ``~`` or ``~user`` start), ``""``
    (relative; climbs above the start stay as leading ``..``) or ``"?"`` (climbed above
    ``~``: somewhere absolute, unknown where).
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


def _is_glob(part: str) -> bool:
    return any(c in _GLOB_CHARS for c in part)


def _instances(pattern: str) -> list[str]:
    """Concrete names ``pattern`` matches: the shortest and a filled-in spelling."""
    out = []
    for star in ("", "x"):
        name = re.sub(r"\[!?\]?[^]]*\]", lambda m: _first_of(m.group(0)), pattern)
        out.append(name.replace("*", star).replace("?", "x"))
    return out


def _first_of(bracket: str) -> str:
    body = bracket[1:-1]
    if body.startswith(("!", "^")) or not body:
        return "x"
    return body[0]


def candidates(part: str) -> list[str]:
    """The names one path component may stand for (itself, unless it is a glob)."""
    if not _is_glob(part):
        return [part]
    low = part.lower()
    found = [p for p in _PROBES if fnmatch.fnmatchcase(p.lower(), low)]
    return (found + _instances(part))[:_CANDIDATE_CAP]


def secret_name(name: str) -> bool:
    """Is a file called ``name`` a credential wherever it is?"""
    low = name.lower()
    return any(fnmatch.fnmatchcase(low, pat) for pat in SECRET_NAMES)


def _secret_dir(name: str) -> bool:
    low = name.lower()
    return any(fnmatch.fnmatchcase(low, pat) for pat in SECRET_DIRS)


def _expansions(path: str) -> Iterable[tuple[str, list[str]]]:
    """``normalise`` of every concrete spelling the (possibly globbed) ``path`` may take."""
    anchor = "/" if path.startswith("/") else "~" if path.startswith("~") else ""
    raw = [p for p in path.split("/")]
    head = raw[0] if anchor == "~" else None
    rest = raw[1:] if anchor == "~" else raw
    choices = [candidates(p) if p not in ("", ".", "..") else [p] for p in rest]
    for combo in itertools.islice(itertools.product(*choices), _CANDIDATE_CAP * 4):
        joined = "/".join(combo)
        yield normalise(f"{head}/{joined}" if head is not None else joined)


def kernel_path(path: str) -> bool:
    """Does ``path`` (any spelling, any glob) point into ``/proc``, ``/sys`` or ``/dev``?

    Relative paths that climb out of their start and then name one of those count too:
    from a workspace ``../../proc`` may well be ``/proc``.
    """
    for anchor, parts in _expansions(path):
        if anchor == "/" and parts and parts[0] in KERNEL_TOPS:
            return True
        if anchor in ("", "?") and (parts[:1] == [".."] or anchor == "?"):
            climbed = [p for p in parts if p != ".."]
            if climbed and climbed[0] in KERNEL_TOPS:
                return True
    return False


def secret_path(path: str) -> bool:
    """Could printing the file(s) at ``path`` put a credential into the transcript?"""
    if kernel_path(path):
        return True
    for anchor, parts in _expansions(path):
        if any(p == ".." for p in parts) and anchor == "?":
            return True
        if any(secret_name(p) or _secret_dir(p) for p in parts if p != ".."):
            return True
        low = [p.lower() for p in parts]
        if any(tuple(low[i:i + 2]) == pair for pair in _SECRET_PAIRS
               for i in range(len(low) - 1)):
            return True
        if anchor == "/" and any(tuple(parts[:len(t)]) == t for t in _SECRET_ABS):
            return True
    return False


def wide_root(path: str) -> bool:
    """Would a recursive reader starting at ``path`` sweep a tree that holds secrets?"""
    if secret_path(path):
        return True
    for anchor, parts in _expansions(path):
        if anchor == "~" and not parts:
            return True
        if anchor in ("", "?") and all(p == ".." for p in parts) and (parts or anchor == "?"):
            return True
        if anchor == "/":
            if not parts:
                return True
            top = parts[0]
            if top in _HOMES and len(parts) <= 2:
                return True
            if top in _WIDE_TOPS and (len(parts) == 1 or parts[:2] in (["var", "run"],
                                                                         ["private", "var"],
                                                                         ["private", "etc"])):
                return True
    return False


# --------------------------------------------------------------------------- run time
# Options the glance runner adds to recursive readers, so a sweep of an allowed tree (the
# workspace) still skips every secret name in it. All three programs match these against
# base names, as ``secret_name`` does.

def _quoted(pattern: str) -> str:
    return "'" + pattern + "'"


def grep_excludes() -> str:
    """``--exclude``/``--exclude-dir`` options for ``grep -r`` (GNU and BSD grep)."""
    files = " ".join(f"--exclude={_quoted(p)}" for p in SECRET_NAMES)
    dirs = " ".join(f"--exclude-dir={_quoted(p)}" for p in SECRET_DIRS)
    return f"{files} {dirs}"


def rg_excludes() -> str:
    """``--iglob '!…'`` options for ripgrep (names and whole directories, any case)."""
    return " ".join(f"--iglob={_quoted('!' + p)}" for p in SECRET_NAMES + SECRET_DIRS)


def diff_excludes() -> str:
    """``--no-dereference`` and ``-x`` options for ``diff -r`` (GNU diff)."""
    return "--no-dereference " + " ".join(f"--exclude={_quoted(p)}"
                                           for p in SECRET_NAMES + SECRET_DIRS)

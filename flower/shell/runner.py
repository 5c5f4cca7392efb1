"""``prepare_glance``: what the coordinator's Bash tool really runs for a glance.

The predicate judged the text; here, in the coordinator's PreToolUse hook, the same rules
are applied to the real file system and the command is made safe to run:

* every path a command reads, names or sweeps is resolved — ``~``, the working directory
  the CLI reports, symlinks, globs expanded with hidden files — and checked again: no
  kernel or device file (``../../proc``, a link to ``/dev/zero``), no credential file, no
  FIFO or socket to block on, no sweep of a tree that holds the home directory, the CLI's
  config dir or ``XDG_CONFIG_HOME``;
* git: the work tree must not be such a tree either, and the repository's own filters
  are switched off by name (``-c filter.<name>.clean=`` …: no flag does it generically),
  plus the fixed hardening in ``flower.shell.git``; ``git remote -v`` has credentials in
  URLs replaced by ``***``;
* recursive readers get the secret-name exclusions from ``flower.shell.forbidden_paths``;
* the whole command is bounded (``flower.shell.bound``).

Stricter than the predicate on purpose, never looser: a command refused here but accepted
there is only a denied call, whose result prune removes.
"""

from __future__ import annotations

import glob as _glob
import os
import shlex
import shutil
import stat
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from flower.shell import bound, forbidden_paths, git
from flower.shell.commands import Use
from flower.shell.lexer import Refused
from flower.shell.predicate import analyse

__all__ = ["prepare_glance"]

_REDACT = "| sed -E 's#://[^/@]*@#://***@#'"
_PROBE_TIMEOUT = 5.0
_ALWAYS_PROTECTED = ("/etc", "/proc", "/sys", "/dev", "/root", "/run", "/var/run", "/tmp",
                     "/private/etc", "/private/var", "/private/tmp")


@dataclass(frozen=True)
class Places:
    """Where this machine keeps what a glance must not read (resolved, absolute)."""

    home: str
    secret_trees: tuple[str, ...]  # never read below these
    secret_files: tuple[str, ...]
    protected: tuple[str, ...]  # never sweep a tree that contains one of these

    @classmethod
    def here(cls, env: Mapping[str, str] | None = None) -> Places:
        env = os.environ if env is None else env
        home = os.path.realpath(env.get("HOME") or os.path.expanduser("~"))
        trees = [os.path.join(home, ".config"), os.path.join(home, ".claude")]
        for key in ("CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME"):
            if env.get(key):
                trees.append(os.path.realpath(os.path.expanduser(env[key])))
        files = [os.path.join(home, ".claude.json")]
        if env.get("FLOWER_ENV"):
            files.append(os.path.realpath(os.path.expanduser(env["FLOWER_ENV"])))
        return cls(home, tuple(trees), tuple(files),
                   (home, *trees, *(os.path.realpath(p) for p in _ALWAYS_PROTECTED)))


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _contains(path: str, places: Sequence[str]) -> bool:
    """Is ``path`` an ancestor-or-self of any of ``places``?"""
    return any(_under(p, [path]) for p in places)


def _resolve(path: str, cwd: str, env: Mapping[str, str]) -> list[str]:
    """Every real path ``path`` stands for when the shell runs it in ``cwd``."""
    if path.startswith("~"):
        user, _, rest = path[1:].partition("/")
        if user:
            base = os.path.expanduser("~" + user)
        else:
            base = env.get("HOME") or os.path.expanduser("~")
        path = os.path.join(base, rest)
    full = os.path.join(cwd, path)
    if any(c in path for c in "*?["):
        return [os.path.realpath(m) for m in _glob.glob(full, include_hidden=True)]
    return [os.path.realpath(full)]


def _kind_ok(path: str) -> bool:
    """Regular files and directories only: a FIFO or socket would block the read."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return True  # does not exist: the program reports that
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def check_paths(uses: Sequence[Use], cwd: str, places: Places,
                env: Mapping[str, str]) -> None:
    """The predicate's path rules again, on what the paths really are."""
    for use in uses:
        for kind, paths in (("read", use.reads), ("name", use.names), ("root", use.roots)):
            for p in paths:
                for real in _resolve(p, cwd, env):
                    _check_real(use.verb, kind, p, real, places)


def _check_real(verb: str, kind: str, shown: str, real: str, places: Places) -> None:
    if forbidden_paths.kernel_path(real):
        raise Refused(f"{verb}: {shown} is {real} (/proc, /sys and /dev are off limits)")
    if kind == "name":
        return
    if forbidden_paths.secret_path(real) or _under(real, places.secret_trees) or \
            real in places.secret_files:
        raise Refused(f"{verb}: {shown} is {real}, which may hold credentials")
    if kind == "read" and not _kind_ok(real):
        raise Refused(f"{verb}: {shown} is not a regular file")
    if kind == "root" and (forbidden_paths.wide_root(real) or _contains(real, places.protected)):
        raise Refused(f"{verb}: {shown} is {real}, a tree that holds credentials")


def _git_env() -> dict[str, str]:
    return {**os.environ, "GIT_NO_LAZY_FETCH": "1", "GIT_ALLOW_PROTOCOL": "none",
            "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-c", "core.fsmonitor=false", *args], cwd=cwd,
                              env=_git_env(), capture_output=True, text=True,
                              timeout=_PROBE_TIMEOUT, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Refused(f"git could not be asked about this repository ({exc})") from exc


def repo_filters(cwd: str, places: Places) -> list[str]:
    """Names of the filter drivers the repository's config defines (after checking that its
    work tree is not a tree of secrets: a dotfiles repository in the home directory)."""
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise Refused("not inside a git work tree (git diff would compare files outside)")
    real = os.path.realpath(top.stdout.strip())
    if forbidden_paths.wide_root(real) or _contains(real, places.protected) or \
            _under(real, places.secret_trees):
        raise Refused(f"the git work tree is {real}, a tree that holds credentials")
    found = _git(["config", "--null", "--get-regexp", r"^filter\."], cwd)
    names: list[str] = []
    for entry in found.stdout.split("\0"):
        key = entry.split("\n", 1)[0]
        if not key.lower().startswith("filter.") or key.count(".") < 2:
            continue
        name = key[len("filter."):key.rindex(".")]
        if "=" in name or "\n" in name:
            raise Refused(f"git filter {name!r} cannot be switched off on the command line")
        if name not in names:
            names.append(name)
    return names


def check_objects(revs: Sequence[str], cwd: str) -> None:
    """Refuse a revision that names a blob: ``git show <id>`` prints it whatever its path
    (a committed ``.env`` whose id ``git ls-files -s`` shows). ``REV:path`` is not asked
    here — its path was checked as a path."""
    for rev in revs:
        if rev.startswith("-") or rev in ("blob", "tree", "commit", "tag"):
            continue
        kind = _git(["cat-file", "-t", rev + "^{}"], cwd)
        if kind.returncode == 0 and kind.stdout.strip() == "blob":
            raise Refused(f"git {rev} is a file's contents, reached without its name")


def _git_hardening(filters: Sequence[str]) -> str:
    offs = [shlex.quote(f"filter.{n}.{v}=") for n in filters for v in ("clean", "smudge",
                                                                         "process")]
    offs += [shlex.quote(f"filter.{n}.required=false") for n in filters]
    return " ".join([git.HARDENING, *(f"-c {o}" for o in offs)])


def _inserts(uses: Sequence[Use], cwd: str, places: Places) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    filters: list[str] | None = None
    for use in uses:
        out += use.inserts
        g = use.git
        if g is None:
            continue
        if g.sub:
            if filters is None:
                filters = repo_filters(cwd, places)
            check_objects(g.objects, cwd)
            out.append((g.globals_at, " " + _git_hardening(filters)))
        else:
            out.append((g.globals_at, " " + git.HARDENING))
        if g.sub in git.SUB_HARDENING:
            out.append((g.sub_at, " " + git.SUB_HARDENING[g.sub]))
        if g.redact_at is not None:
            out.append((g.redact_at, " " + _REDACT))
        if g.excludes_at is not None:
            out.append((g.excludes_at, " " + git.PATHSPEC_EXCLUDES))
    return out


def _splice(cmd: str, inserts: list[tuple[int, str]]) -> str:
    """Insert every text at its offset; texts at the same offset keep their listed order."""
    order = sorted(range(len(inserts)), key=lambda k: (inserts[k][0], k), reverse=True)
    for k in order:
        pos, text = inserts[k]
        cmd = cmd[:pos] + text + cmd[pos:]
    return cmd


def _timeout_program() -> str:
    for name in bound.TIMEOUT_PROGRAMS:
        if shutil.which(name):
            return name
    raise Refused("no coreutils timeout on this machine: a glance could not be bounded")


def prepare_glance(cmd: str, cwd: str | None = None,
                   env: Mapping[str, str] | None = None) -> str:
    """The bounded, hardened command to run for glance ``cmd`` in ``cwd``.

    Raises ``Refused`` when ``cmd`` is not a glance or when the real file system shows it
    would touch what the text did not reveal. Idempotent: a command already in the
    bounded form is prepared from what it wraps.
    """
    inner = bound.unwrap(cmd)
    if inner is not None:
        cmd = inner
    uses = analyse(cmd)
    env = os.environ if env is None else env
    cwd = os.path.realpath(cwd or os.getcwd())
    places = Places.here(env)
    check_paths(uses, cwd, places, env)
    hardened = _splice(cmd, _inserts(uses, cwd, places))
    analyse(hardened)  # what runs must itself be a glance (expiry may see this form)
    return bound.wrap(hardened, _timeout_program())

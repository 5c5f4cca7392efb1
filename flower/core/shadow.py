"""A shadow git repository of the workspace: snapshots flower takes, trees it restores.

Why git: it already does the hard parts fast and right — a stat-cached index that tells in
one walk which of 10,000 files changed, content-addressed compressed objects (a snapshot
grows the disk by about its changed bytes compressed), the project's own ``.gitignore``
rules, exact trees and diffs. Why not the user's repository: the agents' work must never
show up in the user's history, index, refs, hooks or config — the shadow repository has its
own ``GIT_DIR`` (inside the run dir, which no role may write) and its own index, with the
workspace only as its work tree.

Why the CLI and not a library: git is on every machine that runs the bundled CLI's tools,
and dulwich or pygit2 would walk the tree in Python or pull in libgit2 for what four plumbing
commands do. The commands run as the update check's do — no system or user config, no hooks,
no fsmonitor, no filters or textconv (``info/attributes`` unsets ``filter``/``text``/``eol``
for every path, over whatever the workspace's ``.gitattributes`` says), so a hostile
repository cannot make a snapshot run anything or store other bytes than the files hold.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: Above this size a file is left out of a snapshot (and named in its list of skipped files)
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
BRANCH = "refs/heads/checkpoints"
_ATTRIBUTES = "* -text -filter -ident !eol !working-tree-encoding\n"
_CONFIG = (
    "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.autocrlf=false",
    "core.safecrlf=false", "core.symlinks=true", "core.quotepath=false",
    "core.untrackedCache=true", "core.splitIndex=false", "core.sparseCheckout=false",
    "core.pager=cat", "gc.auto=0", "commit.gpgsign=false", "safe.directory=*",
    "status.showUntrackedFiles=all", "diff.external=", "advice.detachedHead=false",
    "index.threads=1",
)
_KEEP_ENV = ("PATH", "TMPDIR", "SYSTEMROOT")


class ShadowError(RuntimeError):
    """git failed or is missing; the message is one line."""


@dataclass
class Changes:
    """What a snapshot found against the previous one (paths relative to the workspace)."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: files left out: bigger than the cap, or a nested repository (``sub/``)
    skipped: list[str] = field(default_factory=list)


@dataclass
class Restore:
    """What restoring a tree does (or, for a dry run, would do) to the workspace."""

    written: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: files the snapshot of now did not hold (too big, ignored since): left as they are
    kept: list[str] = field(default_factory=list)


class Shadow:
    """The repository at ``git_dir`` whose work tree is ``workspace``."""

    def __init__(self, git_dir: str | Path, workspace: str | Path, *,
                 exclude: Iterable[str] = (), max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.git_dir = Path(git_dir)
        self.workspace = Path(workspace)
        self.exclude = list(exclude)
        self.max_bytes = max_bytes

    # -- running git ------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
        env.update({
            "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.workspace),
            "GIT_INDEX_FILE": str(self.git_dir / "index"),
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "HOME": str(self.git_dir), "XDG_CONFIG_HOME": str(self.git_dir),
            "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "PAGER": "cat",
            "GIT_AUTHOR_NAME": "flower", "GIT_AUTHOR_EMAIL": "flower@localhost",
            "GIT_COMMITTER_NAME": "flower", "GIT_COMMITTER_EMAIL": "flower@localhost",
            "LC_ALL": "C",
        })
        return env

    def git(self, *args: str, stdin: bytes | None = None, ok: Sequence[int] = (0,)) -> bytes:
        """Run ``git ARGS`` in the clean environment; ``ShadowError`` on any other exit."""
        cmd = ["git"]
        for item in _CONFIG:
            cmd += ["-c", item]
        cmd += ["-c", f"core.excludesFile={self.git_dir / 'flower-exclude'}", *args]
        try:
            out = subprocess.run(cmd, input=stdin, capture_output=True, env=self._env(),
                                 cwd=self.workspace, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ShadowError(f"git {args[0]}: {exc}") from exc
        if out.returncode not in ok:
            why = out.stderr.decode("utf-8", "replace").strip().splitlines()
            raise ShadowError(f"git {args[0]}: {why[-1] if why else out.returncode}")
        return out.stdout

    # -- the repository ---------------------------------------------------------------

    def ensure(self) -> None:
        """Create the repository on first use; rewrite the exclude list every time (the run
        dir may have moved)."""
        if not (self.git_dir / "HEAD").is_file():
            self.git_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.git("init", "-q", "--template=")
            self.git("symbolic-ref", "HEAD", BRANCH)
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        _write_if_changed(info / "attributes", _ATTRIBUTES)
        _write_if_changed(self.git_dir / "flower-exclude",
                          "".join(line + "\n" for line in self.exclude))

    def head(self) -> str | None:
        out = self.git("rev-parse", "-q", "--verify", BRANCH, ok=(0, 1)).strip()
        return out.decode() or None

    # -- snapshots --------------------------------------------------------------------

    def stage(self) -> tuple[str, Changes]:
        """Bring the index to the workspace as it is now and return ``(tree, changes)``.
        One walk of the tree (``git status`` with the stat cache), then only the changed
        paths are hashed."""
        self.ensure()
        raw = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all",
                       "--no-renames", "--ignore-submodules=all")
        changes = Changes()
        update: list[str] = []
        drop: list[str] = []
        for item in raw.split(b"\0"):
            if len(item) < 4:
                continue
            xy, path = item[:2].decode(), os.fsdecode(item[3:])
            if path.endswith("/"):  # a nested repository: its own history, not ours
                changes.skipped.append(path)
                continue
            if xy[1] == "D":
                update.append(path)
                changes.removed.append(path)
                continue
            if xy == "??" or xy[1] in "MT":
                if self._too_big(path):
                    changes.skipped.append(path)
                    if xy != "??":
                        drop.append(path)
                    continue
                update.append(path)
                (changes.added if xy == "??" else changes.changed).append(path)
        if update:
            self.git("update-index", "-z", "--add", "--remove", "--stdin",
                     stdin=_nul(update))
        if drop:
            self.git("update-index", "-z", "--force-remove", "--stdin", stdin=_nul(drop))
        tree = self.git("write-tree").decode().strip()
        return tree, changes

    def _too_big(self, path: str) -> bool:
        try:
            st = os.lstat(self.workspace / path)
        except OSError:
            return False
        return st.st_size > self.max_bytes and not os.path.islink(self.workspace / path)

    def commit(self, tree: str, message: str) -> str:
        """A commit of ``tree`` on the checkpoint branch; returns its id."""
        parent = self.head()
        args = ["commit-tree", tree, "-F", "-"] + (["-p", parent] if parent else [])
        sha = self.git(*args, stdin=message.encode("utf-8")).decode().strip()
        self.git("update-ref", BRANCH, sha, *([parent] if parent else []))
        return sha

    def messages(self) -> list[tuple[str, str]]:
        """``(commit, message)`` of every snapshot, oldest first."""
        if self.head() is None:
            return []
        raw = self.git("log", "--reverse", "--format=%H%x00%B%x00%x1e", BRANCH)
        out = []
        for chunk in raw.decode("utf-8", "replace").split("\x1e"):
            chunk = chunk.lstrip("\n")
            if "\x00" in chunk:
                sha, body, *_ = chunk.split("\x00")
                out.append((sha, body))
        return out

    # -- restoring --------------------------------------------------------------------

    def plan(self, now: str, target: str) -> list[tuple[str, str]]:
        """``(status, path)`` turning tree ``now`` into tree ``target`` (A, M, T, D)."""
        raw = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", now, target)
        parts = raw.split(b"\0")
        return [(parts[i].decode(), os.fsdecode(parts[i + 1]))
                for i in range(0, len(parts) - 1, 2) if parts[i]]

    def restore(self, now: str, target: str, *, dry_run: bool = False) -> Restore:
        """Make the workspace's files those of ``target``, given that ``now`` is the tree of
        the workspace as it is (just staged). Files outside both trees are never touched."""
        done = Restore()
        write: list[str] = []
        for status, path in self.plan(now, target):
            if status == "D":
                done.removed.append(path)
            elif status == "A" and os.path.lexists(self.workspace / path):
                done.kept.append(path)  # a file the snapshot of now left out: not ours
            else:
                (done.created if status == "A" else done.written).append(path)
                write.append(path)
        if dry_run:
            return done
        for path in done.removed:
            _unlink(self.workspace, path)
        self.git("read-tree", target)
        if write:
            self.git("checkout-index", "-f", "-z", "--stdin", stdin=_nul(write))
        return done

    def diff(self, old: str, new: str, *, stat: bool = False) -> str:
        args = ["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames",
                "--stat" if stat else "--patch", old, new]
        return self.git(*args).decode("utf-8", "replace")


def _nul(paths: Iterable[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def _write_if_changed(path: Path, text: str) -> None:
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    path.write_text(text, encoding="utf-8")


def _unlink(root: Path, rel: str) -> None:
    """Remove one file and then every parent folder it leaves empty (never ``root``)."""
    path = root / rel
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        return
    parent = path.parent
    while parent != root and root in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


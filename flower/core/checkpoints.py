"""Checkpoints: a restorable snapshot of the project at every step's end, every worker's
report and before every judge round — and the rewind that brings one back.

The snapshots live in ``<run_dir>/checkpoints/`` (a shadow git repository,
:mod:`flower.core.shadow`), beside the transcripts and out of every role's writable set;
the workspace's own ``.git`` is never touched. Each snapshot's commit message carries one
JSON object — its number, kind, step, time, what changed and where the step sat in its
workflow — so listing them is one ``git log``.

A rewind restores the files and then the lineage: the steps after the checkpoint's step
forget their sessions (the sessions stay in ``sessions.db``, their ids in the
``before-rewind`` checkpoint) and their frozen documents move to
``notes/archive/rewind-<time>/`` — so the next ``flower`` re-runs exactly those steps,
while the steps before stay frozen.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flower.core.paths import file_lock
from flower.core.shadow import DEFAULT_MAX_BYTES, Changes, Restore, Shadow, ShadowError

__all__ = ["KINDS", "Checkpoint", "Checkpoints", "Position", "RunActive", "hold_active",
           "run_active"]

DIRNAME = "checkpoints"
ACTIVE = "active.lock"
KINDS = ("step-end", "worker-report", "before-judge", "before-rewind")
log = logging.getLogger("flower.checkpoints")


class RunActive(RuntimeError):
    """A flower process holds the folder's run dir: files must not move under it."""


@dataclass
class Position:
    """Where the running step sits in its workflow, for a rewind's lineage: the step's
    1-based ``index`` in ``order`` and the document each step froze (if any)."""

    index: int = 0
    order: list[str] = field(default_factory=list)
    documents: dict[str, str] = field(default_factory=dict)


@dataclass
class Checkpoint:
    """One snapshot as listed: what made it, when, and what changed since the one before."""

    id: int
    commit: str
    kind: str
    step: str
    time: float
    added: int = 0
    changed: int = 0
    removed: int = 0
    skipped: list[str] = field(default_factory=list)
    index: int = 0
    order: list[str] = field(default_factory=list)
    documents: dict[str, str] = field(default_factory=dict)
    #: a before-rewind checkpoint: the rewind it preceded (target id, forgotten sessions)
    rewind: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _parse(commit: str, message: str) -> Checkpoint | None:
    _, _, body = message.partition("\n\n")
    try:
        meta = json.loads(body.strip().splitlines()[0])
        return Checkpoint(commit=commit, **{k: v for k, v in meta.items()
                                            if k in Checkpoint.__dataclass_fields__})
    except (ValueError, TypeError, IndexError):
        return None


def max_bytes_from(environ: Mapping[str, str]) -> int:
    """``FLOWER_CHECKPOINT_MAX_MB`` (a number of MiB) or the default 10 MiB."""
    raw = environ.get("FLOWER_CHECKPOINT_MAX_MB", "").strip()
    try:
        return int(float(raw) * 1024 * 1024) if raw else DEFAULT_MAX_BYTES
    except ValueError:
        return DEFAULT_MAX_BYTES


def enabled_from(environ: Mapping[str, str]) -> bool:
    """``FLOWER_CHECKPOINTS=0`` (or off/false/no) turns snapshots off; on by default."""
    return environ.get("FLOWER_CHECKPOINTS", "1").strip().lower() not in ("0", "off",
                                                                          "false", "no")


class Checkpoints:
    """The checkpoints of the workspace whose run dir is ``run_dir``."""

    def __init__(self, run_dir: str | Path, workspace: str | Path, *,
                 exclude: Sequence[str | Path] = (), max_bytes: int | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.workspace = Path(workspace)
        ws = self.workspace.resolve()
        lines = ["/.flower/", "/.git/"]
        for path in (self.run_dir, *exclude):  # flower's own state is no project file
            try:
                rel = Path(path).resolve().relative_to(ws)
            except ValueError:
                continue
            if str(rel) != ".":
                lines.append("/" + rel.as_posix() + "/")
        self.shadow = Shadow(self.run_dir / DIRNAME, self.workspace, exclude=lines,
                             max_bytes=max_bytes_from(os.environ) if max_bytes is None
                             else max_bytes)

    @property
    def _lock(self) -> Path:
        return self.run_dir / (DIRNAME + ".lock")

    def exists(self) -> bool:
        return (self.shadow.git_dir / "HEAD").is_file()

    # -- taking -----------------------------------------------------------------------

    def take(self, kind: str, step: str, position: Position | None = None) -> Checkpoint:
        """Snapshot the workspace now (``ShadowError`` if git cannot). A judge's step end
        right after its before-judge snapshot, with nothing changed, is that snapshot."""
        with file_lock(self._lock, timeout=60):
            tree, changes = self.shadow.stage()
            last, last_tree = self._last()
            if last is not None and kind == "step-end" and last.kind == "before-judge" \
                    and last.step == step and last_tree == tree:
                return last
            return self._commit(tree, changes, kind, step, position, None,
                                (last.id if last else 0) + 1)

    def _commit(self, tree: str, changes: Changes, kind: str, step: str,
                position: Position | None, rewind: dict[str, Any] | None, n: int
                ) -> Checkpoint:
        pos = position or Position()
        cp = Checkpoint(id=n, commit="", kind=kind, step=step, time=round(time.time(), 3),
                        added=len(changes.added), changed=len(changes.changed),
                        removed=len(changes.removed), skipped=changes.skipped,
                        index=pos.index, order=list(pos.order),
                        documents=dict(pos.documents), rewind=dict(rewind or {}))
        meta = {k: v for k, v in cp.to_json().items() if k != "commit" and v not in ({}, [])}
        title = f"checkpoint {n}: {kind} {step}".strip()
        cp.commit = self.shadow.commit(tree, title + "\n\n" + json.dumps(
            meta, ensure_ascii=False) + "\n")
        return cp

    def _last(self) -> tuple[Checkpoint | None, str]:
        """The newest checkpoint and its tree id (``(None, "")`` before the first)."""
        head = self.shadow.head()
        if head is None:
            return None, ""
        message = self.shadow.git("cat-file", "commit", head).decode("utf-8", "replace")
        headers, _, body = message.partition("\n\n")
        tree = headers.splitlines()[0].removeprefix("tree ").strip()
        return _parse(head, body), tree

    # -- reading ----------------------------------------------------------------------

    def list(self) -> list[Checkpoint]:
        """Every checkpoint, oldest first (none when there is no repository yet)."""
        if not self.exists():
            return []
        return [cp for sha, msg in self.shadow.messages() if (cp := _parse(sha, msg))]

    def find(self, ident: int) -> Checkpoint | None:
        return next((cp for cp in self.list() if cp.id == ident), None)

    def diff(self, old: Checkpoint, new: Checkpoint | None, *, stat: bool = False) -> str:
        """What changed from ``old`` to ``new`` (``None``: the workspace now)."""
        with file_lock(self._lock, timeout=60):
            target = self.shadow.stage()[0] if new is None else new.commit
            return self.shadow.diff(old.commit, target, stat=stat)

    # -- rewinding --------------------------------------------------------------------

    def rewind(self, target: Checkpoint, *, dry_run: bool = False,
               lineage: Any = None, notes: Path | None = None
               ) -> tuple[Restore, Checkpoint | None, dict[str, Any]]:
        """Restore the workspace to ``target``; returns what changed, the ``before-rewind``
        checkpoint (``None`` on a dry run) and what the lineage forgot. Refuses with
        :class:`RunActive` while a flower process holds the run dir."""
        with run_exclusive(self.run_dir), file_lock(self._lock, timeout=60):
            now, changes = self.shadow.stage()
            after = target.order[target.index:] if target.index else []
            forgotten = {s: sid for s, sid in (getattr(lineage, "steps", None) or {}).items()
                         if s in after}
            docs = [target.documents[s] for s in after if s in target.documents]
            plan = self.shadow.restore(now, target.commit, dry_run=True)
            if dry_run:
                return plan, None, {"steps": forgotten, "documents": docs}
            last = self._last()[0]
            info = {"to": target.id, "steps": forgotten, "documents": docs}
            before = self._commit(now, changes, "before-rewind", target.step, None, info,
                                  (last.id if last else 0) + 1)
            done = self.shadow.restore(now, target.commit)
        moved = _archive_documents(docs, notes) if docs else None
        if lineage is not None and forgotten:
            lineage.forget(list(forgotten))
        return done, before, {"steps": forgotten, "documents": docs,
                              "archive": str(moved) if moved else ""}


def _archive_documents(docs: Sequence[str], notes: Path | None) -> Path | None:
    """Move each frozen document aside (never delete: it is the history of that step)."""
    present = [Path(d) for d in docs if Path(d).is_file()]
    if not present:
        return None
    base = (notes or present[0].parent) / "archive"
    dest = base / ("rewind-" + time.strftime("%Y%m%d-%H%M%S"))
    n = 1
    while dest.exists():
        n += 1
        dest = base / (f"rewind-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
    dest.mkdir(parents=True)
    for doc in present:
        shutil.move(os.fspath(doc), os.fspath(dest / doc.name))
    return dest


# -- is a run active in this run dir? -------------------------------------------------

def hold_active(run_dir: str | Path) -> int | None:
    """A shared lock on ``<run_dir>/active.lock`` for this process's life (several
    processes may run side by side; the kernel drops it when the process dies, kill -9
    included). Returns the descriptor to close, or None where locking is not possible."""
    try:
        fd = os.open(Path(run_dir) / ACTIVE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # a rewind is running right now: go on; it is over in a moment
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def run_active(run_dir: str | Path) -> bool:
    """Whether some flower process holds ``run_dir`` now."""
    try:
        with run_exclusive(run_dir):
            return False
    except RunActive:
        return True


@contextlib.contextmanager
def run_exclusive(run_dir: str | Path) -> Iterator[None]:
    """Hold ``run_dir`` against any run starting; :class:`RunActive` if one holds it."""
    path = Path(run_dir) / ACTIVE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except FileNotFoundError:  # no run dir: nothing can be running in it
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise RunActive(str(run_dir)) from exc
        yield
    finally:
        os.close(fd)


def checkpoints_for(run_dir: Path, workspace: Path, enabled: bool | None
                    ) -> Checkpoints | None:
    """The Runtime's checkpoints: ``enabled`` None reads ``FLOWER_CHECKPOINTS``; off
    (``None``) where git is missing — said once in the log, the run goes on."""
    if not (enabled_from(os.environ) if enabled is None else enabled):
        return None
    if shutil.which("git") is None:
        log.warning("flower: git not found, no checkpoints for this run")
        return None
    return Checkpoints(run_dir, workspace)


def try_take(checkpoints: Checkpoints | None, kind: str, step: str,
             position: Position | None) -> Checkpoint | None:
    """A snapshot that never stops the run: a git failure is one warning in the log."""
    if checkpoints is None:
        return None
    try:
        return checkpoints.take(kind, step, position)
    except (ShadowError, OSError) as exc:
        log.warning("flower: no checkpoint (%s %s): %s", kind, step, exc)
        return None

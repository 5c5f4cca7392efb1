"""Which session each workflow step used, kept on disk so a new process can pick it up.

Everything else a run needs survives a crash (transcripts in ``sessions.db``, frozen
documents, the workspace); only the step → session mapping lived in memory. This module
keeps it in ``<run_dir>/lineage.json``::

    {"workspace": "/abs/path", "woke": 3, "steps": {"干活": "<session id>"}}

With a shared session store (PostgreSQL), the same document is also mirrored into the
store under a run name (``book``, see :mod:`flower.stores.book`): when this run dir has no
usable ``lineage.json``, the store's copy is loaded — whatever workspace wrote it (its
sessions are adopted under this workspace by the store) — so another machine can wake the
run. The file stays authoritative whenever it exists.

Continuity is a bonus, never a reason for a run to fail: a missing, unreadable, corrupt or
foreign file means "start fresh", and a failed write is dropped (``OSError`` only — a bug
in the caller still raises). A corrupt file is moved aside, never overwritten, so whatever
was in it can still be recovered by hand.

Several processes may share one run dir. Every update (``remember``, ``bump``) takes the
same cross-process file lock the manifest uses (``lineage.json.lock``), re-reads the file
and merges by key: another process's steps and wake counts are kept, and only the keys this
object wrote itself override what is on disk — no update is lost.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flower.core.paths import atomic_write, canonical, file_lock, move_aside
from flower.errors import CorruptState

FILENAME = "lineage.json"
LOCK_TIMEOUT = 10.0  # seconds; past it the update goes on unlocked (continuity is a bonus)
log = logging.getLogger("flower.lineage")


def _stamp() -> str:
    """Local wall-clock stamp used for archive folders and corrupt-file names."""
    return time.strftime("%Y%m%d-%H%M%S")


class _Corrupt(CorruptState, ValueError):
    """The file exists and was read, but is not a lineage document."""


def _parse(raw: bytes) -> tuple[str, int, dict[str, str]]:
    """Validate the on-disk shape; anything else is corrupt, not silently coerced."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are both ValueErrors
        raise _Corrupt(str(e)) from e
    if not isinstance(data, dict):
        raise _Corrupt("not an object")
    ws = data.get("workspace")
    woke = data.get("woke", 0)
    steps = data.get("steps", {})
    if not isinstance(ws, str) or not ws:
        raise _Corrupt("workspace missing")
    if not isinstance(woke, int) or isinstance(woke, bool) or woke < 0:
        raise _Corrupt("woke is not a count")
    if not isinstance(steps, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in steps.items()
    ):
        raise _Corrupt("steps is not a name → session id map")
    return ws, woke, {k: v for k, v in steps.items() if k and v}


def recorded_workspace(run_dir: str | Path) -> Path | None:
    """The workspace ``<run_dir>/lineage.json`` belongs to; None when there is no readable
    lineage. Read-only: a corrupt file is left where it is."""
    try:
        raw = (Path(run_dir) / FILENAME).read_bytes()
        return Path(_parse(raw)[0])
    except (OSError, _Corrupt, RecursionError):
        return None


def _unique_dir(parent: Path, name: str) -> Path:
    """Create and return ``parent/name`` (or ``name-2``, ``-3`` …) — mkdir is the lock."""
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        dest = parent / (name if n == 1 else f"{name}-{n}")
        try:
            dest.mkdir()
        except FileExistsError:
            continue
        return dest
    raise FileExistsError(parent / name)


@dataclass
class Lineage:
    """Step name → session id for one workspace, persisted at ``path`` on every change."""

    path: Path
    workspace: Path
    steps: dict[str, str] = field(default_factory=dict)
    woke: int = 0
    #: step names this object recorded itself: they win over the disk when merging
    _mine: set[str] = field(default_factory=set, repr=False, compare=False)
    #: session ids found gone from the store at open: a merge must not bring them back
    _dead: set[str] = field(default_factory=set, repr=False, compare=False)
    #: the shared store's run book (:class:`flower.stores.book.RemoteBook`) or None
    book: Any = field(default=None, repr=False, compare=False)
    #: True when the steps came from the book, not from the file
    remote: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.workspace = Path(canonical(self.workspace))

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    # --- loading ---------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        run_dir: str | Path,
        workspace: str | Path,
        *,
        has_session: Callable[[str], bool] | None = None,
        book: Any = None,
    ) -> Lineage:
        """Load ``<run_dir>/lineage.json`` for ``workspace``; any mismatch gives an empty one.

        A corrupt file is renamed to ``lineage.json.corrupt-<stamp>`` first. With
        ``has_session``, steps whose session is no longer in the store are dropped: the
        lineage file can outlive ``sessions.db``, and resuming a missing session only
        fails after the CLI subprocess is up. With ``book``, a missing, empty or corrupt
        file is replaced by the book's document (any workspace), and every write is
        mirrored to the book.
        """
        return cls._load(run_dir, workspace, has_session=has_session, quarantine=True,
                         book=book)

    @classmethod
    def peek(
        cls,
        run_dir: str | Path,
        workspace: str | Path,
        *,
        has_session: Callable[[str], bool] | None = None,
        book: Any = None,
    ) -> Lineage:
        """Like :meth:`open` but strictly read-only (a corrupt file stays where it is)."""
        return cls._load(run_dir, workspace, has_session=has_session, quarantine=False,
                         book=book)

    @classmethod
    def _load(
        cls,
        run_dir: str | Path,
        workspace: str | Path,
        *,
        has_session: Callable[[str], bool] | None,
        quarantine: bool,
        book: Any = None,
    ) -> Lineage:
        lin = cls(Path(run_dir) / FILENAME, Path(workspace), book=book)
        try:
            raw = lin.path.read_bytes()
        except OSError:  # missing, a directory, no permission: nothing to continue
            return lin._from_book(has_session)
        try:
            ws, woke, steps = _parse(raw)
        except _Corrupt:
            if quarantine:
                move_aside(lin.path, _stamp())
            return lin._from_book(has_session)
        if canonical(ws) != str(lin.workspace):
            return lin  # moved or copied folder: the old ids cannot resume here
        if has_session is not None:
            lin._dead = {v for v in steps.values() if not _alive(has_session, v)}
            steps = {k: v for k, v in steps.items() if v not in lin._dead}
        lin.woke, lin.steps = woke, steps
        return lin

    def _from_book(self, has_session: Callable[[str], bool] | None) -> Lineage:
        """The book's document, if there is a book and it holds one. The workspace guard
        is relaxed: a session written from another path is adopted by the store."""
        if self.book is None:
            return self
        try:
            doc = self.book.lineage()
            if not doc:
                return self
            _, woke, steps = _parse(json.dumps(doc).encode("utf-8"))
        except Exception as exc:  # an unreadable book is no book
            log.warning("flower: could not read the run book %s: %s",
                        getattr(self.book, "name", "?"), exc)
            return self
        if has_session is not None:
            steps = {k: v for k, v in steps.items() if _alive(has_session, v)}
        self.woke, self.steps, self.remote = woke, steps, True
        return self

    # --- writing ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, object]:
        """The on-disk document (key order and names as the original flower writes them, so
        runs move between the two)."""
        return {"workspace": str(self.workspace), "woke": self.woke, "steps": dict(self.steps)}

    def flush(self) -> bool:
        """Write atomically; ``False`` when the disk refused (the run carries on)."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n"
        self._mirror()
        try:
            atomic_write(self.path, text)
        except OSError:
            return False
        return True

    def _merge_disk(self) -> None:
        """Fold the file's current state in (call under the lock): its steps and wake count
        replace the in-memory copy, except the steps this object recorded itself. A missing,
        foreign or unreadable file leaves the in-memory state as it is (a corrupt one is
        moved aside first, never overwritten)."""
        try:
            raw = self.path.read_bytes()
        except OSError:
            return
        try:
            ws, woke, steps = _parse(raw)
        except _Corrupt:
            move_aside(self.path, _stamp())
            return
        if canonical(ws) != str(self.workspace):
            return
        mine = {k: self.steps[k] for k in self._mine if k in self.steps}
        alive = {k: v for k, v in steps.items() if v not in self._dead}
        self.steps = {**alive, **mine}
        self.woke = woke

    def _update(self, change: Callable[[], None]) -> None:
        """Read-modify-write under the cross-process lock; a disk that refuses (no lock
        file, no write) still lets the in-memory state move on."""
        try:
            with file_lock(self.lock_path, timeout=LOCK_TIMEOUT):
                self._merge_disk()  # a lock not got in time: merge anyway, best effort
                change()
                self.flush()
        except OSError:
            change()
    def _mirror(self) -> None:
        """Hand the document to the book (non-blocking, never raises)."""
        if self.book is None:
            return
        try:
            self.book.put_lineage(self.to_dict())
        except Exception as exc:
            log.warning("flower: could not mirror the lineage: %s", exc)

    def remember(self, step: str, session_id: str) -> None:
        """Record ``step``'s session the moment it is known — a hard kill may come next."""
        if not step or not session_id:
            return
        if self.steps.get(step) == session_id and step in self._mine:
            return

        def change() -> None:
            self.steps[step] = session_id
            self._mine.add(step)

        self._update(change)

    def forget(self, steps: Iterable[str]) -> None:
        """Drop ``steps``' sessions (a rewind to before them): the next run starts those
        steps afresh. The sessions themselves stay in the store."""
        names = set(steps)

        def change() -> None:
            for name in names:
                self.steps.pop(name, None)
                self._mine.add(name)  # what this object says about it wins the merge

        self._update(change)

    def bump(self) -> int:
        """Count one more wake (1 on the first run), persist it and return it."""

        def change() -> None:
            self.woke += 1

        self._update(change)
        return self.woke

    def archive(self, into: str | Path, *, extra: Iterable[str | Path] | None = None) -> Path:
        """Move the lineage file and ``extra`` files into ``<into>/<YYYYmmdd-HHMMSS>/``.

        Brief, goal and lineage are three sides of one history, so ``--new`` moves them
        together; ``sessions.db`` is the archive of transcripts and is never touched.
        ``steps``/``woke`` are reset; missing files are skipped; a file the disk refuses to
        move stays put (and a lineage that could not move is overwritten with the reset
        state, so the next run still starts fresh).
        """
        self.steps.clear()
        self._mine.clear()
        self.woke = 0
        self._mirror()  # the store's copy starts fresh too, or another machine wakes it
        base = Path(into)
        try:
            dest = _unique_dir(base, _stamp())
        except OSError:
            self.flush()
            return base / _stamp()
        moved_lineage = _move(self.path, dest)
        for p in extra or ():
            _move(Path(p), dest)
        if not moved_lineage and self.path.exists():
            self.flush()
        return dest


def _move(src: Path, dest_dir: Path) -> bool:
    """Move one file into ``dest_dir``; ``False`` if it was absent or could not move."""
    if not src.is_file():
        return False
    try:
        shutil.move(os.fspath(src), os.fspath(dest_dir / src.name))
    except OSError:
        return False
    return True


def _alive(has_session: Callable[[str], bool], sid: str) -> bool:
    """A store that cannot be read counts as "session gone": resuming it would fail too."""
    try:
        return bool(has_session(sid))
    except (OSError, sqlite3.Error):
        return False

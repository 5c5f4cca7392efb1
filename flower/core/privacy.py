"""The run directory is private: only its owner may read what a run recorded.

``runs/`` holds whole transcripts — every file any tool read, every command's output —
so a run dir is ``0700`` and flower's own files in it are ``0600``. New ones are made that
way (:func:`open_run_dir`, ``atomic_write`` into a private directory, the SQLite store's
``sessions.db``, whose ``-wal``/``-shm`` files SQLite creates with the database's mode);
:func:`open_run_dir` also tightens what an older flower or a wide umask left readable, and
returns what it changed so the Runtime can say so once.

Only flower's own entries are touched: a run dir's top-level records, the terminal's
``aside/`` run dir and the flower-made parts of a ``workbench/`` kept there. What an agent
writes into its workbench keeps the agent's modes (the run dir around it already keeps
everyone else out), and a run dir that is, or holds, the workspace is never changed
itself: a project's own files and folders are not flower's to restrict.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600

#: Top-level files of a run dir holding what a run recorded (plus SQLite's side files).
RECORDS = ("sessions.db", "sessions.db-wal", "sessions.db-shm", "sessions.db-journal",
           "manifest.json", "lineage.json", "budget.json")
#: Other top-level files flower writes there: crash reports, corrupt copies moved aside.
RECORD_PATTERNS = ("crash-*.log", "*.corrupt-*")
#: Nested run dirs (same rules): the terminal's side questions.
NESTED = ("aside",)
WORKBENCH = "workbench"
#: The workbench folders flower makes, and the files flower writes inside them.
WORKBENCH_DIRS = ("", "scripts", "artifacts", "notes", "spill")
WORKBENCH_FILES = ("notes/交接-*.md", "notes/archive/交接/*.md", "spill/*.txt")


def is_private(directory: str | Path) -> bool:
    """Can nobody but the owner enter ``directory``? (False when it cannot be read.)"""
    try:
        return stat.S_IMODE(os.stat(directory).st_mode) & 0o077 == 0
    except OSError:
        return False


def open_run_dir(run_dir: Path, workspace: Path) -> list[Path]:
    """Create ``run_dir`` (``0700``) or tighten it and flower's entries in it; returns the
    paths whose group/other permissions were removed. An empty run dir that was merely
    created wide (``mkdir runs`` by hand) is tightened but not reported: nothing in it was
    ever exposed. Never raises for a chmod the filesystem refuses."""
    run_dir.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    return _tighten_run_dir(run_dir, workspace.resolve())


def _tighten_run_dir(run_dir: Path, workspace: Path) -> list[Path]:
    changed: list[Path] = []
    holds_workspace = workspace == run_dir or workspace.is_relative_to(run_dir)
    if not holds_workspace and _tighten(run_dir) and _has_entries(run_dir):
        changed.append(run_dir)
    files = [run_dir / name for name in RECORDS]
    for pattern in RECORD_PATTERNS:
        files += sorted(run_dir.glob(pattern))
    changed += [p for p in files if _is_file(p) and _tighten(p)]
    for name in NESTED:
        nested = run_dir / name
        if nested.is_dir() and not nested.is_symlink() and not _inside(workspace, nested):
            changed += _tighten_run_dir(nested, workspace)
    changed += _tighten_workbench(run_dir / WORKBENCH, workspace)
    return changed


def _tighten_workbench(root: Path, workspace: Path) -> list[Path]:
    if not root.is_dir() or root.is_symlink() or _inside(workspace, root):
        return []
    dirs = [root / sub if sub else root for sub in WORKBENCH_DIRS]
    changed = [d for d in dirs if d.is_dir() and not d.is_symlink() and _tighten(d)]
    for pattern in WORKBENCH_FILES:
        changed += [p for p in sorted(root.glob(pattern)) if _is_file(p) and _tighten(p)]
    return changed


def private_mkdir(path: Path) -> None:
    """``mkdir -p`` whose last folder is ``0700`` (parents as the umask makes them)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir(exist_ok=True, mode=PRIVATE_DIR)


def _inside(workspace: Path, path: Path) -> bool:
    return workspace == path or workspace.is_relative_to(path)


def _is_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _has_entries(directory: Path) -> bool:
    with contextlib.suppress(OSError), os.scandir(directory) as it:
        return any(True for _ in it)
    return False


def _tighten(path: Path) -> bool:
    """Drop group/other bits from ``path`` (owner bits kept: a script stays runnable);
    True when something was dropped."""
    try:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        if not mode & 0o077:
            return False
        os.chmod(path, mode & 0o700)
    except OSError:
        return False
    return True

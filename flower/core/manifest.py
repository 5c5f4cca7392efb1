"""``manifest.json``: the run book — one row per step attempt-group, shared by processes.

Several flower processes may share one run dir. Each owns the rows tagged with its ``run``
id and never touches anyone else's: every write takes an exclusive file lock, re-reads the
file, replaces only this process's rows and swaps the file in atomically. A manifest that
cannot be parsed is never overwritten — it is moved aside once and the run goes on.

With a shared session store, every (blocking) write also hands this run's rows to the
store's run book (``book``, :mod:`flower.stores.book`) — best effort, in the background;
the file stays authoritative. A signal handler's non-blocking write skips the book: it
must not touch a connection pool the interrupted code may be holding.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flower.core.paths import atomic_write, file_lock, move_aside

FILENAME = "manifest.json"


def parse(raw: bytes) -> list[dict[str, Any]]:
    """The rows of a manifest file's bytes; ``ValueError`` when they are not a manifest
    (bad UTF-8, bad JSON, not an array of objects). Readers that must not touch the file
    (``flower log``) use this directly; :meth:`Manifest.read` moves such a file aside."""
    rows = json.loads(raw.decode("utf-8"))
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError("not a JSON array of objects")
    return rows


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(json_text: str) -> str:
    """JSON text with lone surrogates (half an emoji a model or tool cut off) written as
    ``\\uXXXX`` escapes: still valid JSON, valid UTF-8 on disk, and it decodes back to the
    very same string — instead of an encoding error that would lose the whole row."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


class Manifest:
    """Reads and writes ``<run_dir>/manifest.json`` on behalf of one run id."""

    def __init__(self, path: Path, run_id: str,
                 notice: Callable[[str], None] | None = None,
                 scrub: Callable[[str], str] | None = None, book: Any = None) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self.book = book
        self._notice = notice or _stderr
        self._scrub = scrub or (lambda text: text)
        self._holding = False  # this process is inside write(): a signal handler must not wait
        self._lock_path = self.path.with_name(self.path.name + ".lock")

    def _locked(self, *, timeout: float = 10.0) -> contextlib.AbstractContextManager[bool]:
        """Hold the cross-process lock; yields False if it could not be taken in time."""
        return file_lock(self._lock_path, timeout=timeout)

    def read(self) -> list[dict[str, Any]]:
        """All rows; a corrupt file is moved aside (and reported) and counts as empty."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            return parse(raw)
        except ValueError as exc:  # bad UTF-8 and bad JSON alike
            aside = move_aside(self.path)
            if aside is not None:
                self._notice(f"flower: {self.path} was unreadable ({exc}); kept it as {aside} "
                             "and started a fresh manifest")
            return []

    def write(self, rows: list[dict[str, Any]], *, blocking: bool = True) -> bool:
        """Replace this run's rows with ``rows``; other runs' rows are kept as they are.

        ``blocking=False`` is for signal handlers: it gives up at once if this very process
        is mid-write (waiting would deadlock) and waits at most 2 s for another process.
        Returns False when the rows could not be written.
        """
        if not blocking and self._holding:
            return False
        mine = [dict(r, run=self.run_id) for r in rows]
        with self._locked(timeout=10.0 if blocking else 2.0) as got:
            if not got:
                return False
            self._holding = True
            try:
                others = [r for r in self.read() if r.get("run") != self.run_id]
                body = json.dumps(others + mine, ensure_ascii=False, indent=2)
                atomic_write(self.path, escape_surrogates(self._scrub(body)))
            finally:
                self._holding = False
                if blocking:
                    self._mirror(mine)
        return True

    def _mirror(self, mine: list[dict[str, Any]]) -> None:
        """This run's rows (credentials scrubbed, as in the file) to the book."""
        if self.book is None:
            return
        try:
            rows = json.loads(self._scrub(json.dumps(mine, ensure_ascii=False)))
            self.book.put_manifest(self.run_id, rows)
        except Exception as exc:  # the book must never break the run it records
            self._notice(f"flower: could not mirror the manifest: {exc}")

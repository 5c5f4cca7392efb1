"""A transcript's scan, kept for its next load: rows are only ever appended, so the next load
walks the rows that came since, not the whole transcript again.

Kept in memory by ``Layers`` and, for long transcripts, in a file in the spill directory
(``.scans/``): a wake is a new process, and its first load would otherwise walk every entry
of a run that may be 100k entries long. The file is a cache and is trusted as little as the
spill memo: it is used only for a parse whose entries have the same uuid and type at every
sampled position of the rows it was made from, and every block trim then edits is checked
against it (``StaleScan``: the load scans afresh). A torn, foreign or older file is ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from typing import Any

from flower.stores.codec import ORJSON
from flower.stores.transcript import Scan

__all__ = ["SCANS_DIRNAME", "Kept", "load", "samples", "save"]

log = logging.getLogger(__name__)

SCANS_DIRNAME = ".scans"  # in the spill dir
MIN_ENTRIES = 5_000  # shorter transcripts scan in a few ms: not worth a file
KEEP_FILES = 8  # files kept (the newest): a step's main transcript and a few more
_STRIDE = 1_009  # sampled positions: every 1,009th entry and the last one
# What a kept scan records is what ``transcript.scan`` records, by the rules of today's
# code (which Bash commands ``is_ephemeral``, which entries are errors, denials …): a
# change to those rules must bump this, or a wake would plan on yesterday's answers.
_VERSION = 1
_COLUMNS = ("sites", "refs")  # lists of tuples, kept as columns (one list per field)
_WIDTH = {"sites": 5, "refs": 5}
_LISTS = ("marked", "errors", "erring", "parents", "leaves")


def samples(entries: list[Any], count: int) -> list[list[Any]]:
    """``[position, uuid, type]`` of the entries a scan of the first ``count`` covers."""
    picks = [*range(0, count, _STRIDE), count - 1] if count else []
    return [[k, entries[k].get("uuid"), entries[k].get("type")] for k in picks]


def _matches(marks: list[list[Any]], entries: list[Any]) -> bool:
    try:
        return all(entries[k].get("uuid") == uid and entries[k].get("type") == kind
                   for k, uid, kind in marks)
    except (IndexError, TypeError, ValueError, AttributeError):
        return False


class Kept:
    """A scan and the samples of the rows it covers."""

    __slots__ = ("marks", "scan")

    def __init__(self, scan: Scan, marks: list[list[Any]]) -> None:
        self.scan = scan
        self.marks = marks

    def fits(self, entries: list[Any]) -> bool:
        """Are ``entries`` the rows scanned, maybe with more appended?"""
        return len(entries) >= self.scan.count and _matches(self.marks, entries)


def _path(directory: str, slot: tuple[Any, ...]) -> str:
    name = hashlib.blake2b(json.dumps(list(slot)).encode("utf-8", "surrogatepass"),
                           digest_size=12).hexdigest()
    return os.path.join(directory, SCANS_DIRNAME, name + ".json")


def _dumps(value: Any) -> bytes:
    if ORJSON is not None:
        return ORJSON.dumps(value)
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _loads(data: bytes) -> Any:
    if ORJSON is not None:
        try:
            return ORJSON.loads(data)
        except ORJSON.JSONDecodeError:  # a lone surrogate orjson refuses: json reads it
            pass
    return json.loads(data.decode("utf-8", "surrogatepass"))


def save(directory: str, slot: tuple[Any, ...], kept: Kept) -> None:
    """Write ``kept`` for ``slot`` atomically (a failure only costs the next process a
    scan), and drop the oldest files beyond ``KEEP_FILES``."""
    scan = kept.scan
    doc: dict[str, Any] = {"v": _VERSION, "slot": list(slot), "count": scan.count,
                           "marks": kept.marks, "commands": scan.commands}
    for name in _COLUMNS:
        rows = getattr(scan, name)
        doc[name] = [list(col) for col in zip(*rows, strict=True)] if rows else []
    for name in _LISTS:
        doc[name] = getattr(scan, name)
    target = _path(directory, slot)
    folder = os.path.dirname(target)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".scan-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:  # mkstemp makes it 600: commands are in it
                fh.write(_dumps(doc))
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
        _tidy(folder)
    except (OSError, TypeError, ValueError) as exc:
        log.warning("could not keep the scan of a transcript in %s: %s", folder, exc)


def _tidy(folder: str) -> None:
    with os.scandir(folder) as it:
        files = [(e.stat().st_mtime_ns, e.path) for e in it
                 if e.name.endswith(".json") and e.is_file()]
    for _, path in sorted(files)[:-KEEP_FILES]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def load(directory: str, slot: tuple[Any, ...]) -> Kept | None:
    """The scan kept for ``slot`` in ``directory``, or None (no file, or not one of ours)."""
    try:
        with open(_path(directory, slot), "rb") as fh:
            doc = _loads(fh.read())
    except (OSError, ValueError):
        return None
    try:
        if doc.get("v") != _VERSION or doc.get("slot") != list(slot):
            return None
        count = doc["count"]
        cols = {name: doc[name] or [[]] * _WIDTH[name] for name in _COLUMNS}
        if any(len(c) != _WIDTH[name] for name, c in cols.items()):
            return None
        scan = Scan(commands=doc["commands"], count=count,
                    **{name: doc[name] for name in _LISTS},
                    **{name: list(zip(*c, strict=True)) for name, c in cols.items()})
        if type(count) is not int or len(scan.parents) != count:
            return None
        at = (*scan.marked, *scan.errors, *scan.erring, *scan.leaves,
              *cols["sites"][0], *cols["refs"][0])  # entry indices: within the rows
        if (not all(type(v) is int for v in (*at, *cols["sites"][1], *cols["sites"][2]))
                or (at and not 0 <= min(at) <= max(at) < count)
                or not isinstance(scan.commands, dict)):
            return None
        return Kept(scan, doc["marks"])
    except (AttributeError, LookupError, TypeError, ValueError):
        return None

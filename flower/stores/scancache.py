"""A transcript's scan, kept by ``Layers`` for its next load: rows are only ever appended, so
the next load walks the rows that came since, not the whole transcript again.

A kept scan is used only for a parse whose entries have the same uuid and type at every
sampled position of the rows it was made from (another process may have deleted the
transcript and written other rows under the same key), and every block trim then edits is
checked against it (``StaleScan``: the load scans afresh).

Kept in memory only. A copy on disk for a wake's first load was built and measured: at 100k
entries, parsing it allocated as much as the scan it replaced (~70 MB more pages faulted in
a fresh process) and the first load came out no faster, so it was taken out again.
"""

from __future__ import annotations

from typing import Any

from flower.stores.transcript import Scan

__all__ = ["Kept", "samples"]

_STRIDE = 1_009  # sampled positions: every 1,009th entry and the last one


def samples(entries: list[Any], count: int) -> list[tuple[int, Any, Any]]:
    """``(position, uuid, type)`` of the entries a scan of the first ``count`` covers."""
    picks = [*range(0, count, _STRIDE), count - 1] if count else []
    return [(k, entries[k].get("uuid"), entries[k].get("type")) for k in picks]


class Kept:
    """A scan and the samples of the rows it covers."""

    __slots__ = ("marks", "scan")

    def __init__(self, scan: Scan, marks: list[tuple[int, Any, Any]]) -> None:
        self.scan = scan
        self.marks = marks

    def fits(self, entries: list[Any]) -> bool:
        """Are ``entries`` the rows scanned, maybe with more appended?"""
        return len(entries) >= self.scan.count and all(
            entries[k].get("uuid") == uid and entries[k].get("type") == kind
            for k, uid, kind in self.marks)

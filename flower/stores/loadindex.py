"""A transcript's load index: what the loads of its rows found, so that the next load — in
this process or, read from disk, in the next one — walks only the rows appended since.

Rows are only ever appended, and what trim and prune decide about a row depends on the
rows before it and on a few counts over all of them: which results are old enough to
expire or spill, the newest denials kept, the calls still unanswered. An index keeps
exactly that, in indices and small values:

- the tool_result sites trim can act on (an answer to an ephemeral call, or a body of
  ``min_chars`` or more) — every other site only matters to prune's outage test, so for
  those it keeps the entries whose stored text names an outage;
- prune's facts: API errors, denied call ids in order, interrupt candidates, entries with
  a ``leafUuid``, and its fold over the blocks (calls still unanswered, entries touching a
  removed call) as it stood after the last row;
- a 32-bit checksum of every row's ``parentUuid`` and of every ephemeral call id, so the
  entries below a removed one, or the call a new result answers, are found without a walk
  (each match is checked against the entry itself: a checksum only says where to look).

Extending it by the new rows gives what a walk over all of them gives, unless the new rows
change a decision about old ones (a new denial makes the one kept so far removable): then
the load starts a new index from all rows. The copy is the same either way;
``tests/stores/test_load_index.py`` holds the two against each other.
"""

from __future__ import annotations

import os
import re
import sys
import time
import zlib
from array import array
from collections.abc import Iterable
from typing import Any

from flower.stores.pruning import (
    PrunePlan,
    PrunePolicy,
    _replay,
    is_denial,
    marked_interrupt,
    names_outage,
)
from flower.stores.transcript import (
    AGENT_API_ERROR,
    Scan,
    Site,
    _ephemeral,
    block_text,
    scan,
    site_block,
)
from flower.stores.trimming import SpillMemo

__all__ = ["IndexMemo", "LoadIndex", "samples"]

_STRIDE = 1_009  # sampled positions: every 1,009th entry and the last one of each extension


def samples(entries: list[Any], start: int, count: int) -> list[tuple[int, Any, Any]]:
    """``(position, uuid, type)`` of sampled entries among ``entries[start:count]``."""
    if count <= start:
        return []
    first = -(-start // _STRIDE) * _STRIDE
    picks = [*range(first, count, _STRIDE)]
    if not picks or picks[-1] != count - 1:
        picks.append(count - 1)
    return [(k, entries[k].get("uuid"), entries[k].get("type")) for k in picks]


def checksum(value: Any) -> int:
    """The 32-bit checksum an index files a uuid or call id under (0 for a non-string)."""
    if type(value) is not str:
        return 0
    return zlib.crc32(value.encode("utf-8", "surrogatepass"))


def _positions(buf: bytearray, values: list[str]) -> list[int]:
    """Indices of the 4-byte cells of ``buf`` holding the checksum of one of ``values``:
    a search of the bytes per value for a few (~40 µs per 100k cells), else one pass."""
    if len(values) > 32:
        sums = {checksum(v) for v in values}
        with memoryview(buf) as raw, raw.cast("I") as cells:  # native order, as array("I")
            return [k for k, h in enumerate(cells) if h in sums]
    out = []
    for value in values:
        needle = checksum(value).to_bytes(4, sys.byteorder)
        pos = buf.find(needle)
        while pos >= 0:
            if pos % 4 == 0:
                out.append(pos // 4)
                pos = buf.find(needle, pos + 4)
            else:
                pos = buf.find(needle, pos + 1)
    return out


class LoadIndex:
    """The facts of a transcript's first ``count`` rows (see the module docstring).

    ``ident`` names the policies and workspace the facts were gathered under: an index is
    used only under the same. ``sites`` are Site tuples whose call-id field is an index
    into ``cmds`` (the command of the ephemeral call the result answers) or None, and
    whose uuid field is the site's own position in ``sites``: trim remembers its spill
    file under that (``names``, see ``IndexMemo``).
    """

    __slots__ = ("call_rows", "calls", "cmd_ids", "cmds", "count", "denials", "erring",
                 "errors", "frames", "gone", "hits", "ident", "interrupts", "learned",
                 "leaves", "marks", "names", "parents", "pending", "pointers", "saved",
                 "sites", "touched")

    def __init__(self, ident: Any) -> None:
        self.ident = ident
        self.count = 0
        self.marks: list[tuple[int, Any, Any]] = []
        self.sites: list[Site] = []
        self.cmds: dict[int, str] = {}
        self.cmd_ids: dict[str, int] = {}
        self.calls = bytearray()  # checksum of each ephemeral call's id (4 bytes each)
        self.call_rows = array("q")  # ... and the entry it is in
        self.parents = bytearray()  # checksum of each row's parentUuid (4 bytes each)
        self.leaves: list[int] = []
        self.errors: list[int] = []
        self.erring: list[int] = []
        self.interrupts: list[int] = []
        self.hits: list[int] = []  # entries whose other results name an outage
        self.denials: list[str] = []  # denied call ids, oldest first
        self.gone: set[str] = set()  # the denied calls the fold removed
        self.touched: set[int] = set()
        self.pending: dict[str, int] = {}
        self.names = bytearray()  # per site the spill file's name as 8 bytes (0: none)
        self.learned: list[int] = []  # sites whose name was set since the last save
        self.pointers: dict[Any, tuple[str, str]] = {}  # trim's, for this process only
        self.saved: tuple[int, ...] | None = None  # lengths already in its file
        self.frames = 0  # records in its file (a file of many is written anew, as one)

    def fits(self, entries: list[Any]) -> bool:
        """Are ``entries`` the rows this index is of, maybe with more appended?"""
        return len(entries) >= self.count and all(
            entries[k].get("uuid") == uid and entries[k].get("type") == kind
            for k, uid, kind in self.marks)

    # ----------------------------------------------------------------------- extending

    def extend(self, entries: list[Any], min_chars: int, prune: PrunePolicy | None) -> bool:
        """Take in the rows after ``count``; False (nothing changed) when they change what
        prune decided about earlier rows, so the load needs a new index of all rows."""
        start = self.count
        found = Scan(count=start)
        if start:
            found.commands = _Calls(self, entries)
        scan(entries, into=found)
        denials = [d for i in found.marked for d in (is_denial(entries[i]),) if d]
        gone = self.gone
        if prune is not None:
            everything = self.denials + denials
            keep = max(prune.keep_denials, 0)
            gone = set(everything[: len(everything) - keep] if keep else everything)
            if start and gone != self.gone:
                return False
        self._take(entries, found, min_chars)
        self.denials += denials
        self.marks += samples(entries, start, found.count)
        if prune is not None:
            self.gone = gone
            drop = set(found.errors) if prune.drop_api_errors else set()
            _replay(found, gone, drop, self.touched, self.pending)
        self.count = found.count
        return True

    def _take(self, entries: list[Any], found: Scan, min_chars: int) -> None:
        minimum = max(min_chars, 0)
        commands, cmd_ids, sites = found.commands, self.cmd_ids, self.sites
        first = len(sites)
        for site in found.sites:
            i, j, size, tid, _ = site
            if tid is not None:
                cmd = commands[tid]
                c = cmd_ids.get(cmd)
                if c is None:
                    c = cmd_ids[cmd] = len(cmd_ids)
                    self.cmds[c] = cmd
                sites.append((i, j, size, c, len(sites)))
            elif size >= minimum:
                sites.append((i, j, size, None, len(sites)))
            elif (names_outage(site_block(entries, site).get("content"))
                  and (not self.hits or self.hits[-1] != i)):
                self.hits.append(i)
        self.names += bytes(8 * (len(sites) - first))
        self.calls += array("I", [checksum(bid) for bid, _ in found.calls]).tobytes()
        self.call_rows.extend(i for _, i in found.calls)
        self.parents += array("I", [checksum(p) for p in found.parents]).tobytes()
        self.leaves += found.leaves
        self.errors += found.errors
        self.erring += found.erring
        self.interrupts += [i for i in found.marked if marked_interrupt(entries[i])]

    # ----------------------------------------------------------------------- planning

    def scan_view(self) -> Scan:
        """The sites trim acts on, as a Scan ``plan_bodies`` takes."""
        return Scan(sites=self.sites, commands=self.cmds)

    def prune_plan(self, entries: list[Any], bodies: list[str | None] | None,
                   policy: PrunePolicy) -> PrunePlan:
        """Prune's plan for ``entries`` (the rows of this index, before trim's ``bodies``
        are set) — what ``plan_prune`` decides from a scan of them all."""
        drop = set(self.errors) if policy.drop_api_errors else set()
        suspects = (self._suspects(entries, bodies, drop) if policy.neutralize_interrupts
                    else set())
        return PrunePlan(set(self.gone), list(self.errors), set(self.touched), suspects,
                         dict(self.pending), list(self.leaves))

    def _suspects(self, entries: list[Any], bodies: list[str | None] | None,
                  drop: set[int]) -> set[int]:
        out = {i for i in (*self.erring, *self.interrupts) if i not in drop}
        skip = out | drop
        maybe = {i for i in self.hits if i not in skip}
        sites = self.sites
        look = (range(len(sites)) if bodies is None else  # what trim leaves, or may name it
                [k for k, b in enumerate(bodies) if b is None or AGENT_API_ERROR in b])
        for k in look:
            site = sites[k]
            i = site[0]
            if i in skip or i in maybe:
                continue
            body = bodies[k] if bodies is not None else None
            if (names_outage(site_block(entries, site).get("content")) if body is None
                    else AGENT_API_ERROR in body):
                maybe.add(i)
        out.update(i for i in maybe if _stored_outage(entries[i]))
        return out

    def children(self, entries: list[Any]) -> Any:
        """For ``relink``: the entries that may have one of the given uuids as their
        ``parentUuid`` (relink checks each; a checksum only says where to look)."""
        def below(moved: Iterable[Any]) -> list[int]:
            moved = list(moved)
            if any(type(u) is not str for u in moved):  # never from the CLI: all of them
                return list(range(len(entries)))
            return _positions(self.parents, moved)
        return below


def _stored_outage(entry: dict[str, Any]) -> bool:
    """Does a text tool_result of ``entry`` (an unprotected user entry), as stored, name
    an outage? The last test of ``outage_results``, on one entry."""
    for b in entry["message"]["content"]:
        if type(b) is dict and b.get("type") == "tool_result":
            text = block_text(b)
            if text is not None and AGENT_API_ERROR in text:
                return True
    return False


class _Calls(dict[str, str]):
    """The new rows' ephemeral calls for ``scan``, which also knows the index's earlier
    ones: a result among the new rows may answer a call made before them."""

    def __init__(self, index: LoadIndex, entries: list[Any]) -> None:
        super().__init__()
        self._index = index
        self._entries = entries
        self._earlier: dict[str, str | None] = {}

    def __contains__(self, tid: object) -> bool:
        return dict.__contains__(self, tid) or (type(tid) is str and self._old(tid) is not None)

    def __missing__(self, tid: str) -> str:
        cmd = self._old(tid)
        if cmd is None:
            raise KeyError(tid)
        return cmd

    def _old(self, tid: str) -> str | None:
        """The command of the last ephemeral call ``tid`` among the index's rows."""
        if tid in self._earlier:
            return self._earlier[tid]
        index, found = self._index, None
        for cell in _positions(index.calls, [tid]):
            i = index.call_rows[cell]
            for b in self._entries[i]["message"]["content"]:
                if (type(b) is dict and b.get("type") == "tool_use" and b.get("id") == tid
                        and b.get("name") == "Bash"):
                    inp = b.get("input")
                    cmd = inp.get("command") if type(inp) is dict else None
                    if type(cmd) is str and _ephemeral(cmd):
                        found = (i, cmd) if found is None or i >= found[0] else found
        self._earlier[tid] = cmd = found[1] if found is not None else None
        return cmd


class IndexMemo(SpillMemo):
    """The spill memo trim asks while planning with an index: a site's file is the name the
    index keeps for it (no uuid, no read of ``.memo``). An index just built from all rows
    knows no name yet: it asks the real memo for the entry's (uuid, block, length), so a
    rebuild hashes no body spilled before; an index extended knows every name but those
    of the few results that aged out since, which trim hashes (``write_spill`` finds the
    file there if another process wrote it).

    The files stay the record: a name is used only while the directory, listed at this
    load, holds its file; one whose file is gone is forgotten (the body is spilled again).
    New spills go to the real memo as well, so ``.memo`` stays complete for a load
    without the index.
    """

    def __init__(self, index: LoadIndex, entries: list[Any], real: SpillMemo, *,
                 ask: bool) -> None:
        super().__init__()
        self.index, self.entries, self.real, self.ask = index, entries, real, ask
        self.pointers = index.pointers
        self._real_synced = False
        self._prefix = ""
        self._present: set[str] = set()

    def sync(self, directory: str) -> None:
        """List ``directory``: a name is used only while its file is in it. One listing
        per load is a few milliseconds even for 25k files — cheaper than trusting the
        directory's mtime across processes would be to get right."""
        try:
            stamp: int | None = os.stat(directory).st_mtime_ns
            present = set(os.listdir(directory))
        except OSError:  # no spill dir (yet, or removed): every body is written again
            stamp, present = None, set()
        self.directory, self._present = directory, present
        self._prefix = os.path.join(directory, "")
        # as SpillMemo: the listing vouches for the directory only once clearly in the past
        self._stamp = stamp if stamp is not None and stamp < (time.time() - 2) * 1e9 else None

    def get(self, ident: Any, default: Any = None) -> Any:
        k, j, size = ident
        names = self.index.names
        cell = names[8 * k: 8 * k + 8]
        if cell != _NONE and len(cell) == 8:
            name = cell.hex() + ".txt"
            if name in self._present:
                return self._prefix + name
            names[8 * k: 8 * k + 8] = _NONE  # its file is gone: spill the body again
        if not self.ask:
            return default
        real = self.real
        if not self._real_synced:
            real.sync(self.directory)
            self._real_synced = True
        path = real.get((self._uid(k), j, size))
        if path is not None:
            self._learn(k, path)
        return path if path is not None else default

    def __setitem__(self, ident: Any, path: str) -> None:
        k, j, size = ident
        uid = self._uid(k)
        if uid is not None:
            self.real[(uid, j, size)] = path
        self._learn(k, path)

    def _uid(self, k: int) -> Any:
        return self.entries[self.index.sites[k][0]].get("uuid")

    def _learn(self, k: int, path: str) -> None:
        name = os.path.basename(path)
        if os.path.dirname(path) == self.directory and _NAME.fullmatch(name):
            self.index.names[8 * k: 8 * k + 8] = bytes.fromhex(name[:16])
            self.index.learned.append(k)

    def flush(self) -> None:
        self.real.failed = self.failed
        self.real.flush()

    def listing(self) -> tuple[str, int] | None:
        if self._stamp is None or self.failed or not self.directory:
            return None
        return self.directory, self._stamp

    def clear(self) -> None:
        self.index.names[:] = bytes(len(self.index.names))
        self.index.pointers.clear()


_NONE = bytes(8)
_NAME = re.compile(r"[0-9a-f]{16}\.txt")

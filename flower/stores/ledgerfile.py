"""A ledger on disk: ``<spill dir>/.ledgers/<key hash>``, one record per load, appended.

A wake is a new process, and without this its first load walked and planned every row of
the transcript again (at 100k entries 0.8 s over the bare read). Each load appends what it
found in the rows since the last record (O_APPEND, one write), so the next process reads
the records in order and extends the ledger by the rows the killed one never loaded.

A record is ``FLG1``, its length, a CRC-32 of its body, then the body: a JSON header
(the key, the policies' fingerprint, the row range, the new facts, prune's fold state)
and the arrays it names. Records are taken in order while each is whole and starts where
the last ended; a torn, damaged or foreign one ends the reading there (what came before
still counts). Two processes appending for the same rows leave a record that does not fit
and is never read. Once a file holds many records it is written anew as one (replaced
atomically). Nothing here is ever the only copy of anything: the rows are, and a ledger
that does not fit them (``Ledger.fits``, and every block ``set_bodies`` changes is checked)
is dropped and built again from them. Mode 600, like the transcripts it is made from.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import tempfile
import zlib
from array import array
from typing import Any

from flower.stores.ledger import Ledger

__all__ = ["DIRNAME", "ledger_path", "read_ledger", "write_ledger"]

log = logging.getLogger(__name__)
DIRNAME = ".ledgers"
_MAGIC = b"FLG1"
_FRAME = struct.Struct("<4sQI")  # magic, body length, crc32 of the body
_COMPACT_AFTER = 32  # records in a file before the next save writes it as one
# ASCII JSON (orjson is an extra, and refuses the lone surrogates a cut emoji leaves)
_dumps = json.JSONEncoder(ensure_ascii=True, check_circular=False,
                          separators=(",", ":")).encode


def _dumps_bytes(value: Any) -> bytes:
    return _dumps(value).encode("ascii")


def ledger_path(spill: str, slot: tuple[Any, ...]) -> str:
    """Where the ledger of transcript ``slot`` (project key, session id, subpath) lives."""
    name = hashlib.sha256(_dumps_bytes(list(slot))).hexdigest()[:32]
    return os.path.join(spill, DIRNAME, name)


def _lengths(ledger: Ledger) -> tuple[int, ...]:
    return (ledger.count, len(ledger.sites), len(ledger.call_rows), len(ledger.leaves),
            len(ledger.errors), len(ledger.erring), len(ledger.interrupts),
            len(ledger.hits), len(ledger.denials), len(ledger.cmds), len(ledger.marks))


def _record(ledger: Ledger, slot: tuple[Any, ...], since: tuple[int, ...]) -> bytes:
    """The record of what ``ledger`` holds beyond the lengths ``since`` (all of it from
    zeros), with the spill names it learnt since its last record."""
    a, s0, c0, l0, e0, r0, i0, h0, d0, m0, k0 = since
    sites = ledger.sites[s0:]
    if a == 0:
        with memoryview(ledger.names) as raw, raw.cast("Q") as cells:
            learned = [k for k, cell in enumerate(cells) if cell]
    else:
        learned = sorted(set(ledger.learned))
    header = {
        "key": list(slot), "ident": ledger.ident, "start": a, "end": ledger.count,
        "marks": ledger.marks[k0:],
        "cmds": [[c, ledger.cmds[c]] for c in range(m0, len(ledger.cmds))],
        "leaves": ledger.leaves[l0:], "learned": len(learned),
        "errors": ledger.errors[e0:], "erring": ledger.erring[r0:],
        "interrupts": ledger.interrupts[i0:], "hits": ledger.hits[h0:],
        "denials": ledger.denials[d0:], "gone": sorted(ledger.gone),
        "touched": sorted(ledger.touched), "pending": list(ledger.pending.items()),
        "sites": len(sites), "calls": len(ledger.call_rows) - c0,
    }
    head = _dumps_bytes(header)
    blobs = [array("q", [s[n] if s[n] is not None else -1 for s in sites]).tobytes()
             for n in range(4)]
    blobs += [array("q", learned).tobytes(),
              b"".join(bytes(ledger.names[8 * k: 8 * k + 8]) for k in learned)]
    blobs += [bytes(ledger.calls[4 * c0:]), ledger.call_rows[c0:].tobytes(),
              bytes(ledger.parents[4 * a:])]
    body = b"".join([struct.pack("<I", len(head)), head, *blobs])
    return _FRAME.pack(_MAGIC, len(body), zlib.crc32(body)) + body


def write_ledger(path: str, ledger: Ledger, slot: tuple[Any, ...]) -> None:
    """Record what ``ledger`` learnt since its last record: appended, or the whole ledger
    written anew when it has no record in the file (new, built again) or too many."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if ledger.saved is None or ledger.frames >= _COMPACT_AFTER:
            data = _record(ledger, slot, (0,) * 11)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".ledger-")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
            ledger.frames = 1
        else:
            if ledger.saved[0] == ledger.count:
                return  # nothing new
            data = _record(ledger, slot, ledger.saved)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            ledger.frames += 1
    except OSError as exc:  # only the next process's first load is slower for it
        log.warning("could not record the load plan in %s: %s", path, exc)
        return
    ledger.saved = _lengths(ledger)
    ledger.learned.clear()


def read_ledger(path: str, slot: tuple[Any, ...], ident: Any) -> Ledger | None:
    """The ledger the file at ``path`` holds for ``slot`` under ``ident``, as far as its
    records are whole and in order; None when there is none."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    ledger = Ledger(ident)
    pos, frames = 0, 0
    while pos + _FRAME.size <= len(data):
        magic, size, crc = _FRAME.unpack_from(data, pos)
        body = data[pos + _FRAME.size: pos + _FRAME.size + size]
        if magic != _MAGIC or len(body) != size or zlib.crc32(body) != crc:
            break
        try:
            if not _take(ledger, body, slot, ident):
                break
        except (ValueError, TypeError, KeyError, IndexError, OverflowError, struct.error):
            return None  # a whole record that does not parse: not one of ours
        pos += _FRAME.size + size
        frames += 1
    if not frames:
        return None
    ledger.saved = _lengths(ledger)
    # a record left unread (torn, or another process's for the same rows) would keep every
    # later record from being read: the next save writes the file anew
    ledger.frames = frames if pos == len(data) else _COMPACT_AFTER
    return ledger


def _take(ledger: Ledger, body: bytes, slot: tuple[Any, ...], ident: Any) -> bool:
    """Add one record's facts to ``ledger``; False when it is not the next one for it."""
    (hlen,) = struct.unpack_from("<I", body)
    head = json.loads(body[4: 4 + hlen])
    if (head["key"] != list(slot) or head["ident"] != ident
            or head["start"] != ledger.count or head["end"] < head["start"]):
        return False
    n, calls, rows = int(head["sites"]), int(head["calls"]), head["end"] - head["start"]
    pos = 4 + hlen
    cols = []
    for _ in range(4):
        col = array("q")
        col.frombytes(body[pos: pos + 8 * n])
        pos += 8 * n
        cols.append(col)
    if any(len(c) != n for c in cols):
        raise ValueError("short site columns")
    first = len(ledger.sites)
    ledger.sites += [(i, j, size, None if c < 0 else c, k)
                     for k, (i, j, size, c) in enumerate(zip(*cols, strict=True), first)]
    ledger.names += bytes(8 * n)
    learned = array("q")
    count = int(head["learned"])
    learned.frombytes(body[pos: pos + 8 * count])
    pos += 8 * count
    for k in learned:
        if not 0 <= k < len(ledger.sites):
            raise ValueError("a spill name for no site")
        ledger.names[8 * k: 8 * k + 8] = body[pos: pos + 8]
        pos += 8
    ledger.calls += body[pos: pos + 4 * calls]
    pos += 4 * calls
    call_rows = array("q")
    call_rows.frombytes(body[pos: pos + 8 * calls])
    pos += 8 * calls
    ledger.call_rows.extend(call_rows)
    ledger.parents += body[pos: pos + 4 * rows]
    pos += 4 * rows
    if (len(call_rows) != calls or len(ledger.calls) != 4 * len(ledger.call_rows)
            or len(ledger.parents) != 4 * head["end"] or pos != len(body)):
        raise ValueError("short arrays")
    for c, cmd in head["cmds"]:
        if type(cmd) is not str or c != len(ledger.cmds):
            raise ValueError("command table out of order")
        ledger.cmds[c] = cmd
        ledger.cmd_ids[cmd] = c
    ledger.marks += [(int(k), uid, kind) for k, uid, kind in head["marks"]]
    ledger.leaves += map(int, head["leaves"])
    ledger.errors += map(int, head["errors"])
    ledger.erring += map(int, head["erring"])
    ledger.interrupts += map(int, head["interrupts"])
    ledger.hits += map(int, head["hits"])
    ledger.denials += head["denials"]
    ledger.gone = set(head["gone"])
    ledger.touched = set(map(int, head["touched"]))
    ledger.pending = {tid: int(i) for tid, i in head["pending"]}
    ledger.count = head["end"]
    return True

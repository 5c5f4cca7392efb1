"""An index on disk: ``<spill dir>/.loadindex/<key hash>``, one record per load, appended.

A wake is a new process, and without this its first load walked and planned every row of
the transcript again (at 100k entries 0.8 s over the bare read). Each load appends what it
found in the rows since the last record (O_APPEND, one write), so the next process reads
the records in order and extends the index by the rows the killed one never loaded.

A record is ``FLX2``, its length, the id of the key that sealed it, an HMAC of its body
under that key (``flower.stores.seal``: a key no role can read — the file lies where an
agent could write, and an agent can compute a checksum), then the body: a JSON header
(the key, the policies' fingerprint, the row range, the new facts, prune's fold state)
and the arrays it names. Records are taken in order while each is whole and starts where
the last ended; a torn or foreign one ends the reading there (what came before still
counts, and the next save writes the file anew). A whole record sealed with our key whose
HMAC does not match was changed by someone else: it is said in one line and the whole
file is ignored — the transcript's rows, which the index only summarises, decide alone.
Two processes appending for the same rows leave a record that does not fit and is never
read. Once a file holds many records it is written anew as one (replaced atomically).
Nothing here is ever the only copy of anything: the rows are, and an index that does not
fit them (``LoadIndex.fits``, and every block ``set_bodies`` changes is checked) is
dropped and built again from them.
Mode 600, like the transcripts it is made from.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import struct
from array import array
from typing import Any

from flower import texts
from flower.stores.loadindex import LoadIndex
from flower.stores.seal import KEY_ID_SIZE, MAC_SIZE, key_id, mac, state_key
from flower.stores.trimming import replace_file

__all__ = ["DIRNAME", "index_path", "read_index", "write_index"]

log = logging.getLogger(__name__)
DIRNAME = ".loadindex"
_MAGIC = b"FLX2"
_FRAME = struct.Struct(f"<4sQ{KEY_ID_SIZE}s{MAC_SIZE}s")  # magic, body length, key id, HMAC
_COMPACT_AFTER = 32  # records in a file before the next save writes it as one
# ASCII JSON (orjson is an extra, and refuses the lone surrogates a cut emoji leaves)
_dumps = json.JSONEncoder(ensure_ascii=True, check_circular=False,
                          separators=(",", ":")).encode


def _dumps_bytes(value: Any) -> bytes:
    return _dumps(value).encode("ascii")


def index_path(spill: str, slot: tuple[Any, ...]) -> str:
    """Where the index of transcript ``slot`` (project key, session id, subpath) lives."""
    name = hashlib.sha256(_dumps_bytes(list(slot))).hexdigest()[:32]
    return os.path.join(spill, DIRNAME, name)


def _lengths(index: LoadIndex) -> tuple[int, ...]:
    return (index.count, len(index.sites), len(index.call_rows), len(index.leaves),
            len(index.errors), len(index.erring), len(index.interrupts),
            len(index.hits), len(index.denials), len(index.cmds), len(index.marks))


def _record(index: LoadIndex, slot: tuple[Any, ...], since: tuple[int, ...],
            key: bytes) -> bytes:
    """The record of what ``index`` holds beyond the lengths ``since`` (all of it from
    zeros), with the spill names it learnt since its last record."""
    a, s0, c0, l0, e0, r0, i0, h0, d0, m0, k0 = since
    sites = index.sites[s0:]
    if a == 0:
        with memoryview(index.names) as raw, raw.cast("Q") as cells:
            learned = [k for k, cell in enumerate(cells) if cell]
    else:
        learned = sorted(set(index.learned))
    header = {
        "key": list(slot), "ident": index.ident, "start": a, "end": index.count,
        "marks": index.marks[k0:],
        "cmds": [[c, index.cmds[c]] for c in range(m0, len(index.cmds))],
        "leaves": index.leaves[l0:], "learned": len(learned),
        "errors": index.errors[e0:], "erring": index.erring[r0:],
        "interrupts": index.interrupts[i0:], "hits": index.hits[h0:],
        "denials": index.denials[d0:], "gone": sorted(index.gone),
        "touched": sorted(index.touched), "pending": list(index.pending.items()),
        "sites": len(sites), "calls": len(index.call_rows) - c0,
    }
    head = _dumps_bytes(header)
    blobs = [array("q", [s[n] if s[n] is not None else -1 for s in sites]).tobytes()
             for n in range(4)]
    blobs += [array("q", learned).tobytes(),
              b"".join(bytes(index.names[8 * k: 8 * k + 8]) for k in learned)]
    blobs += [bytes(index.calls[4 * c0:]), index.call_rows[c0:].tobytes(),
              bytes(index.parents[4 * a:])]
    body = b"".join([struct.pack("<I", len(head)), head, *blobs])
    return _FRAME.pack(_MAGIC, len(body), key_id(key), _seal(key, body)) + body


def _seal(key: bytes, body: bytes) -> bytes:
    return mac(key, _MAGIC, struct.pack("<Q", len(body)), body)


def write_index(path: str, index: LoadIndex, slot: tuple[Any, ...]) -> None:
    """Record what ``index`` learnt since its last record: appended, or the whole index
    written anew when it has no record in the file (new, built again) or too many."""
    key = state_key()
    if key is None:  # nothing could be verified when read back: not worth writing
        return
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if index.saved is None or index.frames >= _COMPACT_AFTER:
            data = _record(index, slot, (0,) * 11, key)
            replace_file(path, data, prefix=".index-")
            index.frames = 1
        else:
            if index.saved[0] == index.count:
                return  # nothing new
            data = _record(index, slot, index.saved, key)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            index.frames += 1
    except OSError as exc:  # only the next process's first load is slower for it
        log.warning("could not record the load plan in %s: %s", path, exc)
        return
    index.saved = _lengths(index)
    index.learned.clear()


def read_index(path: str, slot: tuple[Any, ...], ident: Any) -> LoadIndex | None:
    """The index the file at ``path`` holds for ``slot`` under ``ident``, as far as its
    records are whole, in order and sealed with this user's key; None when there is none,
    or when one was changed by someone else (said in one line: the rows decide alone)."""
    key = state_key()
    if key is None:
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    index = LoadIndex(ident)
    pos, frames, ours = 0, 0, key_id(key)
    while pos + _FRAME.size <= len(data):
        magic, size, kid, seal = _FRAME.unpack_from(data, pos)
        body = data[pos + _FRAME.size: pos + _FRAME.size + size]
        if magic != _MAGIC or len(body) != size or kid != ours:
            break  # torn, an older flower's, or another machine's key: built again
        if not hmac.compare_digest(seal, _seal(key, body)):
            log.warning(texts.INDEX_FORGED.format(path=path))
            return None
        try:
            if not _take(index, body, slot, ident):
                break
        except (ValueError, TypeError, KeyError, IndexError, OverflowError, struct.error):
            return None  # a whole record that does not parse: not one of ours
        pos += _FRAME.size + size
        frames += 1
    if not frames:
        return None
    index.saved = _lengths(index)
    # a record left unread (torn, or another process's for the same rows) would keep every
    # later record from being read: the next save writes the file anew
    index.frames = frames if pos == len(data) else _COMPACT_AFTER
    return index


def _take(index: LoadIndex, body: bytes, slot: tuple[Any, ...], ident: Any) -> bool:
    """Add one record's facts to ``index``; False when it is not the next one for it."""
    (hlen,) = struct.unpack_from("<I", body)
    head = json.loads(body[4: 4 + hlen])
    if (head["key"] != list(slot) or head["ident"] != ident
            or head["start"] != index.count or head["end"] < head["start"]):
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
    first = len(index.sites)
    index.sites += [(i, j, size, None if c < 0 else c, k)
                     for k, (i, j, size, c) in enumerate(zip(*cols, strict=True), first)]
    index.names += bytes(8 * n)
    learned = array("q")
    count = int(head["learned"])
    learned.frombytes(body[pos: pos + 8 * count])
    pos += 8 * count
    for k in learned:
        if not 0 <= k < len(index.sites):
            raise ValueError("a spill name for no site")
        index.names[8 * k: 8 * k + 8] = body[pos: pos + 8]
        pos += 8
    index.calls += body[pos: pos + 4 * calls]
    pos += 4 * calls
    call_rows = array("q")
    call_rows.frombytes(body[pos: pos + 8 * calls])
    pos += 8 * calls
    index.call_rows.extend(call_rows)
    index.parents += body[pos: pos + 4 * rows]
    pos += 4 * rows
    if (len(call_rows) != calls or len(index.calls) != 4 * len(index.call_rows)
            or len(index.parents) != 4 * head["end"] or pos != len(body)):
        raise ValueError("short arrays")
    for c, cmd in head["cmds"]:
        if type(cmd) is not str or c != len(index.cmds):
            raise ValueError("command table out of order")
        index.cmds[c] = cmd
        index.cmd_ids[cmd] = c
    index.marks += [(int(k), uid, kind) for k, uid, kind in head["marks"]]
    index.leaves += map(int, head["leaves"])
    index.errors += map(int, head["errors"])
    index.erring += map(int, head["erring"])
    index.interrupts += map(int, head["interrupts"])
    index.hits += map(int, head["hits"])
    index.denials += head["denials"]
    index.gone = set(head["gone"])
    index.touched = set(map(int, head["touched"]))
    index.pending = {tid: int(i) for tid, i in head["pending"]}
    index.count = head["end"]
    return True

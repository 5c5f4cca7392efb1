"""``manifest.json``: the run book — one row per step attempt-group, shared by processes.

Several flower processes may share one run dir. Each owns the rows tagged with its ``run``
id and never touches anyone else's: every write takes an exclusive file lock, re-reads the
file when someone else changed it, replaces only this process's rows and swaps the file in
atomically. A manifest that cannot be parsed is never overwritten — it is moved aside once
and the run goes on.

The bytes are exactly ``json.dumps(rows, ensure_ascii=False, indent=2)`` with lone
surrogates escaped (the original flower reads this file, and ``flower log`` parses it). The
file holds every run ever made in its folder, so a write must not cost the whole file: each
row's text is encoded once (with ``orjson`` when installed, which writes the same bytes for
the values it is given here — :func:`encode_row`) and kept; other runs' rows are re-read
only when the file's (mtime_ns, size, inode) is not the one this process last wrote or read.
Every ``flower`` invocation is a fresh process, and its first write must not parse the
whole file either: each writer notes in the lock file the stat of the file it left, and a
process that finds the file still so keeps the other runs' rows as the bytes they are
(:meth:`Manifest._as_written`). A file someone else wrote since (the original flower, an
editor, an older flower) is parsed once — in a thread the Runtime starts when it is made
(:meth:`Manifest.prefetch`), while the first step runs; the write uses that read only if
the file is still the one the thread read.

With a shared session store, every (blocking) write also hands this run's rows to the
store's run book (``book``, :mod:`flower.stores.book`) — best effort, in the background;
the file stays authoritative. A signal handler's non-blocking write skips the book: it
must not touch a connection pool the interrupted code may be holding.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from flower.core.paths import atomic_write, file_lock, move_aside
from flower.stores.codec import ORJSON

FILENAME = "manifest.json"

_INDENT_2 = ORJSON.OPT_INDENT_2 if ORJSON is not None else 0


def parse(raw: bytes) -> list[dict[str, Any]]:
    """The rows of a manifest file's bytes; ``ValueError`` when they are not a manifest
    (bad UTF-8, bad JSON, not an array of objects). Readers that must not touch the file
    (``flower log``) use this directly; :meth:`Manifest.read` moves such a file aside."""
    rows = None
    if ORJSON is not None:
        with contextlib.suppress(ORJSON.JSONDecodeError):  # NaN, huge ints, "\ud83d"
            rows = ORJSON.loads(raw)
        if rows is not None and _has_huge_float(rows):
            rows = None  # orjson reads an int past 64 bits as a float: json keeps it exact
    if rows is None:
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


def _same_in_orjson(value: Any) -> bool:
    """Whether orjson writes ``value`` byte for byte as ``json.dumps`` does. It does for
    str, bool, None, int and dicts/lists of them, but writes a float below 1e-4 without
    Python's exponent form (``1e-05`` becomes ``0.00001``, ``5e-06`` becomes ``5e-6``) and
    NaN/Infinity as ``null``; anything else (a tuple, a subclass, a non-str key) is left
    to ``json`` too. A lone surrogate makes orjson raise, which :func:`encode_row` catches."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return value == 0.0 or (abs(value) >= 1e-4 and math.isfinite(value))
    if kind is dict:
        return all(type(k) is str and _same_in_orjson(v) for k, v in value.items())
    if kind is list:
        return all(_same_in_orjson(v) for v in value)
    return False


_HUGE = float(2 ** 63)


def _has_huge_float(value: Any) -> bool:
    """A float of 2**63 or more anywhere in ``value``: what orjson makes of an integer it
    cannot hold in 64 bits (``-9223372036854775809``), which ``json`` reads exactly."""
    todo = [value]
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is dict:
            todo.extend(item.values())
        elif kind is list:
            todo.extend(item)
        elif kind is float and not -_HUGE < item < _HUGE:
            return True
    return False


def encode_row(row: dict[str, Any]) -> str:
    """One row as it sits inside the file's array: ``json.dumps(row, ensure_ascii=False,
    indent=2)`` with every line after the first indented two more, lone surrogates escaped.
    orjson when it writes the same bytes, else ``json`` for this row only — a row with
    half an emoji or a tiny float costs itself, not every write."""
    text = None
    if ORJSON is not None and _same_in_orjson(row):
        with contextlib.suppress(TypeError):  # orjson.JSONEncodeError: a lone surrogate
            text = ORJSON.dumps(row, option=_INDENT_2).decode("utf-8")
    if text is None:
        text = escape_surrogates(json.dumps(row, ensure_ascii=False, indent=2))
    return text.replace("\n", "\n  ")


def join_rows(encoded: Sequence[bytes]) -> bytes:
    """The file's bytes from rows encoded by :func:`encode_row` (as UTF-8): what
    ``json.dumps`` of the list with ``indent=2`` gives (``[]`` when there are none)."""
    if not encoded:
        return b"[]"
    return b"[\n  " + b",\n  ".join(encoded) + b"\n]"


#: Between rows handed to one scrub call: JSON text never holds a raw NUL (it is written
#: ``\\u0000``) and no environment value can, so no secret matches across it.
_SEP = "\x00"


def _copy(value: Any) -> Any:
    """A copy of a row's dicts and lists: a caller that appends to a row's ``errors`` in
    place must not find the kept row already equal to it (and its old text reused)."""
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


def _pieces(raw: bytes, n: int) -> list[bytes] | None:
    """The ``n`` rows of a file in this module's layout, each as :func:`encode_row` gives
    it. A row's own lines are indented 4 or more, so only a top-level row starts a line at
    2: ``,\\n  {`` is found between rows and nowhere else."""
    pieces = raw[4:-2].split(b",\n  {")
    if len(pieces) != n:  # cannot be, for bytes orjson wrote for n rows: encode them
        return None
    return [pieces[0], *(b"{" + c for c in pieces[1:])]


def _verbatim_in_json(value: str) -> bool:
    """Whether ``value`` is written inside a JSON string exactly as it is."""
    return value.isascii() and value.isprintable() and '"' not in value and "\\" not in value


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    """What says the file is still the one last seen: a writer replaces it (new inode),
    and mtime_ns and size catch a writer that rewrote it in place."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _fstat_key(fd: int) -> tuple[int, int, int]:
    """:func:`_stat_key` of an open file."""
    st = os.fstat(fd)
    return st.st_mtime_ns, st.st_size, st.st_ino


def _canonical(raw: bytes, rows: list[dict[str, Any]]) -> bool:
    """Whether the file's own bytes can stand for its rows: they are exactly what this
    module writes for them — re-encoding every row is most of a fresh process's first
    write. Not for another layout, or a float or a half emoji only ``json`` writes right.
    (Whether the scrub leaves them alone is asked separately: it depends on the secrets of
    the write.)

    The check is that orjson re-encodes the rows to the very bytes read. That is also
    what ``json.dumps`` writes, except for a file whose floats below 1e-4 are already in
    orjson's spelling (``0.00001``) — which neither flower nor the original writes."""
    if ORJSON is None or not rows:
        return False
    try:
        return bool(ORJSON.dumps(rows, option=_INDENT_2) == raw)
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate, a huge int
        return False


class _Found(NamedTuple):
    """A manifest file as read ahead: its stat and bytes, whether the bytes are canonical,
    each row's ``run`` — and its rows only when they are not canonical (the bytes stand for
    them otherwise: a big file's parsed rows are not held through a whole step for nothing)."""

    key: tuple[int, int, int]
    raw: bytes
    canonical: bool
    runs: list[Any]
    rows: list[dict[str, Any]] | None


#: What every escaped surrogate (half of a pair or not) starts with in the file's bytes.
_PAIRED = b"\\ud"

_DONE = threading.Thread()  # prefetch() has run and its result was taken or dropped


class Manifest:
    """Reads and writes ``<run_dir>/manifest.json`` on behalf of one run id.

    Keeps, between writes, the encoded (and scrubbed) bytes of this run's rows — a row equal
    to the one written last time is not encoded again — and of the other runs' rows with the
    stat of the file they came from. ``secrets`` (the values to mask, asked once per write)
    lets the kept bytes be re-scrubbed when a new secret becomes known; a plain ``scrub`` is
    taken to mask the same way for the life of the object. Safe to call from a worker
    thread (the Runtime writes off its event loop): one write at a time per process, as the
    file lock makes it across processes."""

    def __init__(self, path: Path, run_id: str,
                 notice: Callable[[str], None] | None = None,
                 scrub: Callable[[str], str] | None = None, book: Any = None,
                 secrets: Callable[[], Sequence[str]] | None = None) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self.book = book
        self._notice = notice or _stderr
        self._secrets = secrets
        self._scrub = scrub or (lambda text: text)  # the scrub of the write in progress
        self._plain = scrub is None and secrets is None  # nothing is ever masked
        self._holding = False  # this process is inside write(): a signal handler must not wait
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._guard = threading.Lock()  # the caches below: a worker thread and a handler
        self._masked: tuple[str, ...] | None = None  # the secrets the kept bytes are masked with
        self._seen: tuple[int, int, int] | None = None  # the file _others came from …
        self._seen_for = run_id  # … and the run id they are the others of
        self._others: list[bytes] = []  # other runs' rows, encoded
        self._others_plain = False  # … and they hold no escaped surrogate pair
        self._mine: list[tuple[dict[str, Any], bytes]] = []  # this run's rows and their bytes
        self._ahead: _Found | None = None  # what prefetch() read, until a write uses it
        self._reader: threading.Thread | None = None

    def prefetch(self) -> None:
        """Read, parse and check the file in a background thread, so that the first write of
        this process — after a whole step — does not pay for it. Safe to skip: a write whose
        file changed since (or that comes first) reads the file itself. Never moves a corrupt
        file aside: that happens under the lock, in the write."""
        if self._reader is not None:
            return
        self._reader = threading.Thread(target=self._read_ahead, daemon=True,
                                        name="flower-manifest-prefetch")
        self._reader.start()

    def _read_ahead(self) -> None:
        with contextlib.suppress(Exception):  # a missing or broken file: the write sees it
            key = _stat_key(self.path)  # first: a change after it only costs a re-read
            if key is None or self._recorded() == key:  # the write needs no parse
                return
            raw = self.path.read_bytes()
            rows = parse(raw)
            canonical = _canonical(raw, rows)
            self._ahead = _Found(key, raw, canonical, [r.get("run") for r in rows],
                                 None if canonical else rows)

    def _take_ahead(self, key: tuple[int, int, int] | None,
                    wait: bool) -> _Found | None:
        """What prefetch() found, if it is of the file now at ``key``; waits for the thread
        only when allowed (a signal handler must not)."""
        reader = self._reader
        if reader is None:
            return None
        if reader.is_alive():
            if not wait:
                return None
            reader.join()
        found, self._ahead, self._reader = self._ahead, None, _DONE
        if found is None or key is None or found.key != key:
            return None
        return found

    def _locked(self, *, timeout: float = 10.0) -> contextlib.AbstractContextManager[bool]:
        """Hold the cross-process lock; yields False if it could not be taken in time."""
        return file_lock(self._lock_path, timeout=timeout)

    def read(self) -> list[dict[str, Any]]:
        """All rows; a corrupt file is moved aside (and reported) and counts as empty."""
        return self._load()[1]

    def _load(self) -> tuple[bytes, list[dict[str, Any]]]:
        """The file's bytes and rows (a corrupt file moved aside: no bytes, no rows)."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return b"", []
        try:
            return raw, parse(raw)
        except ValueError as exc:  # bad UTF-8 and bad JSON alike
            aside = move_aside(self.path)
            if aside is not None:
                self._notice(f"flower: {self.path} was unreadable ({exc}); kept it as {aside} "
                             "and started a fresh manifest")
            return b"", []

    def write(self, rows: list[dict[str, Any]], *, blocking: bool = True) -> bool:
        """Replace this run's rows with ``rows``; other runs' rows are kept as they are.

        ``blocking=False`` is for signal handlers: it gives up at once if this very process
        is mid-write (waiting would deadlock) and waits at most 2 s for another process.
        Returns False when the rows could not be written.
        """
        if not blocking and self._holding:
            return False
        mine = [dict(r, run=self.run_id) for r in rows]
        if not self._guard.acquire(blocking=blocking):  # a worker thread is mid-write
            return False
        try:
            with self._locked(timeout=10.0 if blocking else 2.0) as got:
                if not got:
                    return False
                self._holding = True
                try:
                    self._pick_scrub()
                    body = join_rows([*self._other_rows(wait=blocking), *self._encode_mine(mine)])
                    atomic_write(self.path, body)
                    self._seen = _stat_key(self.path)  # ours, under the lock
                    plain = self._others_plain and not any(_PAIRED in d for _, d in self._mine)
                    self._record(self._seen if plain else None)
                finally:
                    self._holding = False
                    if blocking:  # the book gets the rows even when the disk refused
                        self._mirror(mine)
        finally:
            self._guard.release()
        return True

    def _pick_scrub(self) -> None:
        """The scrub of this write; kept bytes masked with other secrets are dropped."""
        if self._secrets is None:
            return
        from flower.core.env import redact

        masked = tuple(self._secrets())
        if masked != self._masked:
            self._masked, self._seen, self._mine = masked, None, []
        self._scrub = lambda text: redact(text, masked)

    def _encoded(self, rows: Sequence[dict[str, Any]]) -> list[bytes]:
        """Rows as they sit in the file: encoded, scrubbed in one call, UTF-8."""
        if not rows:
            return []
        texts = self._scrub(_SEP.join(encode_row(r) for r in rows)).split(_SEP)
        return [t.encode("utf-8") for t in texts]

    def _other_rows(self, *, wait: bool = True) -> list[bytes]:
        """Other runs' rows, encoded: from the cache while the file is the one this process
        last wrote or read, else read again (the stat is taken first, so a change after it
        only costs one more read next time)."""
        key = _stat_key(self.path)
        if key is None or key != self._seen or self._seen_for != self.run_id:
            quick = self._as_written(key)
            if quick is not None:
                self._others, self._seen, self._seen_for = quick, key, self.run_id
                self._others_plain = True
                self._take_ahead(None, wait=False)  # not needed any more
                return self._others
            found = self._take_ahead(key, wait=wait)
            rows: list[dict[str, Any]] | None
            if found is not None:
                _, raw, canonical, runs, rows = found
            else:
                raw, rows = self._load()
                canonical, runs = _canonical(raw, rows), [r.get("run") for r in rows]
            keep = [run != self.run_id for run in runs]
            pieces = None
            if canonical and self._untouched(raw):  # a fresh process: the inside is one piece
                pieces = [raw[4:-2]] if all(keep) else _pieces(raw, len(keep))
            if pieces is None:
                if rows is None:  # read ahead, and a secret of this write is in them
                    rows = parse(raw)
                self._others = self._encoded([r for r, k in zip(rows, keep, strict=True) if k])
            elif len(pieces) == 1 and all(keep):
                self._others = pieces
            else:
                self._others = [c for c, k in zip(pieces, keep, strict=True) if k]
            self._seen, self._seen_for = key, self.run_id
            self._others_plain = not any(_PAIRED in p for p in self._others)
        return self._others

    def _record(self, key: tuple[int, int, int] | None) -> None:
        """Note in the lock file the stat of the file this writer just left (under the
        lock); ``None`` clears the note. A fresh process that finds the manifest still at
        that stat knows its bytes are this module's, for rows it need not parse: any other
        writer (the original flower, an editor, an older flower) changes the stat. A lost
        or torn note only costs the next process a parse. A file holding an escaped
        surrogate pair is not noted: the pair reads back as one character, which a parse
        writes as itself, so such a file must be parsed (as it always was)."""
        with contextlib.suppress(OSError), open(self._lock_path, "r+b") as fh:
            if key is not None:
                fh.write(f"{key[0]} {key[1]} {key[2]}\n".encode("ascii"))
            fh.truncate()

    def _recorded(self) -> tuple[int, int, int] | None:
        """The stat :meth:`_record` noted last, if the note is whole."""
        try:
            note = self._lock_path.read_bytes()
        except OSError:
            return None
        parts = note[:-1].split(b" ")
        if not note.endswith(b"\n") or len(parts) != 3 or not all(p.isdigit() for p in parts):
            return None
        return int(parts[0]), int(parts[1]), int(parts[2])

    def _as_written(self, key: tuple[int, int, int] | None) -> list[bytes] | None:
        """Other runs' rows without parsing the file, when a flower writer left it as it is
        (:meth:`_record`), none of its rows can be this run's (its id is nowhere in the
        bytes) and the scrub leaves it alone: the inside of the array is then one piece.
        None when any of that is not sure — the caller parses."""
        if key is None or self._recorded() != key or not _verbatim_in_json(self.run_id):
            return None
        try:
            with open(self.path, "rb") as fh:
                if _fstat_key(fh.fileno()) != key:
                    return None
                raw = fh.read()
                if _fstat_key(fh.fileno()) != key:  # written in place as it was read
                    return None
        except OSError:
            return None
        if raw == b"[]":
            return []
        if not (raw.startswith(b"[\n  {") and raw.endswith(b"}\n]")):
            return None
        if f'"run": "{self.run_id}"'.encode("ascii") in raw:
            return None
        return [raw[4:-2]] if self._untouched(raw) else None

    def _untouched(self, raw: bytes) -> bool:
        """Whether the scrub leaves these bytes as they are. Secrets of printable ASCII
        without ``"`` or ``\\`` look the same JSON-escaped, so looking for their bytes is
        looking for every form the scrub masks (no 27 MB decode); other scrubs are run."""
        if self._plain:
            return True
        masked = self._masked if self._secrets is not None else None
        if masked is not None and all(_verbatim_in_json(v) for v in masked):
            return not any(v.encode("ascii") in raw for v in masked if v)
        text = raw.decode("utf-8")
        return self._scrub(text) == text

    def _encode_mine(self, mine: list[dict[str, Any]]) -> list[bytes]:
        """This run's rows encoded; a row equal to the one at its place last time keeps its
        bytes (finished steps do not change, only the last one grows)."""
        old = self._mine
        kept = [i < len(old) and old[i][0] == row for i, row in enumerate(mine)]
        fresh = iter(self._encoded([row for row, k in zip(mine, kept, strict=True) if not k]))
        self._mine = [old[i] if k else (_copy(row), next(fresh))
                      for i, (row, k) in enumerate(zip(mine, kept, strict=True))]
        return [data for _, data in self._mine]

    def _mirror(self, mine: list[dict[str, Any]]) -> None:
        """This run's rows (credentials scrubbed, as in the file) to the book."""
        if self.book is None:
            return
        try:
            rows = json.loads(self._scrub(json.dumps(mine, ensure_ascii=False)))
            self.book.put_manifest(self.run_id, rows)
        except Exception as exc:  # the book must never break the run it records
            self._notice(f"flower: could not mirror the manifest: {exc}")

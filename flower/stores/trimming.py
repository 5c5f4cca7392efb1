"""Layer 2 of the session store, the rules alone: feed the model less stale and bulky tool
output on resume.

Pure ``entries → entries`` transforms and their policies; the store classes that apply them
in ``load()`` are in ``layered.py``, and ``trim.py`` gathers both under the names scripts
import. Two orthogonal rules, both applied only to the copy ``load()`` returns (SQLite keeps
every byte, so everything here is reversible):

- ``EphemeralPolicy`` — time: results of read-only look-ups (``git status``, ``ls`` …, see
  ``is_ephemeral``) go stale and then mislead; old ones are replaced by an expiry note. Not
  spilled: re-running the command is the way to get it back.
- ``TrimPolicy`` — size: old tool results of ``min_chars`` or more are written to
  ``<workspace>/.flower/spill/<sha256[:16]>.txt`` and replaced by a pointer the agent can
  ``Read``.

Red lines: the tool_result block itself always stays (only its body changes, or the API
answers "Missing Tool Result Block"); ``isCompactSummary``/``isMeta`` entries are never
touched; image/document results are never trimmed.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flower import texts
from flower.shell import unwrap
from flower.stores.seal import key_id, state_key
from flower.stores.transcript import (
    Scan,
    Site,
    content_blocks,
    scan,
    site_block,
    site_text,
    with_content,
)

__all__ = ["MEMO_NAME", "EphemeralPolicy", "SpillMemo", "StaleScan", "TrimPolicy",
           "empty_report", "expire_entries", "plan_bodies", "replace_file", "set_bodies",
           "spill_dir", "trim_entries", "trim_report", "write_spill"]

log = logging.getLogger(__name__)
Entry = dict[str, Any]


@dataclass
class TrimPolicy:
    """Size rule: which old tool results are spilled to disk on resume."""

    keep_recent: int = 20
    min_chars: int = 2000
    spill_dirname: str = ".flower/spill"
    enabled: bool = True

    def placeholder(self, path: str, n: int) -> str:
        """The pointer line that replaces a spilled body of ``n`` characters."""
        return texts.SPILL_POINTER.format(n=n, path=path)


@dataclass
class EphemeralPolicy:
    """Time rule: which old read-only Bash results are marked expired on resume."""

    enabled: bool = True
    keep_recent: int = 6
    max_chars: int = 2000
    text: str = texts.EPHEMERAL_EXPIRED

    def placeholder(self, cmd: str, age: int) -> str:
        """Expiry note for ``cmd``: its first line, at most 60 chars, in backticks (for a
        glance in its bounded form, the command it wraps: that is what the model wrote)."""
        return self.text.format(cmd=_shown_command(cmd), age=age)


def _shown_command(cmd: str) -> str:
    lines = (unwrap(cmd) or cmd).strip().splitlines()
    first = lines[0][:60] if lines else ""
    return f"`{first}`"


_HOLE = "\x00"  # stands for the age in an expiry note's shape; no policy text has it


def _expiry_shape(text: str, cell: str) -> tuple[str, ...]:
    """The expiry note of one command split where its age goes: the thousands of notes
    of one load are then two concatenations each, not a ``format``. ``(cell,)`` when the
    text does not split in two there (a format spec on the age, the age used twice): the
    caller formats those."""
    try:
        parts = tuple(text.format(cmd=cell, age=_HOLE).split(_HOLE))
    except (ValueError, KeyError, IndexError):
        parts = ()
    return parts if len(parts) == 2 and _HOLE not in cell else (cell,)


def empty_report() -> dict[str, int]:
    return {"expired": 0, "cleared": 0, "kept": 0, "chars_saved": 0}


def copy_with_bodies(entries: list[Entry], sites: list[Site],
                     bodies: list[str | None]) -> list[Entry]:
    """``entries`` with the new ``bodies`` of ``sites``, copy-on-write (for callers' own lists)."""
    edits: dict[int, list[tuple[int, dict[str, Any], str]]] = {}
    for site, body in zip(sites, bodies, strict=True):
        if body is not None:
            edits.setdefault(site[0], []).append((site[1], site_block(entries, site), body))
    if not edits:
        return entries
    out = list(entries)
    for i, blocks in edits.items():
        content = list(content_blocks(entries[i]))
        for j, block, body in blocks:
            content[j] = {**block, "content": body}
        out[i] = with_content(entries[i], content)
    return out


class StaleScan(Exception):
    """A load index reused from an earlier load names a block these entries do not have as it
    said: the rows are not the ones it was made from. Nothing was changed yet."""


def set_bodies(entries: list[Entry], sites: list[Site], bodies: list[str | None]) -> None:
    """Give each site its new body in place: only for entries parsed for this very load.

    Copying an edited entry (``dict(entry)``) has to touch every object it refers to; over
    ~20k edited entries scattered through ~100 MB that was a quarter of the rewrite. Each
    block's stored text is checked against its site as it is changed: at the first that
    is not as the scan said, every change made is undone and ``StaleScan`` raised, so the
    entries are as parsed for a fresh scan.
    """
    done: list[tuple[dict[str, Any], Any]] = []
    keep = done.append
    try:
        for (i, j, size, *_), body in zip(sites, bodies, strict=True):
            if body is not None:
                block = entries[i]["message"]["content"][j]
                old = block["content"]
                if type(old) is str and len(old) != size:
                    raise StaleScan
                block["content"] = body
                keep((block, old))
    except (StaleScan, LookupError, TypeError):
        for block, old in reversed(done):
            block["content"] = old
        raise StaleScan from None


def spill_dir(workspace: Path, policy: TrimPolicy) -> Path:
    """``<workspace>/<spill_dirname>``; it must stay inside the workspace so the agent's
    ``Read`` can reach it (``ValueError`` otherwise)."""
    target = (workspace / policy.spill_dirname).resolve()
    if target != workspace and workspace not in target.parents:
        raise ValueError(f"spill_dirname {policy.spill_dirname!r} leaves the workspace")
    return target


MEMO_NAME = ".memo"  # in the spill dir: deleting the dir deletes what it remembers
# ``<file> <block> <length> <uuid> <seal>``: the file a content hash, the uuid printable,
# no space; the seal an HMAC of the rest under the per-user key (``seal.py``: the memo lies
# where an agent could write, and a forged line would point a result at another file)
_MEMO_LINE = re.compile(
    r"^(([0-9a-f]{16}\.txt) ([0-9]+) ([0-9]+) ([^ \n]+)) ([0-9a-f]{24})\n", re.M)


_MEMO_HEAD = "# flower spill memo, key {kid}\n"


def _memo_seal(key: bytes, line: str) -> str:
    return hmac.digest(key, line.encode("utf-8", "surrogatepass"), "sha256")[:12].hex()


class SpillMemo(dict[tuple[Any, int, int], str]):
    """(uuid, block index, body length) → spill path, kept on disk as well.

    Stored rows never change, so the triple pins a body: a resume that meets it again need
    not hash it (sha256 of every big result) nor look for its file. In memory that helps
    only the process that spilled it; a wake is a new process, and its first resume used to
    re-hash every big result of the transcript. So each new triple is also appended to
    ``<spill dir>/.memo`` (``<file> <block> <length> <uuid> <seal>`` per line), and a
    process reads that file the first time it trims into the directory. A line whose seal
    (an HMAC under the per-user key, ``flower.stores.seal``) does not match is not believed.

    The files are the record, the memo only a shortcut to them: a line is believed only
    while its file is in the directory (listed when the memo is read, and again whenever
    the directory changed since), so a deleted spill file is written again, never pointed
    at. A torn or foreign line is skipped. A plain dict works wherever a memo is asked
    for; it is just not kept.
    """

    def __init__(self) -> None:
        super().__init__()
        self.directory = ""
        self._stamp: int | None = None  # the directory's mtime when last listed
        self._pending: list[str] = []
        self._torn = False  # the file does not end with a newline (a write was cut off)
        #: triple → (path, pointer text): a warm resume formats no pointer twice
        self.pointers: dict[tuple[Any, int, int], tuple[str, str]] = {}
        self.failed = 0  # spills the disk refused in the last trim (they are tried again)

    def clear(self) -> None:
        super().clear()
        self.pointers.clear()

    def listing(self) -> tuple[str, int] | None:
        """``(directory, mtime)`` of the last listing ``sync`` trusts, None if it trusts none
        or the last trim could not write a spill: while the directory keeps that mtime,
        it holds the same files, so trimming the same rows again gives the same pointers."""
        if self._stamp is None or self.failed or not self.directory:
            return None
        return self.directory, self._stamp

    def sync(self, directory: str) -> None:
        """Make every remembered path one that exists in ``directory`` (call before use)."""
        try:
            stamp = os.stat(directory).st_mtime_ns
        except OSError:  # no spill dir (yet, or removed): everything is written again
            self.clear()
            self.directory, self._stamp = directory, None
            return
        if directory != self.directory:
            self.clear()
            self.directory, self._stamp = directory, None
            self._read()
        if stamp == self._stamp:
            return
        try:
            names = set(os.listdir(directory))
        except OSError:
            names = set()
        prefix = os.path.join(directory, "")
        cut, basename = len(prefix), os.path.basename  # a cut is ~5x cheaper than basename
        gone = [ident for ident, path in self.items()
                if not (path.startswith(prefix) and path[cut:] in names)
                and basename(path) not in names]
        for ident in gone:
            del self[ident]
        # a change within the filesystem's clock tick could hide behind the same stamp:
        # trust a stamp only once it is clearly in the past (listing again costs little)
        self._stamp = stamp if stamp < (time.time() - 2) * 1e9 else None

    def _read(self) -> None:
        key = state_key()
        if key is None:
            return
        try:
            with open(os.path.join(self.directory, MEMO_NAME), "rb") as fh:
                data = fh.read()
        except OSError:
            return
        self._torn = bool(data) and not data.endswith(b"\n")
        prefix = os.path.join(self.directory, "")  # what os.path.join puts before a name
        # one C pass over the file instead of a split per line (25k lines on a long run's
        # first resume); a foreign line, or a last one cut off before its newline, matches
        # nothing
        text = data.decode("utf-8", "replace")
        if not text.startswith(_MEMO_HEAD.format(kid=key_id(key).hex())):
            return  # an older flower's, or sealed on another machine: hashed again
        forged = 0
        for line, name, block, size, uid, seal in _MEMO_LINE.findall(text):
            if not hmac.compare_digest(seal, _memo_seal(key, line)):
                forged += 1
                continue
            dict.__setitem__(self, (uid, int(block), int(size)), prefix + name)
        if forged:
            log.warning(texts.MEMO_FORGED.format(path=os.path.join(self.directory, MEMO_NAME),
                                                 n=forged))

    def __setitem__(self, ident: tuple[Any, int, int], path: str) -> None:
        super().__setitem__(ident, path)
        uid = ident[0]
        if (self.directory and isinstance(uid, str) and uid.isprintable() and " " not in uid
                and os.path.dirname(path) == self.directory):
            line = f"{os.path.basename(path)} {ident[1]} {ident[2]} {uid}"
            key = state_key()
            if key is not None:
                self._pending.append(f"{line} {_memo_seal(key, line)}\n")

    def flush(self) -> None:
        """Append the triples remembered since the last flush (one write; a failed one only
        means the next process hashes those bodies again)."""
        if not self._pending or not self.directory:
            return
        data = ("\n" if self._torn else "") + "".join(self._pending)
        self._pending.clear()
        try:
            fd = os.open(os.path.join(self.directory, MEMO_NAME),
                         os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                key = state_key()
                if key is not None and os.fstat(fd).st_size == 0:  # a new memo: whose key
                    data = _MEMO_HEAD.format(kid=key_id(key).hex()) + data
                os.write(fd, data.encode("utf-8"))
            finally:
                os.close(fd)
            self._torn = False
        except OSError as exc:
            log.warning("could not record spilled results in %s: %s", self.directory, exc)


def plan_bodies(found: Scan, entries: list[Entry], *, workspace: Path, policy: TrimPolicy,
                ephemeral: EphemeralPolicy, memo: SpillMemo,
                report: dict[str, int]) -> list[str | None]:
    """The new body of each of ``found.sites`` (None: unchanged) under both rules; expiry
    first (an expired body is never spilled).

    One flat list aligned with the sites rather than a dict of dicts: a long run edits
    ~40k bodies per resume, and every extra container is one more object for the
    allocator and for the garbage collector's pass after the load.
    """
    bodies: list[str | None] = [None] * len(found.sites)
    if ephemeral.enabled:
        expire_sites(found.sites, found.commands, ephemeral, bodies, report)
    if policy.enabled:
        trim_sites(entries, found.sites, workspace, policy, memo, bodies, report)
    return bodies


def expire_entries(entries: list[Entry], ephemeral: EphemeralPolicy,
                   report: dict[str, int] | None = None) -> list[Entry]:
    """Copy-on-write: all but the newest ``keep_recent`` ephemeral Bash results expired."""
    found = scan(entries)
    bodies: list[str | None] = [None] * len(found.sites)
    expire_sites(found.sites, found.commands, ephemeral, bodies,
                 report if report is not None else empty_report())
    return copy_with_bodies(entries, found.sites, bodies)


def trim_entries(entries: list[Entry], workspace: Path, policy: TrimPolicy,
                 memo: SpillMemo | None = None,
                 report: dict[str, int] | None = None) -> list[Entry]:
    """Copy-on-write: all but the newest ``keep_recent`` big text results spilled."""
    sites = scan(entries).sites
    bodies: list[str | None] = [None] * len(sites)
    trim_sites(entries, sites, workspace, policy, memo if memo is not None else {}, bodies,
               report if report is not None else empty_report())
    return copy_with_bodies(entries, sites, bodies)


def expire_sites(sites: list[Site], commands: dict[str, str], pol: EphemeralPolicy,
                 bodies: list[str | None], report: dict[str, int]) -> None:
    """Set ``bodies[k]`` of every ephemeral result to expire (see ``plan_bodies``)."""
    # A site's tid is set only if it answers an ephemeral call (see ``Site``).
    limit = pol.max_chars
    eligible = [k for k, (_, _, size, tid, _) in enumerate(sites)
                if tid is not None and 0 <= size <= limit]
    n = len(eligible)
    old = eligible[: max(n - max(pol.keep_recent, 0), 0)]
    if type(pol).placeholder is EphemeralPolicy.placeholder:
        # the same few commands expire thousands of times: shape each one's text once
        shapes: dict[str, tuple[str, ...]] = {}
        text = pol.text
        for age, k in enumerate(old, start=-n):
            cmd = commands[sites[k][3]]
            shape = shapes.get(cmd)
            if shape is None:
                shape = shapes[cmd] = _expiry_shape(text, _shown_command(cmd))
            bodies[k] = (shape[0] + str(-age) + shape[1] if len(shape) == 2
                         else text.format(cmd=shape[0], age=-age))
    else:  # a subclass's own placeholder decides
        for age, k in enumerate(old, start=-n):
            bodies[k] = pol.placeholder(commands[sites[k][3]], -age)
    report["expired"] += len(old)


def trim_sites(entries: list[Entry], sites: list[Site], workspace: Path, pol: TrimPolicy,
               memo: SpillMemo, bodies: list[str | None], report: dict[str, int]) -> None:
    """Set ``bodies[k]`` of every big result to spill, unless already set (expired)."""
    minimum = max(pol.min_chars, 0)  # a site without text has length NO_TEXT (-1)
    big = [k for k, (_, _, size, _, _) in enumerate(sites)
           if size >= minimum and bodies[k] is None]  # an expired body is already tiny
    keep = min(max(pol.keep_recent, 0), len(big))
    directory = str(spill_dir(workspace, pol)) if len(big) > keep else ""
    if directory and isinstance(memo, SpillMemo):
        memo.sync(directory)
    elif directory and not os.path.isdir(directory):
        memo.clear()  # spill dir removed: write everything again
    # the pointer of a remembered body is the same text at every resume (for the policy's
    # own placeholder; a subclass's is asked each time)
    pointers = (memo.pointers if isinstance(memo, SpillMemo)
                and type(pol).placeholder is TrimPolicy.placeholder else None)
    cleared = saved = failed = 0
    remembered, placeholder = memo.get, pol.placeholder
    for k in big[: len(big) - keep]:
        site = sites[k]
        _, j, size, _, uid = site
        ident = (uid, j, size)
        path = remembered(ident)
        if path is None:
            body = site_text(entries, site)  # a scan of other rows: Layers says StaleScan
            if body is None or len(body) != size:
                raise StaleScan
            path = write_spill(body, directory)
            if path is not None and uid is not None:
                memo[ident] = path
            if path is None:
                keep += 1
                failed += 1
                continue
        seen = pointers.get(ident) if pointers is not None else None
        if seen is not None and seen[0] == path:
            pointer = seen[1]
        else:
            pointer = placeholder(path, size)
            if pointers is not None and uid is not None:
                pointers[ident] = (path, pointer)
        bodies[k] = pointer
        cleared += 1
        saved += size - len(pointer)
    report["cleared"] += cleared
    report["chars_saved"] += saved
    report["kept"] += keep
    if isinstance(memo, SpillMemo):
        memo.failed = failed
        memo.flush()


def replace_file(path: str, data: bytes, *, prefix: str) -> None:
    """Put ``data`` at ``path`` whole or not at all: written to a temp file (mode 600) in
    the same directory, then renamed over it. No fsync: what lands here is a cache."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_spill(body: str, directory: str) -> str | None:
    """Write ``body`` once, atomically, content-addressed; the path, or None if the disk refuses.

    Shared by the resume-time trim and the live ``spill_guard``, so one result always lands
    in one file. A failed spill keeps the result in context rather than failing the caller.
    Plain ``os.path`` strings: a long run spills thousands of results per load.
    """
    data = body.encode("utf-8", "surrogatepass")
    path = os.path.join(directory, hashlib.sha256(data).hexdigest()[:16] + ".txt")
    try:  # one already there is believed only with these very bytes: a name can be planted
        with open(path, "rb") as fh:
            if fh.read(len(data) + 1) == data:
                return path
    except OSError:
        pass
    try:
        os.makedirs(directory, exist_ok=True)
        replace_file(path, data, prefix=".spill-")
    except OSError as exc:
        log.warning("could not spill a tool result to %s: %s", directory, exc)
        return None
    return path


def trim_report(store: Any) -> str:
    """One line for UI logs describing what the last ``load()`` trimmed or expired (any
    store with a ``last_report``: the SQLite layers or ``LayeredSessionStore``)."""
    r = store.last_report
    if r.get("cleared", 0):
        return texts.TRIM_DONE.format(cleared=r["cleared"], kept=r.get("kept", 0),
                                      tokens=r.get("chars_saved", 0) // 4)
    if r.get("expired", 0):
        return texts.TRIM_EXPIRED_ONLY.format(expired=r["expired"])
    return texts.TRIM_NOTHING


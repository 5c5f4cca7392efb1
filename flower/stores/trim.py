"""Layer 2 of the session store: on resume, feed the model less stale and bulky tool output.

Two orthogonal rules, both applied only to the copy ``load()`` returns (SQLite keeps every
byte, so everything here is reversible):

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
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claude_agent_sdk import SessionKey

from flower import texts
from flower.stores.ephemeral import is_ephemeral
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.transcript import Scan, Site, content_blocks, scan, with_content

__all__ = [
    "EphemeralPolicy",
    "TrimPolicy",
    "TrimmingSessionStore",
    "is_ephemeral",
    "trim_report",
]

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
        """Expiry note for ``cmd``: its first line, at most 60 chars, in backticks."""
        lines = cmd.strip().splitlines()
        first = lines[0][:60] if lines else ""
        return self.text.format(cmd=f"`{first}`", age=age)


def _empty_report() -> dict[str, int]:
    return {"expired": 0, "cleared": 0, "kept": 0, "chars_saved": 0}


# entry index -> block index -> (the tool_result block, its new body)
_Edits = dict[int, dict[int, tuple[dict[str, Any], str]]]


def _copy_with_bodies(entries: list[Entry], edits: _Edits) -> list[Entry]:
    """``entries`` with the edited bodies, copy-on-write (for callers' own lists)."""
    if not edits:
        return entries
    out = list(entries)
    for i, blocks in edits.items():
        content = list(content_blocks(entries[i]))
        for j, (block, body) in blocks.items():
            content[j] = {**block, "content": body}
        out[i] = with_content(entries[i], content)
    return out


def _set_bodies(edits: _Edits) -> None:
    """Apply the edited bodies in place: only for entries parsed for this very load.

    Copying an edited entry (``dict(entry)``) has to touch every object it refers to; over
    ~20k edited entries scattered through ~100 MB that was a quarter of the rewrite.
    """
    for blocks in edits.values():
        for block, body in blocks.values():
            block["content"] = body


class TrimmingSessionStore(SqliteSessionStore):
    """``SqliteSessionStore`` whose ``load()`` expires stale look-ups and spills old bulk."""

    def __init__(self, path: str | Path, workspace: str | Path,
                 policy: TrimPolicy | None = None,
                 ephemeral: EphemeralPolicy | None = None) -> None:
        self.workspace = Path(workspace).resolve()
        self.policy = policy if policy is not None else TrimPolicy()
        self.ephemeral = ephemeral if ephemeral is not None else EphemeralPolicy()
        self.last_report: dict[str, int] = _empty_report()
        self._spilled: dict[tuple[Any, int, int], str] = {}
        self._spill_dir()  # fail at construction, not at the first resume
        super().__init__(path)

    def _spill_dir(self) -> Path:
        """``<workspace>/<spill_dirname>``; it must stay inside the workspace so the agent's
        ``Read`` can reach it."""
        target = (self.workspace / self.policy.spill_dirname).resolve()
        if target != self.workspace and self.workspace not in target.parents:
            raise ValueError(f"spill_dirname {self.policy.spill_dirname!r} leaves the workspace")
        return target

    # ----------------------------------------------------------------- load pipeline

    def _rewrite(self, key: SessionKey, entries: list[Any]) -> list[Any]:
        entries = super()._rewrite(key, entries)
        return self._rewrite_scanned(key, entries, scan(entries))

    def _rewrite_scanned(self, key: SessionKey, entries: list[Any], found: Scan) -> list[Any]:
        """Expire and spill using ``found`` (the scan of ``entries``), editing in place.

        In place is safe here: ``entries`` were parsed from the stored rows for this load
        call alone (see ``SqliteSessionStore._rewrite``). The list keeps its length and
        every entry keeps its keys, so ``found`` stays valid for the layers above.
        """
        report = _empty_report()
        if self.ephemeral.enabled or self.policy.enabled:
            _set_bodies(self._plan(found, report))
        if key.get("subpath") is None:  # subagent loads must not overwrite the step's report
            self.last_report = report
        return entries

    def _plan(self, found: Scan, report: dict[str, int]) -> _Edits:
        """The body edits of both rules; expiry first (an expired body is never spilled)."""
        edits: _Edits = {}
        if self.ephemeral.enabled:
            self._expire_sites(found.sites, found.commands, edits, report)
        if self.policy.enabled:
            self._trim_sites(found.sites, edits, report)
        return edits

    def expire(self, entries: list[Entry]) -> list[Entry]:
        """Replace the bodies of all but the newest ``keep_recent`` ephemeral Bash results."""
        found = scan(entries)
        edits: _Edits = {}
        self._expire_sites(found.sites, found.commands, edits, self.last_report)
        return _copy_with_bodies(entries, edits)

    def trim(self, entries: list[Entry]) -> list[Entry]:
        """Spill all but the newest ``keep_recent`` text results of ``min_chars`` or more."""
        edits: _Edits = {}
        self._trim_sites(scan(entries).sites, edits, self.last_report)
        return _copy_with_bodies(entries, edits)

    def _expire_sites(self, sites: list[Site], commands: dict[str, str], edits: _Edits,
                      report: dict[str, int]) -> None:
        pol = self.ephemeral
        # A site's tid is set only if it answers an ephemeral call (see ``Site``).
        eligible = [(i, j, block, commands[tid]) for i, j, block, body, tid, _ in sites
                    if tid is not None and body is not None and len(body) <= pol.max_chars]
        old = eligible[: max(len(eligible) - max(pol.keep_recent, 0), 0)]
        for k, (i, j, block, cmd) in enumerate(old):
            note = pol.placeholder(cmd, len(eligible) - k)
            edits.setdefault(i, {})[j] = (block, note)
        report["expired"] += len(old)

    def _trim_sites(self, sites: list[Site], edits: _Edits, report: dict[str, int]) -> None:
        pol = self.policy
        big = [(i, j, block, body, uid) for i, j, block, body, _, uid in sites
               if body is not None and len(body) >= pol.min_chars
               and j not in edits.get(i, ())]  # an expired body is already tiny
        keep = min(max(pol.keep_recent, 0), len(big))
        directory = str(self._spill_dir()) if len(big) > keep else ""
        if directory and not os.path.isdir(directory):
            self._spilled.clear()  # spill dir removed: write everything again
        for i, j, block, body, uid in big[: len(big) - keep]:
            # Stored rows never change, so (uuid, block) pins the body: skip re-hashing and
            # re-checking it on every later resume in this process.
            ident = (uid, j, len(body))
            path = self._spilled.get(ident)
            if path is None:
                path = write_spill(body, directory)
                if path is not None and ident[0] is not None:
                    self._spilled[ident] = path
            if path is None:
                keep += 1
                continue
            pointer = pol.placeholder(path, len(body))
            edits.setdefault(i, {})[j] = (block, pointer)
            report["cleared"] += 1
            report["chars_saved"] += len(body) - len(pointer)
        report["kept"] += keep

def write_spill(body: str, directory: str) -> str | None:
    """Write ``body`` once, atomically, content-addressed; the path, or None if the disk refuses.

    Shared by the resume-time trim and the live ``spill_guard``, so one result always lands
    in one file. A failed spill keeps the result in context rather than failing the caller.
    Plain ``os.path`` strings: a long run spills thousands of results per load.
    """
    data = body.encode("utf-8", "surrogatepass")
    path = os.path.join(directory, hashlib.sha256(data).hexdigest()[:16] + ".txt")
    if os.path.exists(path):
        return path
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".spill-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        log.warning("could not spill a tool result to %s: %s", directory, exc)
        return None
    return path


def trim_report(store: TrimmingSessionStore) -> str:
    """One line for UI logs describing what the last ``load()`` trimmed or expired."""
    r = store.last_report
    if r.get("cleared", 0):
        return texts.TRIM_DONE.format(cleared=r["cleared"], kept=r.get("kept", 0),
                                      tokens=r.get("chars_saved", 0) // 4)
    if r.get("expired", 0):
        return texts.TRIM_EXPIRED_ONLY.format(expired=r["expired"])
    return texts.TRIM_NOTHING

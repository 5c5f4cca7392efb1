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
from functools import lru_cache
from pathlib import Path
from typing import Any

from claude_agent_sdk import SessionKey

from flower import texts
from flower.stores.ephemeral import is_ephemeral
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.transcript import (
    content_blocks,
    is_protected,
    result_text,
    with_content,
)

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


@lru_cache(maxsize=4096)
def _ephemeral(cmd: str) -> bool:
    # Long runs repeat the same few commands thousands of times; lexing each once is enough.
    return is_ephemeral(cmd)


def _empty_report() -> dict[str, int]:
    return {"expired": 0, "cleared": 0, "kept": 0, "chars_saved": 0}


# (entry index, block index, tool_result block, text body or None, tool_use_id)
_Site = tuple[int, int, dict[str, Any], "str | None", Any]


def _scan(entries: list[Entry]) -> tuple[list[_Site], dict[str, str]]:
    """Every tool_result block outside protected entries, and ephemeral Bash commands by
    tool_use id (only calls that precede their result count). Inlined type checks: this
    walks every entry of a long run on each resume."""
    sites: list[_Site] = []
    commands: dict[str, str] = {}
    for i, e in enumerate(entries):
        kind = e.get("type")
        if kind != "user" and kind != "assistant":
            continue
        message = e.get("message")
        content = message.get("content") if type(message) is dict else None
        if type(content) is not list:
            continue
        if kind == "assistant":
            for b in content:
                if type(b) is dict and b.get("name") == "Bash" and b.get("type") == "tool_use":
                    inp = b.get("input")
                    cmd = inp.get("command") if type(inp) is dict else None
                    tid = b.get("id")
                    if type(cmd) is str and type(tid) is str and _ephemeral(cmd):
                        commands[tid] = cmd
        elif not is_protected(e):
            for j, b in enumerate(content):
                if type(b) is dict and b.get("type") == "tool_result":
                    tid = b.get("tool_use_id")
                    body = b.get("content")
                    text = body if type(body) is str else result_text(b)
                    sites.append((i, j, b, text, tid if tid in commands else None))
    return sites, commands


def _replace_bodies(entries: list[Entry], edits: dict[int, dict[int, dict[str, Any]]],
                    ) -> list[Entry]:
    """Apply ``edits[entry_index][block_index] = new_block`` copy-on-write."""
    if not edits:
        return entries
    out = list(entries)
    for i, blocks in edits.items():
        content = list(content_blocks(entries[i]))
        for j, block in blocks.items():
            content[j] = block
        out[i] = with_content(entries[i], content)
    return out


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
        report = _empty_report()
        if self.ephemeral.enabled or self.policy.enabled:
            # One scan serves both rules (a long run has ~50k entries).
            sites, commands = _scan(entries)
            edits: dict[int, dict[int, dict[str, Any]]] = {}
            if self.ephemeral.enabled:
                self._expire_sites(entries, sites, commands, edits, report)
            if self.policy.enabled:
                self._trim_sites(entries, sites, edits, report)
            entries = _replace_bodies(entries, edits)
        if key.get("subpath") is None:  # subagent loads must not overwrite the step's report
            self.last_report = report
        return entries

    def expire(self, entries: list[Entry]) -> list[Entry]:
        """Replace the bodies of all but the newest ``keep_recent`` ephemeral Bash results."""
        sites, commands = _scan(entries)
        edits: dict[int, dict[int, dict[str, Any]]] = {}
        self._expire_sites(entries, sites, commands, edits, self.last_report)
        return _replace_bodies(entries, edits)

    def trim(self, entries: list[Entry]) -> list[Entry]:
        """Spill all but the newest ``keep_recent`` text results of ``min_chars`` or more."""
        sites, _ = _scan(entries)
        edits: dict[int, dict[int, dict[str, Any]]] = {}
        self._trim_sites(entries, sites, edits, self.last_report)
        return _replace_bodies(entries, edits)

    def _expire_sites(self, entries: list[Entry], sites: list[_Site], commands: dict[str, str],
                      edits: dict[int, dict[int, dict[str, Any]]],
                      report: dict[str, int]) -> None:
        pol = self.ephemeral
        eligible = [(i, j, block, commands[tid]) for i, j, block, body, tid in sites
                    if tid in commands and body is not None and len(body) <= pol.max_chars]
        old = eligible[: max(len(eligible) - max(pol.keep_recent, 0), 0)]
        for k, (i, j, block, cmd) in enumerate(old):
            note = pol.placeholder(cmd, len(eligible) - k)
            edits.setdefault(i, {})[j] = {**block, "content": note}
        report["expired"] += len(old)

    def _trim_sites(self, entries: list[Entry], sites: list[_Site],
                    edits: dict[int, dict[int, dict[str, Any]]],
                    report: dict[str, int]) -> None:
        pol = self.policy
        big = [(i, j, block, body) for i, j, block, body, _ in sites
               if body is not None and len(body) >= pol.min_chars
               and j not in edits.get(i, ())]  # an expired body is already tiny
        keep = min(max(pol.keep_recent, 0), len(big))
        directory = str(self._spill_dir()) if len(big) > keep else ""
        if directory and not os.path.isdir(directory):
            self._spilled.clear()  # spill dir removed: write everything again
        for i, j, block, body in big[: len(big) - keep]:
            # Stored rows never change, so (uuid, block) pins the body: skip re-hashing and
            # re-checking it on every later resume in this process.
            ident = (entries[i].get("uuid"), j, len(body))
            path = self._spilled.get(ident)
            if path is None:
                path = self._spill(body, directory)
                if path is not None and ident[0] is not None:
                    self._spilled[ident] = path
            if path is None:
                keep += 1
                continue
            pointer = pol.placeholder(path, len(body))
            edits.setdefault(i, {})[j] = {**block, "content": pointer}
            report["cleared"] += 1
            report["chars_saved"] += len(body) - len(pointer)
        report["kept"] += keep

    def _spill(self, body: str, directory: str) -> str | None:
        """Write ``body`` once, atomically, content-addressed; None if the disk refuses.

        A failed spill keeps the result in context rather than failing the resume. Plain
        ``os.path`` strings: a long run spills thousands of results per load.
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

"""What the post-mortem counts in a run's stored transcripts: per session and subagent the
rounds, tool calls, tool results, tokens, denials and synthetic errors, and what a
resume-time ``load()`` would rewrite.

It reads the store ``flower log`` reads (:func:`flower.stores.readers.open_reader`), through
the same reader, so both views agree on every round. Read-only: the resume rewrite is
counted by the store's own layers on a scratch store in a temporary folder.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flower import texts
from flower.core.paths import project_key
from flower.runlog.model import RunLog, _count
from flower.stores.readers import (
    SYNTHETIC_MODEL,
    KeyFinder,
    Round,
    open_reader,
    parse_timestamp,
)
from flower.usage import entry_context

__all__ = ["DISPATCH_TOOLS", "TOP_RESULTS", "SessionDetail", "ToolResult", "Transcript",
           "load_details", "slope"]

#: Tool names of a subagent dispatch in the main thread (the CLI renamed ``Task`` to ``Agent``).
DISPATCH_TOOLS = frozenset({"Agent", "Task"})
TOP_RESULTS = 10
_PREVIEW = 120
_SPILL_HEAD = texts.SPILL_NOTE.split("{", 1)[0]  # live spill_guard pointers start like this
_DENIAL_KINDS = ("permission-rule", "automode-blocked")
_LONE = re.compile("[\ud800-\udfff]")  # half an emoji: a preview must print as UTF-8


@dataclass
class ToolResult:
    """One tool result as stored (before any resume-time rewriting)."""

    chars: int
    tool: str
    session_id: str
    agent: str | None  # the subagent's id, None for the main thread
    at: float | None
    preview: str


@dataclass
class Transcript:
    """What one stored transcript (a main session or one of its subagents) holds."""

    key: str
    session_id: str
    agent: str | None = None  # "agent-…" for a subagent transcript
    entries: int = 0
    rounds: list[Round] = field(default_factory=list)
    calls: list[tuple[float | None, str]] = field(default_factory=list)  # (when, tool name)
    results: list[ToolResult] = field(default_factory=list)
    input_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    api_errors: int = 0  # the CLI's synthetic error messages (outages, refusals)
    denials: int = 0  # tool calls refused by a permission rule or hook
    spill_pointers: int = 0  # results spill_guard replaced by a pointer while live
    first_at: float | None = None
    last_at: float | None = None

    @property
    def dispatches(self) -> int:
        return sum(1 for _, name in self.calls if name in DISPATCH_TOOLS)

    @property
    def duration_s(self) -> float | None:
        if self.first_at is None or self.last_at is None:
            return None
        return round(self.last_at - self.first_at, 2)


@dataclass
class SessionDetail:
    """A main session, its subagents, and what a resume-time ``load()`` would rewrite."""

    session_id: str
    main: Transcript
    subagents: list[Transcript] = field(default_factory=list)
    #: counts of the store's layers on this transcript: expired, trimmed, kept, chars_saved
    #: (layer 2) and pruned, denials_dropped, neutralized, healed (layer 3); None: not computed
    resume: dict[str, int] | None = None


def _tool_names(entries: list[dict[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for e in entries:
        for b in _blocks(e):
            if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                names[b["id"]] = str(b.get("name") or "?")
    return names


def _blocks(entry: Any) -> list[dict[str, Any]]:
    message = entry.get("message") if isinstance(entry, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _body(block: dict[str, Any]) -> str:
    body = block.get("content")
    if isinstance(body, str):
        return body
    if isinstance(body, list):
        parts = [b.get("text") if isinstance(b, dict) and isinstance(b.get("text"), str)
                 else json.dumps(b, ensure_ascii=False, default=str) for b in body]
        return "\n".join(parts)
    return "" if body is None else json.dumps(body, ensure_ascii=False, default=str)


def _tally(key: str, sid: str, agent: str | None,
           entries: list[dict[str, Any]]) -> Transcript:
    """One pass over a transcript's entries."""
    t = Transcript(key=key, session_id=sid, agent=agent, entries=len(entries))
    names = _tool_names(entries)
    seen: dict[str, int] = {}  # message id -> index in t.rounds (one entry per content block)
    for n, e in enumerate(entries):
        if not isinstance(e, dict):
            continue
        at = _timestamp_of(e)
        if at is not None:
            t.first_at = at if t.first_at is None else min(t.first_at, at)
            t.last_at = at if t.last_at is None else max(t.last_at, at)
        message = e.get("message") if isinstance(e.get("message"), dict) else {}
        if e.get("type") == "assistant":
            if e.get("isApiErrorMessage") or message.get("model") == SYNTHETIC_MODEL:
                t.api_errors += 1
                continue
            for b in _blocks(e):
                if b.get("type") == "tool_use":
                    t.calls.append((at, str(b.get("name") or "?")))
            size = entry_context(e)
            if size:
                mid = message.get("id")
                ident = mid if isinstance(mid, str) and mid else f"#{n}"
                if ident not in seen:
                    seen[ident] = len(t.rounds)
                    t.rounds.append(Round(at, size))
                    usage = message.get("usage") or {}
                    t.input_tokens += _count(usage.get("input_tokens"))
                    t.cache_read += _count(usage.get("cache_read_input_tokens"))
                    t.cache_creation += _count(usage.get("cache_creation_input_tokens"))
                    t.output_tokens += _count(usage.get("output_tokens"))
                    details = usage.get("output_tokens_details")
                    if isinstance(details, dict):
                        t.thinking_tokens += _count(details.get("thinking_tokens"))
        elif e.get("type") == "user":
            denied = e.get("toolDenialKind") in _DENIAL_KINDS
            for b in _blocks(e):
                if b.get("type") != "tool_result":
                    continue
                t.denials += denied
                body = _body(b)
                if body.startswith(_SPILL_HEAD):
                    t.spill_pointers += 1
                tool = names.get(str(b.get("tool_use_id")), "?")
                preview = _LONE.sub("\ufffd", " ".join(body[:_PREVIEW * 2].split())[:_PREVIEW])
                t.results.append(ToolResult(len(body), tool, sid, agent, at, preview))
    return t


def _timestamp_of(entry: dict[str, Any]) -> float | None:
    return parse_timestamp(entry.get("timestamp"))



def _resume_counts(entries: list[dict[str, Any]], scratch: Path) -> dict[str, int]:
    """What a resume's load would rewrite in ``entries`` — expire, trim, prune — by the same
    layers the Runtime's store applies (spill files land in ``scratch``, never in the run
    dir). The layers alone: the store classes would import the SDK, ~1.7 s of CPU."""
    from flower.stores.layers import Layers
    from flower.stores.pruning import PrunePolicy

    layers = Layers(scratch, prune=PrunePolicy())
    layers.last_report = {"expired": 0, "cleared": 0, "kept": 0, "chars_saved": 0}
    layers.prune(layers.trim(layers.expire(entries)))
    r = layers.last_report
    return {"expired": r["expired"], "trimmed": r["cleared"], "kept": r["kept"],
            "chars_saved": r["chars_saved"], "pruned": layers.pruned,
            "denials_dropped": layers.denials_dropped, "neutralized": layers.neutralized,
            "healed": layers.healed}


def load_details(log: RunLog, *, resume: bool = True) -> dict[str, SessionDetail]:
    """Every main session in the store — the manifest's first (live and handed-off, in
    manifest order), then any other (an aside, a run without a manifest row; in a shared
    PostgreSQL store only those under this workspace's project key) — with its subagents.
    The store is the one ``flower log`` reads: ``--store`` / ``FLOWER_STORE_URL`` when set
    (PostgreSQL or a SQLite path), else ``<run_dir>/sessions.db``. Read-only; with
    ``resume`` the resume-time rewrite is counted on a scratch store in a temporary folder
    (this imports the SDK). Empty when the store is missing or unreadable."""
    reader = open_reader(log.run_dir, schema=log.schema)[1]
    if reader is None:
        return {}
    pk = project_key(log.workspace)
    wanted = list(dict.fromkeys(sid for row in log.rows for sid in row.sessions))
    out: dict[str, SessionDetail] = {}
    try:
        keys: dict[str, str] = {}
        candidates = KeyFinder(reader, pk)  # one meta read for all ids, not one per id
        for sid in wanted:
            for key in candidates(sid):
                if reader.has(key):
                    keys[sid] = key
                    break
        for key in reader.main_keys(pk):
            sid = key.split("/", 1)[1]
            keys.setdefault(sid, key)
        with tempfile.TemporaryDirectory(prefix="flower-analyze-") as tmp:
            for n, (sid, key) in enumerate(keys.items()):
                entries = reader.entries(key)
                detail = SessionDetail(sid, _tally(key, sid, None, entries))
                prefix = f"{key}/subagents/"
                for sub in reader.subagents(key):
                    agent = sub[len(prefix):]
                    detail.subagents.append(_tally(sub, sid, agent, reader.entries(sub)))
                if resume and entries:
                    scratch = Path(tmp) / str(n)
                    scratch.mkdir()
                    detail.resume = _resume_counts(entries, scratch)
                out[sid] = detail
    except reader.errors:
        return out
    finally:
        reader.close()
    return out


def slope(values: list[int]) -> float | None:
    """Context growth per round, ``(last − first) / rounds``: one number that says how fast
    a run approaches its window (28.7K → 185.9K over 70 rounds is ≈ 2.2K/round, the long
    healthy run docs/analyze.md describes). None for fewer than two rounds."""
    if len(values) < 2:
        return None
    return (values[-1] - values[0]) / len(values)



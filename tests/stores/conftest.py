"""Fixtures for the session-store tests: recorded CLI transcripts and small entry builders."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import flower.stores.loadindex as index_module

FIXTURES = Path(__file__).parent / "fixtures"


def recorded(name: str) -> dict[str, Any]:
    """A transcript recorded from the real CLI by record_fixtures.py."""
    return json.loads((FIXTURES / f"{name}.json").read_text())


def key_of(doc: dict[str, Any], subpath: str | None = None) -> dict[str, str]:
    key = {"project_key": doc["project_key"], "session_id": doc["session_id"]}
    if subpath:
        key["subpath"] = subpath
    return key


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "sessions.db"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


class Chain:
    """Builds a parentUuid-linked transcript shaped like the CLI's (sdk-notes §4.4)."""

    def __init__(self, session_id: str = "sess-1") -> None:
        self.entries: list[dict[str, Any]] = []
        self.sid = session_id
        self._n = 0
        self._tool = 0

    def _add(self, entry: dict[str, Any]) -> dict[str, Any]:
        self._n += 1
        entry.setdefault("uuid", f"u{self._n:05d}")
        last = next((e["uuid"] for e in reversed(self.entries) if "uuid" in e), None)
        entry.setdefault("parentUuid", last)
        entry.setdefault("sessionId", self.sid)
        entry.setdefault("timestamp", f"2026-01-01T00:00:{self._n % 60:02d}.000Z")
        self.entries.append(entry)
        return entry

    def prompt(self, text: str) -> dict[str, Any]:
        return self._add({"type": "user", "message": {"role": "user", "content": text}})

    def say(self, text: str, **extra: Any) -> dict[str, Any]:
        return self._add({"type": "assistant", **extra, "message": {
            "id": f"msg{self._n}", "role": "assistant", "model": "claude-opus-5-5",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 100 + self._n, "cache_read_input_tokens": 10,
                      "cache_creation_input_tokens": 1, "output_tokens": 5}}})

    def call(self, name: str, inp: dict[str, Any]) -> str:
        self._tool += 1
        tid = f"toolu_{self._tool:04d}"
        self._add({"type": "assistant", "message": {
            "id": f"msg{self._n}", "role": "assistant", "model": "claude-opus-5-5",
            "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]}})
        return tid

    def result(self, tid: str, body: Any, *, is_error: bool = False,
               **extra: Any) -> dict[str, Any]:
        return self._add({"type": "user", **extra, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": body, "is_error": is_error}]},
            "toolUseResult": {"stdout": body if isinstance(body, str) else ""}})

    def bash(self, cmd: str, out: str, **extra: Any) -> str:
        tid = self.call("Bash", {"command": cmd})
        self.result(tid, out, **extra)
        return tid

    def raw(self, entry: dict[str, Any]) -> dict[str, Any]:
        return self._add(entry)

    def looks_and_reads(self, rounds: int) -> None:
        """Per round a stale-able glance and a big result: what expiry and trim act on."""
        for i in range(rounds):
            self.bash("git branch", f"clean {i}")
            self.bash("cat big.log", "z" * 3000 + str(i))

    def denied(self, cmd: str = "rm -rf /") -> str:
        """A call the permission rules refused (what prune drops, keeping the newest)."""
        tid = self.call("Bash", {"command": cmd})
        self.result(tid, "denied", is_error=True, toolDenialKind="permission-rule")
        return tid

    def api_error(self) -> dict[str, Any]:
        """The CLI's synthetic "API Error" assistant message (what prune removes)."""
        return self.raw({"type": "assistant", "isApiErrorMessage": True, "message": {
            "model": "<synthetic>", "role": "assistant",
            "content": [{"type": "text", "text": "x"}]}})

    def bookkeeping(self) -> dict[str, Any]:
        """A chain-less entry like ``last-prompt``."""
        last = next(e["uuid"] for e in reversed(self.entries) if "uuid" in e)
        entry = {"type": "last-prompt", "leafUuid": last, "sessionId": self.sid}
        self.entries.append(entry)
        return entry


@pytest.fixture
def chain() -> Callable[..., Chain]:
    return Chain


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the loads that scanned their entries (a replayed load scans none), each
    with the number of entries it walked (a load index is extended by the new ones)."""
    calls: list[int] = []
    real = index_module.scan

    def counting(entries: list[Any], into: Any = None) -> Any:
        calls.append(len(entries) - (into.count if into is not None else 0))
        return real(entries, into)

    monkeypatch.setattr(index_module, "scan", counting)
    return calls

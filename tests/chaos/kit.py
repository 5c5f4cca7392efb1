"""Shared pieces of the chaos tests: the demo brain with a kill switch, the ``flower``
command as a killable subprocess, and the on-disk invariants every crash must keep.

A kill point is chosen by *event*: the n-th model request matching a predicate. The fake
(in the test process) blocks that request on a ``threading.Event`` until the test has
SIGKILLed the whole process group, so the kill lands exactly there — never "about then".
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flower import texts
from flower.cli.commands.demo import ASK, DemoBrain
from flower.core.paths import project_key
from flower.testing import Request, reply, tool_use

ASK_TOOL = "mcp__human__ask"
Q1 = "转换要支持哪些 Markdown 写法?"
Q2 = "输出的 HTML 要不要带样式?"
HANDOFF_DOC = ("## 现在在做\n派 coder 做 md2html.py,第一轮回报已收到。\n\n"
               "## 已定的事\n只用标准库。\n\n## 走不通的\n无\n\n"
               "## 下一步\n交给判定检查 sample.html。\n\n"
               "## 现场\nmd2html.py、sample.md、sample.html")


def _first(text: str) -> str:
    return text.strip().splitlines()[0]


_HANDOFF_ASK = texts.HANDOFF_PROMPT.split("}")[-1].split("{")[0].strip()[:30]


def role(req: Request) -> str:
    """Which agent sent this request: clarify, goal, judge, bequest (the closing handover),
    handoff (the writing round), work (the coordinator) or coder (the worker subagent)."""
    if req.agent_id:
        return "coder"
    if _first(texts.CLARIFIER_RULES) in req.system_text:
        return "clarify"
    if _first(texts.JUDGE_RULES) in req.system_text:
        return "goal" if _first(texts.SET_PROMPT) in req.first_user_text() else "judge"
    if _first(texts.BEQUEST_RULES) in req.system_text:
        return "bequest"
    if _HANDOFF_ASK in req.last_user_text():
        return "handoff"
    return "work"


STEP_OF_ROLE = {"clarify": "确认需求", "goal": "设定目标", "work": "干活"}


def answered(req: Request) -> list[str]:
    """Questions of this clarify session that got a reply (timeout counts as a reply)."""
    out = []
    for use in req.tool_uses(ASK_TOOL):
        got = req.result_of(use["id"])
        if got is not None and not got.startswith(texts.ORPHAN_RESULT[:6]):
            out.append(use["input"]["question"])
    return out


class ChaosBrain:
    """``DemoBrain`` with a two-question clarifier, an optional forced handoff (one
    coordinator reply reports a context over the window, once per process) and a kill
    switch: ``arm(pred, n)`` blocks the n-th matching request until ``release()``."""

    def __init__(self, ws: Path) -> None:
        self.demo = DemoBrain(ws, pause=0.0)
        self.lock = threading.Lock()
        self.hit = threading.Event()
        self.gate = threading.Event()
        self.pred: Callable[[Request], bool] | None = None
        self.n = 0
        self.seen = 0
        self.force_handoff = False
        self.handed_off = False

    def arm(self, pred: Callable[[Request], bool] | None, n: int = 1, *,
            force_handoff: bool = False) -> None:
        with self.lock:
            self.pred, self.n, self.seen = pred, n, 0
            self.hit.clear()
            self.gate.clear()
            self.force_handoff, self.handed_off = force_handoff, False

    def release(self) -> None:
        self.gate.set()

    def __call__(self, req: Request) -> Any:
        with self.lock:
            blocked = False
            if self.pred is not None and self.pred(req):
                self.seen += 1
                blocked = self.seen == self.n
        if blocked:
            self.hit.set()
            self.gate.wait(60)  # the test kills the process group, then lets go
            return reply("(killed)")
        r = role(req)
        if r == "clarify":
            return self._clarify(req)
        if r == "handoff":
            return reply(HANDOFF_DOC)
        if r == "work" and self.force_handoff and not self.handed_off and \
                req.last_tool_results():
            self.handed_off = True  # the hand-back reply says the context is nearly full
            return reply("收到回报,再看一眼现场。", tool_use("Bash", {"command": "ls"}),
                         usage={"input_tokens": 70_000})
        return self.demo(req)

    def _clarify(self, req: Request) -> Any:
        done = answered(req)
        for q in (Q1, Q2):
            if q not in done:
                return reply(f"先问:{q}", tool_use(ASK_TOOL, {"question": q}))
        return self.demo._clarify(req)


# --- predicates naming the kill points ----------------------------------------------------


def is_role(name: str, extra: Callable[[Request], bool] | None = None
            ) -> Callable[[Request], bool]:
    return lambda req: role(req) == name and (extra is None or extra(req))


def n_results(k: int) -> Callable[[Request], bool]:
    return lambda req: len(req.tool_results()) == k


# --- the flower command ---------------------------------------------------------------------


def flower_env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}


def start(ws: Path, *args: str, stdin: str | None = None) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "flower", *args], cwd=ws, env=flower_env(),
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
    return proc


def run(ws: Path, *args: str, stdin: str | None = None,
        timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = flower_env()
    return subprocess.run([sys.executable, "-m", "flower", *args], cwd=ws, env=env,
                          input=stdin or "", capture_output=True, text=True, timeout=timeout)


def kill_group(proc: subprocess.Popen[str]) -> str:
    """SIGKILL flower, the CLI and its tools; return what it printed."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.stdin = None  # already written and closed
    out, _ = proc.communicate(timeout=20)
    return out or ""


def rerun_args(ws: Path, extra: tuple[str, ...] = ()) -> tuple[list[str], str | None]:
    """How a person carries on: bare ``flower`` + Enter once the brief is frozen; the same
    ask again while it is not (retyping the ask on a frozen brief would *amend* it)."""
    from flower.core.brief import Brief

    brief = Brief.load(ws / ".flower" / "notes" / "需求.md")
    if brief is not None and brief.complete():
        return ["--timeout", "0", *extra], "\n"
    return ["--timeout", "0", *extra, ASK], None


# --- the invariants ---------------------------------------------------------------------------


def json_files_parse(ws: Path, run_dir: Path) -> None:
    for root in (run_dir, ws / ".flower"):
        if not root.exists():
            continue
        for p in root.rglob("*.json"):
            json.loads(p.read_text(encoding="utf-8"))  # raises with the file in the trace


def integrity(run_dir: Path) -> None:
    db = run_dir / "sessions.db"
    if not db.exists():
        return
    con = sqlite3.connect(db, timeout=5)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()


def manifest_rows(run_dir: Path) -> list[dict[str, Any]]:
    p = run_dir / "manifest.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else []


def row_key(r: dict[str, Any]) -> tuple:
    return (r["run"], r["step"], r["session_id"], r["started_at"])


def lineage(run_dir: Path) -> dict[str, str]:
    p = run_dir / "lineage.json"
    return json.loads(p.read_text(encoding="utf-8"))["steps"] if p.exists() else {}


def stored_sessions(run_dir: Path, ws: Path, sids: list[str]) -> set[str]:
    """Which of ``sids`` have a transcript in sessions.db (read-only peek)."""
    db = run_dir / "sessions.db"
    if not db.exists():
        return set()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        pk = project_key(ws)
        return {s for s in sids if con.execute(
            "SELECT 1 FROM meta WHERE store_key = ?", (f"{pk}/{s}",)).fetchone()}
    finally:
        con.close()


@dataclass
class Snapshot:
    """The state a kill left behind."""

    point: str
    rows: list[dict[str, Any]]
    lineage: dict[str, str]
    alive: set[str]
    requests: int  # fake.message_requests() served so far


def snapshot(point: str, ws: Path, run_dir: Path, served: int) -> Snapshot:
    json_files_parse(ws, run_dir)
    integrity(run_dir)
    lin = lineage(run_dir)
    return Snapshot(point, manifest_rows(run_dir), lin,
                    stored_sessions(run_dir, ws, list(lin.values())), served)


def check_after(snap: Snapshot, ws: Path, run_dir: Path, later: list[Request]) -> None:
    """After the next process (killed again or finished): nothing from before the kill is
    lost, and a step whose session was stored went on in that same session (or retired it
    through a handoff, which the manifest records)."""
    json_files_parse(ws, run_dir)
    integrity(run_dir)
    rows = manifest_rows(run_dir)
    have = {row_key(r) for r in rows}
    lost = [r["step"] for r in snap.rows if row_key(r) not in have]
    assert not lost, f"{snap.point}: manifest rows lost: {lost}"
    now = lineage(run_dir)
    retired = {s for r in rows for s in r.get("retired") or []}
    # a step killed after a handoff has no row yet: the writing round is the evidence
    retired |= {q.session_id for q in later if role(q) == "handoff"}
    for step, sid in snap.lineage.items():
        if sid not in snap.alive:
            continue  # killed before the CLI stored anything: a fresh session is right
        assert now.get(step) == sid or sid in retired, \
            f"{snap.point}: {step} was {sid}, now {now.get(step)} (not a handoff)"
        r = {v: k for k, v in STEP_OF_ROLE.items()}[step]
        first = next((q for q in later if role(q) == r), None)
        if first is not None:  # the step ran again: it resumed the stored session
            assert first.session_id == sid, \
                f"{snap.point}: {step} started {first.session_id} instead of resuming {sid}"

"""``flower log`` and ``flower log --json`` print exactly what they printed before they were
made linear in the number of sessions: a run folder built through the real store (main
transcripts with subagent transcripts under them, a handed-off session, a session stored
under another project key, one missing from the store), read by ``python -m flower log``
in a subprocess, compared byte for byte with the output recorded from the code before the
change (``tests/cli/fixtures/log_recorded.*``; ``python tests/cli/test_log_recorded.py``
writes them again).

Also: the bytes ``--json`` writes straight to stdout are the text ``json_text`` gives, for
documents with the values orjson writes differently (tiny floats, huge integers, NaN, lone
surrogates, DEL/C1 characters, masked credentials).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flower.cli.tui import log_view
from flower.cli.tui.render import json_text
from flower.core.manifest import escape_surrogates
from flower.core.paths import project_key
from flower.stores.sqlite import SqliteSessionStore

FIXTURES = Path(__file__).parent / "fixtures"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
SECRET = "sk-ant-recorded-secret-0123456789"
ROOT = "<ROOT>"


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def sid_of(run: int, step: int, gen: int = 0) -> str:
    return f"{run:04d}{step:02d}{gen:02d}-aaaa-4bbb-8ccc-{run * 100 + step:012d}"


def transcript(sid: str, start: float, contexts: list[int], *, sidechain: bool = False,
               big: int = 0) -> list[dict[str, Any]]:
    """Entries shaped like the CLI's: a prompt, then per call one entry per content block
    (same message id and usage) and a tool result; an outage note in the middle."""
    out: list[dict[str, Any]] = []

    def add(entry: dict[str, Any], t: float) -> None:
        entry = {"parentUuid": out[-1]["uuid"] if out else None, "isSidechain": sidechain,
                 "uuid": f"{sid[:8]}-{'s' if sidechain else 'm'}{len(out):04d}",
                 "timestamp": _iso(t), "sessionId": sid, **entry}
        out.append(entry)

    add({"type": "user", "message": {"role": "user", "content": "开始 go"}}, start)
    for n, context in enumerate(contexts):
        t = start + 1 + 2 * n
        mid = f"msg_{sid[:8]}_{n}"
        usage = {"input_tokens": context // 10, "cache_creation_input_tokens": context // 10,
                 "cache_read_input_tokens": context - 2 * (context // 10),
                 "output_tokens": 40}
        for b, block in enumerate([{"type": "text", "text": f"thinking {n}"},
                                   {"type": "tool_use", "id": f"tu_{sid[:8]}_{n}",
                                    "name": "Read", "input": {"file_path": f"/w/f{n}.py"}}]):
            add({"type": "assistant", "requestId": f"req_{mid}", "message": {
                "id": mid, "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                "content": [block], "stop_reason": "tool_use" if b else None,
                "usage": dict(usage)}}, t)
        add({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"tu_{sid[:8]}_{n}",
             "content": ("x" * big) or f"line {n}"}]}}, t + 1)
        if n == 1:
            add({"type": "assistant", "isApiErrorMessage": True, "message": {
                "id": f"synthetic-{n}", "model": "<synthetic>", "role": "assistant",
                "content": [{"type": "text", "text": "API Error: 500"}],
                "usage": {"input_tokens": 0, "output_tokens": 0}}}, t + 1)
    return out


def build(root: Path, *, runs: int = 6, steps: int = 3) -> Path:
    """``root/ws`` (the workspace) and ``root/runs`` (its run dir): ``runs`` flower runs of
    ``steps`` steps each, every session with two subagent transcripts. Returns the run dir."""
    ws, run_dir = root / "ws", root / "runs"
    ws.mkdir(parents=True)
    run_dir.mkdir()
    pk, other = project_key(ws), project_key(root / "old-machine" / "ws")
    rows: list[dict[str, Any]] = []
    stored: list[tuple[str, str, str | None, list[dict[str, Any]]]] = []
    for r in range(runs):
        run_id = f"202601{r + 1:02d}-000000-{r:06x}"
        base = T0 + r * 86_400
        for s in range(steps):
            start = base + s * 1000
            sid = sid_of(r, s)
            contexts = [8000 + 1500 * k + 100 * s for k in range(5)]
            retired: list[str] = []
            live = start
            if s == 1:  # handed off once: the retired session's rounds come first
                old = sid_of(r, s, 1)
                retired = [old]
                stored.append((pk, old, None, transcript(old, start, [30000, 39000])))
                live += 10
            key_pk = other if (r, s) == (1, 0) else pk  # a folder moved from elsewhere
            if (r, s) != (2, 2):  # one session never reached the store
                stored.append((key_pk, sid, None, transcript(sid, live, contexts)))
                for a in range(2):
                    stored.append((key_pk, sid, f"subagents/agent-{r}{s}{a}",
                                   transcript(f"{sid[:30]}{a}", live + 2,
                                              [50000 + a, 60000], sidechain=True, big=300)))
            name = ["确认需求", "干活·判定#1", "干活#round2"][s % 3]
            ok = (r + s) % 4 != 3
            rows.append({
                "step": name, "session_id": sid, "ok": ok,
                "cost_usd": [0.1234, 5e-05, 1.5][s % 3], "num_turns": 5 + s,
                "text": "done" if ok else "",
                "error": None if ok else f"API Error: 500 key {SECRET}\n\x9b2J second line",
                "started_at": start, "ended_at": start + 600, "attempts": 1 + (not ok),
                "errors": [] if ok else ["API Error: 500"], "resumed": s == 2,
                "retired": retired, "context": contexts[-1], "duration_s": 600.0,
                "run": run_id, "sandbox": "workspace" if s else None})
        rows.append({"step": "收尾", "session_id": None, "ok": True, "cost_usd": 0.0,
                     "num_turns": 0, "started_at": base + 5000, "ended_at": base + 5001,
                     "run": run_id})
    store = SqliteSessionStore(run_dir / "sessions.db")

    async def go() -> None:
        for key_pk, sid, sub, entries in stored:
            key: dict[str, str] = {"project_key": key_pk, "session_id": sid}
            if sub:
                key["subpath"] = sub
            await store.append(key, entries)  # type: ignore[arg-type]

    try:
        anyio.run(go)
    finally:
        store.close()
    (run_dir / "manifest.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2))
    (run_dir / "lineage.json").write_text(json.dumps(
        {"workspace": str(ws), "woke": 1, "steps": {}}, ensure_ascii=False))
    return run_dir


def flower_log(root: Path, *args: str) -> bytes:
    """``python -m flower log runs …`` in ``root``: stdout, with ``root`` written as <ROOT>."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FLOWER_", "ANTHROPIC_"))}
    env.update(TZ="UTC", ANTHROPIC_API_KEY=SECRET, HOME=str(root / "home"),
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
               PYTHONIOENCODING="utf-8", COLUMNS="120", NO_COLOR="1", TERM="dumb")
    done = subprocess.run([sys.executable, "-m", "flower", "log", "runs", *args], cwd=root,
                          env=env, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout.replace(str(root).encode(), ROOT.encode())


@pytest.fixture(scope="module")
def recorded_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recorded")
    build(root)
    return root


@pytest.mark.parametrize(("args", "name"), [((), "log_recorded.txt"),
                                            (("--json",), "log_recorded.json")])
def test_output_is_what_it_was(recorded_dir: Path, args: tuple[str, ...], name: str) -> None:
    got = flower_log(recorded_dir, *args)
    assert got == (FIXTURES / name).read_bytes()
    assert SECRET.encode() not in got  # the credential in an error stays masked


def test_the_recorded_dir_exercises_every_lookup(recorded_dir: Path) -> None:
    """The expectation is only as good as what it covers: rounds found under another
    project key, a handed-off session's rounds first, a session the store lacks."""
    doc = json.loads((FIXTURES / "log_recorded.json").read_bytes())
    rows = [row for run in doc["runs"] for row in run["rows"]]
    assert doc["db"] == "ok" and doc["sessions"][sid_of(1, 0)]  # moved folder: found
    assert sid_of(2, 2) not in doc["sessions"]  # missing from the store: no rounds
    handed = next(r for r in rows if r["retired"])
    assert handed["rounds"][:2] == [30000, 39000]
    assert all(c < 50000 for r in rows for c in r["rounds"])  # subagents are not rounds


# --- the --json bytes ---------------------------------------------------------------------

_leaf = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
         | st.floats(allow_nan=True, allow_infinity=True)
         | st.sampled_from([1e-05, 5e-05, 1e16, 1.5e-300, -0.0, 1767225600.25])
         | st.text()
         | st.sampled_from(["\ud83d half", "\x7f\x9b\x85", f"key={SECRET}", "\u2028"]))
_doc = st.recursive(_leaf, lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(st.text(max_size=5), kids, max_size=4), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(_doc)
def test_json_bytes_are_json_text(doc: Any) -> None:
    """What used to go through rich, byte for byte; a lone surrogate (which made the old
    path fail to encode) is written as its JSON escape, so the output is valid UTF-8."""
    text = json_text(doc, [SECRET]) + "\n"
    if _has_surrogate(doc):
        text = escape_surrogates(text)
    assert log_view.json_bytes(doc, [SECRET]) == text.encode("utf-8")


def _has_surrogate(doc: Any) -> bool:
    if isinstance(doc, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in doc)
    if isinstance(doc, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in doc.items())
    if isinstance(doc, list):
        return any(_has_surrogate(v) for v in doc)
    return False


def test_non_finite_and_huge_numbers_read_back() -> None:
    doc = {"a": [math.inf, 2**80, 5e-05], "b": "\x9b"}
    assert json.loads(log_view.json_bytes(doc)) == {"a": [math.inf, 2**80, 5e-05], "b": "\x9b"}


def record() -> None:  # pragma: no cover - run by hand with the code the output must match
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root)
        FIXTURES.mkdir(exist_ok=True)
        (FIXTURES / "log_recorded.txt").write_bytes(flower_log(root))
        (FIXTURES / "log_recorded.json").write_bytes(flower_log(root, "--json"))


if __name__ == "__main__":  # pragma: no cover
    record()

"""``flower log``: a real run folder (manifest.json + a sessions.db written by the real store),
read back without the CLI — what is printed, what --json says, and that nothing is touched."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import sqlite3
import tempfile
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from flower import runlog, texts
from flower.cli.tui import log_view
from flower.core.paths import project_key
from flower.stores.sqlite import SqliteSessionStore
from flower.usage import entry_context

FIXTURES = Path(__file__).resolve().parents[1] / "stores" / "fixtures"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z

S1, S2, S3, S4, S5 = (f"{n}{n}{n}{n}0000-aaaa-4bbb-8ccc-00000000000{n}" for n in range(1, 6))


# --- building a run folder --------------------------------------------------------------


def iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[
        :-3] + "Z"


class Transcript:
    """Entries shaped like the CLI's (see tests/stores/fixtures/*.json)."""

    def __init__(self, sid: str, *, sidechain: bool = False) -> None:
        self.sid = sid
        self.sidechain = sidechain
        self.entries: list[dict[str, Any]] = []
        self._n = 0

    def _add(self, entry: dict[str, Any], t: float) -> dict[str, Any]:
        self._n += 1
        entry = {"parentUuid": self.entries[-1]["uuid"] if self.entries else None,
                 "isSidechain": self.sidechain, "uuid": f"{self.sid[:4]}-u{self._n:04d}",
                 "timestamp": iso(t), "sessionId": self.sid, **entry}
        self.entries.append(entry)
        return entry

    def user(self, t: float, text: str = "go") -> None:
        self._add({"type": "user", "message": {"role": "user", "content": text}}, t)

    def call(self, t: float, context: int, *, blocks: int = 1) -> None:
        """One API call; the CLI writes one entry per content block, same id and usage."""
        mid = f"msg_{self.sid[:4]}_{self._n}"
        usage = {"input_tokens": context // 10, "cache_creation_input_tokens": context // 10,
                 "cache_read_input_tokens": context - 2 * (context // 10), "output_tokens": 30,
                 "output_tokens_details": {"thinking_tokens": 0}, "service_tier": "standard"}
        for b in range(blocks):
            self._add({"type": "assistant", "requestId": f"req_{mid}", "message": {
                "id": mid, "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                "content": [{"type": "text", "text": f"part {b}"}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": dict(usage)}}, t)

    def synthetic(self, t: float) -> None:
        """The CLI's outage message: zero usage, model <synthetic>."""
        self._add({"type": "assistant", "isApiErrorMessage": True, "apiErrorStatus": 500,
                   "error": "server_error", "message": {
                       "id": f"synthetic-{self._n}", "model": "<synthetic>", "role": "assistant",
                       "type": "message", "stop_reason": "stop_sequence",
                       "content": [{"type": "text", "text": "API Error: 500"}],
                       "usage": {"input_tokens": 0, "output_tokens": 0,
                                 "cache_creation_input_tokens": 0,
                                 "cache_read_input_tokens": 0}}}, t)


def store_all(db: Path, pk: str, transcripts: list[tuple[Transcript, str | None]]) -> None:
    store = SqliteSessionStore(db)

    async def go() -> None:
        for tr, sub in transcripts:
            key: dict[str, str] = {"project_key": pk, "session_id": tr.sid}
            if sub:
                key["subpath"] = sub
            await store.append(key, tr.entries)  # type: ignore[arg-type]

    try:
        anyio.run(go)
    finally:
        store.close()


def row(step: str, run: str, start: float, end: float, *, sid: str | None, ok: bool = True,
        cost: float = 0.1, turns: int = 3, error: str | None = None, attempts: int = 1,
        retired: list[str] | None = None, resumed: bool = False, context: int = 0
        ) -> dict[str, Any]:
    return {"step": step, "session_id": sid, "ok": ok, "cost_usd": cost, "num_turns": turns,
            "text": "done" if ok else "", "error": error, "started_at": start, "ended_at": end,
            "attempts": attempts, "errors": [error] if error else [], "resumed": resumed,
            "retired": retired or [], "context": context, "duration_s": round(end - start, 2),
            "run": run}


RUN_A = "20260101-000000-aaaaaa"
RUN_B = "20260102-000000-bbbbbb"
ERROR = "API Error: 500 upstream exploded\nsecond line of the error"

# step, expected icon, expected rounds (main thread only, within the row's window)
EXPECTED = [
    ("确认需求", "+", [1000, 2000, 3000]),
    ("干活", "x", [5000, 8000, 12000]),
    ("干活·判定#1", "#", [4000, 4500]),
    ("干活#round2", "+", [20000, 40000, 6000, 9000]),
    ("干活#retry1", "+", [7000, 7500]),
    ("干活·判定#2", "x", []),
]


@pytest.fixture
def folder(tmp_path: Path) -> dict[str, Path]:
    """ws/ (the workspace) and elsewhere/runs/ (run dir; lineage.json names ws)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    runs = tmp_path / "elsewhere" / "runs"
    runs.mkdir(parents=True)
    pk = project_key(ws)

    s1 = Transcript(S1)
    s1.user(T0 + 1)
    s1.call(T0 + 2, 1000, blocks=2)  # two content blocks, one round
    s1.user(T0 + 3, "tool result")
    s1.synthetic(T0 + 4)  # an outage note: no round
    s1.call(T0 + 5, 2000)
    s1.call(T0 + 6, 3000)
    sub = Transcript(S1, sidechain=True)  # the subagent it dispatched: its own key
    sub.user(T0 + 3)
    sub.call(T0 + 3, 90_000)
    sub.call(T0 + 4, 95_000)

    s2 = Transcript(S2)  # 干活, then resumed by 干活#round2, then handed off to S4
    for i, c in enumerate([5000, 8000, 12000]):
        s2.call(T0 + 110 + i, c)
    s2.call(T0 + 250, 20000)
    s2.call(T0 + 260, 40000)
    s3 = Transcript(S3)
    s3.call(T0 + 215, 4000)
    s3.call(T0 + 220, 4500)
    s4 = Transcript(S4)
    s4.call(T0 + 300, 6000)
    s4.call(T0 + 310, 9000)
    s5 = Transcript(S5)
    s5.call(T0 + 86400 + 10, 7000)
    s5.call(T0 + 86400 + 20, 7500)
    store_all(runs / "sessions.db", pk, [(s1, None), (sub, "subagents/agent-abc123"),
                                         (s2, None), (s3, None), (s4, None), (s5, None)])

    rows = [  # run B first in the file: runs are shown oldest first regardless
        row("干活#retry1", RUN_B, T0 + 86400, T0 + 86400 + 30, sid=S5, cost=0.05),
        row("干活·判定#2", RUN_B, T0 + 86400 + 40, T0 + 86400 + 41, sid=None, ok=False,
            cost=0.0, turns=0, error="killed-by-signal"),
        row("确认需求", RUN_A, T0, T0 + 60, sid=S1, cost=0.12, context=3000),
        row("干活", RUN_A, T0 + 100, T0 + 200, sid=S2, ok=False, cost=0.5, error=ERROR,
            attempts=3, resumed=True, context=12000),
        row("干活·判定#1", RUN_A, T0 + 210, T0 + 230, sid=S3, cost=0.03),
        row("干活#round2", RUN_A, T0 + 240, T0 + 3840, sid=S4, cost=0.7, retired=[S2],
            context=9000),
    ]
    (runs / "manifest.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2))
    (runs / "lineage.json").write_text(json.dumps(
        {"workspace": str(ws), "woke": 1, "steps": {"干活": S4}}, ensure_ascii=False))
    return {"ws": ws, "runs": runs}


def console(encoding: str | None = None) -> tuple[Console, io.StringIO | io.BytesIO]:
    if encoding is None:
        buf: Any = io.StringIO()
        return Console(file=buf, width=120, color_system=None, highlight=False), buf
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, errors="replace")
    return Console(file=stream, width=120, color_system=None, highlight=False), raw


def rendered(log: runlog.RunLog) -> str:
    con, buf = console()
    log_view.render(log, con)
    return buf.getvalue()  # type: ignore[union-attr]


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int, int]]:
    """Every path under root with its bytes (files), mtime and mode — except the read
    marks in a ``-shm`` file: every reader of a WAL database with frames in it records
    there which frame it reads up to (SQLite's locking, the same for any reader), and a
    live run's WAL has frames."""
    out: dict[str, tuple[bytes | None, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            s = p.lstat()
            data = p.read_bytes() if p.is_file() else None
            if data is not None and name.endswith("-shm"):
                data = data[:100] + bytes(20) + data[120:]  # aReadMark[0..4]
            out[str(p.relative_to(root))] = (data, s.st_mtime_ns, s.st_mode)
    s = root.stat()
    out["."] = (None, s.st_mtime_ns, s.st_mode)
    return out


def spark_of(line: str) -> str:
    """The chart cell run of a printed row ("" when it has none)."""
    charts = set(log_view.BARS) | set(log_view.BARS_ASCII)
    return next((w for w in line.split()[2:] if set(w) <= charts), "")


# --- the data ---------------------------------------------------------------------------


def test_runs_rows_and_rounds(folder: dict[str, Path]) -> None:
    log = runlog.load_runs(folder["runs"])
    assert log.workspace == folder["ws"]  # from lineage.json, not the run dir's parent
    assert log.db == "ok"
    assert [r.run for r in log.runs] == [RUN_A, RUN_B]
    assert log.runs[0].started_at == T0
    assert [(r.step, r.rounds) for r in log.rows] == [(s, rounds) for s, _, rounds in EXPECTED]
    kinds = [(r.base, r.kind, r.n) for r in log.rows]
    assert kinds == [("确认需求", "first", None), ("干活", "first", None),
                     ("干活", "judge", 1), ("干活", "round", 2), ("干活", "retry", 1),
                     ("干活", "judge", 2)]
    work = log.rows[1]
    assert (work.ok, work.attempts, work.resumed, work.error) == (False, 3, True, ERROR)
    assert log.rows[3].sessions == [S2, S4]
    # the whole session, unwindowed; the subagent's 90K/95K are nowhere
    assert [r.context for r in log.sessions[S2]] == [5000, 8000, 12000, 20000, 40000]
    assert [r.context for r in log.sessions[S1]] == [1000, 2000, 3000]
    assert log.totals() == {"runs": 2, "steps": 6, "ok": 4, "failed": 2, "sessions": 5,
                            "cost_usd": 1.4, "duration_s": 30 + 1 + 60 + 100 + 20 + 3600,
                            "peak_context": 40000}


def test_render_prints_every_step_in_order_with_a_chart(folder: dict[str, Path]) -> None:
    out = rendered(runlog.load_runs(folder["runs"]))
    lines = out.splitlines()
    assert "\x1b[" not in out  # no colour codes when not a terminal
    heads = [i for i, s in enumerate(lines) if s.startswith("= ")]
    assert len(heads) == 2 and RUN_A in lines[heads[0]] and RUN_B in lines[heads[1]]
    assert "$1.3500" in lines[heads[0]] and "1h03m" in lines[heads[0]]
    step_lines = [s for s in lines if s.startswith("  ") and s[2:3] in "+x#" and s[3] == " "]
    assert [s.split()[1] for s in step_lines] == [s for s, _, _ in EXPECTED]
    assert [s.split()[0] for s in step_lines] == [icon for _, icon, _ in EXPECTED]
    for line, (_, _, rounds) in zip(step_lines, EXPECTED, strict=True):
        if not rounds:
            assert spark_of(line) == "" and not set(line) & set(log_view.BARS)
            continue
        spark = spark_of(line)
        assert len(spark) == len(rounds) and set(spark) <= set(log_view.BARS)
        for (a, b), (ca, cb) in zip(pairwise(rounds), pairwise(spark), strict=True):
            if b > a:
                assert log_view.BARS.index(cb) >= log_view.BARS.index(ca)
            if b < a:
                assert log_view.BARS.index(cb) <= log_view.BARS.index(ca)
    # 20K 40K | handoff | 6K 9K, from the row's smallest to its largest reading
    assert spark_of(step_lines[3]) == "▄█▁▂" and step_lines[3].endswith(" 6.0K→40.0K")
    assert spark_of(step_lines[0]) == "▁▅█"
    assert S1[:8] in step_lines[0] and "40.0K" in out and "9.0K" in step_lines[3]
    assert texts.LOG_RETIRED.format(ids=S2[:8]) in out
    assert texts.LOG_ERROR.format(error="API Error: 500 upstream exploded") in out
    assert "second line of the error" in out and texts.LOG_KILLED in out
    assert "killed-by-signal" not in out  # the manifest's machine word, said in words
    assert texts.LOG_RESUMED in step_lines[1] and texts.LOG_ATTEMPTS.format(n=3) in step_lines[1]
    assert texts.LOG_NO_SESSION in step_lines[5]
    assert lines[-1] == texts.LOG_TOTALS.format(
        runs=2, steps=6, ok=4, failed=2, sessions=5, cost="$1.4000", duration="1h03m")


def test_ascii_chart_when_the_console_is_not_utf8(folder: dict[str, Path]) -> None:
    con, raw = console("ascii")
    log_view.render(runlog.load_runs(folder["runs"]), con)
    con.file.flush()
    out = raw.getvalue().decode("ascii")  # type: ignore[union-attr]
    assert not set(out) & set(log_view.BARS)
    round2 = next(s for s in out.splitlines() if "#round2" in s)
    assert spark_of(round2) == "-#__"


def test_long_rows_are_charted_in_a_fixed_width() -> None:
    values = list(range(1, 1001))
    spark = log_view.sparkline(values)
    assert len(spark) == log_view.SPARK_WIDTH and spark[0] == "▁" and spark[-1] == "█"
    assert list(spark) == sorted(spark, key=log_view.BARS.index)


def test_json_has_the_documented_keys(folder: dict[str, Path]) -> None:
    con, buf = console()
    assert log_view.main(str(folder["runs"]), as_json=True, console=con) == 0
    doc = json.loads(buf.getvalue())  # type: ignore[union-attr]
    assert set(doc) == {"run_dir", "workspace", "db", "caps", "runs", "sessions", "totals"}
    assert doc["caps"] is None  # no budget.json in this folder
    assert set(doc["runs"][0]) == {"run", "started_at", "cost_usd", "duration_s", "steps", "ok",
                                   "failed", "stopped", "rows"}
    assert set(doc["runs"][0]["rows"][0]) == {
        "step", "base", "kind", "n", "ok", "error", "attempts", "session_id", "retired",
        "resumed", "cost_usd", "num_turns", "started_at", "ended_at", "duration_s", "context",
        "rounds", "sandbox", "dispatches"}
    assert doc["runs"][0]["rows"][0]["sandbox"] is None  # a row written before it was recorded
    assert set(doc["totals"]) == {"runs", "steps", "ok", "failed", "sessions", "cost_usd",
                                  "duration_s", "peak_context"}
    assert [r["step"] for run in doc["runs"] for r in run["rows"]] == [s for s, _, _ in EXPECTED]
    assert doc["runs"][0]["rows"][3]["rounds"] == [20000, 40000, 6000, 9000]
    assert doc["sessions"][S1] == [1000, 2000, 3000]
    assert doc["totals"]["cost_usd"] == 1.4 and doc["db"] == "ok"


def test_main_renders_and_defaults_to_runs_here(folder: dict[str, Path],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder["runs"].parent)
    con, buf = console()
    assert log_view.main(None, as_json=False, console=con) == 0
    assert "干活#round2" in buf.getvalue()  # type: ignore[union-attr]


# --- leaving things alone ---------------------------------------------------------------


@pytest.mark.parametrize("live", [False, True])
def test_sessions_db_is_read_strictly_read_only(folder: dict[str, Path], live: bool) -> None:
    runs = folder["runs"]
    writer = None
    if live:  # a run still going in another terminal: -wal/-shm exist, newest rows in -wal
        writer = sqlite3.connect(runs / "sessions.db")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("UPDATE meta SET mtime = mtime + 1")  # a no-op UPDATE writes no frame
        writer.commit()
        assert (runs / "sessions.db-wal").stat().st_size > 0
    try:
        before = snapshot(runs.parent)
        for _ in range(2):
            log = runlog.load_runs(runs)
            rendered(log)
            runlog.to_json(log)
        assert log.db == "ok" and log.rows[0].rounds == [1000, 2000, 3000]
        assert snapshot(runs.parent) == before
    finally:
        if writer is not None:
            writer.close()
    if not live:
        assert sorted(p.name for p in runs.iterdir()) == ["lineage.json", "manifest.json",
                                                          "sessions.db"]


@pytest.mark.parametrize("content", [None, b"", b"not a database" * 20, b"SQLite format 3\0"])
def test_a_missing_or_corrupt_db_only_loses_the_chart(folder: dict[str, Path],
                                                      content: bytes | None) -> None:
    db = folder["runs"] / "sessions.db"
    db.unlink()
    if content is not None:
        db.write_bytes(content + b"\0" * (100 if content.startswith(b"SQLite") else 0))
    before = snapshot(folder["runs"])
    log = runlog.load_runs(folder["runs"])
    out = rendered(log)
    assert snapshot(folder["runs"]) == before
    assert log.db == ("missing" if content is None else "unreadable")
    assert all(r.rounds == [] for r in log.rows) and len(log.rows) == 6
    hint = texts.LOG_DB_MISSING if content is None else texts.LOG_DB_UNREADABLE
    assert hint.format(path=db) in out and "干活#round2" in out


def test_missing_run_dir(tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    con, buf = console()
    assert log_view.main(str(tmp_path / "runs"), as_json=False, console=con) == 1
    assert buf.getvalue().strip() == texts.LOG_NO_RUN_DIR.format(  # type: ignore[union-attr]
        path=tmp_path / "runs")
    assert "flower log <run_dir>" in buf.getvalue()  # type: ignore[union-attr]
    assert snapshot(tmp_path) == before


def test_missing_manifest(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    before = snapshot(tmp_path)
    con, buf = console()
    assert log_view.main(str(tmp_path / "runs"), as_json=False, console=con) == 1
    out = buf.getvalue()  # type: ignore[union-attr]
    assert out.strip() == texts.LOG_NO_MANIFEST.format(path=tmp_path / "runs" / "manifest.json")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("content", [b"{torn", b"\xff\xfe[]", b'{"step": "x"}', b"[1, 2]",
                                     b"[" * 100_000, b""])
def test_a_corrupt_manifest_is_reported_and_left_alone(folder: dict[str, Path],
                                                       content: bytes) -> None:
    (folder["runs"] / "manifest.json").write_bytes(content)
    before = snapshot(folder["runs"].parent)
    con, buf = console()
    assert log_view.main(str(folder["runs"]), as_json=False, console=con) == 1
    out = buf.getvalue()  # type: ignore[union-attr]
    assert len(out.strip().splitlines()) == 1
    assert out.startswith("运行记录读不了:") and str(folder["runs"] / "manifest.json") in out
    assert snapshot(folder["runs"].parent) == before
    assert (folder["runs"] / "manifest.json").read_bytes() == content


def test_an_empty_manifest_is_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("[]")
    con, buf = console()
    assert log_view.main(str(tmp_path), as_json=False, console=con) == 0
    assert texts.LOG_EMPTY.format(path=tmp_path / "manifest.json") in buf.getvalue()  # type: ignore[union-attr]


# --- recorded from the real CLI ---------------------------------------------------------


def recorded(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def expected_rounds(entries: list[dict[str, Any]]) -> list[int]:
    seen: dict[str, int] = {}
    for e in entries:
        size = entry_context(e)
        if size and e["message"].get("model") != "<synthetic>":
            seen.setdefault(e["message"]["id"], size)
    return list(seen.values())


def stamps(entries: list[dict[str, Any]]) -> tuple[float, float]:
    ts = [dt.datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).timestamp()
          for e in entries if e.get("timestamp")]
    return min(ts), max(ts)


@pytest.mark.parametrize("pass_workspace", [True, False])
def test_a_recorded_run(tmp_path: Path, pass_workspace: bool) -> None:
    """tools.json, outage.json and subagent.json as the real CLI wrote them, under their own
    project key: found with the recorded workspace, or by session id when the folder moved."""
    runs = tmp_path / "runs"
    docs = [recorded(n) for n in ("tools", "outage", "subagent")]
    store = SqliteSessionStore(runs / "sessions.db")

    async def go() -> None:
        for d in docs:
            key = {"project_key": d["project_key"], "session_id": d["session_id"]}
            await store.append(key, d["main"])  # type: ignore[arg-type]
            for sub, entries in d["subkeys"].items():
                await store.append({**key, "subpath": sub}, entries)  # type: ignore[arg-type]

    try:
        anyio.run(go)
    finally:
        store.close()
    rows = []
    for d in docs:
        start, end = stamps(d["main"])
        rows.append(row(d["scenario"], "20261130-045300-c0ffee", start - 0.5, end + 0.5,
                        sid=d["session_id"]))
    (runs / "manifest.json").write_text(json.dumps(rows))
    ws = Path(docs[0]["workspace"]) if pass_workspace else None
    before = snapshot(runs)
    log = runlog.load_runs(runs, ws)
    assert snapshot(runs) == before
    want = [expected_rounds(d["main"]) for d in docs]
    assert want[0] == [10559, 10669, 11954, 12065, 12131, 13744, 13809, 13843, 13904, 13967]
    assert want[1] == [10557, 10619, 10672]  # the two synthetic outage notes are not rounds
    assert want[2] == [10558, 10826]  # the subagent's 8317 / 8925 are under their own key
    assert [r.rounds for r in log.rows] == want
    out = rendered(log)
    lines = {s.split()[1]: s for s in out.splitlines() if s.startswith("  + ")}
    assert [len(spark_of(lines[d["scenario"]])) for d in docs] == [10, 3, 2]
    tools = spark_of(lines["tools"])
    assert (tools[0], tools[-1]) == ("▁", "█")
    assert list(tools) == sorted(tools, key=log_view.BARS.index)  # it only grew


# --- never raises -----------------------------------------------------------------------

FIELDS = ["step", "session_id", "ok", "cost_usd", "num_turns", "text", "error", "started_at",
          "ended_at", "attempts", "errors", "resumed", "retired", "context", "duration_s", "run"]
scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
           | st.sampled_from([S1, S2, "干活#round2", "干活·判定#3", "x#retry9999999999", RUN_A,
                              T0, T0 + 5, -1.0, float("inf")]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=10)
rows_st = st.lists(st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), values,
                                   max_size=len(FIELDS) + 2), max_size=8)


@pytest.fixture(scope="module")
def shared_runs() -> Any:
    with tempfile.TemporaryDirectory() as d:
        runs = Path(d) / "runs"
        tr = Transcript(S1)
        tr.call(T0 + 1, 1000)
        tr.call(T0 + 2, 3000)
        store_all(runs / "sessions.db", "-somewhere-else", [(tr, None)])
        yield runs


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=rows_st, utf8=st.booleans())
def test_load_and_render_never_raise(shared_runs: Path, rows: list[dict[str, Any]],
                                     utf8: bool) -> None:
    (shared_runs / "manifest.json").write_text(json.dumps(rows, ensure_ascii=False))
    log = runlog.load_runs(shared_runs)
    assert len(log.rows) == len(rows)
    con, _ = console(None if utf8 else "ascii")
    log_view.render(log, con)
    doc = json.loads(json.dumps(runlog.to_json(log), allow_nan=False))
    assert [r["step"] for run in doc["runs"] for r in run["rows"]] == [r.step for r in log.rows]


def test_absurd_numbers_still_render(tmp_path: Path) -> None:
    rows = [{"step": "a", "duration_s": 1e308, "cost_usd": 1e308, "started_at": 1e300,
             "ended_at": 1e301, "attempts": 10**30, "context": 10**20}] * 2
    (tmp_path / "manifest.json").write_text(json.dumps(rows))
    log = runlog.load_runs(tmp_path)
    out = rendered(log)
    assert out.count(" a ") == 2 and texts.LOG_UNKNOWN in out
    doc = runlog.to_json(log)
    json.dumps(doc, allow_nan=False)
    assert doc["totals"]["duration_s"] is None


def test_workspace_falls_back_to_the_run_dirs_parent(folder: dict[str, Path]) -> None:
    runs = folder["runs"]
    (runs / "lineage.json").write_bytes(b"{torn")
    before = snapshot(runs)
    log = runlog.load_runs(runs)
    assert log.workspace == runs.resolve().parent
    assert snapshot(runs) == before  # the corrupt lineage stays where it is
    # sessions are still found by id under the project key they were recorded with
    assert log.rows[0].rounds == [1000, 2000, 3000]


@pytest.mark.parametrize(("error", "said"), [
    ("aborted (CancelledError)", texts.LOG_ABORTED_CANCELLED),
    ("aborted (KeyboardInterrupt)", texts.LOG_ABORTED_CTRL_C),
    ("killed-by-signal", texts.LOG_KILLED),
    ("interrupted-by-human", texts.LOG_INTERRUPTED),
    ("context-full-handoff", texts.LOG_HANDOFF_DUE),
])
def test_a_stopped_step_is_booked_in_words(tmp_path: Path, error: str, said: str) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "manifest.json").write_text(json.dumps([
        {"step": "干活", "ok": False, "error": error, "run": "r1", "started_at": T0,
         "ended_at": T0 + 5}]))
    log = runlog.load_runs(runs)
    out = rendered(log)
    assert texts.LOG_ERROR.format(error=said) in out and error not in out
    assert runlog.to_json(log)["runs"][0]["rows"][0]["error"] == error  # --json: as written


def test_the_machine_words_are_the_runtimes() -> None:
    from flower.core.handoff_control import HANDOFF_DUE
    from flower.core.interrupts import INTERRUPTED
    from flower.core.runtime import Runtime
    from flower.runlog.model import said

    assert said(Runtime.KILLED) == texts.LOG_KILLED
    assert said(INTERRUPTED) == texts.LOG_INTERRUPTED
    assert said(HANDOFF_DUE) == texts.LOG_HANDOFF_DUE


def test_a_round_that_starts_a_second_after_the_judge_is_counted_once(tmp_path: Path) -> None:
    """``干活`` and ``干活#round2`` share one session and a judge runs between them: when
    the round's first dispatch comes within the slack of the first round's end (a fast
    judge), it belongs to the round alone — not to both (the demo once showed ``Agent×2``
    for its work step this way)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    runs = tmp_path / "runs"
    runs.mkdir()
    work, judge = Transcript(S1), Transcript(S2)

    def dispatch(t: float, context: int) -> None:
        work.call(t, context)
        work.entries[-1]["message"]["content"] = [
            {"type": "tool_use", "id": f"toolu_{len(work.entries)}", "name": "Agent",
             "input": {"prompt": "do it", "subagent_type": "coder"}}]

    work.user(T0)
    dispatch(T0 + 1, 1000)  # round 1's dispatch
    work.call(T0 + 3, 2000)
    judge.call(T0 + 4.2, 500)
    dispatch(T0 + 5.0, 3000)  # round 2's dispatch: 1 s after round 1 ended
    work.call(T0 + 6, 4000)
    store_all(runs / "sessions.db", project_key(ws), [(work, None), (judge, None)])
    rows = [row("干活", RUN_A, T0, T0 + 4.0, sid=S1),
            row("干活·判定#1", RUN_A, T0 + 4.05, T0 + 4.5, sid=S2),
            row("干活#round2", RUN_A, T0 + 4.6, T0 + 7, sid=S1)]
    (runs / "manifest.json").write_text(json.dumps(rows, ensure_ascii=False))
    (runs / "lineage.json").write_text(json.dumps({"workspace": str(ws), "steps": {}}))

    steps = {s["step"]: s for s in runlog.analyze(runs)["steps"]}
    assert steps["干活"]["tool_calls"] == {"Agent": 1} and steps["干活"]["dispatches"] == 1
    assert steps["干活#round2"]["dispatches"] == 1
    log = runlog.load_runs(runs)
    by_step = {r.step: r.rounds for r in log.rows}
    assert by_step["干活"] == [1000, 2000] and by_step["干活#round2"] == [3000, 4000]
    assert by_step["干活·判定#1"] == [500]

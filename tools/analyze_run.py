#!/usr/bin/env python3
"""Post-mortem of a flower run folder: ``python tools/analyze_run.py [RUN_DIR] [--json]``.

Reads ``<run_dir>/manifest.json`` and ``<run_dir>/sessions.db`` (default ``runs``) — the
formats the reference writes, unchanged — or, with ``--store URL`` / ``FLOWER_STORE_URL``
(as ``flower --store``), the sessions from that store (``postgresql://…`` or a
``sessions.db`` path) — and reports, per step and per session: turns,
tool calls by tool, subagent dispatches, retries and why, handoffs (degraded or not),
what a resume-time ``load()`` would rewrite (expired / trimmed / pruned, counted by the
store's own layers on a scratch copy in a temporary folder), cost, duration, the context
size of every round with its slope, the cache, the ten largest tool results and the
workbench.

Strictly read-only: ``sessions.db`` is opened read-only (no ``-wal``/``-shm`` files are
created), a PostgreSQL store gets plain SELECTs in a read-only session, nothing is written
into the run folder or the workspace, and no other network is used.
The reading is ``flower.runlog``'s — the same reader as ``flower log`` (one reader, two
views). Exit code 0, or 1 when the folder has neither a manifest nor a ``sessions.db``
(and no store is configured).

Needs flower importable (run it from a checkout, or with flower installed) and ``rich``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]
if (_ROOT / "flower" / "__init__.py").is_file() and str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))  # run from a checkout: use the flower next to this script

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from rich.text import Text  # noqa: E402

from flower import runlog  # noqa: E402
from flower.core.paths import project_key  # noqa: E402
from flower.usage import human_tokens  # noqa: E402

DEGRADED = "交接降级"  # the manifest's note of a degraded handoff (texts.HANDOFF_NOTE_DEGRADED)
CHART_ROWS = 20

# The report's words (this script is standalone; flower's own strings live in flower/texts.py).
T = {
    "title": "flower 运行复盘 · {run_dir}",
    "workspace": "工作区 {ws} · sessions.db {db}",
    "accounting": "总账",
    "steps": "每一步",
    "retries": "重试与交接",
    "sessions": "每个会话",
    "subagents": "子代理",
    "resume": "续跑时 load() 会改写什么",
    "context": "每轮上下文",
    "cache": "缓存与 tokens",
    "top": "最大的 {n} 个工具结果",
    "workbench": "工作台",
    "run_line": "运行 {run} · 开始于 {start} · {steps} 步(成功 {ok},失败 {failed})· {cost} · {dur}",
    "totals": "合计 {runs} 次运行 · {steps} 步 · {sessions} 个主会话 + {subs} 个子代理"
              " · {cost} · {dur}",
    "no_rows": "清单里没有步骤(或没有 manifest.json)",
    "no_db": "没有可读的 sessions.db:会话、工具、上下文这几节是空的",
    "none": "(无)",
    "no_retry": "没有重试,没有交接",
    "retry": "{step}: 尝试 {n} 次{resumed}",
    "resumed": ",同一会话续接",
    "why": "    原因 {i}: {error}",
    "handoff": "{step}: 换代 {n} 次({degraded} 次降级)· 退役会话 {ids}",
    "failed": "{step}: 失败 —— {error}",
    "slope": "{first} → {last},{n} 轮,≈{slope}/轮",
    "slope_one": "{first},1 轮",
    "slope_none": "没有记录",
    "peak": "峰值 {peak}(第 {at} 轮)",
    "drops": "明显回落(低于上一轮 70%)在第 {turns} 轮:换代、新会话或裁剪",
    "spill": "spill/ {n} 个文件,{size}(不在上下文里)",
    "dir": "{name}/ {n} 个文件,{size}",
    "no_workbench": "没有工作台目录 {path}",
    "cache_line": "输入合计 {total} · 命中缓存 {hit}({pct})· 写缓存 {write} · 未缓存 {plain}",
    "output_line": "输出 {out}(其中思考 {think})",
    "share": "主线程 vs 子代理:轮 {m_turns} vs {s_turns} · 工具调用 {m_calls} vs {s_calls}"
             " · 输出 {m_out} vs {s_out}(子代理占 {pct})",
    "resume_note": "按 flower 的默认策略(过期保留最近 6 个;裁剪保留最近 20 个 ≥2000 字的结果;"
                   "剪除合成错误和旧的被拒调用),只改喂回模型的副本,库里一字不改",
}
STEP_COLS = ["步骤", "结果", "尝试", "轮", "工具调用", "派人", "换代", "花费", "时长", "上下文"]
SESSION_COLS = ["会话", "步骤", "轮", "条目", "工具调用", "派人", "子代理", "时长", "上下文"]
SUB_COLS = ["子代理", "所属会话", "轮", "工具调用", "输出 tokens", "时长"]
RESUME_COLS = ["会话", "过期", "裁剪", "省下字符", "剪除", "删被拒", "中性化", "补结果",
               "已落盘指针", "合成错误"]
TOP_COLS = ["#", "字符", "工具", "会话", "预览"]


# --- data -------------------------------------------------------------------------------


def _tools(calls: list[str]) -> dict[str, int]:
    return dict(Counter(calls).most_common())


def _tools_text(tools: dict[str, int], limit: int = 6) -> str:
    if not tools:
        return "0"
    items = list(tools.items())
    text = " ".join(f"{name}×{n}" for name, n in items[:limit])
    if len(items) > limit:
        text += f" +{len(items) - limit}"
    return f"{sum(tools.values())}: {text}"


def _context(values: list[int]) -> dict[str, Any]:
    """first/last/peak/min and the slope of a list of per-round context sizes."""
    if not values:
        return {"rounds": 0, "first": None, "last": None, "peak": None, "min": None,
                "peak_round": None, "slope": None, "values": []}
    peak = max(values)
    return {"rounds": len(values), "first": values[0], "last": values[-1], "peak": peak,
            "min": min(values), "peak_round": values.index(peak) + 1,
            "slope": runlog.slope(values), "values": list(values)}


def _step(row: runlog.Row, details: dict[str, runlog.SessionDetail]) -> dict[str, Any]:
    main_calls: list[str] = []
    sub_calls: list[str] = []
    for sid in row.sessions:
        d = details.get(sid)
        if d is None:
            continue
        main_calls += [n for at, n in d.main.calls if runlog.in_window(row, at)]
        for sub in d.subagents:
            sub_calls += [n for at, n in sub.calls if runlog.in_window(row, at)]
    degraded = [e for e in row.errors if DEGRADED in e]
    retries = [e for e in row.errors if DEGRADED not in e]
    live = details.get(row.session_id or "")
    return {
        "step": row.step, "base": row.base, "kind": row.kind, "ok": row.ok,
        "error": row.error, "attempts": row.attempts, "retries": max(row.attempts - 1, 0),
        "retry_errors": retries, "resumed": row.resumed, "num_turns": row.num_turns,
        "tool_calls": _tools(main_calls), "subagent_tool_calls": _tools(sub_calls),
        "dispatches": sum(1 for n in main_calls if n in runlog.DISPATCH_TOOLS),
        "handoffs": len(row.retired), "degraded_handoffs": len(degraded),
        "degraded_notes": degraded, "retired": list(row.retired),
        "session_id": row.session_id, "cost_usd": row.cost_usd,
        "duration_s": row.duration_s, "started_at": row.started_at, "ended_at": row.ended_at,
        "context": _context(row.rounds),
        "resume": live.resume if live is not None else None,
    }


def _session(d: runlog.SessionDetail, steps: list[str]) -> dict[str, Any]:
    m = d.main
    return {
        "session_id": d.session_id, "store_key": m.key, "steps": steps,
        "turns": len(m.rounds), "entries": m.entries,
        "tool_calls": _tools([n for _, n in m.calls]), "dispatches": m.dispatches,
        "subagents": [s.agent for s in d.subagents],
        "duration_s": m.duration_s, "context": _context([r.context for r in m.rounds]),
        "input_tokens": m.input_tokens, "cache_read": m.cache_read,
        "cache_creation": m.cache_creation, "output_tokens": m.output_tokens,
        "thinking_tokens": m.thinking_tokens, "api_errors": m.api_errors,
        "denials": m.denials, "spill_pointers": m.spill_pointers, "resume": d.resume,
    }


def _subagent(s: runlog.Transcript) -> dict[str, Any]:
    return {
        "agent": s.agent, "session_id": s.session_id, "store_key": s.key,
        "turns": len(s.rounds), "entries": s.entries,
        "tool_calls": _tools([n for _, n in s.calls]), "output_tokens": s.output_tokens,
        "thinking_tokens": s.thinking_tokens, "duration_s": s.duration_s,
        "denials": s.denials, "api_errors": s.api_errors,
    }


def _dir_stats(path: Path) -> dict[str, int] | None:
    if not path.is_dir():
        return None
    files = [p for p in path.rglob("*") if p.is_file()]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def _workbench(ws: Path) -> dict[str, Any]:
    root = ws / ".flower"
    return {"path": str(root), "exists": root.is_dir(),
            **{name: _dir_stats(root / name)
               for name in ("spill", "scripts", "artifacts", "notes")}}


def analyze(run_dir: Path) -> dict[str, Any]:
    """The whole report as data (``--json`` prints exactly this)."""
    try:
        log = runlog.load_runs(run_dir)
    except runlog.NoRuns:
        # no manifest: the sessions alone still tell a lot (the reference needs only the db)
        ws = runlog.recorded_workspace(run_dir) or Path(run_dir).resolve().parent
        db = run_dir / runlog.DB_NAME
        log = runlog.RunLog(run_dir=run_dir, workspace=ws,
                            db="ok" if db.is_file() else "missing")
        if _store_url() is not None:
            log.db = runlog._read_sessions(run_dir, project_key(ws), [])[0]
    details = runlog.load_details(log)
    if log.db == "ok" and not details and _store_url() is None \
            and (run_dir / runlog.DB_NAME).is_file():
        log.db = "unreadable" if not _has_tables(run_dir) else log.db

    steps_of: dict[str, list[str]] = {}
    for row in log.rows:
        for sid in row.sessions:
            steps_of.setdefault(sid, []).append(row.step)
    steps = [_step(row, details) for row in log.rows]
    sessions = [_session(d, steps_of.get(sid, [])) for sid, d in details.items()]
    subs = [s for d in details.values() for s in d.subagents]

    mains = [d.main for d in details.values()]
    everything = mains + subs
    total_in = sum(t.input_tokens + t.cache_read + t.cache_creation for t in everything)
    hits = sum(t.cache_read for t in everything)
    main_rounds = [r.context for d in details.values() for r in d.main.rounds]
    results = sorted((r for t in everything for r in t.results),
                     key=lambda r: r.chars, reverse=True)[:runlog.TOP_RESULTS]
    totals = log.totals()
    doc_runs = runlog.to_json(log)["runs"]
    return {
        "run_dir": str(run_dir), "workspace": str(log.workspace), "db": log.db,
        "totals": {**totals, "main_sessions": len(mains), "subagents": len(subs),
                   "turns": sum(r.num_turns for r in log.rows),
                   "retries": sum(max(r.attempts - 1, 0) for r in log.rows),
                   "handoffs": sum(len(r.retired) for r in log.rows),
                   "degraded_handoffs": sum(s["degraded_handoffs"] for s in steps)},
        "runs": [{k: v for k, v in run.items() if k != "rows"} for run in doc_runs],
        "steps": steps,
        "sessions": sessions,
        "subagents": [_subagent(s) for s in subs],
        "context": {"main_thread": _context(main_rounds),
                    "drops": [i + 1 for i in range(1, len(main_rounds))
                              if main_rounds[i] < 0.7 * main_rounds[i - 1]]},
        "cache": {
            "input_total": total_in, "cache_read": hits,
            "cache_creation": sum(t.cache_creation for t in everything),
            "uncached": sum(t.input_tokens for t in everything),
            "hit_rate": round(hits / total_in, 4) if total_in else None,
            "output_tokens": sum(t.output_tokens for t in everything),
            "thinking_tokens": sum(t.thinking_tokens for t in everything),
            "main": {"turns": sum(len(t.rounds) for t in mains),
                     "tool_calls": sum(len(t.calls) for t in mains),
                     "output_tokens": sum(t.output_tokens for t in mains)},
            "subagents": {"turns": sum(len(t.rounds) for t in subs),
                          "tool_calls": sum(len(t.calls) for t in subs),
                          "output_tokens": sum(t.output_tokens for t in subs)},
        },
        "top_results": [{"chars": r.chars, "tool": r.tool, "session_id": r.session_id,
                         "agent": r.agent, "at": r.at, "preview": r.preview} for r in results],
        "workbench": _workbench(Path(log.workspace)),
    }


def _store_url() -> str | None:
    """The configured session store (``--store`` / ``FLOWER_STORE_URL``), None: sessions.db."""
    from flower.stores.url import configured_url

    return configured_url()


def _has_tables(run_dir: Path) -> bool:
    try:
        con = runlog.connect_ro(run_dir / runlog.DB_NAME)
    except runlog.NoSessions:
        return False
    if con is None:
        return False
    try:
        con.execute("SELECT 1 FROM meta LIMIT 1")
        return True
    except Exception:
        return False
    finally:
        con.close()


# --- rendering --------------------------------------------------------------------------


def _num(n: int | float | None) -> str:
    if n is None:
        return "-"
    return human_tokens(int(n))


def _size(n: int) -> str:
    return f"{_num(n)}B"


def _slope_text(c: dict[str, Any]) -> str:
    if not c["rounds"]:
        return T["slope_none"]
    if c["rounds"] == 1:
        return T["slope_one"].format(first=_num(c["first"]))
    return T["slope"].format(first=_num(c["first"]), last=_num(c["last"]), n=c["rounds"],
                             slope=_num(c["slope"]) if c["slope"] >= 0
                             else "-" + _num(-c["slope"]))


def _table(cols: list[str], right: set[int]) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for i, col in enumerate(cols):
        table.add_column(col, justify="right" if i in right else "left", overflow="fold")
    return table


def render(doc: dict[str, Any], console: Console) -> None:
    """Print ``doc`` (from :func:`analyze`) as the report: one ``====`` section each."""
    def rule(title: str) -> None:
        console.print(Text(f"==== {title} " + "=" * max(4, 60 - len(title) * 2), style="bold"))

    def line(text: str, style: str = "") -> None:
        console.print(Text(text, style=style), soft_wrap=True, highlight=False)

    cost = runlog.fmt_cost
    dur = runlog.fmt_duration
    tot = doc["totals"]
    line(T["title"].format(run_dir=doc["run_dir"]), "bold")
    line(T["workspace"].format(ws=doc["workspace"], db=doc["db"]), "dim")

    rule(T["accounting"])
    if not doc["runs"]:
        line(T["no_rows"], "dim")
    for run in doc["runs"]:
        line(T["run_line"].format(run=run["run"] or "-",
                                  start=runlog.fmt_time(run["started_at"]),
                                  steps=run["steps"], ok=run["ok"], failed=run["failed"],
                                  cost=cost(run["cost_usd"] or 0.0), dur=dur(run["duration_s"])))
    line(T["totals"].format(runs=tot["runs"], steps=tot["steps"], sessions=tot["main_sessions"],
                            subs=tot["subagents"], cost=cost(tot["cost_usd"] or 0.0),
                            dur=dur(tot["duration_s"])), "bold")

    rule(T["steps"])
    table = _table(STEP_COLS, {2, 3, 4, 5, 6, 7, 8})
    for s in doc["steps"]:
        handoffs = str(s["handoffs"]) + (f"({s['degraded_handoffs']}降级)"
                                         if s["degraded_handoffs"] else "")
        table.add_row(s["step"], "ok" if s["ok"] else "失败", str(s["attempts"]),
                      str(s["num_turns"]), _tools_text(s["tool_calls"], 3),
                      str(s["dispatches"]), handoffs, cost(s["cost_usd"]),
                      dur(s["duration_s"]), _slope_text(s["context"]))
    console.print(table) if doc["steps"] else line(T["none"], "dim")

    rule(T["retries"])
    said = False
    for s in doc["steps"]:
        if s["attempts"] > 1 or s["retry_errors"]:
            said = True
            line(T["retry"].format(step=s["step"], n=s["attempts"],
                                   resumed=T["resumed"] if s["resumed"] else ""))
            for i, err in enumerate(s["retry_errors"], 1):
                line(T["why"].format(i=i, error=" ".join(err.split())[:200]), "yellow")
        if s["handoffs"] or s["degraded_handoffs"]:
            said = True
            line(T["handoff"].format(step=s["step"], n=s["handoffs"],
                                     degraded=s["degraded_handoffs"],
                                     ids=" ".join(i[:8] for i in s["retired"]) or "-"))
            for note in s["degraded_notes"]:
                line(f"    {note}", "yellow")
        if not s["ok"] and s["error"]:
            said = True
            line(T["failed"].format(step=s["step"], error=" ".join(s["error"].split())[:200]),
                 "red")
    if not said:
        line(T["no_retry"], "dim")

    rule(T["sessions"])
    if doc["db"] != "ok":
        line(T["no_db"], "dim")
    table = _table(SESSION_COLS, {2, 3, 5, 6})
    for s in doc["sessions"]:
        table.add_row(s["session_id"][:8], ", ".join(s["steps"]) or "-", str(s["turns"]),
                      str(s["entries"]), _tools_text(s["tool_calls"]), str(s["dispatches"]),
                      str(len(s["subagents"])), dur(s["duration_s"]),
                      _slope_text(s["context"]))
    console.print(table) if doc["sessions"] else line(T["none"], "dim")

    rule(T["subagents"])
    table = _table(SUB_COLS, {2, 4})
    for s in doc["subagents"]:
        table.add_row(s["agent"] or "-", s["session_id"][:8], str(s["turns"]),
                      _tools_text(s["tool_calls"]), _num(s["output_tokens"]),
                      dur(s["duration_s"]))
    console.print(table) if doc["subagents"] else line(T["none"], "dim")

    rule(T["resume"])
    line(T["resume_note"], "dim")
    table = _table(RESUME_COLS, set(range(1, len(RESUME_COLS))))
    for s in doc["sessions"]:
        r = s["resume"] or {}
        table.add_row(s["session_id"][:8], *(str(r.get(k, "-")) for k in (
            "expired", "trimmed", "chars_saved", "pruned", "denials_dropped", "neutralized",
            "healed")), str(s["spill_pointers"]), str(s["api_errors"]))
    console.print(table) if doc["sessions"] else line(T["none"], "dim")

    rule(T["context"])
    bars = runlog.BARS if runlog._utf8(console) else runlog.BARS_ASCII
    width = max((len(s["step"]) for s in doc["steps"]), default=0)
    for s in doc["steps"]:
        c = s["context"]
        chart = runlog.sparkline(c["values"], bars=bars) if c["values"] else ""
        line(f"{s['step']:<{width}}  {chart}  {_slope_text(c)}")
    main = doc["context"]["main_thread"]
    if main["rounds"]:
        line(T["peak"].format(peak=_num(main["peak"]), at=main["peak_round"]), "dim")
        peak = main["peak"] or 1
        every = max(1, math.ceil(main["rounds"] / CHART_ROWS))
        for i in range(0, main["rounds"], every):
            v = main["values"][i]
            line(f"  {i + 1:>5}  {_num(v):>7}  " + "█" * max(1, round(44 * v / peak)), "yellow")
    if doc["context"]["drops"]:
        line(T["drops"].format(turns=", ".join(map(str, doc["context"]["drops"][:6]))), "dim")

    rule(T["cache"])
    c = doc["cache"]
    line(T["cache_line"].format(total=_num(c["input_total"]), hit=_num(c["cache_read"]),
                                pct=f"{c['hit_rate']:.1%}" if c["hit_rate"] is not None else "-",
                                write=_num(c["cache_creation"]), plain=_num(c["uncached"])))
    line(T["output_line"].format(out=_num(c["output_tokens"]), think=_num(c["thinking_tokens"])))
    out_total = c["main"]["output_tokens"] + c["subagents"]["output_tokens"]
    line(T["share"].format(
        m_turns=c["main"]["turns"], s_turns=c["subagents"]["turns"],
        m_calls=c["main"]["tool_calls"], s_calls=c["subagents"]["tool_calls"],
        m_out=_num(c["main"]["output_tokens"]), s_out=_num(c["subagents"]["output_tokens"]),
        pct=f"{c['subagents']['output_tokens'] / out_total:.1%}" if out_total else "-"))

    rule(T["top"].format(n=runlog.TOP_RESULTS))
    table = _table(TOP_COLS, {0, 1})
    for i, r in enumerate(doc["top_results"], 1):
        who = r["session_id"][:8] + (f"/{r['agent']}" if r["agent"] else "")
        table.add_row(str(i), _num(r["chars"]), r["tool"], who, r["preview"])
    console.print(table) if doc["top_results"] else line(T["none"], "dim")

    rule(T["workbench"])
    wb = doc["workbench"]
    if not wb["exists"]:
        line(T["no_workbench"].format(path=wb["path"]), "dim")
    else:
        spill = wb["spill"] or {"files": 0, "bytes": 0}
        line(T["spill"].format(n=spill["files"], size=_size(spill["bytes"])))
        for name in ("scripts", "artifacts", "notes"):
            st = wb[name] or {"files": 0, "bytes": 0}
            line(T["dir"].format(name=name, n=st["files"], size=_size(st["bytes"])))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="analyze_run.py", description="Post-mortem of a flower run folder (read-only).")
    parser.add_argument("run_dir", nargs="?", default="runs",
                        help="the run folder (manifest.json + sessions.db); default: runs")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--store", metavar="URL", default=None,
                        help="read the sessions from this store (postgresql://… or a "
                             "sessions.db path), as flower --store; default: FLOWER_STORE_URL, "
                             "else RUN_DIR/sessions.db")
    args = parser.parse_args(argv)
    if args.store and args.store.strip():
        os.environ["FLOWER_STORE_URL"] = args.store.strip()  # what configured_url() reads
    run_dir = Path(args.run_dir)
    stored = _store_url() is not None and run_dir.is_dir()
    if not (run_dir / "manifest.json").is_file() and not (run_dir / runlog.DB_NAME).is_file() \
            and not stored:
        print(f"{run_dir}: 没有 manifest.json 也没有 sessions.db,不是 flower 的运行目录",
              file=sys.stderr)
        return 1
    try:
        doc = analyze(run_dir)
    except runlog.CorruptManifest as exc:
        print(f"{exc.path}: 清单读不了({exc.reason})", file=sys.stderr)
        return 1
    if args.json:
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=2, allow_nan=False,
                  default=str)
        sys.stdout.write("\n")
    else:
        render(doc, Console(highlight=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``flower analyze`` on the screen: the post-mortem document
(:func:`flower.analyze`) as one ``====`` section after another.

The report is in the words of ``flower log`` (Chinese labels), with the same duration,
cost and chart helpers (:mod:`flower.cli.tui.log_view`); ``--json`` prints the document
itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from flower.cli.tui.log_view import (
    BARS,
    BARS_ASCII,
    fmt_cost,
    fmt_duration,
    fmt_time,
    sparkline,
    utf8,
)
from flower.errors import one_line
from flower.runlog import TOP_RESULTS
from flower.usage import human_tokens

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["T", "render"]

CHART_ROWS = 20  # the main thread's curve is printed in at most this many lines
RULE_WIDTH = 76  # every section rule is this many cells, so they end in one column at 80

# The report's words; only this report and its command show them.
T = {
    "title": "flower 运行复盘 · {run_dir}",
    "workspace": "工作区 {ws} · sessions.db {db}",
    "accounting": "总账",
    "steps": "每一步",
    "retries": "重试与交接",
    "sessions": "每个会话",
    "subagents": "子代理",
    "resume": "下次接着跑时,喂回模型的记录会精简什么",
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
    "not_run_dir": "{path}: 没有 manifest.json 也没有 sessions.db,不是 flower 的运行目录",
    "corrupt": "{path}: 清单读不了({reason})",
    "resume_note": "按 flower 的默认策略(过期保留最近 6 个;裁剪保留最近 20 个 ≥2000 字的结果;"
                   "剪除合成错误和旧的被拒调用),只改喂回模型的副本,库里一字不改",
}
STEP_COLS = ["步骤", "结果", "尝试", "轮", "工具调用", "派人", "换代", "花费", "时长", "上下文"]
SESSION_COLS = ["会话", "步骤", "轮", "条目", "工具调用", "派人", "子代理", "时长", "上下文"]
SUB_COLS = ["子代理", "所属会话", "轮", "工具调用", "输出 tokens", "时长"]
RESUME_COLS = ["会话", "过期", "裁剪", "省下字符", "剪除", "删被拒", "中性化", "补结果",
               "落盘指针", "合成错误"]
TOP_COLS = ["#", "字符", "工具", "会话", "预览"]


def _tools_text(tools: dict[str, int], limit: int = 6) -> str:
    if not tools:
        return "0"
    items = list(tools.items())
    text = " ".join(f"{name}×{n}" for name, n in items[:limit])
    if len(items) > limit:
        text += f" +{len(items) - limit}"
    return f"{sum(tools.values())}: {text}"


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


def _span_text(c: dict[str, Any]) -> str:
    """A table's context cell: first → last, without spaces so it never breaks in two (the
    slope per step is in the context section, where a line has room for it)."""
    if not c["rounds"]:
        return "-"
    if c["rounds"] == 1:
        return _num(c["first"])
    return f"{_num(c['first'])}→{_num(c['last'])}"


def _table(cols: list[str], right: set[int], fold: set[int]) -> Table:
    """Only the ``fold`` columns (names, tool lists, previews) may break into more lines;
    every other cell — figures, ids — stays whole, so at 80 columns no number is cut in
    two. rich measures the widths in cells, so CJK names line up."""
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for i, col in enumerate(cols):
        table.add_column(col, justify="right" if i in right else "left",
                         no_wrap=i not in fold, overflow="fold")
    return table


def render(doc: dict[str, Any], console: Console, *, secrets: Iterable[str] = ()) -> None:
    """Print ``doc`` (from :func:`flower.runlog.analyze`) as the report: one ``====``
    section each. Every string in it — tool results, errors, names a model chose — goes
    through :func:`~flower.cli.tui.render.shown` first (``secrets`` masked, controls gone)."""
    from rich.cells import cell_len
    from rich.text import Text

    from flower.cli.tui.render import deep, shown

    doc = deep(doc, lambda text: shown(text, secrets))

    def rule(title: str) -> None:
        head = f"==== {title} "  # measured in cells: a CJK character takes two
        console.print(Text(head + "=" * max(4, RULE_WIDTH - cell_len(head)), style="bold"))

    def line(text: str, style: str = "") -> None:
        console.print(Text(text, style=style), soft_wrap=True, highlight=False)

    cost = fmt_cost
    dur = fmt_duration
    tot = doc["totals"]
    line(T["title"].format(run_dir=doc["run_dir"]), "bold")
    line(T["workspace"].format(ws=doc["workspace"], db=doc["db"]), "dim")

    rule(T["accounting"])
    if not doc["runs"]:
        line(T["no_rows"], "dim")
    for run in doc["runs"]:
        line(T["run_line"].format(run=run["run"] or "-",
                                  start=fmt_time(run["started_at"]),
                                  steps=run["steps"], ok=run["ok"], failed=run["failed"],
                                  cost=cost(run["cost_usd"] or 0.0), dur=dur(run["duration_s"])))
    line(T["totals"].format(runs=tot["runs"], steps=tot["steps"], sessions=tot["main_sessions"],
                            subs=tot["subagents"], cost=cost(tot["cost_usd"] or 0.0),
                            dur=dur(tot["duration_s"])), "bold")

    rule(T["steps"])
    table = _table(STEP_COLS, {2, 3, 4, 5, 6, 7, 8}, fold={0, 4})
    for s in doc["steps"]:
        handoffs = str(s["handoffs"]) + (f"({s['degraded_handoffs']}降级)"
                                         if s["degraded_handoffs"] else "")
        table.add_row(s["step"], "ok" if s["ok"] else "失败", str(s["attempts"]),
                      str(s["num_turns"]), _tools_text(s["tool_calls"], 3),
                      str(s["dispatches"]), handoffs, cost(s["cost_usd"]),
                      dur(s["duration_s"]), _span_text(s["context"]))
    console.print(table) if doc["steps"] else line(T["none"], "dim")

    rule(T["retries"])
    said = False
    for s in doc["steps"]:
        if s["attempts"] > 1 or s["retry_errors"]:
            said = True
            line(T["retry"].format(step=s["step"], n=s["attempts"],
                                   resumed=T["resumed"] if s["resumed"] else ""))
            for i, err in enumerate(s["retry_errors"], 1):
                line(T["why"].format(i=i, error=one_line(err)), "yellow")
        if s["handoffs"] or s["degraded_handoffs"]:
            said = True
            line(T["handoff"].format(step=s["step"], n=s["handoffs"],
                                     degraded=s["degraded_handoffs"],
                                     ids=" ".join(i[:8] for i in s["retired"]) or "-"))
            for note in s["degraded_notes"]:
                line(f"    {note}", "yellow")
        if not s["ok"] and s["error"]:
            said = True
            line(T["failed"].format(step=s["step"], error=one_line(s["error"])),
                 "red")
    if not said:
        line(T["no_retry"], "dim")

    rule(T["sessions"])
    if doc["db"] != "ok":
        line(T["no_db"], "dim")
    table = _table(SESSION_COLS, {2, 3, 5, 6}, fold={1, 4})
    for s in doc["sessions"]:
        table.add_row(s["session_id"][:8], ", ".join(s["steps"]) or "-", str(s["turns"]),
                      str(s["entries"]), _tools_text(s["tool_calls"]), str(s["dispatches"]),
                      str(len(s["subagents"])), dur(s["duration_s"]),
                      _span_text(s["context"]))
    console.print(table) if doc["sessions"] else line(T["none"], "dim")

    rule(T["subagents"])
    table = _table(SUB_COLS, {2, 4}, fold={0, 3})
    for s in doc["subagents"]:
        table.add_row(s["agent"] or "-", s["session_id"][:8], str(s["turns"]),
                      _tools_text(s["tool_calls"]), _num(s["output_tokens"]),
                      dur(s["duration_s"]))
    console.print(table) if doc["subagents"] else line(T["none"], "dim")

    rule(T["resume"])
    line(T["resume_note"], "dim")
    table = _table(RESUME_COLS, set(range(1, len(RESUME_COLS))), fold=set())
    for s in doc["sessions"]:
        r = s["resume"] or {}
        table.add_row(s["session_id"][:8], *(str(r.get(k, "-")) for k in (
            "expired", "trimmed", "chars_saved", "pruned", "denials_dropped", "neutralized",
            "healed")), str(s["spill_pointers"]), str(s["api_errors"]))
    console.print(table) if doc["sessions"] else line(T["none"], "dim")

    rule(T["context"])
    bars = BARS if utf8(console) else BARS_ASCII
    width = max((cell_len(s["step"]) for s in doc["steps"]), default=0)
    for s in doc["steps"]:
        c = s["context"]
        chart = sparkline(c["values"], bars=bars) if c["values"] else ""
        pad = " " * (width - cell_len(s["step"]))  # by cells, so CJK names line up
        line(f"{s['step']}{pad}  {chart}  {_slope_text(c)}")
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

    rule(T["top"].format(n=TOP_RESULTS))
    table = _table(TOP_COLS, {0, 1}, fold={2, 3, 4})
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

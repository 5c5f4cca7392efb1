"""``flower log`` on the screen: one block per run, one line per row, then the totals.

ASCII status icons (``+`` ok, ``x`` failed, ``#`` judge); the per-round chart uses
``▁▂▃▄▅▆▇█`` (``_.-=#`` when the console is not UTF-8). The chart runs from the row's
smallest reading (lowest bar) to its largest (highest bar), with both numbers printed after
it; more than 48 rounds are folded into 48 cells (peak of each). The data is
:func:`flower.runlog.load_runs`'s; ``--json`` prints :func:`flower.runlog.to_json`.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.cli.tui.formats import fmt_cost, fmt_duration, fmt_time
from flower.core import manifest as _manifest
from flower.runlog import (
    DB_NAME,
    DEFAULT_RUN_DIR,
    CorruptManifest,
    NoRuns,
    Row,
    RunLog,
    load_runs,
    to_json,
)
from flower.runlog.spend import fill
from flower.stores.readers import DEFAULT_SCHEMA
from flower.usage import human_tokens

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["BARS", "BARS_ASCII", "SPARK_WIDTH", "chart_range", "fmt_cost", "fmt_duration",
           "fmt_time", "json_bytes", "main", "render", "sparkline", "utf8"]

SPARK_WIDTH = 48  # chart cells per row; longer rows show the peak of each stretch
BARS = "▁▂▃▄▅▆▇█"
BARS_ASCII = "_.-=#"
ERROR_LINES = 6
_STEP_WIDTH = 28  # step names are padded up to this many cells


def sparkline(values: list[int], *, bars: str = BARS, width: int = SPARK_WIDTH) -> str:
    """One cell per value, from the lowest bar at ``min(values)`` to the highest at
    ``max(values)`` (all middle bars when they are equal); more than ``width`` values are cut
    into ``width`` stretches, each shown by its largest value."""
    if not values:
        return ""
    if len(values) > width:
        step = len(values) / width
        values = [max(values[int(i * step):max(int((i + 1) * step), int(i * step) + 1)])
                  for i in range(width)]
    lo, hi = min(values), max(values)
    top = len(bars) - 1
    if hi == lo:
        return bars[top // 2] * len(values)
    return "".join(bars[math.floor((v - lo) / (hi - lo) * top + 0.5)] for v in values)


def chart_range(values: list[int]) -> str:
    """The numbers the chart's lowest and highest bars stand for."""
    lo, hi = min(values), max(values)
    if lo == hi:
        return human_tokens(lo)
    return texts.LOG_RANGE.format(lo=human_tokens(lo), hi=human_tokens(hi))


def utf8(console: Console) -> bool:
    """Can ``console`` print the chart's block characters?"""
    encoding = (getattr(console, "encoding", "") or "").lower().replace("-", "").replace("_", "")
    return encoding.startswith("utf")


def _icon(row: Row) -> tuple[str, str]:
    if not row.ok:
        return "x", "red"
    if row.kind == "judge":
        return "#", "magenta"
    return "+", "green"


def render(log: RunLog, console: Console, *, secrets: Iterable[str] = ()) -> None:
    """Print the report: one block per run, one line per row, then the totals. What the
    run book recorded is shown through :func:`~flower.cli.tui.render.shown`."""
    from rich.cells import cell_len
    from rich.text import Text

    from flower.cli.tui.render import shown

    def clean(text: str) -> str:
        return shown(text, secrets)

    bars = BARS if utf8(console) else BARS_ASCII
    totals = log.totals()

    def out(text: Text) -> None:
        console.print(text, soft_wrap=True, highlight=False)

    if not log.rows:
        out(Text(texts.LOG_EMPTY.format(path=log.run_dir / _manifest.FILENAME)))
        return
    if log.caps is not None:
        out(Text(caps_line(log.caps), style="bold"))
    stopped = (log.caps or {}).get("stopped") or {}

    # columns: name, attempts/turns, session, cost, duration, context — aligned over all runs
    cells: dict[int, list[str]] = {}
    for row in log.rows:
        meta = texts.LOG_ATTEMPTS.format(n=row.attempts)
        meta += " · " + texts.LOG_TURNS.format(n=row.num_turns)
        if row.resumed:
            meta += " · " + texts.LOG_RESUMED
        ctx = row.last_context
        cells[id(row)] = [
            clean(row.step).replace("\n", " "), meta,
            clean(row.session_id[:8]) if row.session_id else texts.LOG_NO_SESSION,
            fmt_cost(row.cost_usd), fmt_duration(row.duration_s),
            human_tokens(ctx) if ctx else "",
        ]
    widths = [max(cell_len(c[i]) for c in cells.values()) for i in range(6)]
    widths[0] = min(widths[0], _STEP_WIDTH)
    styles = ["bold", "dim", "cyan", "", "", ""]
    right = [False, False, False, True, True, True]
    for run in log.runs:
        head = texts.LOG_RUN.format(
            run=clean(run.run) if run.run else texts.LOG_RUN_NO_ID,
            start=fmt_time(run.started_at), steps=len(run.rows),
            cost=fmt_cost(run.cost_usd), duration=fmt_duration(run.duration_s))
        out(Text(f"= {head}", style="bold"))
        if stopped.get(run.run) in texts.LOG_STOPPED_AT:
            out(Text(f"  ! {texts.LOG_STOPPED_AT[stopped[run.run]]}", style="bold yellow"))
        for row in run.rows:
            icon, colour = _icon(row)
            line = Text("  ")
            line.append(icon, style=f"bold {colour}")
            for i, cell in enumerate(cells[id(row)]):
                pad = " " * max(0, widths[i] - cell_len(cell))
                line.append(" " if i == 0 else "  ")
                line.append(pad + cell if right[i] else cell + pad, style=styles[i])
            if row.rounds:
                line.append(f"  {sparkline(row.rounds, bars=bars)}", style="yellow")
                line.append(f" {chart_range(row.rounds)}", style="dim")
            line.rstrip()
            out(line)
            for d in row.dispatches:
                out(Text("      " + texts.LOG_DISPATCH.format(
                    agent=clean(str(d.get("agent") or "?")),
                    cost="≈" + fmt_cost(float(d.get("cost_usd") or 0)),
                    turns=d.get("rounds", 0)), style="cyan"))
            if row.retired:
                ids = " ".join(clean(s[:8]) for s in row.retired)
                out(Text(f"      {texts.LOG_RETIRED.format(ids=ids)}", style="dim"))
            if not row.ok and row.error:
                lines = clean(row.reason or "").strip().splitlines() or [""]
                if len(lines) > ERROR_LINES:
                    lines = [*lines[:ERROR_LINES], f"… (+{len(lines) - ERROR_LINES})"]
                out(Text(f"      {texts.LOG_ERROR.format(error=lines[0])}", style="red"))
                for extra in lines[1:]:
                    out(Text(f"        {extra}", style="red"))
        out(Text(""))
    db = log.run_dir / DB_NAME
    if log.db == "missing":
        out(Text(texts.LOG_DB_MISSING.format(path=db), style="dim"))
    elif log.db == "unreadable":
        out(Text(texts.LOG_DB_UNREADABLE.format(path=db), style="dim"))
    elif any(row.rounds for row in log.rows):
        out(Text(texts.LOG_CHART.format(lo=bars[0], hi=bars[-1]), style="dim"))
    out(Text(texts.LOG_TOTALS.format(
        runs=totals["runs"], steps=totals["steps"], ok=totals["ok"], failed=totals["failed"],
        sessions=totals["sessions"], cost=fmt_cost(totals["cost_usd"]),
        duration=fmt_duration(totals["duration_s"])), style="bold"))


# --- command ----------------------------------------------------------------------------

_C1_UTF8 = re.compile(rb"\x7f|\xc2[\x80-\x9f]")  # DEL and C1 in UTF-8 (0xC2 only leads)


def json_bytes(doc: Any, secrets: Iterable[str] = ()) -> bytes:
    """The ``--json`` output as UTF-8 bytes: :func:`~flower.cli.tui.render.json_text` and a
    newline — what it printed through rich, which took 3 of the 3.4 seconds a 3.4 MB
    document needed. Encoded by the store's codec (orjson) when it writes the very same
    text, else by ``json``; a lone surrogate, which no UTF-8 stream can carry, is written
    as its ``\\uXXXX`` escape (the same string to a JSON reader)."""
    from flower.cli.tui.render import deep, json_text
    from flower.core.env import redact_keys
    from flower.core.manifest import escape_surrogates
    from flower.stores.codec import pretty

    data = pretty(deep(doc, lambda s: redact_keys(s, secrets)))
    if data is None:
        return escape_surrogates(json_text(doc, secrets) + "\n").encode("utf-8")
    return _C1_UTF8.sub(lambda m: b"\\u%04x" % ord(m.group().decode()), data) + b"\n"


def _write_stdout(data: bytes) -> None:
    """``data`` to stdout as it is when stdout is UTF-8 (as JSON is), else re-encoded the
    way the console would have written it (unprintable characters as ``?``)."""
    stream = sys.stdout
    encoding = (getattr(stream, "encoding", "") or "").lower().replace("-", "")
    buffer = getattr(stream, "buffer", None)
    if buffer is None or encoding != "utf8":
        if hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="replace")
            except (OSError, ValueError):
                pass
        stream.write(data.decode("utf-8"))
        stream.flush()
        return
    stream.flush()
    buffer.write(data)
    buffer.flush()


def caps_line(caps: dict) -> str:
    """``上限:预算 $20.00 · 用时 8:00:00 · 已花 $3.1000 · 已用 …`` for the top of the log."""
    from flower.core.ledger import fmt_duration as clock

    parts = []
    if caps.get("budget_usd"):
        parts.append(texts.LOG_CAP_BUDGET.format(cap=caps["budget_usd"]))
    if caps.get("max_hours"):
        parts.append(texts.LOG_CAP_TIME.format(cap=clock(caps["max_hours"] * 3600)))
    return texts.LOG_CAPS.format(caps=" · ".join(parts) or texts.LOG_NO_CAPS,
                                 spent=fmt_cost(caps.get("spent_usd") or 0.0),
                                 elapsed=fmt_duration(caps.get("elapsed_s") or 0.0))


def _console(*, stderr: bool = False) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    encoding = (getattr(stream, "encoding", "") or "").lower()
    if "utf" not in encoding and hasattr(stream, "reconfigure"):
        # a non-UTF-8 terminal shows "?" for the Chinese labels rather than crashing
        try:
            stream.reconfigure(errors="replace")
        except (OSError, ValueError):
            pass
    return Console(stderr=stderr, highlight=False)


def main(run_dir: str | None, *, as_json: bool, console: Console | None = None,
         schema: str = DEFAULT_SCHEMA) -> int:
    """``flower log [RUN_DIR] [--json]``: 0 when the runs were shown, 1 when there is no
    readable manifest (with one line saying why and what to do). ``schema``: where a
    PostgreSQL store keeps the sessions."""
    folder = Path(run_dir if run_dir is not None else DEFAULT_RUN_DIR)
    try:
        log = fill(load_runs(folder, schema=schema))
    except (NoRuns, CorruptManifest) as exc:
        from rich.text import Text

        if isinstance(exc, NoRuns):
            template = texts.LOG_NO_RUN_DIR if exc.folder else texts.LOG_NO_MANIFEST
            message = template.format(path=exc.path)
        else:
            message = texts.LOG_CORRUPT.format(path=exc.path, reason=exc.reason)
        err = console or _console(stderr=True)
        err.print(Text(message), soft_wrap=True, highlight=False)
        if as_json and isinstance(exc, NoRuns):
            # no runs yet is an answer, not an error: the document with no runs in it
            empty = RunLog(run_dir=folder, workspace=folder.resolve().parent, db="missing")
            if console is None:  # the same way out as a document with runs in it
                _write_stdout(json_bytes(to_json(empty)))
            else:
                from flower.cli.tui.render import json_text

                console.out(json_text(to_json(empty)), highlight=False)
            return 0
        return 1
    from flower.cli.tui.render import json_text
    from flower.core.env import effective_env, secret_values

    secrets = secret_values(effective_env())
    if as_json and console is None:
        _write_stdout(json_bytes(to_json(log), secrets))
        return 0
    con = console or _console()
    if as_json:
        con.out(json_text(to_json(log), secrets), highlight=False)
    else:
        render(log, con, secrets=secrets)
        _checkpoints_line(folder, con)
    return 0


def _checkpoints_line(folder: Path, con: Console) -> None:
    """The newest checkpoint of the folder (flower checkpoints lists them all)."""
    from flower.core.checkpoints import DIRNAME, Checkpoints
    from flower.core.shadow import ShadowError

    if not (folder / DIRNAME / "HEAD").is_file():
        return
    try:
        listed = Checkpoints(folder, folder.resolve().parent).list()
    except (ShadowError, OSError):
        return
    if listed:
        last = listed[-1]
        con.print(texts.CP_LOG_LINE.format(n=len(listed), id=last.id, kind=last.kind,
                                           step=last.step), highlight=False, markup=False)

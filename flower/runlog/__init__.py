"""What a run folder holds, as data: ``flower log``'s runs and rows, and the post-mortem
``flower analyze`` reports. Strictly read-only, and without rendering — the command line
shows these (``flower/cli/tui/log_view.py``, ``analyze_view.py``).

- :mod:`~flower.runlog.model` — the manifest's rows grouped into runs, each row's rounds
  (:func:`load_runs`), and the ``flower log --json`` document (:func:`to_json`);
- :mod:`~flower.runlog.analysis` — what the stored transcripts hold, per session and
  subagent (:func:`load_details`);
- :mod:`~flower.runlog.report` — the whole post-mortem as one document (:func:`analyze`).

The names below are the ones scripts and tests use as ``runlog.X``.
"""

from __future__ import annotations

from flower.runlog.analysis import (
    DISPATCH_TOOLS,
    TOP_RESULTS,
    SessionDetail,
    ToolResult,
    Transcript,
    load_details,
    slope,
)
from flower.runlog.model import (
    DB_NAME,
    DEFAULT_RUN_DIR,
    CorruptManifest,
    NoRuns,
    Row,
    Run,
    RunLog,
    in_window,
    load_runs,
    read_manifest,
    split_step,
    to_json,
)
from flower.runlog.report import analyze
from flower.stores.readers import Round

__all__ = ["DB_NAME", "DEFAULT_RUN_DIR", "DISPATCH_TOOLS", "TOP_RESULTS", "CorruptManifest",
           "NoRuns", "Round", "Row", "Run", "RunLog", "SessionDetail", "ToolResult",
           "Transcript", "analyze", "in_window", "load_details", "load_runs", "read_manifest",
           "slope", "split_step", "to_json"]

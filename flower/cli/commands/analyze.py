"""``flower analyze [RUN_DIR] [--json]``: the post-mortem of a run folder.

Per step and per session: turns, tool calls by tool, subagent dispatches, retries and why,
handoffs, what a resume-time ``load()`` would rewrite, cost, duration, the context of every
round with its slope, the cache, the largest tool results and the workbench. Read-only, like
``flower log``, from the same store (``--store`` / ``FLOWER_STORE_URL``, else
``RUN_DIR/sessions.db``). ``tools/analyze_run.py`` in a checkout is this command. Tool
results are shown with the credentials flower knows masked and terminal controls removed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from flower.cli.context import Globals, dirs
from flower.stores.readers import DB_NAME, DEFAULT_SCHEMA


def analyze_run(g: Globals, run_dir: str | None, *, as_json: bool,
                schema: str | None = None) -> int:
    """Print the report of ``run_dir`` (default: this workspace's ``runs/``): 0, or 1 when
    the folder holds neither a manifest nor a ``sessions.db`` (and no store is configured)
    or its manifest cannot be read."""
    from flower.cli.tui.analyze_view import T
    from flower.cli.tui.render import json_text
    from flower.core.env import effective_env, secret_values
    from flower.core.manifest import FILENAME
    from flower.runlog import CorruptManifest, analyze
    from flower.stores.url import configured_url

    folder = Path(run_dir) if run_dir is not None else dirs(g)[1]
    stored = configured_url() is not None and folder.is_dir()
    if not (folder / FILENAME).is_file() and not (folder / DB_NAME).is_file() and not stored:
        print(T["not_run_dir"].format(path=folder), file=sys.stderr)
        return 1
    try:
        doc = analyze(folder, schema=schema or DEFAULT_SCHEMA)
    except CorruptManifest as exc:
        print(T["corrupt"].format(path=exc.path, reason=exc.reason), file=sys.stderr)
        return 1
    secrets = secret_values(effective_env())  # tool results may show them: masked
    if as_json:
        sys.stdout.write(json_text(doc, secrets, allow_nan=False, default=str) + "\n")
    else:
        from rich.console import Console

        from flower.cli.tui.analyze_view import render

        render(doc, Console(highlight=False), secrets=secrets)
    return 0

"""``flower log [RUN_DIR]``: the runs in a folder — steps, sessions, attempts, cost, context."""

from __future__ import annotations

from flower.cli.context import Globals, dirs
from flower.cli.exitcodes import ExitCode
from flower.stores.readers import DEFAULT_SCHEMA


def show_log(g: Globals, run_dir: str | None, *, as_json: bool,
             schema: str | None = None) -> ExitCode:
    """Print the log of ``run_dir`` (default: this workspace's ``runs/``)."""
    from flower.cli.tui.log_view import main as log_main

    return ExitCode(log_main(run_dir or str(dirs(g)[1]), as_json=as_json,
                             schema=schema or DEFAULT_SCHEMA))

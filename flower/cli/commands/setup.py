"""``flower setup``: configure the credential (mode 600) and check it."""

from __future__ import annotations

from flower.cli.context import console
from flower.cli.exitcodes import ExitCode


def setup() -> ExitCode:
    """The setup screen; its exit code."""
    from flower.cli.tui.setup_screen import run_setup

    return run_setup(console())

"""What every command body shares: the global flags resolved, the folders, the console.

Kept import-light (rich is imported when a console is made), so ``flower --help`` stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flower.cli.exitcodes import ExitCode

if TYPE_CHECKING:
    from rich.console import Console

    from flower.core.notify import Notifier


@dataclass
class Globals:
    """What the global flags say, resolved."""

    workspace: str
    run_dir: str | None
    verbose: bool
    workbench: bool
    trim: bool
    store: str | None = None
    run: str | None = None
    sandbox: str = "auto"
    allow_domain: tuple[str, ...] = ()
    notify: str | None = None  # --notify CMD (flower.core.notify)


def dirs(g: Globals) -> tuple[Path, Path]:
    """Workspace and run dir. The run dir follows ``-w`` unless ``-r`` is given, so state
    never splits between two folders (``runs/`` is never put in the shell's cwd by accident)."""
    ws = Path(g.workspace).expanduser().resolve()
    run_dir = Path(g.run_dir).expanduser().resolve() if g.run_dir else ws / "runs"
    return ws, run_dir


def console() -> Console:
    """The one console: width clamped to 40–110 columns; plain when not a terminal, and
    then no line is wrapped either (a pipe or a log file gets every line whole)."""
    import shutil

    from rich.console import Console

    width = max(40, min(shutil.get_terminal_size((100, 24)).columns, 110))
    out = Console(highlight=False, width=width)
    out.soft_wrap = not out.is_terminal
    return out


def escape(text: str) -> str:
    """``text`` safe inside rich markup (a path like ``[x]`` must print as itself)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def fail(out: Console, message: str) -> ExitCode:
    """Print one red ``x`` line (never wrapped into two) and return ``ExitCode.FAILED``."""
    out.print(f"[red]x {escape(message)}[/]", soft_wrap=True)
    return ExitCode.FAILED


def notifier(out: Console, command: str | None, workspace: Path,
             run: str | None = None) -> Notifier | None:
    """The ``--notify`` runner (``command``, else ``FLOWER_NOTIFY``) for this run, or None
    when neither is set. ``run`` is what ``FLOWER_RUN`` tells the command (default: the run
    name of the store — ``--run``, else the workspace folder's name). Its warnings are
    yellow ``!`` lines."""
    from flower.core.notify import Notifier, notify_command
    from flower.stores.book import run_name

    command = notify_command(command)
    if command is None:
        return None

    def warn(line: str) -> None:
        out.print(f"[yellow]! {escape(line)}[/]", soft_wrap=True)

    return Notifier(command, workspace=workspace, run=run or run_name(workspace), warn=warn)

"""``flower "…"`` / bare ``flower``: the default job, with wake-up."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from flower import texts
from flower.cli.commands.local import credentials_ready, drive, sandbox_ready
from flower.cli.context import Globals, console, dirs, escape, fail
from flower.cli.exitcodes import ExitCode
from flower.errors import BadInput

if TYPE_CHECKING:
    from rich.console import Console


def start_prompt(out: Console, *, waking: bool) -> str | None:
    """Bare ``flower``: ask what to do (or whether to carry on). Read with ``input()``, not
    through a shell, so full-width quotes and ``!`` are safe. ``None`` = cancelled."""
    tty = sys.stdin.isatty()
    if tty:
        out.print(texts.START_WAKE if waking else texts.START_FRESH)
    try:
        # no "> " when nobody types: piped input would otherwise leave it in the output
        return input("> ") if tty else input()
    except (EOFError, KeyboardInterrupt):
        return None


def _already_clarified(out: Console, state: dict, ws: Path, run_dir: Path, *,
                       isolate: bool) -> ExitCode:
    """``--clarify-only`` where the brief is already complete: nothing to run, but the run
    ends as one does — the workbench index is built and the closing line printed (nothing
    was spent), as the original flower's run with a skipped clarify step did."""
    from flower.core.manifest import FILENAME
    from flower.core.workbench import Workbench

    out.print(texts.CLARIFY_ONLY_DONE.format(path=state["brief"]))
    Workbench.for_workspace(ws, isolate=isolate).refresh()
    out.print(texts.CLOSING.format(cost=0.0, manifest=run_dir / FILENAME), highlight=False)
    return ExitCode.OK


def go(g: Globals, ask: str | None, *, asks: int, rounds: int, no_goal: bool,
       judge_can_run: bool, timeout: float, isolate: bool, window: int | None,
       no_handoff: bool, new: bool, clarify_only: bool, no_trim: bool,
       no_bequest: bool = False, budget: float | None = None,
       max_hours: float | None = None) -> ExitCode:
    """The default job: clarify → set goal → coordinator dispatches → judge each round."""
    from flower.core.agent import handoff_setting
    from flower.workflow.starter import starter_flow
    from flower.workflow.wake import wake_banner, wake_state

    out = console()
    ws, run_dir = dirs(g)
    if ask is not None and not ask.strip() and (
            new or not wake_state(ws, run_dir=run_dir, isolate=isolate)["waking"]):
        return fail(out, texts.STARTER_NEED_ASK)  # `flower ""`: refused, nothing created
    policy = sandbox_ready(out, g)
    if policy is None or not credentials_ready(out, g):
        return ExitCode.FAILED
    state = wake_state(ws, run_dir=run_dir, isolate=isolate)
    while ask is None:
        said = start_prompt(out, waking=state["waking"] and not new)
        if said is None and not sys.stdin.isatty() and not state["waking"]:
            return fail(out, texts.STARTER_NEED_ASK)  # `flower </dev/null`: nothing to do
        if said is None:
            out.print(texts.CANCELLED)
            return ExitCode.FAILED
        if said.strip() == "/new":
            new = True
            continue
        ask = said
        if not ask.strip() and not (state["waking"] and not new):
            return fail(out, texts.EMPTY_ASK)
    if clarify_only and state["waking"] and not new:
        return _already_clarified(out, state, ws, run_dir, isolate=isolate)
    if state["waking"] and not new:
        out.print(f"[bold cyan]{escape(wake_banner(state))}[/]")
    try:
        wf = starter_flow(ask, workspace=ws, run_dir=run_dir, new=new, isolate=isolate,
                          clarify_only=clarify_only, goal=not no_goal, rounds=rounds,
                          judge_can_run=judge_can_run, max_asks=None if asks < 0 else asks,
                          timeout_s=max(0.0, timeout), bequest=not no_bequest)
    except BadInput as exc:
        return fail(out, str(exc))
    return drive(out, g, wf, ws, run_dir, trim=not no_trim,
                 handoff=handoff_setting(window, enabled=not no_handoff), sandbox=policy,
                 budget=budget, max_hours=max_hours)

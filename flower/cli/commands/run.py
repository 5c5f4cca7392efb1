"""``flower run TARGET``: your workflow, driven like the default job."""

from __future__ import annotations

from flower.cli.commands.local import credentials_ready, drive, sandbox_ready
from flower.cli.context import Globals, console, dirs, fail
from flower.cli.exitcodes import ExitCode


def run(g: Globals, target: str, *, budget: float | None = None,
        max_hours: float | None = None) -> ExitCode:
    """Load ``TARGET`` (a typo fails before any credential check), then drive it here."""
    from flower.core.workbench import Workbench
    from flower.workflow.target import TargetError, load_target

    out = console()
    ws, run_dir = dirs(g)
    try:
        wf = load_target(target)
    except TargetError as exc:
        return fail(out, str(exc))
    policy = sandbox_ready(out, g)
    if policy is None or not credentials_ready(out, g):
        return ExitCode.FAILED
    workbench = wf.workbench
    if workbench is None and g.workbench:
        workbench = Workbench.for_runtime(ws, run_dir)
    return drive(out, g, wf, ws, run_dir, trim=g.trim, workbench=workbench or False,
                 sandbox=policy, budget=budget, max_hours=max_hours)

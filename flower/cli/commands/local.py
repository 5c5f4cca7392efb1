"""What ``go``, ``run`` and ``once`` share: credentials checked once, a Runtime, the terminal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower.cli.context import Globals, fail
from flower.cli.exitcodes import ExitCode
from flower.errors import FlowerError, one_line

if TYPE_CHECKING:
    from rich.console import Console

    from flower.workflow.base import Workflow


def sandbox_ready(out: Console, g: Globals) -> Any:
    """The ``--sandbox`` policy, or None after the one red line when ``on``/``strict`` cannot
    be had here. Checked before the credentials: no model call (not even the probe) happens
    for a run that cannot start. ``auto`` without a sandbox prints its one line and goes on."""
    from flower.cli.context import escape
    from flower.core.sandbox import DEFAULT_DOMAINS, SandboxPolicy

    policy = SandboxPolicy(mode=g.sandbox, allow_domains=(*DEFAULT_DOMAINS, *g.allow_domain))
    problem = policy.problem()
    if problem:
        fail(out, problem)
        return None
    notice = policy.notice()
    if notice:
        out.print(f"[yellow]! {escape(notice)}[/]", soft_wrap=True)
    return policy


def credentials_ready(out: Console, g: Globals) -> bool:
    """A credential is configured (asking for one in a terminal); ``-v`` prints the config."""
    from flower.cli.tui.setup_screen import describe_config, ensure_credentials

    ok = ensure_credentials(out, interactive=sys.stdin.isatty())
    if ok and g.verbose:
        describe_config(out)
    return ok


def drive(out: Console, g: Globals, wf: Workflow, ws: Path, run_dir: Path, *,
          trim: bool, handoff: Any = True, workbench: Any = None,
          sandbox: Any = "auto", budget: float | None = None,
          max_hours: float | None = None) -> ExitCode:
    """Run ``wf`` in this process with the live terminal; its exit code. With ``--notify``
    the command hears of questions, caps and the end; flower waits for it at most briefly."""
    from flower.cli.context import notifier
    from flower.cli.tui.terminal import run_workflow
    from flower.core.runtime import Runtime

    try:
        rt = Runtime(workspace=ws, run_dir=run_dir, trim=trim, handoff=handoff,
                     workbench=workbench if workbench is not None else (wf.workbench or False),
                     sandbox=sandbox, budget=budget, max_hours=max_hours)
    except (FlowerError, OSError) as exc:  # a missing credential, a refused store or folder
        return fail(out, str(exc))
    notify = notifier(out, g.notify, ws)
    try:
        return run_workflow(out, wf, rt, verbose=g.verbose, notify=notify)
    except BaseException as exc:  # a crash or a Ctrl-C outside the run: still word of the end
        if notify is not None:
            from flower.core.notify import outcome

            notify.send(outcome(ok=False, interrupted=isinstance(exc, KeyboardInterrupt)),
                        one_line(exc) or type(exc).__name__)
        raise
    finally:
        if notify is not None:
            notify.close()

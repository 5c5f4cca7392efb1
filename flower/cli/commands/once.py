"""``flower once PROMPT``: one agent, one shot — no workflow, no clarify, no judge."""

from __future__ import annotations

from flower.cli.commands.local import credentials_ready, sandbox_ready
from flower.cli.context import Globals, console, dirs, fail
from flower.cli.exitcodes import ExitCode
from flower.errors import FlowerError


def once(g: Globals, prompt: str, *, instructions: str, tools: str, permission_mode: str,
         budget: float | None, resume: str | None, fork: bool) -> ExitCode:
    """One agent session on ``prompt`` with the tools named; its exit code."""
    from flower.cli.tui.terminal import run_once
    from flower.core.agent import AgentSpec
    from flower.core.runtime import Runtime

    out = console()
    ws, run_dir = dirs(g)
    policy = sandbox_ready(out, g)
    if policy is None or not credentials_ready(out, g):
        return ExitCode.FAILED
    allowed = [t.strip() for t in tools.split(",") if t.strip()]
    spec = AgentSpec(name="ad-hoc", instructions=instructions, allowed_tools=allowed,
                     permission_mode=permission_mode, max_budget_usd=budget)
    try:
        rt = Runtime(workspace=ws, run_dir=run_dir, trim=g.trim, workbench=g.workbench,
                     sandbox=policy, ledger=False)  # not a session of the task
    except (FlowerError, OSError) as exc:  # a missing credential, a refused store or folder
        return fail(out, str(exc))
    return run_once(out, rt, spec, prompt, resume=resume, fork=fork, verbose=g.verbose)

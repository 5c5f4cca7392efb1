"""The bodies of the CLI commands; ``cli.py`` only parses. Each returns the exit code.

Exit codes: 0 done · 1 a deliberate stop (a step failed or aborted, bad input, missing
credentials — one readable line, no traceback) · 2 usage (click) · 130 Ctrl-C twice.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower import texts

if TYPE_CHECKING:
    from rich.console import Console

    from flower.cli import Globals
    from flower.workflow.base import Workflow


class TargetError(Exception):
    """``flower run TARGET`` could not produce a workflow (the message says why)."""


def console() -> Console:
    """The one console: width clamped to 40–110 columns; plain when not a terminal."""
    import shutil

    from rich.console import Console

    width = max(40, min(shutil.get_terminal_size((100, 24)).columns, 110))
    return Console(highlight=False, width=width)


def dirs(g: Globals) -> tuple[Path, Path]:
    """Workspace and run dir. The run dir follows ``-w`` unless ``-r`` is given, so state
    never splits between two folders (the reference put ``runs/`` in the shell's cwd)."""
    ws = Path(g.workspace).expanduser().resolve()
    run_dir = Path(g.run_dir).expanduser().resolve() if g.run_dir else ws / "runs"
    return ws, run_dir


def fail(out: Console, message: str) -> int:
    out.print(f"[red]x {_escape(message)}[/]")
    return 1


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _credentials(out: Console, g: Globals) -> bool:
    from flower.setup_screen import describe_config, ensure_credentials

    ok = ensure_credentials(out, interactive=sys.stdin.isatty())
    if ok and g.verbose:
        describe_config(out)
    return ok


# ------------------------------------------------------------------ go


def start_prompt(out: Console, *, waking: bool) -> str | None:
    """Bare ``flower``: ask what to do (or whether to carry on). Read with ``input()``, not
    through a shell, so full-width quotes and ``!`` are safe. ``None`` = cancelled."""
    tty = sys.stdin.isatty()
    if tty:
        out.print(texts.START_WAKE if waking else texts.START_FRESH)
    try:
        return input("> ")
    except (EOFError, KeyboardInterrupt):
        return None


def go(g: Globals, ask: str | None, *, asks: int, rounds: int, no_goal: bool,
       judge_can_run: bool, timeout: float, isolate: bool, window: int | None,
       no_handoff: bool, new: bool, clarify_only: bool, no_trim: bool) -> int:
    """``flower "…"`` / bare ``flower``: the default job, with wake-up."""
    from flower.workflow.starter import starter_flow
    from flower.workflow.wake import wake_banner, wake_state

    out = console()
    ws, run_dir = dirs(g)
    if not _credentials(out, g):
        return 1
    state = wake_state(ws, run_dir=run_dir, isolate=isolate)
    while ask is None:
        said = start_prompt(out, waking=state["waking"] and not new)
        if said is None:
            out.print(texts.CANCELLED)
            return 1
        if said.strip() == "/new":
            new = True
            continue
        ask = said
        if not ask.strip() and not (state["waking"] and not new):
            return fail(out, texts.EMPTY_ASK)
    if clarify_only and state["waking"] and not new:
        out.print(texts.CLARIFY_ONLY_DONE.format(path=state["brief"]))
        return 0
    if state["waking"] and not new:
        out.print(f"[bold cyan]{_escape(wake_banner(state))}[/]")
    try:
        wf = starter_flow(ask, workspace=ws, run_dir=run_dir, new=new, isolate=isolate,
                          clarify_only=clarify_only, goal=not no_goal, rounds=rounds,
                          judge_can_run=judge_can_run, max_asks=None if asks < 0 else asks,
                          timeout_s=max(0.0, timeout))
    except ValueError as exc:
        return fail(out, str(exc))
    return _drive(out, g, wf, ws, run_dir, trim=not no_trim,
                  handoff=_handoff(window, no_handoff))


def _handoff(window: int | None, off: bool) -> Any:
    from flower.core.agent import HandoffPolicy

    if off:
        return HandoffPolicy(enabled=False)
    return HandoffPolicy(window=window) if window and window > 0 else True


def _drive(out: Console, g: Globals, wf: Workflow, ws: Path, run_dir: Path, *,
           trim: bool, handoff: Any = True, workbench: Any = None) -> int:
    from flower.core.runtime import Runtime
    from flower.terminal import run_workflow

    try:
        rt = Runtime(workspace=ws, run_dir=run_dir, trim=trim, handoff=handoff,
                     workbench=workbench if workbench is not None else (wf.workbench or False))
    except (RuntimeError, ValueError, OSError) as exc:
        return fail(out, str(exc))
    return run_workflow(out, wf, rt, verbose=g.verbose)


# ------------------------------------------------------------------ run


def load_target(target: str, *, cwd: Path | None = None) -> Workflow:
    """``module:attr`` or ``path/to/file.py:attr`` → the Workflow it names (called once if
    it is a callable). Raises ``TargetError`` with the line to show."""
    from flower.workflow.base import Workflow

    where, sep, attr = target.rpartition(":")
    if not sep or not where or not attr:
        raise TargetError(texts.RUN_NEED_COLON.format(target=target))
    cwd = cwd or Path.cwd()
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = (cwd / where).resolve()
        if not path.is_file():
            raise TargetError(texts.RUN_NO_FILE.format(path=where, cwd=cwd))
        module = _import_file(path)
    else:
        if str(cwd) not in sys.path:
            sys.path.insert(0, str(cwd))
        try:
            module = importlib.import_module(where)
        except Exception as exc:  # the user's module: anything can happen at import
            raise TargetError(texts.RUN_IMPORT.format(module=where, error=_why(exc))) from exc
    if not hasattr(module, attr):
        raise TargetError(texts.RUN_NO_ATTR.format(module=where, attr=attr))
    value = getattr(module, attr)
    if callable(value) and not isinstance(value, Workflow):
        try:
            value = value()
        except Exception as exc:
            raise TargetError(texts.RUN_CALL.format(target=target, error=_why(exc))) from exc
    if not isinstance(value, Workflow):
        raise TargetError(texts.RUN_NOT_WORKFLOW.format(target=target,
                                                        kind=type(value).__name__))
    return value


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _import_file(path: Path) -> Any:
    name = f"_flower_target_{path.stem}"
    sys.path.insert(0, str(path.parent))  # so the file can import its neighbours
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(texts.RUN_IMPORT.format(module=path, error="not a Python file"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise TargetError(texts.RUN_IMPORT.format(module=path.name, error=_why(exc))) from exc
    return module


def run(g: Globals, target: str) -> int:
    """``flower run TARGET``: your workflow, driven like the default job."""
    from flower.core.workbench import Workbench

    out = console()
    ws, run_dir = dirs(g)
    try:
        wf = load_target(target)
    except TargetError as exc:
        return fail(out, str(exc))
    if not _credentials(out, g):
        return 1
    workbench = wf.workbench
    if workbench is None and g.workbench:
        workbench = Workbench.for_runtime(ws, run_dir)
    return _drive(out, g, wf, ws, run_dir, trim=g.trim, workbench=workbench or False)


# ------------------------------------------------------------------ once


def once(g: Globals, prompt: str, *, instructions: str, tools: str, permission_mode: str,
         budget: float | None, resume: str | None, fork: bool) -> int:
    """``flower once PROMPT``: one agent, one shot."""
    from flower.core.agent import AgentSpec
    from flower.core.runtime import Runtime
    from flower.terminal import run_once

    out = console()
    ws, run_dir = dirs(g)
    if not _credentials(out, g):
        return 1
    allowed = [t.strip() for t in tools.split(",") if t.strip()]
    spec = AgentSpec(name="ad-hoc", instructions=instructions, allowed_tools=allowed,
                     permission_mode=permission_mode, max_budget_usd=budget)
    try:
        rt = Runtime(workspace=ws, run_dir=run_dir, trim=g.trim, workbench=g.workbench)
    except (RuntimeError, ValueError, OSError) as exc:
        return fail(out, str(exc))
    return run_once(out, rt, spec, prompt, resume=resume, fork=fork, verbose=g.verbose)


# ------------------------------------------------------------------ setup, log


def setup() -> int:
    """``flower setup`` — reachable, unlike the reference's."""
    from flower.setup_screen import run_setup

    return run_setup(console())


def show_log(g: Globals, run_dir: str | None, *, as_json: bool) -> int:
    """``flower log [RUN_DIR]``."""
    from flower.runlog import main as log_main

    return log_main(run_dir or str(dirs(g)[1]), as_json=as_json)


# ------------------------------------------------------------------ store


def copy_store(src: str, dst: str) -> int:
    """``flower store copy SRC DST``: one line saying what was copied, or why not."""
    from flower.stores.copy import CopyError, copy_sessions
    from flower.stores.select import is_postgres_url

    out = console()

    def shown(spec: str) -> str:
        if is_postgres_url(spec):
            from flower.stores.postgres import display_url

            return display_url(spec)
        return spec

    try:
        result = copy_sessions(src, dst)
    except (CopyError, RuntimeError, ValueError, OSError) as exc:
        out.print(f"[red]x {_escape(str(exc))}[/]", soft_wrap=True)  # one line, never wrapped
        return 1
    out.print(_escape(texts.STORE_COPY_DONE.format(
        sessions=result.sessions, transcripts=result.transcripts, entries=result.entries,
        src=shown(src), dst=shown(dst))), soft_wrap=True)
    return 0

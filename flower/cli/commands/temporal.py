"""Bodies of ``flower worker``, ``flower run/go … --temporal`` and ``flower status``.

Each returns the exit code; temporalio is imported here only, when one of them runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.cli.context import console, dirs, escape, fail
from flower.cli.exitcodes import ExitCode
from flower.errors import BadInput, one_line

if TYPE_CHECKING:
    from rich.console import Console

    from flower.cli.context import Globals


def _have_temporal(out: Console) -> bool:
    try:
        import temporalio  # noqa: F401
    except ImportError:
        fail(out, texts.DIST_NO_TEMPORAL)
        return False
    return True


async def _connect(out: Console, address: str) -> Any:
    from flower.distributed.temporal_worker import connect

    try:
        return await connect(address)
    except Exception as exc:
        fail(out, texts.DIST_UNREACHABLE.format(address=address, reason=one_line(exc)))
        return None


# ------------------------------------------------------------------ flower worker


def worker(g: Globals, address: str, queue: str, concurrency: int | None) -> ExitCode:
    """Serve ``queue`` until Ctrl-C / SIGTERM."""
    out = console()
    if not _have_temporal(out):
        return ExitCode.FAILED
    from flower.core.env import check_credentials, effective_env
    from flower.distributed.temporal_worker import build_worker

    # read, not exported: each step's Runtime hands .env values to its agent only, so this
    # process's environment (and any other subprocess it starts) stays as the user set it
    settings = effective_env()
    problem = check_credentials(settings)
    if problem:
        return fail(out, problem)

    async def serve() -> ExitCode:
        client = await _connect(out, address)
        if client is None:
            return ExitCode.FAILED
        w = build_worker(client, queue, max_concurrent_steps=concurrency)
        store = settings.get("FLOWER_STORE_URL") or "<run_dir>/sessions.db"
        if "://" in store:
            from flower.stores.url import display_url

            store = display_url(store)
        stopping: list[Any] = []

        def graceful() -> None:  # SIGTERM: steps in flight are cancelled and move elsewhere
            if not stopping:
                stopping.append(asyncio.ensure_future(w.shutdown()))

        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, graceful)
        # "ready" only once SIGTERM stops it gracefully (shutdown before run is safe)
        out.print(escape(texts.DIST_WORKER_READY.format(address=address, queue=queue,
                                                         store=store)), highlight=False)
        await w.run()
        return ExitCode.OK

    try:
        code = asyncio.run(serve())
    except KeyboardInterrupt:
        code = ExitCode.OK
    out.print(texts.DIST_WORKER_STOPPED, highlight=False)
    return code


# ------------------------------------------------------------------ submitting


def submit(g: Globals, target: str, *, address: str, queue: str, heartbeat: float,
           kwargs: dict[str, Any] | None = None, trim: bool | None = None,
           handoff: bool = True, window: int | None = None, budget: float | None = None,
           max_hours: float | None = None) -> ExitCode:
    """Start the run on the workers of ``queue`` and follow it here (answers included)."""
    from flower.distributed.client import new_run_id, request, submit

    out = console()
    if not _have_temporal(out):
        return ExitCode.FAILED
    ws, run_dir = dirs(g)
    run_id = new_run_id()
    req = request(target, workspace=ws, run_dir=run_dir, run_id=run_id, kwargs=kwargs,
                  trim=g.trim if trim is None else trim, handoff=handoff, window=window,
                  heartbeat_s=heartbeat, budget=budget, max_hours=max_hours)

    async def start() -> Any:
        client = await _connect(out, address)
        if client is None:
            return None
        return await submit(client, req, queue=queue, run_id=run_id)

    handle = asyncio.run(start())
    if handle is None:
        return ExitCode.FAILED
    out.print(escape(texts.DIST_SUBMITTED.format(run=run_id, queue=queue,
                                                  run_dir=req["run_dir"])), highlight=False)
    from flower.cli.context import notifier

    notify = notifier(out, g.notify, ws, run=run_id)  # the submitter is where the person is
    try:
        return drive(out, handle, workspace=ws, run_dir=Path(req["run_dir"]),
                     verbose=g.verbose, notify=notify)
    finally:
        if notify is not None:
            notify.close()


def run_target(g: Globals, target: str, *, address: str, queue: str, heartbeat: float,
               budget: float | None = None, max_hours: float | None = None) -> ExitCode:
    """``flower run TARGET --temporal …``: the target is checked here first (a typo fails
    in this terminal, not on a worker)."""
    from flower.workflow.target import TargetError, load_target

    out = console()
    try:
        load_target(target)
    except TargetError as exc:
        return fail(out, str(exc))
    return submit(g, target, address=address, queue=queue, heartbeat=heartbeat,
                  budget=budget, max_hours=max_hours)


def go(g: Globals, ask: str | None, *, address: str, queue: str, heartbeat: float,
       asks: int, rounds: int, no_goal: bool, judge_can_run: bool, timeout: float,
       isolate: bool, window: int | None, no_handoff: bool, new: bool, clarify_only: bool,
       no_trim: bool, no_bequest: bool = False, budget: float | None = None,
       max_hours: float | None = None) -> ExitCode:
    """``flower "…" --temporal …``: the default job, run by the workers. The workflow is
    built once here (it validates, archives with ``--new``, amends the brief); workers
    rebuild it from the same arguments."""
    from flower.cli.commands.go import start_prompt
    from flower.workflow.starter import starter_flow

    out = console()
    ws, run_dir = dirs(g)
    while ask is None:
        said = start_prompt(out, waking=False)
        if said is None:
            out.print(texts.CANCELLED)
            return ExitCode.FAILED
        ask = said
    kwargs = {"ask": ask, "workspace": str(ws), "run_dir": str(run_dir), "isolate": isolate,
              "clarify_only": clarify_only, "goal": not no_goal, "rounds": rounds,
              "judge_can_run": judge_can_run, "max_asks": None if asks < 0 else asks,
              "timeout_s": max(0.0, timeout), "bequest": not no_bequest}
    try:
        starter_flow(**kwargs, new=new)
    except BadInput as exc:
        return fail(out, str(exc))
    if new:  # a new task: the ledger the submissions from this run dir share starts over
        from flower.core.ledger import Ledger

        Ledger(run_dir, "new").reset()
    return submit(g, "flower.workflow.starter:starter_flow", address=address, queue=queue,
                  heartbeat=heartbeat, kwargs=kwargs, trim=not no_trim,
                  handoff=not no_handoff, window=window, budget=budget, max_hours=max_hours)


def drive(out: Console, handle: Any, *, workspace: Path, run_dir: Path,
          verbose: bool = False, notify: Any = None) -> ExitCode:
    """Follow the run in this terminal (answering its questions); exit code as ``flower
    run``: 0 done, 1 failed, 130 detached with Ctrl-C (the run goes on — so ``notify``
    hears of no end then: the run has not ended)."""
    import anyio

    from flower.cli.tui.terminal import Session
    from flower.distributed.client import RemoteChannel, RemoteRun, RemoteRuntime

    class RemoteSession(Session):
        def ctrl_c(self) -> None:
            self.render.line(f"  ! {texts.DIST_DETACHED.format(run=handle.id)}", "yellow")
            self.stop()

    channel = RemoteChannel(handle)
    remote = RemoteRun(handle, channel)
    session = RemoteSession(out, RemoteRuntime(workspace, run_dir),  # type: ignore[arg-type]
                            channel=channel, verbose=verbose, notify=notify)
    anyio.run(session.drive, remote)
    if session.quit:
        return ExitCode.INTERRUPTED
    p = remote.progress
    manifest = Path(run_dir) / "manifest.json"
    closing = texts.CLOSING.format(cost=float(p.get("cost") or 0.0), manifest=manifest)
    out.print(closing, highlight=False)
    if p.get("state") == "done":
        if notify is not None:
            notify.send("done", closing)
        return ExitCode.OK
    from rich.markup import escape

    from flower.cli.tui.render import clean

    why = clean(p.get("why") or "")  # a step's error may quote a tool's output
    if p.get("failed_at"):
        line = texts.ABORTED_AT.format(step=p["failed_at"], why=why)
    else:
        line = texts.DIST_RUN_FAILED.format(why=why)
    out.print(f"[red]x {escape(line)}[/]")
    if notify is not None:
        from flower.core.notify import outcome

        notify.send(outcome(ok=False, why=p.get("why") or ""), f"{line} · {closing}")
    return ExitCode.FAILED


# ------------------------------------------------------------------ flower status


def status(address: str, *, limit: int, as_json: bool) -> ExitCode:
    """The runs on the server: id, state, current step (i/n), cost, start time."""
    import json

    from flower.distributed.client import runs

    out = console()
    if not _have_temporal(out):
        return ExitCode.FAILED

    async def collect() -> list[dict[str, Any]] | None:
        client = await _connect(out, address)
        if client is None:
            return None
        return await runs(client, limit=limit)

    found = asyncio.run(collect())
    if found is None:
        return ExitCode.FAILED
    if as_json:
        print(json.dumps(found, ensure_ascii=False, indent=2))
        return ExitCode.OK
    if not found:
        out.print(texts.DIST_STATUS_EMPTY)
        return ExitCode.OK
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for title in texts.DIST_STATUS_HEAD:
        table.add_column(title)
    for r in found:
        state = texts.DIST_STATES.get(r["state"], r["state"])
        where = f"{r['step']} {r['index']}/{r['total']}" if r["total"] else r["step"]
        started = time.strftime("%m-%d %H:%M:%S", time.localtime(r["started"])) \
            if r["started"] else ""
        cost = f"${r['cost']:.4f}"
        if r.get("budget"):  # the submitted cap (an answer may have raised it since)
            cost += f" / ${float(r['budget']):.2f}"
        table.add_row(r["id"], state, where, cost, started)
    out.print(table)
    return ExitCode.OK

"""The submitting side: start a distributed run, follow it in the terminal, list runs.

``submit`` starts a ``FlowerRun``; ``follow`` polls its ``progress`` query and hands every
new event to a callback (the command line renders it). A question a
step asks on some worker arrives as an ``ask`` event; ``RemoteChannel`` gives the terminal
the same ``pending``/``answer``/``decline``/``send`` a local ``HumanChannel`` has, and turns
each answer into a signal to the run. ``runs`` lists the runs with step, cost and state.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.distributed.codec import event_from_json

if TYPE_CHECKING:

    from flower.core.events import Event

POLL_S = 0.3
RUNS_SUBDIR = "temporal"  # <run_dir>/temporal/<run id>/ holds one distributed run's book


def new_run_id() -> str:
    return "flower-" + time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


def absolute_target(target: str, cwd: Path) -> str:
    """A file target made absolute, so a worker started elsewhere finds the same file."""
    where, sep, attr = target.rpartition(":")
    if sep and (where.endswith(".py") or "/" in where or "\\" in where):
        return f"{(cwd / where).resolve()}:{attr}"
    return target


def request(target: str, *, workspace: Path, run_dir: Path, run_id: str,
            kwargs: dict[str, Any] | None = None, cwd: Path | None = None,
            trim: bool = False, handoff: bool = True, window: int | None = None,
            heartbeat_s: float = 30.0, max_attempts: int = 5, budget: float | None = None,
            max_hours: float | None = None) -> dict[str, Any]:
    """The run's input (JSON): what every activity needs to rebuild the run on a worker.
    ``run_dir`` is this run's own folder: ``<run_dir>/temporal/<run id>``; ``budget`` and
    ``max_hours`` cap the task: its ledger is ``<run_dir>/budget.json`` (``task_dir``,
    core/ledger.py), shared by every submission from that run dir, as a wake shares it."""
    cwd = (cwd or Path.cwd()).resolve()
    return {"target": absolute_target(target, cwd), "kwargs": kwargs or {}, "cwd": str(cwd),
            "workspace": str(Path(workspace).resolve()),
            "run_dir": str(Path(run_dir).resolve() / RUNS_SUBDIR / run_id),
            "task_dir": str(Path(run_dir).resolve()),
            "trim": trim, "handoff": handoff, "window": window,
            "heartbeat_s": heartbeat_s, "max_attempts": max_attempts,
            "budget": budget, "max_hours": max_hours}


async def submit(client: Any, req: dict[str, Any], *, queue: str, run_id: str) -> Any:
    from flower.distributed.workflow import WORKFLOW

    return await client.start_workflow(WORKFLOW, req, id=run_id, task_queue=queue)


async def follow(handle: Any, on_event: Callable[[Event], None], *,
                 poll_s: float = POLL_S) -> dict[str, Any]:
    """Hand every event of the run to ``on_event`` until it ends; returns its last progress
    (state ``done``/``failed``, steps, rows, cost …). A run that ended as a Temporal
    failure (e.g. its target does not import on the workers) returns state ``failed`` with
    the reason in ``why``."""
    from flower.distributed.workflow import Q_PROGRESS

    ended = asyncio.ensure_future(handle.result())
    since = 0
    try:
        while True:
            finished = ended.done()
            try:
                p = await handle.query(Q_PROGRESS, since)
            except Exception:
                if not finished:
                    await asyncio.sleep(poll_s)
                    continue
                p = {"events": [], "next": since, "state": "?"}
            for data in p["events"]:
                on_event(event_from_json(data))
            since = p["next"]
            if p["state"] in ("done", "failed"):
                return p
            if finished:  # closed without reaching either state: a Temporal failure
                return {**p, **_failure(ended)}
            await asyncio.sleep(poll_s)
    finally:
        if not ended.done():
            ended.cancel()


def _failure(ended: asyncio.Future[Any]) -> dict[str, Any]:
    exc = ended.exception()
    if exc is None:
        return dict(ended.result())
    cause: BaseException = exc
    while getattr(cause, "cause", None) is not None:
        cause = cause.cause  # type: ignore[attr-defined]  # the activity's error says why
    return {"state": "failed", "why": str(cause) or type(cause).__name__, "failed_at": "",
            "rows": [], "cost": 0.0, "steps": []}


# ------------------------------------------------------------------ the terminal side


@dataclass
class RemoteAsk:
    id: str
    question: str
    options: list[str] = field(default_factory=list)


class RemoteChannel:
    """The UI half of a ``HumanChannel`` for a run on other machines."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.timeout_s: float | None = None  # 0 once input is over: decline at once
        self._pending: dict[str, RemoteAsk] = {}
        self._sending: set[asyncio.Task[Any]] = set()

    def see(self, ev: Event) -> None:
        p = ev.payload
        if ev.kind != "ask" or p.get("kind") == "mail" or not p.get("id"):
            return
        if p.get("state") == "asked":
            self._pending[p["id"]] = RemoteAsk(p["id"], ev.text, list(p.get("options") or []))
            if self.timeout_s is not None and self.timeout_s <= 0:
                self.decline(p["id"], texts.INPUT_CLOSED)
        else:
            self._pending.pop(p["id"], None)

    def pending(self) -> list[RemoteAsk]:
        return list(self._pending.values())

    def answer(self, ask_id: str, text: str) -> bool:
        if self._pending.pop(ask_id, None) is None:
            return False
        self._signal("answer", ask_id, text)
        return True

    def decline(self, ask_id: str, reason: str = "") -> bool:
        return self.answer(ask_id, "") if ask_id in self._pending else False

    def send(self, text: str) -> None:
        if text.strip():
            self._signal("mail", text.strip())

    def _signal(self, what: str, *args: str) -> None:
        from flower.distributed.workflow import SIG_ANSWER, SIG_MAIL

        name = SIG_ANSWER if what == "answer" else SIG_MAIL
        task = asyncio.get_running_loop().create_task(
            self.handle.signal(name, args=list(args)))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def drain(self) -> None:
        if self._sending:
            await asyncio.gather(*list(self._sending), return_exceptions=True)


class RemoteRuntime:
    """What ``terminal.Session`` needs of a Runtime; interrupting a remote turn is not
    supported (Ctrl-C detaches instead — the run goes on on the workers)."""

    def __init__(self, workspace: Path, run_dir: Path) -> None:
        self.workspace = workspace
        self.run_dir = run_dir

    def interrupt(self, message: str = "") -> None:
        pass

    def hold(self) -> None:
        pass


class RemoteRun:
    """Looks like a Workflow to ``Session.drive``: ``run`` follows the remote run."""

    def __init__(self, handle: Any, channel: RemoteChannel) -> None:
        self.handle = handle
        self.channel = channel
        self.workbench = None
        self.progress: dict[str, Any] = {}

    async def run(self, rt: Any, *, on_event: Callable[[Event], None]) -> dict[str, Any]:
        def seen(ev: Event) -> None:
            self.channel.see(ev)
            on_event(ev)

        self.progress = await follow(self.handle, seen)
        await self.channel.drain()
        return {"_failed_at": self.progress.get("failed_at") or None} \
            if self.progress.get("failed_at") else {}


# ------------------------------------------------------------------ flower status


async def runs(client: Any, *, limit: int = 50) -> list[dict[str, Any]]:
    """The flower runs the server knows, newest first: id, state, step, cost, started. A
    finished run answers from its result (no worker needed); a running one from the
    ``progress`` query (a worker replays it), all at once."""
    from temporalio.client import WorkflowExecutionStatus

    from flower.distributed.workflow import WORKFLOW

    listed = []
    async for wf in client.list_workflows(f"WorkflowType = '{WORKFLOW}'", limit=limit):
        listed.append(wf)
        if len(listed) >= limit:
            break

    async def one(wf: Any) -> dict[str, Any]:
        status = wf.status.name.lower() if wf.status else "?"
        row: dict[str, Any] = {"id": wf.id, "status": status, "started":
                               wf.start_time.timestamp() if wf.start_time else 0.0,
                               "state": status, "step": "", "index": 0, "total": 0,
                               "cost": 0.0, "target": "", "budget": None}
        handle = client.get_workflow_handle(wf.id, run_id=wf.run_id)
        p: dict[str, Any] | None = None
        try:
            if wf.status == WorkflowExecutionStatus.COMPLETED:
                p = await handle.result()
            elif wf.status == WorkflowExecutionStatus.RUNNING:
                from flower.distributed.workflow import Q_PROGRESS

                p = await asyncio.wait_for(handle.query(Q_PROGRESS, 1 << 30), 10)
        except Exception:
            p = None
        if p:
            row.update(state=p["state"], step=p["step"], index=p["index"],
                       total=len(p["steps"]), cost=p["cost"], target=p.get("target", ""),
                       budget=p.get("budget"))
        return row

    found = list(await asyncio.gather(*(one(wf) for wf in listed)))
    found.sort(key=lambda r: r["started"], reverse=True)
    return found

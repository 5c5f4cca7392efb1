"""The activities: everything of a distributed run that touches the world.

``flower.plan`` imports the target and names its steps. ``flower.step`` runs one step — its
``when``/``frozen`` checks, its attempt loop with gate, judge and ``on_reject`` — through
the very ``Workflow.run_step`` a local run uses, on a ``Runtime`` against the worker's
session store (``--store``/``FLOWER_STORE_URL``: shared PostgreSQL when workers are on
several machines). While it runs it

* heartbeats ``{"step", "session_id", "context", "cost"}``: the session id the moment the
  CLI names it. A retry of this activity (the worker died, the heartbeat stopped) reads
  ``activity.info().heartbeat_details`` and *resumes that session* instead of starting the
  step over; the manifest row then says ``resumed: true``;
* signals its events to the run (``flower.events``, batched), where the submitter reads
  them; question ids are made run-unique (``<step>.<attempt>.<id>``);
* answers the step's ``HumanChannel`` from the run's ``inbox`` query: the submitter's
  answer arrives as a signal to the run, the activity picks it up and wakes the waiting
  ``ask`` — heartbeating all the while.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import importlib
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from flower import texts
from flower.distributed.codec import dump_ctx, event_to_json, load_ctx
from flower.distributed.workflow import PLAN, Q_INBOX, SIG_EVENTS, STEP
from flower.errors import one_line

if TYPE_CHECKING:
    from flower.core.events import Event
    from flower.workflow.base import Workflow

log = logging.getLogger("flower.distributed")

FLUSH_S = 1.0  # events are signalled to the run in batches this often (one history event each)
INBOX_S = 0.5  # how often a waiting question looks for its answer
MAIL_S = 5.0  # how often remarks the human volunteered are fetched


def load_workflow(req: dict[str, Any]) -> Workflow:
    """The user's Workflow from ``req["target"]`` — a fresh one per activity (ctx and
    channel are per run). ``kwargs`` (e.g. ``flower "…" --temporal``) call a module-level
    factory with them. Import problems are not retryable: another worker has the same code."""
    from flower.workflow.base import Workflow
    from flower.workflow.target import TargetError, load_target

    target, kwargs = req["target"], req.get("kwargs") or {}
    cwd = Path(req.get("cwd") or os.getcwd())
    try:
        if kwargs:
            where, _, attr = target.rpartition(":")
            if str(cwd) not in sys.path:
                sys.path.insert(0, str(cwd))
            wf = getattr(importlib.import_module(where), attr)(**kwargs)
        else:
            wf = load_target(target, cwd=cwd)
    except TargetError as exc:
        raise ApplicationError(str(exc), type="TargetError", non_retryable=True) from exc
    except Exception as exc:
        raise ApplicationError(texts.RUN_CALL.format(target=target, error=one_line(exc)),
                               type="TargetError", non_retryable=True) from exc
    finally:  # a long-lived worker loads a file target per step: keep sys.path from growing
        seen: set[str] = set()
        sys.path[:] = [p for p in sys.path if not (p in seen or seen.add(p))]  # first stays
    if not isinstance(wf, Workflow):
        raise ApplicationError(texts.RUN_NOT_WORKFLOW.format(target=target,
                                                             kind=type(wf).__name__),
                               type="TargetError", non_retryable=True)
    fresh = copy.copy(wf)  # a module-level Workflow object is shared by the import cache
    try:
        fresh.context = copy.deepcopy(wf.context)
    except Exception:
        fresh.context = dict(wf.context)
    return fresh


@activity.defn(name=PLAN)
async def plan(req: dict[str, Any]) -> dict[str, Any]:
    wf = load_workflow(req)
    names = [s.name for s in wf.steps]
    if len(set(names)) != len(names):
        raise ApplicationError(texts.DIST_DUP_STEPS.format(target=req["target"]),
                               non_retryable=True)
    ctx, _ = dump_ctx(wf.context, wf.context)
    return {"steps": names, "ctx": ctx}


class Beat:
    """Heartbeat state; also the ``SessionMemory`` ``Workflow.run_step`` calls
    ``remember`` on — exactly when the step's own session id becomes known (a judge run
    from the gate never reaches it), so the heartbeat names it for a retry to resume."""

    def __init__(self, step: str, previous: Any) -> None:
        self.step = step
        self.session_id = ""
        self.context = 0
        self.cost = 0.0
        if isinstance(previous, dict) and previous.get("step") == step:
            self.session_id = str(previous.get("session_id") or "")
        self.carried = self.session_id or None

    def details(self) -> dict[str, Any]:
        return {"step": self.step, "session_id": self.session_id, "context": self.context,
                "cost": round(self.cost, 6)}

    def remember(self, name: str, sid: str) -> None:
        if name == self.step and sid and sid != self.session_id:
            self.session_id = sid
            activity.heartbeat(self.details())

    def see(self, ev: Event) -> None:
        p = ev.payload
        if p.get("subagent"):
            return
        if p.get("context"):
            self.context = int(p["context"])
        if ev.kind == "result":
            self.cost += float(p.get("cost_usd") or 0.0)


class Bridge:
    """Events out to the run (batched signals), answers and remarks in from it."""

    def __init__(self, handle: Any, prefix: str, channel: Any, beat: Beat) -> None:
        self.handle = handle
        self.prefix = prefix
        self.channel = channel
        self.beat = beat
        self.buffer: list[dict[str, Any]] = []
        self.mail_seen = 0

    def emit(self, ev: Event) -> None:
        self.beat.see(ev)
        data = event_to_json(ev)
        p = data["payload"]
        if ev.kind == "ask" and p.get("kind") != "mail" and p.get("id"):
            p["id"] = f"{self.prefix}.{p['id']}"
        self.buffer.append(data)

    async def flush(self) -> None:
        if not self.buffer:
            return
        batch, self.buffer = self.buffer, []
        try:
            await self.handle.signal(SIG_EVENTS, batch)
        except Exception as exc:  # the run is unreachable for now: keep the batch
            self.buffer = batch + self.buffer
            log.warning("flower: could not report events: %s", exc)

    async def pump(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_S)
            await self.flush()

    async def inbox(self) -> None:
        """Hand the human's answers to the questions this step is waiting on."""
        ch = self.channel
        idle = 0.0
        while True:
            await asyncio.sleep(INBOX_S)
            idle += INBOX_S
            waiting = ch.pending()
            if not waiting and idle < MAIL_S:
                continue
            idle = 0.0
            try:
                box = await self.handle.query(Q_INBOX)
            except Exception as exc:
                log.warning("flower: could not read the run's inbox: %s", exc)
                continue
            answers = box.get("answers") or {}
            for asked in waiting:
                said = answers.get(f"{self.prefix}.{asked.id}")
                if said is not None:
                    ch.answer(asked.id, said)  # blank = declined, as at a terminal
            mail = box.get("mail") or []
            for text in mail[self.mail_seen:]:
                ch.send(text)
            self.mail_seen = len(mail)


def _make_runtime(req: dict[str, Any], wf: Workflow, run_id: str, carried: str | None) -> Any:
    from flower.core.runtime import Runtime

    class StepRuntime(Runtime):
        """A Runtime whose manifest rows carry this run's id, and which marks the step
        resumed when it continued a session a dead attempt had started."""

        def _write_manifest(self) -> None:
            if carried:
                for r in self.results:
                    if r.session_id == carried or carried in r.retired:
                        r.resumed = True
            super()._write_manifest()

    from flower.core.agent import handoff_setting

    handoff = handoff_setting(req.get("window"), enabled=req.get("handoff", True))
    rt = StepRuntime(workspace=req["workspace"], run_dir=req["run_dir"],
                     trim=bool(req.get("trim")), handoff=handoff,
                     workbench=wf.workbench or False)
    rt.run_id = run_id
    rt._manifest.run_id = run_id
    return rt


@activity.defn(name=STEP)
async def step(req: dict[str, Any]) -> dict[str, Any]:
    info = activity.info()
    wf = load_workflow(req)
    index = int(req["index"])
    the_step = wf.steps[index - 1]
    previous = info.heartbeat_details[0] if info.heartbeat_details else None
    beat = Beat(the_step.name, previous)
    base = dict(wf.context)
    ctx = load_ctx(req.get("ctx") or {}, wf.context)
    sessions: dict[str, str] = ctx.setdefault("_sessions", {})
    ctx.setdefault("_results", {})
    if beat.carried:  # a dead attempt's session: resume it, do not start over
        sessions[the_step.name] = beat.carried
    wf.continuous = bool(beat.carried)
    handle = activity.client().get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
    bridge = Bridge(handle, f"{index}.{info.attempt}", wf.channel, beat)
    if wf.channel is not None:
        wf.channel.on_event = bridge.emit
    run_id = f"{info.workflow_id}#{index}"
    # a store that is down, or no credential on this worker: retried (maybe elsewhere)
    rt = await asyncio.to_thread(_make_runtime, req, wf, run_id, beat.carried)
    ctx["_runtime"], ctx["_on_event"] = rt, bridge.emit
    # the task's caps: one ledger in the submitting run dir, shared by every submission
    # there, one entry per activity attempt (a retried step must not overwrite what the
    # dead attempt spent); the first step of a submission sets its caps, later ones keep them
    from flower.core.ledger import Ledger

    rt.ledger = Ledger(req.get("task_dir") or req["run_dir"], f"{run_id}.{info.attempt}")
    rt.ledger.submitted_caps(info.workflow_id, budget=req.get("budget"),
                             max_hours=req.get("max_hours"))
    rt.channel = wf.channel  # the cap question goes where the step's questions go
    tasks = [asyncio.create_task(_heartbeat(beat, float(req.get("heartbeat_s") or 30.0))),
             asyncio.create_task(bridge.pump())]
    if wf.channel is not None:
        tasks.append(asyncio.create_task(bridge.inbox()))
    go_on = True
    try:
        if beat.carried:
            bridge.emit(_note(texts.DIST_RESUMING.format(step=the_step.name,
                                                         session=beat.carried)))
        go_on = await wf.run_step(the_step, index, rt, ctx, beat, on_event=bridge.emit)
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        rows = [r.row(rt.run_id) for r in rt.results]
        await asyncio.to_thread(rt.close)
    out, dropped = dump_ctx(ctx, base)
    if dropped:
        bridge.emit(_note(texts.DIST_CTX_DROPPED.format(step=the_step.name,
                                                        keys=", ".join(dropped))))
    await bridge.flush()
    return {"ctx": out, "rows": rows, "stop": not go_on}


def _note(text: str) -> Event:
    from flower.core.events import Event

    return Event("task", text=text, payload={"source": "temporal"})


async def _heartbeat(beat: Beat, timeout_s: float) -> None:
    every = max(0.2, min(timeout_s / 3, 10.0))
    while True:
        activity.heartbeat(beat.details())
        await asyncio.sleep(every)

"""``with_bequest``: when the default job's work step ends, leave the next tool a handover.

Shaped like the judge (``flower.workflow.goal.with_goal``): not a ``Step`` of its own but a
wrapper around the work step's gate, so it runs inside that step — after the last verdict,
whatever it said, including the round limit and a stop for an unreachable goal — locally
and on a Temporal worker alike (a separate step would be skipped once the work step fails,
which is exactly when the next person most needs to know what happened). It calls
``Runtime.run`` directly: one small read-only session labelled ``收尾交接``, in the
manifest and ``flower log`` like a judge round, never in the lineage.

It never changes the work step's outcome: the gate's answer is returned as it was, and a
handover that cannot be written is reported as a line, not raised.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from flower import texts
from flower.core.agent import AgentSpec
from flower.core.bequest import Bequest, mechanical, write_both
from flower.core.brief import Brief
from flower.core.checklist import Goal, Verdict
from flower.core.events import Event
from flower.core.roles import bequest as bequest_role
from flower.errors import one_line
from flower.workflow.base import Ctx, Step, StepAbort, _label
from flower.workflow.goal import VERDICT_KEY

NAME = "收尾交接"
BEQUEST_KEY = "_bequest"  # ctx: {"degraded", "why", "files"} of the handover written
REPORT_CHARS = 2000  # of the last work round's report in the prompt (a clue, not evidence)


def _verdict_line(verdict: Any) -> str:
    if not isinstance(verdict, Verdict):
        return ""
    state = texts.BEQUEST_VERDICT_STATES.get(verdict.state, verdict.state or "?")
    parts = [state]
    if verdict.reason:
        parts.append(" ".join(verdict.reason.split()))
    if verdict.failed:
        parts.append("; ".join(verdict.failed))
    return " — ".join(parts)


def _goal_block(ctx: Ctx, goal_key: str, goal_path: Path | None) -> str:
    if ctx.get(goal_key):
        return str(ctx[goal_key])
    goal = Goal.load(goal_path) if goal_path is not None else None
    return goal.prompt_block() if goal is not None and goal.complete() else ""


async def bequeath(ctx: Ctx, result: Any, *, agent: AgentSpec, name: str, root: Path,
                   workbench: Any, brief_path: Path, brief_key: str, goal_key: str,
                   goal_path: Path | None) -> Bequest | None:
    """Run the bequest session and write its block (or the mechanical one) into both
    files; returns what was written, ``None`` without a runtime."""
    runtime = ctx.get("_runtime")
    if runtime is None:
        return None
    emit = ctx.get("_on_event") or (lambda ev: None)
    verdict = _verdict_line(ctx.get(VERDICT_KEY))
    where, index = workbench.show(workbench.root), workbench.show(workbench.index_path)
    prompt = texts.BEQUEST_PROMPT.format(
        root=root, brief=ctx.get(brief_key) or texts.NO_BRIEF,
        goal=_goal_block(ctx, goal_key, goal_path) or texts.NO_GOAL,
        verdict=verdict or texts.BEQUEST_NO_VERDICT,
        report=(result.text or "").strip()[:REPORT_CHARS] or texts.BEQUEST_NO_REPORT,
        workbench=where, index=index)
    emit(Event("task", text=texts.BEQUEST_RUNNING.format(label=name),
               payload={"bequest": name}))
    done = await runtime.run(agent, prompt, step_name=name, on_event=ctx.get("_on_event"))
    doc = Bequest.parse(done.text) if done.ok else Bequest()
    why = ""
    if not done.ok:
        why = texts.BEQUEST_WHY_FAILED.format(error=one_line(done.error or "?"))
    elif not (done.text or "").strip():
        why = texts.BEQUEST_WHY_EMPTY
    elif not doc.complete():
        why = texts.BEQUEST_WHY_MISSING.format(names="、".join(doc.missing()))
    if why:
        brief = Brief.load(brief_path)
        doc = mechanical(goal=brief.goal if brief is not None else "", verdict=verdict,
                         workbench=where, index=index, why=why)
    outcomes = write_both(root, doc.block_body(time.strftime("%Y-%m-%d %H:%M")))
    written = [o for o in outcomes if o.status != "error"]
    names = "、".join(o.path.name for o in written)
    if written:
        line = texts.BEQUEST_WRITTEN_DEGRADED.format(why=why, paths=names) if why \
            else texts.BEQUEST_WRITTEN.format(paths=names)
        emit(Event("task", text=line, payload={"bequest": name, "degraded": bool(why),
                                               "files": [str(o.path) for o in written]}))
    for o in outcomes:
        if o.status == "malformed":
            emit(Event("task", text=texts.BEQUEST_MALFORMED.format(path=o.path)))
        elif o.status == "error":
            emit(Event("task", text=texts.BEQUEST_NOT_WRITTEN.format(path=o.path,
                                                                     error=o.error)))
    # plain JSON, so the record crosses to the next step on a Temporal worker too
    ctx[BEQUEST_KEY] = {"degraded": bool(why), "why": why,
                        "files": [str(o.path) for o in written]}
    return doc


def with_bequest(step: Step, *, root: str | Path, workbench: Any, brief_path: str | Path,
                 brief_key: str = "确认需求", goal_key: str = "设定目标",
                 goal_path: str | Path | None = None, name: str = NAME,
                 spec: AgentSpec | None = None) -> Step:
    """``step`` whose gate, once the step is over, writes the handover into ``root``.

    Over means: the gate passed, raised ``StepAbort``, or rejected the last attempt (the
    round limit). An attempt that failed before its gate (the work session itself broke)
    and a run stopped by Ctrl-C write nothing: there is no verdict to hand over.
    """
    inner = step.gate
    last = _label(step, step.retries)
    agent = spec or bequest_role(name)
    kw = dict(agent=agent, name=name, root=Path(root), workbench=workbench,
              brief_path=Path(brief_path), brief_key=brief_key, goal_key=goal_key,
              goal_path=Path(goal_path) if goal_path is not None else None)

    async def leave(result: Any, ctx: Ctx) -> None:
        try:
            await bequeath(ctx, result, **kw)
        except Exception as exc:  # the handover is a courtesy: it never fails the work
            emit = ctx.get("_on_event")
            if emit is not None:
                emit(Event("task", text=texts.BEQUEST_NOT_WRITTEN.format(
                    path=Path(root), error=f"{type(exc).__name__}: {exc}")))

    async def gate(result: Any, ctx: Ctx) -> bool:
        try:
            verdict = True if inner is None else inner(result, ctx)
            passed = bool(await verdict if inspect.isawaitable(verdict) else verdict)
        except StepAbort:
            await leave(result, ctx)
            raise
        if passed or result.step == last:
            await leave(result, ctx)
        return passed

    return replace(step, gate=gate)

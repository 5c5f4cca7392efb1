"""The goal guard: ``goal_step`` freezes a checklist, ``with_goal`` has a judge walk it.

The judge is the run's independent pair of eyes, and its whole value is not knowing how
hard the worker tried. So it is never a ``Step``: the gate of ``with_goal`` calls
``Runtime.run`` directly, every round a *new* session labelled ``<step>·判定#N``, never
resumed and never in the lineage. What it finds missing is sent back into the *same*
work session (``<step>#round2`` …) — continue, close the gaps, no restart.

Three outcomes per round: achieved (pass), not yet (another round; an unparsable verdict
counts as this, never as a pass), unreachable — "cannot be verified or done here" — which
stops and asks the human rather than burning rounds. Nobody answering stops the step with
``StepAbort``: asking is cheap, rounds are expensive.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from flower import texts
from flower.core.agent import AgentSpec
from flower.core.checklist import Goal, Verdict
from flower.core.events import Event
from flower.core.roles import judge
from flower.errors import one_line
from flower.workflow.base import Ctx, Step, StepAbort

GOAL_KEY = "_goal"
VERDICT_KEY = "_verdict"
ROUND_KEY = "_goal_rounds"
SET_PROMPT = texts.SET_PROMPT
VERIFY_PROMPT = texts.VERIFY_PROMPT


def _hydrate(ctx: Ctx, name: str, goal: Goal) -> None:
    ctx[GOAL_KEY] = goal
    ctx[name] = goal.prompt_block()


def _warn_unverifiable(ctx: Ctx, goal: Goal, path: Path) -> None:
    """Tell the human now, before paying for work, which checks are doomed here."""
    emit = ctx.get("_on_event")
    doomed = goal.unverifiable
    if not doomed or emit is None:
        return
    lines = [texts.UNVERIFIABLE_WARNING.format(n=len(doomed), total=len(goal.checks),
                                              path=path)]
    lines += [texts.UNVERIFIABLE_ITEM.format(item=item) for item in doomed]
    emit(Event("task", text="\n".join(lines),
               payload={"unverifiable": list(doomed), "total": len(goal.checks),
                        "path": str(path)}))


def goal_step(channel: Any, *, goal_path: str | Path, brief_key: str = "确认需求",
              name: str = "设定目标", spec: AgentSpec | None = None, instructions: str = "",
              always_set: bool = False, on_fail: str = "stop", retries: int = 0,
              **spec_kw: Any) -> Step:
    """Derive the goal and checklist from ``ctx[brief_key]`` and freeze ``目标.md``.

    There is no ``can_run`` parameter: pass ``can_run=True`` through ``spec_kw`` to let the
    goal-setter look at the environment. ``always_set`` re-derives even when a goal exists
    (a wake remark changed the brief). No ``resume_prompt``: re-derivation must see the
    whole brief.
    """
    path = Path(goal_path)
    agent = spec or judge(name, channel, instructions=instructions, **spec_kw)

    def prompt(ctx: Ctx) -> str:
        return SET_PROMPT.format(brief=ctx.get(brief_key) or texts.NO_BRIEF)

    def when(ctx: Ctx) -> bool:
        if always_set:
            return True
        goal = Goal.load(path)
        if goal is not None and goal.complete():
            _hydrate(ctx, name, goal)
            return False
        return True

    def gate(result: Any, ctx: Ctx) -> bool:
        goal = Goal.parse(result.text)
        if not goal.complete():
            return False
        goal.write(path)
        _hydrate(ctx, name, goal)
        _warn_unverifiable(ctx, goal, path)
        return True

    def reduce(result: Any, ctx: Ctx) -> str:
        return ctx[GOAL_KEY].prompt_block()

    return Step(name, agent, prompt, retries=retries, gate=gate, on_fail=on_fail, when=when,
                reduce=reduce, document=str(path))


def _manifest_of(runtime: Any) -> Path:
    """Where the runtime keeps its manifest, for the "stopped, look here" message. A runtime
    need not say: the original flower's test fakes offer only ``run`` and ``has_session``,
    so fall back to ``<run_dir>/manifest.json`` (``runs/`` when it has no run dir either)."""
    path = getattr(runtime, "manifest_path", None)
    if path is not None:
        return Path(path)
    return Path(getattr(runtime, "run_dir", None) or "runs") / "manifest.json"


def _current_goal(ctx: Ctx, path: Path) -> Goal:
    goal = ctx.get(GOAL_KEY)
    if isinstance(goal, Goal) and goal.complete():
        return goal
    return Goal.load(path) or Goal()


async def _ask_the_human(channel: Any, verdict: Verdict, goal: Goal, path: Path, ctx: Ctx,
                         manifest: Any) -> bool:
    """An unreachable verdict: accept, change the goal, or overrule the judge. Silence stops
    the step — another round cannot make "cannot verify here" verifiable."""
    accept, amend, _overrule = texts.UNREACHABLE_OPTIONS
    abort = StepAbort(texts.UNREACHABLE_ABORT.format(goal=path, manifest=manifest))
    if channel is None:
        raise abort
    question = texts.UNREACHABLE_QUESTION.format(reason=verdict.reason or verdict.state)
    asked = await channel.ask(question, list(texts.UNREACHABLE_OPTIONS))
    if asked.state != "answered":
        raise abort
    answer = asked.answer.strip()
    if answer.startswith(accept):
        return True
    if answer.startswith(amend):
        follow = await channel.ask(texts.AMEND_QUESTION)
        extra = follow.answer.strip() if follow.state == "answered" else ""
        if extra:
            goal.amend(extra).write(path)
            ctx[GOAL_KEY] = goal
            verdict.reason = texts.GOAL_CHANGED.format(extra=extra)
        return False
    verdict.reason = texts.MISJUDGED.format(words=answer)
    return False


def with_goal(step: Step, channel: Any, *, goal_path: str | Path, spec: AgentSpec | None = None,
              rounds: int = 3, instructions: str = "", can_run: bool = False,
              name: str | None = None, **spec_kw: Any) -> Step:
    """``step`` with a judge as its gate: ``rounds`` work rounds in all (not extra ones).

    Every other field of ``step`` is kept — notably ``resume_prompt``, so a wake does not
    resend the whole brief.
    """
    path = Path(goal_path)
    label = name or f"{step.name}·判定"
    agent = spec or judge(label, channel, instructions=instructions, can_run=can_run, **spec_kw)

    async def gate(result: Any, ctx: Ctx) -> bool:
        runtime = ctx.get("_runtime")
        if runtime is None:
            raise StepAbort(texts.GOAL_NO_RUNTIME)
        ctx[ROUND_KEY] = n = ctx.get(ROUND_KEY, 0) + 1
        goal = _current_goal(ctx, path)
        prompt = VERIFY_PROMPT.format(goal=goal.prompt_block() if goal.complete()
                                      else texts.NO_GOAL,
                                      report=result.text.strip() or texts.NO_REPORT)
        emit = ctx.get("_on_event")
        if emit is not None:
            emit(Event("task", text=texts.JUDGE_ROUND.format(label=f"{label}#{n}"),
                       payload={"judge": f"{label}#{n}", "round": n}))
        snapshot = getattr(runtime, "checkpoint", None)  # what the judge is about to read
        if snapshot is not None:
            await snapshot("before-judge", f"{label}#{n}")
        judged = await runtime.run(agent, prompt, step_name=f"{label}#{n}", on_event=emit)
        if not judged.ok:  # a broken judge is not a verdict; more work rounds won't fix it
            raise StepAbort(texts.JUDGE_FAILED.format(error=judged.error))
        verdict = Verdict.parse(judged.text)
        ctx[VERDICT_KEY] = verdict
        if verdict.achieved:
            return True
        if not verdict.unreachable:
            if not verdict.ok and not verdict.reason:
                verdict.reason = texts.VERDICT_UNCLEAR
            return False
        return await _ask_the_human(channel, verdict, goal, path, ctx, _manifest_of(runtime))

    def on_reject(result: Any, ctx: Ctx) -> str:
        verdict = ctx.get(VERDICT_KEY)
        return verdict.feedback() if isinstance(verdict, Verdict) else ""

    def explain(result: Any, ctx: Ctx) -> str:
        verdict = ctx.get(VERDICT_KEY)
        reason = verdict.reason if isinstance(verdict, Verdict) else ""
        return texts.GOAL_NOT_MET.format(n=rounds, reason=one_line(reason or texts.VERDICT_UNCLEAR))

    return replace(step, retries=max(0, rounds - 1), gate=gate, on_reject=on_reject,
                   explain=explain)

"""``starter_flow``: the default job behind ``flower "一句话"``.

Three steps — 确认需求 (clarify with the human, freeze ``需求.md``) → 设定目标 (derive a
checklist a judge can verify, freeze ``目标.md``) → 干活 (a coordinator dispatches workers;
a fresh judge checks every round and sends what is missing back into the same session).
Not "the recommended design" — the zero-configuration way to start; write your own
``Workflow`` when the shape differs.

Waking up in a used folder: frozen steps are skipped (their documents still fill ``ctx``),
the work step resumes its session, and a new remark lands in three places — appended to
the brief, delivered as the work step's resume prompt, and (when it was really appended)
forcing the goal to be re-derived, because the judge reads only the frozen goal.

When the work step is over (``bequest=True``) one more small read-only session writes the
handover for the next tool into ``CLAUDE.md`` and ``AGENTS.md`` (``flower.workflow.bequest``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from flower import texts
from flower.core.brief import Brief
from flower.core.lineage import Lineage
from flower.core.roles import coordinator, worker
from flower.core.workbench import Workbench
from flower.errors import BadInput
from flower.workflow.base import Ctx, Step, Workflow
from flower.workflow.bequest import with_bequest
from flower.workflow.clarify import clarify_step
from flower.workflow.goal import goal_step, with_goal
from flower.workflow.wake import wake_state

__all__ = ["starter_flow", "wake_state"]

CLARIFY = "确认需求"
SET_GOAL = "设定目标"
WORK = texts.WORK_STEP
COORDINATOR = "协调者"


def is_git_worktree(path: Path) -> bool:
    """``git rev-parse --is-inside-work-tree`` says yes (git missing counts as no)."""
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "--is-inside-work-tree"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and out.stdout.strip() == "true"


def _clarifying(ws: Path, run_dir: str | Path, isolate: bool) -> bool:
    """A clarification was cut off (killed mid-question): its session can carry on without
    the original words — the clarify step resumes it with ``CLARIFY_RESUME``."""
    return CLARIFY in wake_state(ws, run_dir=run_dir, isolate=isolate)["live_steps"]


def _already_in(path: Path, words: str) -> bool:
    try:
        return words in path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def _work_step(spec: Any, *, said: str, goal: bool, rederived: bool) -> Step:
    """干活: the brief (and goal) on a fresh session; on a resumed one only what is new."""

    def prompt(ctx: Ctx) -> str:
        text = texts.WORK_PROMPT.format(brief=ctx.get(CLARIFY, texts.NO_BRIEF))
        if goal and ctx.get(SET_GOAL):
            text += "\n\n---\n" + texts.WORK_GOAL.format(goal=ctx[SET_GOAL])
        return text

    def resume_prompt(ctx: Ctx) -> str:
        text = said or texts.WORK_CARRY_ON
        if rederived and ctx.get(SET_GOAL):  # the session still holds the old goal
            text += "\n\n" + texts.WORK_NEW_GOAL.format(goal=ctx[SET_GOAL])
        return text

    return Step(WORK, spec, prompt, resume_prompt=resume_prompt)


def starter_flow(ask: str, *, workspace: str | Path = ".", run_dir: str | Path = "runs",
                 new: bool = False, isolate: bool = False, clarify_only: bool = False,
                 goal: bool = True, rounds: int = 3, judge_can_run: bool = False,
                 max_asks: int | None = None, timeout_s: float | None = 1800.0,
                 instructions: str = "", worker_prompt: str = texts.WORKER_PROMPT,
                 brief_name: str = "需求.md", goal_name: str = "目标.md",
                 log_name: str = "问答记录.md", bequest: bool = True) -> Workflow:
    """Build the default workflow for ``ask`` in ``workspace``.

    Raises ``BadInput`` (a ``ValueError``) before anything is spent: ``isolate`` outside a
    git work tree, or an empty ``ask`` in a folder with nothing to continue. ``new`` archives (never
    deletes) lineage, brief, goal and Q&A log into ``notes/archive/<timestamp>/``.
    Drive it with ``Runtime(workbench=wf.workbench)`` — one workbench, shared.
    ``bequest=False`` leaves ``CLAUDE.md`` / ``AGENTS.md`` alone (no closing session).
    """
    from flower.core.human import HumanChannel

    said = (ask or "").strip()
    ws = Path(workspace).expanduser().resolve()
    if isolate and not is_git_worktree(ws):
        raise BadInput(texts.ISOLATE_NOT_GIT.format(path=ws))
    wb = Workbench.for_workspace(ws, isolate=isolate).ensure()
    brief_path, goal_path = wb.notes / brief_name, wb.notes / goal_name
    log_path = wb.notes / log_name
    if new:  # the Q&A log goes too: it is this task's history, and clarify resumes from it
        from flower.stores.book import configured_book

        # a shared store's copy of the lineage is reset too, or the next run wakes it again
        with configured_book(ws) as book:
            Lineage.open(run_dir, ws, book=book).archive(
                wb.notes / "archive", extra=[brief_path, goal_path, log_path])
    brief = Brief.load(brief_path)
    waking = brief is not None and brief.complete()
    if not waking and not said and not _clarifying(ws, run_dir, isolate):
        raise BadInput(texts.STARTER_NEED_ASK)

    channel = HumanChannel(log_path=log_path, amend_path=brief_path,
                           max_asks=max_asks, timeout_s=timeout_s)
    amended = bool(waking and said and not _already_in(brief_path, said)
                   and channel.amend(said, label=texts.AMEND_WAKE))
    steps = [clarify_step(channel, brief_path=brief_path, prompt=said,
                          name=CLARIFY, instructions=instructions)]
    if not clarify_only:
        if goal:
            steps.append(goal_step(channel, goal_path=goal_path, brief_key=CLARIFY,
                                   name=SET_GOAL, always_set=amended))
        coder = worker(texts.CODER_DESCRIPTION, worker_prompt, isolate=isolate)
        spec = coordinator(COORDINATOR, "", {"coder": coder}, channel=channel)
        work = _work_step(spec, said=said if waking else "", goal=goal,
                          rederived=amended and goal)
        if goal:
            work = with_goal(work, channel, goal_path=goal_path, rounds=rounds,
                             can_run=judge_can_run)
        if bequest:
            work = with_bequest(work, root=ws, workbench=wb, brief_path=brief_path,
                                brief_key=CLARIFY, goal_key=SET_GOAL,
                                goal_path=goal_path if goal else None)
        steps.append(work)
    return Workflow(steps, name="starter", channel=channel, workbench=wb)

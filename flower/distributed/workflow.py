"""The Temporal workflow: a flower ``Workflow`` run step by step, one activity per step.

Deterministic code only — it never imports the user's target, never touches a file, a
clock or the network. It asks the ``flower.plan`` activity for the step names, then runs
``flower.step`` once per step with the ``ctx`` the previous step returned (JSON), and stops
where the flower workflow would stop. Everything with side effects is in ``activities.py``.

What the run keeps (all in its history, so any worker can answer for it):

* ``events`` — the flower events the activities signal in (``flower.events``), read by the
  submitter through the ``progress`` query;
* ``answers`` / ``mail`` — what the human said (``flower.answer`` / ``flower.mail``
  signals), read by the activity that asked through the ``inbox`` query;
* the step names, the current step, the manifest rows so far, the cost and the state.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

WORKFLOW = "FlowerRun"
PLAN = "flower.plan"
STEP = "flower.step"
SIG_EVENTS = "flower.events"
SIG_ANSWER = "flower.answer"
SIG_MAIL = "flower.mail"
Q_PROGRESS = "progress"
Q_INBOX = "inbox"


@workflow.defn(name=WORKFLOW)
class FlowerRun:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.answers: dict[str, str] = {}
        self.mail: list[str] = []
        self.steps: list[str] = []
        self.step = ""
        self.index = 0
        self.rows: list[dict[str, Any]] = []
        self.state = "planning"
        self.failed_at = ""
        self.why = ""
        self.target = ""
        self.budget: float | None = None

    @workflow.run
    async def run(self, req: dict[str, Any]) -> dict[str, Any]:
        self.target = req.get("target", "")
        self.budget = req.get("budget")  # the submitted cap (flower status shows it)
        beat = float(req.get("heartbeat_s") or 30.0)
        retry = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                            maximum_interval=timedelta(seconds=30),
                            maximum_attempts=int(req.get("max_attempts") or 5))
        plan = await workflow.execute_activity(
            PLAN, req, start_to_close_timeout=timedelta(minutes=5), retry_policy=retry)
        self.steps = list(plan["steps"])
        ctx: dict[str, Any] = plan["ctx"]
        self.state = "running"
        for index, name in enumerate(self.steps, 1):
            self.index, self.step = index, name
            out = await workflow.execute_activity(
                STEP, {**req, "index": index, "ctx": ctx},
                start_to_close_timeout=timedelta(seconds=float(req.get("step_timeout_s")
                                                               or 24 * 3600)),
                heartbeat_timeout=timedelta(seconds=beat), retry_policy=retry)
            ctx = out["ctx"]
            self.rows.extend(out["rows"])
            if out.get("stop"):
                break
        self.failed_at = str(ctx.get("_failed_at") or "")
        self.why = str(ctx.get("_aborted") or "")
        if self.failed_at and not self.why:
            last = (ctx.get("_results") or {}).get(self.failed_at) or {}
            self.why = str(last.get("error") or "")
        self.state = "failed" if self.failed_at else "done"
        return {**self._summary(), "ctx": ctx}

    def _summary(self) -> dict[str, Any]:
        return {"state": self.state, "step": self.step, "index": self.index,
                "steps": list(self.steps), "cost": round(sum(
                    float(r.get("cost_usd") or 0.0) for r in self.rows), 6),
                "rows": list(self.rows), "failed_at": self.failed_at, "why": self.why,
                "target": self.target, "budget": self.budget}

    # -- the activities report in; the human answers ------------------------------------

    @workflow.signal(name=SIG_EVENTS)
    def on_events(self, batch: list[dict[str, Any]]) -> None:
        self.events.extend(batch)

    @workflow.signal(name=SIG_ANSWER)
    def on_answer(self, ask_id: str, text: str) -> None:
        self.answers.setdefault(ask_id, text)  # the first answer wins, as in HumanChannel

    @workflow.signal(name=SIG_MAIL)
    def on_mail(self, text: str) -> None:
        self.mail.append(text)

    @workflow.query(name=Q_PROGRESS)
    def progress(self, since: int = 0) -> dict[str, Any]:
        """State, step, cost and the events from ``since`` on (the rows, with every step's
        full text, only in the run's result)."""
        summary = self._summary()
        summary.pop("rows")
        return {**summary, "events": self.events[since:], "next": len(self.events)}

    @workflow.query(name=Q_INBOX)
    def inbox(self) -> dict[str, Any]:
        return {"answers": dict(self.answers), "mail": list(self.mail)}

"""``clarify_step``: confirm the requirement with the human and freeze it as ``需求.md``.

"The goal was misunderstood" is the most expensive failure of a long run and the one no
context-saving layer can clean up, so the default job starts here. The step is an ordinary
``Step`` with three callbacks:

* ``when`` — a complete brief on disk is loaded into ``ctx`` and the step skipped. Loading
  happens *inside* ``when``: a skipped step writes nothing, and downstream would KeyError.
* ``gate`` — the reply must parse into all four sections; then the file is frozen.
* ``reduce`` — downstream gets the compact four sections, never the raw reply (a clarifier
  once pasted a whole codebase into it).
* ``resume_prompt`` — ``CLARIFY_RESUME``: continue, never re-ask. Both prompts carry the
  Q&A log so far, so an answer is never lost to a crash (see ``_with_log``).

The Q&A itself never enters the next step's context; it is logged to ``问答记录.md``.
A crash mid-clarification resumes the clarifier's own session with ``CLARIFY_RESUME`` —
answered questions are not asked again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from flower import texts
from flower.core.agent import AgentSpec
from flower.core.brief import Brief
from flower.core.roles import clarify
from flower.workflow.base import Ctx, Step

BRIEF_KEY = "_brief"
MISSING_KEY = "_brief_missing"
CLARIFY_RESUME = texts.CLARIFY_RESUME


def clarify_step(channel: Any, *, brief_path: str | Path, prompt: str | Callable[[Ctx], str],
                 name: str = "确认需求", spec: AgentSpec | None = None, instructions: str = "",
                 always_ask: bool = False, on_fail: str = "stop", retries: int = 0,
                 **spec_kw: Any) -> Step:
    """The clarify step; ``prompt`` is the human's raw request — the clarifier decides what
    to ask. ``spec_kw`` goes to ``clarify()`` (``can_read``, ``model``, ``max_turns`` …).

    A reply missing sections is sent back to the *same* session
    (listing what is missing) instead of a from-scratch retry that would re-ask everything.
    """
    path = Path(brief_path)
    agent = spec or clarify(name, channel, instructions=instructions, **spec_kw)

    def hydrate(ctx: Ctx, brief: Brief) -> None:
        ctx[BRIEF_KEY] = brief
        ctx[name] = brief.prompt_block()
        ctx.pop(MISSING_KEY, None)

    def when(ctx: Ctx) -> bool:
        if always_ask:
            return True
        brief = Brief.load(path)
        if brief is not None and brief.complete():
            hydrate(ctx, brief)
            return False
        return True

    def gate(result: Any, ctx: Ctx) -> bool:
        brief = Brief.parse(result.text)
        if not brief.complete():
            ctx[MISSING_KEY] = brief.missing()
            return False
        brief.request = raw(ctx)
        brief.write(path)
        hydrate(ctx, brief)
        return True

    def on_reject(result: Any, ctx: Ctx) -> str:
        missing = ctx.get(MISSING_KEY)
        return texts.CLARIFY_INCOMPLETE.format(missing="、".join(missing)) if missing else ""

    def explain(result: Any, ctx: Ctx) -> str:
        missing = ctx.get(MISSING_KEY) or ()
        return texts.BRIEF_INCOMPLETE.format(missing="、".join(missing)) if missing else ""

    def reduce(result: Any, ctx: Ctx) -> str:
        return ctx[BRIEF_KEY].prompt_block()

    log_path = getattr(channel, "log_path", None)

    def raw(ctx: Ctx) -> str:
        return (prompt(ctx) if callable(prompt) else prompt).strip()

    def first_prompt(ctx: Ctx) -> str:
        return _with_log(raw(ctx) or texts.CLARIFY_NO_REQUEST, log_path)

    def resume_prompt(ctx: Ctx) -> str:
        return _with_log(CLARIFY_RESUME, log_path)

    return Step(name, agent, first_prompt, retries=retries, gate=gate, on_fail=on_fail,
                when=when, on_reject=on_reject, resume_prompt=resume_prompt, reduce=reduce,
                explain=explain, document=str(path))


def _with_log(text: str, log_path: str | Path | None) -> str:
    """``text`` plus the Q&A so far, when the log holds any.

    The log is written by this process the moment an answer arrives; the CLI mirrors the
    transcript a fraction of a second later. A ``kill -9`` in between loses the answer from
    the session — or the whole session, if it was the first turn — and the clarifier would
    ask again what the human already answered. (``--new`` archives the log with the brief,
    so an old task's answers never leak into a new one.)
    """
    if log_path is None:
        return text
    try:
        log = Path(log_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return text
    entries = log.partition(texts.QA_LOG_NOTE)[2].strip() if texts.QA_LOG_NOTE in log else ""
    return f"{text}\n\n{texts.CLARIFY_RESUME_LOG}\n{entries}" if entries else text

"""A person in the loop: questions the agent asks, and remarks the person volunteers.

``HumanChannel`` is one in-process MCP server named ``human`` with two tools the model sees,
``mcp__human__ask`` (blocks until answered, declined or timed out) and ``mcp__human__inbox``
(never blocks), plus the methods a UI uses to answer. The same ``ask()`` serves the model's
tool calls and the framework's own questions, so quota, timeout, events and the Q&A log
behave identically for both.

Design points:

* ``ask()`` never raises (except cancellation): the outcome is ``Ask.state``. A run that is
  hours long must not die because nobody was at the keyboard; the fall-through texts tell
  the model to decide itself and write the assumption under 未知与假设.
* ``answer``/``decline``/``send`` may be called from any thread (a stdin reader, a web
  request handler). Claiming a pending question happens under one lock, so of two racing
  answers exactly one wins; the waiting coroutine is woken with ``call_soon_threadsafe``.
* Every call is appended to ``asks`` *before* any check, so empty and refused questions
  consume quota too — a model that keeps asking badly still runs out.
* The SDK is imported inside ``mcp_servers()`` only: ``import flower`` stays SDK-free.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flower import texts
from flower.core.events import Event
from flower.errors import one_line
from flower.texts import DECLINED, NO_MAIL, OVER_BUDGET, TIMEOUT

__all__ = ["DECLINED", "INBOX_NAME", "NO_MAIL", "OVER_BUDGET", "SERVER", "TIMEOUT", "TOOL_NAME",
           "Ask", "HumanChannel", "Mail"]

SERVER = "human"
ASK_TOOL = "ask"
INBOX_TOOL = "inbox"
TOOL_NAME = f"mcp__{SERVER}__{ASK_TOOL}"  # what the model calls; goes into allowed_tools
INBOX_NAME = f"mcp__{SERVER}__{INBOX_TOOL}"

# The ask tool's input. A JSON-schema dict (not ``{"question": str, ...}``) so ``options``
# can be optional. ``options`` also accepts a string: models sometimes send the list
# JSON-encoded, and the SDK validates against this schema before our handler runs.
ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": texts.ASK_QUESTION_DESC},
        "options": {
            "type": ["array", "string"],
            "items": {"type": "string"},
            "description": texts.ASK_OPTIONS_DESC,
        },
    },
    "required": ["question"],
}
INBOX_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


@dataclass
class Ask:
    """One question to the human; ``state`` goes ``asked`` → answered | timeout | declined |
    over_budget | invalid. ``answer`` is what the model was told (the human's words, or the
    fall-through text)."""

    id: str
    question: str
    options: list[str] = field(default_factory=list)
    asked_at: float = field(default_factory=time.time)
    state: str = "asked"
    answer: str = ""

    @property
    def waited_s(self) -> float:
        """Seconds since it was asked — what a polling UI shows next to a waiting question."""
        return round(time.time() - self.asked_at, 1)

    def event(self, remaining: int = 0) -> Event:
        """The ``ask`` event for UIs; they key one entry by ``payload["id"]``."""
        payload = {"id": self.id, "options": list(self.options), "state": self.state,
                   "answer": self.answer, "remaining": remaining, "asked_at": self.asked_at}
        return Event("ask", text=self.question, payload=payload, raw=self)


@dataclass
class Mail:
    """Something the human said without being asked; ``taken`` once the agent read it."""

    id: str
    text: str
    sent_at: float = field(default_factory=time.time)
    taken: bool = False


@dataclass
class _Waiter:
    """A question being waited on: the future to wake and the loop that owns it."""

    ask: Ask
    future: asyncio.Future[None]
    loop: asyncio.AbstractEventLoop


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def coerce_options(raw: Any) -> list[str]:
    """``options`` as a clean list of strings, whatever shape the model sent: a list, a
    JSON-encoded list, or one option per line."""
    if raw is None:
        return []
    if isinstance(raw, str):
        try:
            decoded = json.loads(raw)
        except ValueError:
            decoded = raw.splitlines()
        raw = decoded if isinstance(decoded, list) else [decoded]
    if not isinstance(raw, (list, tuple)):
        raw = [raw]
    return [str(o).strip() for o in raw if o is not None and str(o).strip()]


def _tool_text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


class HumanChannel:
    """The agent ↔ human channel: the ``human`` MCP server plus the UI-side methods."""

    def __init__(self, *, on_event: Callable[[Event], None] | None = None,
                 max_asks: int | None = None, timeout_s: float | None = 1800.0,
                 log_path: str | Path | None = None, amend_path: str | Path | None = None,
                 over_budget_text: str = OVER_BUDGET, timeout_text: str = TIMEOUT,
                 declined_text: str = DECLINED) -> None:
        self.on_event = on_event
        self.max_asks = max_asks
        self.timeout_s = timeout_s
        self.log_path = log_path
        self.amend_path = amend_path
        self.over_budget_text = over_budget_text
        self.timeout_text = timeout_text
        self.declined_text = declined_text
        self.asks: list[Ask] = []
        self.mail: list[Mail] = []
        self.ui_errors: list[str] = []
        self._lock = threading.Lock()  # ids, asks, mail, pending: touched from any thread
        self._file_lock = threading.Lock()  # log / brief appends from several threads
        self._seq = 0
        self._pending: dict[str, _Waiter] = {}
        self._queue: deque[Ask] = deque()  # for pull-mode next_ask()
        self._pullers: list[asyncio.Future[None]] = []
        self._amended: dict[str, str] = {}  # mail id -> file it was appended to
        self._sdk_tools: list[Any] = []  # the SdkMcpTools last built by mcp_servers()

    # --- the MCP side ------------------------------------------------------------------

    @property
    def tool_name(self) -> str:
        """The ask tool's full name, for ``allowed_tools``."""
        return TOOL_NAME

    @property
    def inbox_name(self) -> str:
        """The inbox tool's full name, for ``allowed_tools``."""
        return INBOX_NAME

    def mcp_servers(self) -> dict[str, Any]:
        """``{"human": server}`` for ``AgentSpec.mcp_servers``; the key must equal the server
        name or the tool names above would not resolve."""
        from claude_agent_sdk import create_sdk_mcp_server, tool

        ask = tool(ASK_TOOL, texts.ASK_TOOL_DESC, ASK_SCHEMA)(self._ask_tool)
        inbox = tool(INBOX_TOOL, texts.INBOX_TOOL_DESC, INBOX_SCHEMA)(self._inbox_tool)
        self._sdk_tools = [ask, inbox]
        return {SERVER: create_sdk_mcp_server(SERVER, tools=[ask, inbox])}

    async def _ask_tool(self, args: dict[str, Any]) -> dict[str, Any]:
        """Handler of ``mcp__human__ask``: the model gets the answer or a fall-through text."""
        question = args.get("question")
        asked = await self.ask(question if isinstance(question, str) else "",
                               args.get("options"))
        return _tool_text(asked.answer)

    async def _inbox_tool(self, args: dict[str, Any]) -> dict[str, Any]:
        """Handler of ``mcp__human__inbox``: hand over every unread remark, exactly once."""
        with self._lock:
            fresh = [m for m in self.mail if not m.taken]
            for m in fresh:
                m.taken = True
        if not fresh:
            return _tool_text(NO_MAIL)
        for m in fresh:
            self._emit(self._mail_event(m, "delivered"))
            self._log_mail(m, "delivered")
        return _tool_text(self._inbox_text(fresh))

    def _inbox_text(self, fresh: list[Mail]) -> str:
        lines = [texts.INBOX_HEAD.format(n=len(fresh))]
        lines += [texts.INBOX_ITEM.format(id=m.id, text=m.text) for m in fresh]
        paths = {self._amended.get(m.id, "") for m in fresh}
        if "" in paths:
            lines.append(texts.INBOX_NOT_PERSISTED)
        else:
            lines.append(texts.INBOX_PERSISTED.format(path=", ".join(sorted(paths))))
        return "\n".join(lines)

    # --- asking ------------------------------------------------------------------------

    @property
    def remaining(self) -> int:
        """Questions left; -1 when unlimited (a UI then hides "还能问 N 次")."""
        if self.max_asks is None:
            return -1
        return max(0, self.max_asks - len(self.asks))

    async def ask(self, question: str, options: list[str] | None = None) -> Ask:
        """Ask the human and wait; the outcome is in the returned ``Ask.state``."""
        choices = coerce_options(options)
        with self._lock:
            self._seq += 1
            asked = Ask(f"q{self._seq}", question or "", choices)
            self.asks.append(asked)
            over = self.max_asks is not None and len(self.asks) > self.max_asks
        if not asked.question.strip():
            return self._finish(asked, "invalid", texts.INVALID_QUESTION)
        if over:
            return self._finish(asked, "over_budget", self.over_budget_text)
        if self.timeout_s is not None and self.timeout_s <= 0:
            return self._finish(asked, "timeout", self.timeout_text)
        return await self._wait(asked)

    async def _wait(self, asked: Ask) -> Ask:
        """Register, announce, and wait until someone settles the question or time runs out."""
        loop = asyncio.get_running_loop()
        waiter = _Waiter(asked, loop.create_future(), loop)
        with self._lock:
            self._pending[asked.id] = waiter
            self._queue.append(asked)
        self._emit(asked.event(self.remaining))
        self._wake_pullers()
        try:
            await asyncio.wait_for(waiter.future, self.timeout_s)
        except asyncio.TimeoutError:
            self._claim(asked.id, "timeout", self.timeout_text)  # loses to a racing answer
        except asyncio.CancelledError:
            with self._lock:
                self._pending.pop(asked.id, None)
            raise
        self._announce(asked)
        return asked

    def _finish(self, asked: Ask, state: str, text: str) -> Ask:
        """Settle a question that never waited (invalid / over budget / instant timeout)."""
        asked.state, asked.answer = state, text
        self._announce(asked)
        return asked

    def _announce(self, asked: Ask) -> None:
        self._emit(asked.event(self.remaining))
        self._log_ask(asked)

    def _claim(self, ask_id: str, state: str, text: str) -> _Waiter | None:
        """Atomically take a pending question and record its outcome; None if it is no
        longer pending — that is how exactly one of several racing settlers wins."""
        with self._lock:
            waiter = self._pending.pop(ask_id, None)
            if waiter is not None:
                waiter.ask.state, waiter.ask.answer = state, text
        return waiter

    def _settle(self, ask_id: str, state: str, text: str) -> bool:
        waiter = self._claim(ask_id, state, text)
        if waiter is None:
            return False
        try:
            waiter.loop.call_soon_threadsafe(_wake, waiter.future)
        except RuntimeError:  # loop already closed: nobody is waiting any more
            pass
        return True

    def answer(self, ask_id: str, text: str) -> bool:
        """Give the human's answer (any thread); False if the question is no longer waiting.
        A blank answer counts as skipping — an empty reply would tell the model nothing."""
        if not text.strip():
            return self.decline(ask_id)
        return self._settle(ask_id, "answered", text)

    def decline(self, ask_id: str, reason: str = "") -> bool:
        """Skip the question (any thread): the model decides itself and records why."""
        text = self.declined_text
        if reason.strip():
            text += texts.DECLINED_REASON.format(reason=reason.strip())
        return self._settle(ask_id, "declined", text)

    def pending(self) -> list[Ask]:
        """Questions waiting for an answer right now, oldest first."""
        with self._lock:
            return [w.ask for w in self._pending.values()]

    async def next_ask(self, timeout: float | None = None) -> Ask | None:
        """Pull mode: the next question still waiting, or None after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            queued = self._pop_queued()
            if queued is not None:
                return queued
            left = None if deadline is None else max(0.0, deadline - loop.time())
            signal: asyncio.Future[None] = loop.create_future()
            self._pullers.append(signal)
            try:
                await asyncio.wait_for(signal, left)
            except asyncio.TimeoutError:
                return None
            finally:
                self._pullers.remove(signal)

    def _pop_queued(self) -> Ask | None:
        """Oldest queued question that is still pending; settled ones are dropped."""
        with self._lock:
            while self._queue:
                asked = self._queue.popleft()
                if asked.id in self._pending:
                    return asked
        return None

    def _wake_pullers(self) -> None:
        for signal in list(self._pullers):
            _wake(signal)

    def transcript(self) -> str:
        """All questions so far as markdown (same lines as the Q&A log, without the title)."""
        return "\n\n".join("\n".join(self._ask_lines(a)) for a in list(self.asks))

    def _ask_lines(self, asked: Ask) -> list[str]:
        lines = [texts.QA_QUESTION.format(id=asked.id, time=_stamp(asked.asked_at),
                                          question=asked.question)]
        if asked.options:
            lines.append(texts.QA_OPTIONS.format(
                options=texts.QA_OPTION_SEP.join(asked.options)))
        answer = asked.answer if asked.state != "asked" else texts.QA_WAITING
        lines.append(texts.QA_ANSWER.format(state=asked.state, answer=answer))
        return lines

    # --- the human speaking up ---------------------------------------------------------

    def send(self, text: str) -> Mail | None:
        """The human says something unprompted (any thread). It does not interrupt: the
        agent reads it at its next inbox check. It is also appended to the brief, because
        the next step is a new session that only reads files."""
        text = text.strip()
        if not text:
            return None
        amended = str(self.amend_path) if self.amend(text, label=texts.AMEND_LIVE) else ""
        with self._lock:
            self._seq += 1
            mail = Mail(f"m{self._seq}", text)
            self._amended[mail.id] = amended
            self.mail.append(mail)
        self._emit(self._mail_event(mail, "queued"))
        self._log_mail(mail, "queued")
        return mail

    def pending_mail(self) -> list[Mail]:
        """Remarks the agent has not taken yet."""
        with self._lock:
            return [m for m in self.mail if not m.taken]

    def amend(self, text: str, *, label: str = texts.AMEND_LIVE) -> bool:
        """Append a labelled remark to ``amend_path`` (normally the brief); False if there is
        no path, nothing to say, or the write failed."""
        if self.amend_path is None or not text.strip():
            return False
        block = texts.AMEND_BLOCK.format(label=label, time=_stamp(time.time()),
                                         text=text.strip())
        return self._append(Path(self.amend_path), block)

    def _mail_event(self, mail: Mail, state: str) -> Event:
        payload = {"kind": "mail", "state": state, "id": mail.id,
                   "amended": self._amended.get(mail.id, "")}
        return Event("ask", text=mail.text, payload=payload, raw=mail)

    # --- outlets: UI callback and the Q&A log --------------------------------------------

    def _emit(self, event: Event) -> None:
        """Call the UI; its failures are collected, never allowed to stop the run."""
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception as exc:
            self.ui_errors.append(one_line(exc))

    def _log_ask(self, asked: Ask) -> None:
        self._log("\n".join(self._ask_lines(asked)))

    def _log_mail(self, mail: Mail, state: str) -> None:
        self._log(texts.QA_MAIL.format(id=mail.id, state=state, time=_stamp(time.time()),
                                       text=mail.text))

    def _log(self, entry: str) -> None:
        """Append one entry to the Q&A log; the title goes in only when the file is new."""
        if self.log_path is None:
            return
        path = Path(self.log_path)
        header = f"{texts.QA_LOG_TITLE}\n\n{texts.QA_LOG_NOTE}\n"
        if not self._append(path, f"\n{entry}\n", header=header):
            self.ui_errors.append(texts.QA_LOG_FAILED.format(path=path))

    def _append(self, path: Path, text: str, *, header: str = "") -> bool:
        """Append-only write (never rewrites what is there); ``header`` if the file is empty."""
        try:
            with self._file_lock:
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a", encoding="utf-8") as f:
                    if header and f.tell() == 0:
                        f.write(header)
                    f.write(text)
        except OSError:
            return False
        return True

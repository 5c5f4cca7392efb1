"""``Runtime``: run one step — one session — and absorb everything that goes wrong inside it.

A step is a single call, ``await runtime.run(spec, prompt)``. Inside that call flower
retries transient failures (resuming the same session rather than starting over, with a
prompt that carries no error details), waits out network outages with a free DNS+TCP
probe, resumes after a human interrupt with the human's words, and records every step in
``manifest.json`` — including the one in flight when a SIGTERM/SIGHUP arrives. Failures are
*returned* in ``StepResult``; ``run`` never raises for an agent failure.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.core.agent import AgentSpec, CompactPolicy, HandoffPolicy, build_options
from flower.core.env import check_credentials, load_dotenv, redact, secret_values
from flower.core.events import Event, normalize
from flower.core.handoff import (
    HANDOFF_PROMPT,
    Handoff,
    degraded,
    fmt_tokens,
    fmt_window,
    is_overflow,
    remember_overflow,
    save_document,
)
from flower.core.manifest import FILENAME as MANIFEST_NAME
from flower.core.manifest import Manifest
from flower.core.paths import project_key as _project_key
from flower.core.resilience import Resilience, classify, is_fatal_retry, nap
from flower.errors import CredentialsMissing, one_line
from flower.stores.backend import layered_store
from flower.stores.book import remote_book
from flower.stores.book import run_name as run_name_for
from flower.stores.prune import PrunePolicy
from flower.stores.trim import EphemeralPolicy, TrimPolicy

if TYPE_CHECKING:
    from flower.core.workbench import Workbench

log = logging.getLogger("flower.runtime")

#: How long an abandoned step (cancelled, Ctrl-C twice) waits for its CLI to say goodbye.
ABANDON_GRACE_S = 5.0

EventSink = Callable[[Event], None]


@dataclass
class StepResult:
    """What one step produced. Rows of ``manifest.json`` are exactly these fields plus
    ``duration_s`` and ``run``."""

    step: str
    session_id: str | None = None
    ok: bool = False
    cost_usd: float = 0.0
    num_turns: int = 0
    text: str = ""
    error: str | None = None
    started_at: float = 0.0
    ended_at: float = 0.0
    attempts: int = 1
    errors: list[str] = field(default_factory=list)
    resumed: bool = False
    retired: list[str] = field(default_factory=list)
    context: int = 0

    @property
    def duration_s(self) -> float:
        """Wall time of the step; 0.0 while it is still running."""
        if not self.ended_at:
            return 0.0
        return round(self.ended_at - self.started_at, 2)

    def row(self, run_id: str) -> dict[str, Any]:
        """The manifest row for this result."""
        return {**asdict(self), "duration_s": self.duration_s, "run": run_id}


def _coerce(value: Any, cls: type) -> Any:
    """Policy coercion: an instance is used as is; a bool ``b`` becomes ``cls(enabled=b)``."""
    if isinstance(value, cls):
        return value
    return cls(enabled=bool(value))


def _new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


class _Interrupt:
    """A thread-safe interrupt request: the human's words, taken exactly once.

    ``hold`` stops the turn at once but keeps the step waiting until ``request`` brings the
    words (a terminal's first Ctrl-C: stop now, then let the human finish typing).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._words: str | None = None
        self._held = False

    def request(self, words: str) -> None:
        with self._lock:
            self._words = words if not self._words else f"{self._words}\n{words}".strip()
            self._held = False

    def hold(self) -> None:
        with self._lock:
            self._held = True
            if self._words is None:
                self._words = ""

    @property
    def pending(self) -> bool:
        return self._words is not None

    def take(self) -> str | None:
        with self._lock:
            words, self._words, self._held = self._words, None, False
            return words

    async def words(self) -> str:
        """The words to resume with — once a hold, if any, has been released."""
        import anyio

        while True:
            with self._lock:
                if not self._held:
                    words, self._words = self._words, None
                    return words or ""
            await anyio.sleep(0.1)


class Runtime:
    """Owns the workspace, the session store, the policies and the run book of one process."""

    INTERRUPTED = "interrupted-by-human"
    HANDOFF_DUE = "context-full-handoff"
    KILLED = "killed-by-signal"
    INTERRUPT_NOTE = texts.INTERRUPT_NOTE

    def __init__(
        self,
        *,
        workspace: str | Path,
        run_dir: str | Path = "runs",
        portable: bool = True,
        trim: TrimPolicy | bool = False,
        ephemeral: EphemeralPolicy | bool = True,
        keep_denials: int = 1,
        workbench: Workbench | bool = False,
        spill_threshold: int | None = 4000,
        resilience: Resilience | bool = True,
        handoff: HandoffPolicy | bool = True,
        store: Any = None,
        run_name: str | None = None,
    ) -> None:
        self.workspace = Path(workspace).expanduser().resolve()
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.run_dir = Path(run_dir).expanduser().resolve()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.portable = portable
        # .env values go to the agent subprocess only, never into this process's os.environ
        self._dotenv: dict[str, str] = load_dotenv(export=False)
        problem = check_credentials(self._config())
        if problem:
            raise CredentialsMissing(problem)
        self.trim_policy: TrimPolicy = _coerce(trim, TrimPolicy)
        self.ephemeral_policy: EphemeralPolicy = _coerce(ephemeral, EphemeralPolicy)
        # store=None: FLOWER_STORE_URL (env or .env) or <run_dir>/sessions.db (select.py)
        self.store = layered_store(
            store,
            run_dir=self.run_dir,
            workspace=self.workspace,
            policy=self.trim_policy,
            prune=PrunePolicy(keep_denials=keep_denials),
            ephemeral=self.ephemeral_policy,
            env=self._config(),  # .env is read once, above
        )
        # a shared store also keeps lineage + manifest rows under the run name (stores/book.py)
        self.book = remote_book(self.store, run_name_for(self.workspace, run_name))
        self.resilience: Resilience = _coerce(resilience, Resilience)
        self.handoff: HandoffPolicy = _coerce(handoff, HandoffPolicy)
        self.workbench: Workbench | None = self._make_workbench(workbench)
        self.spill_threshold = spill_threshold or None
        self.results: list[StepResult] = []
        self.run_id = _new_run_id()
        self.on_session: Callable[[str], None] | None = None
        # credentials never reach the run book, even if a model echoed one into its text
        self._spec_secrets: set[str] = set()  # from every AgentSpec.env this Runtime ran
        self._manifest = Manifest(self.run_dir / MANIFEST_NAME, self.run_id,
                                  scrub=lambda text: redact(text, self._secrets()),
                                  book=self.book)
        self._interrupt = _Interrupt()
        self._current: StepResult | None = None
        # handoff state, per step: thresholds pinned at step start, the main thread's
        # context watermark of this generation, its one warning, the writing-round flag
        self._limits: HandoffPolicy = self.handoff
        self._ctx = 0
        self._warned = False
        self._writing = False
        self._degraded_run = 0
        self._unannounced = False  # a handoff successor not yet in the store (nor lineage)

    def _make_workbench(self, workbench: Workbench | bool) -> Workbench | None:
        if workbench is False or workbench is None:
            return None
        from flower.core.workbench import Workbench

        wb = workbench if isinstance(workbench, Workbench) else Workbench.for_runtime(
            self.workspace, self.run_dir)
        wb.ensure()
        wb.refresh()
        return wb

    # -- small queries -------------------------------------------------------------------

    @property
    def manifest_path(self) -> Path:
        return self.run_dir / MANIFEST_NAME

    @property
    def project_key(self) -> str:
        """The SDK's key for this workspace (derived from its path; moving it orphans ids)."""
        return _project_key(self.workspace)

    def has_session(self, session_id: str) -> bool:
        """Is ``session_id`` stored for this workspace? (reads one meta row)

        With a shared store (PostgreSQL), a session stored under another workspace path
        is adopted under this one first (see ``flower.stores.url``)."""
        if not session_id:
            return False
        if self.store.has_session(self.project_key, session_id):
            return True
        return self._adopt(session_id)

    def _adopt(self, session_id: str) -> bool:
        adopt = getattr(self.store, "adopt", None)
        if adopt is None:
            return False
        try:
            return bool(adopt(self.project_key, session_id))
        except Exception as exc:  # continuity is a bonus: a failed adoption starts fresh
            log.warning("flower: could not adopt session %s: %s", session_id, exc)
            return False

    def context_of(self, session_id: str) -> int:
        """Context size of the last round of ``session_id``, from the store."""
        return self.store.last_context(self.project_key, session_id)

    def total_cost(self) -> float:
        return round(sum(r.cost_usd for r in self.results), 4)

    def close(self) -> None:
        self.store.close()

    # -- interrupt and rescue ------------------------------------------------------------

    def interrupt(self, message: str = "") -> None:
        """Ask the running step to stop at the next message boundary and resume the same
        session with ``message``. Safe from any thread; never hard-cancels."""
        self._interrupt.request(message or "")

    def hold(self) -> None:
        """Stop the running turn now and keep the step waiting until ``interrupt(words)``
        says how to go on (``interrupt("")`` = just continue). Safe from any thread."""
        self._interrupt.hold()

    def rescue(self) -> None:
        """Best-effort bookkeeping before the process dies (SIGHUP/SIGTERM handlers).

        Records the in-flight step as ``killed-by-signal``. Never raises, never waits on a
        lock this very process might be holding.
        """
        try:
            rows = [r.row(self.run_id) for r in self.results]
            cur = self._current
            if cur is not None:
                dead = replace(cur, error=self.KILLED, ok=False, ended_at=time.time(),
                               errors=list(cur.errors), retired=list(cur.retired))
                rows.append(dead.row(self.run_id))
            self._manifest.write(rows, blocking=False)
        except BaseException:
            pass

    @contextlib.contextmanager
    def _signals_rescued(self):  # type: ignore[no-untyped-def]
        """While a step runs in the main thread, SIGTERM/SIGHUP first write the manifest.

        Only default dispositions are replaced: an application that installed its own
        handler keeps it (and can call ``rescue()`` itself).
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        installed: dict[int, Any] = {}

        def handler(signum: int, frame: Any) -> None:
            self.rescue()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        for name in ("SIGTERM", "SIGHUP"):
            sig = getattr(signal, name, None)
            if sig is None:
                continue
            try:
                if signal.getsignal(sig) is signal.SIG_DFL:
                    installed[sig] = signal.signal(sig, handler)
            except (ValueError, OSError):
                pass
        try:
            yield
        finally:
            for sig, old in installed.items():
                with contextlib.suppress(ValueError, OSError):
                    signal.signal(sig, old)

    # -- the step loop -------------------------------------------------------------------

    async def run(
        self,
        spec: AgentSpec,
        prompt: str,
        *,
        step_name: str | None = None,
        resume: str | None = None,
        fork: bool = False,
        resume_at: str | None = None,
        on_event: EventSink | None = None,
    ) -> StepResult:
        """Run one step to completion and return its result (never raises for agent failures).

        ``fork`` and ``resume_at`` only take effect together with ``resume``.
        """

        name = step_name or spec.name
        result = StepResult(step=name, started_at=time.time(), attempts=0)
        self._current = result
        self._spec_secrets.update(secret_values(spec.env))
        secrets = self._secrets()  # once per step, not once per event
        emit = _safe_sink(on_event, scrub=lambda text: redact(text, secrets))
        cur_prompt, cur_resume = prompt, resume
        cur_fork, cur_at = (fork, resume_at) if resume else (False, None)
        attempt = 0
        # the watermark is per step: step 2 must not inherit step 1's reading and hand off
        self._ctx, self._warned, self._degraded_run = 0, False, 0
        self._unannounced = False
        try:
            self._limits = self.handoff.resolved(self._config()) if self.handoff.enabled \
                else self.handoff
        except Exception as exc:  # a broken override must not break the step
            log.warning("flower: could not resolve the handoff window: %s", exc)
            self._limits = self.handoff
        try:
            with self._signals_rescued():
                if self._interrupt.pending:  # said before this step, or between two: not stale
                    cur_prompt = _with_words(cur_prompt, await self._interrupt.words())
                while True:
                    attempt += 1
                    result.attempts = attempt
                    seen = len(result.errors)
                    await self._attempt(spec, cur_prompt, result, resume=cur_resume,
                                        fork=cur_fork, resume_at=cur_at, emit=emit)
                    # words that arrive just as the turn ends still reach the model
                    interrupted = result.error == self.INTERRUPTED or (
                        result.ok and self._interrupt.pending)
                    if result.ok and not interrupted:
                        break
                    if interrupted:
                        words = await self._interrupt.words()
                        if not result.session_id:  # nothing to resume: start over, words on
                            cur_prompt = _with_words(cur_prompt, words)
                            attempt -= 1
                            continue
                        emit(Event("retry", text=texts.RETRY_INTERRUPT.format(name=name),
                                   payload={"step": name, "attempt": attempt,
                                            "source": "interrupt"}))
                        cur_prompt = (f"{words}\n\n{self.INTERRUPT_NOTE}" if words
                                      else self.resilience.resume_prompt)
                        cur_resume, cur_fork, cur_at = result.session_id, False, None
                        result.resumed = True
                        attempt -= 1  # an interrupt is not a failed attempt
                        continue
                    if self._handoff_due(result, result.errors[seen:]):
                        # a handoff is not a failure: no retry budget, no network wait
                        successor = await self._hand_off(spec, prompt, result, emit)
                        if successor is None:
                            break
                        cur_prompt, cur_resume, cur_fork, cur_at = successor, None, False, None
                        attempt -= 1
                        continue
                    if not self._should_retry(result, attempt):
                        break
                    emit(Event("retry",
                               text=texts.RETRY_AFTER_FAILURE.format(
                                   step=name, attempt=attempt, error=result.error),
                               payload={"step": name, "attempt": attempt, "source": "failure"}))
                    net = {"step": name, "attempt": attempt, "source": "network"}
                    heard = self._interrupt_pending  # a human's words cut any wait short
                    if not await self.resilience.wait_online(
                            lambda msg, p=net: emit(Event("retry", text=msg, payload=p)),
                            stop=heard, base_url=self._config().get("ANTHROPIC_BASE_URL")) \
                            and not heard():
                        result.error = texts.OFFLINE_GAVE_UP.format(error=result.error)
                        break
                    await nap(self.resilience.delay_for(attempt), heard)
                    if result.session_id:  # resume, not restart: earlier work is not lost
                        cur_prompt = self.resilience.resume_prompt
                        cur_resume, cur_fork, cur_at = result.session_id, False, None
                        result.resumed = True
                    if heard():  # the words go with the resume (or the fresh start)
                        cur_prompt = _with_words(cur_prompt, await self._interrupt.words())
        except BaseException as exc:  # Ctrl-C, task cancellation: the book still says why
            result.ok = False
            result.error = f"aborted ({type(exc).__name__})"  # whatever came before, this ended it
            raise
        finally:
            result.ended_at = time.time()
            self.results.append(result)
            self._current = None
            self._write_manifest()
        return result

    def _should_retry(self, result: StepResult, attempt: int) -> bool:
        r = self.resilience
        if not r.enabled or attempt >= r.max_attempts:
            return False
        return r.should_retry(classify(result.error))

    def _handoff_due(self, result: StepResult, round_errors: list[str]) -> bool:
        """Whether this round ended because the context is full: the watermark stopped it,
        or the API refused the prompt as too long. Only *this round's* errors count — one
        overflow early in a step must not turn every later failure into a handoff."""
        if result.error == self.HANDOFF_DUE:
            return True
        return self.handoff.enabled and bool(result.session_id) and is_overflow(
            result.error, *round_errors)

    # -- handoff ---------------------------------------------------------------------------

    def _over_watermark(self, result: StepResult) -> bool:
        """Checked at every message boundary; the writing round itself is exempt (else its
        first message trips it again and every handoff degrades)."""
        return (self.handoff.enabled and not self._writing and bool(result.session_id)
                and self._ctx >= self._limits.at)

    def _track_context(self, ev: Event, result: StepResult, emit: EventSink) -> None:
        """Raise the main thread's watermark; warn once per generation at ``warn_at``.
        Subagent context never counts: the criterion is the main thread's own prompt."""
        p = ev.payload
        if not self.handoff.enabled or self._writing or p.get("subagent") or \
                ev.kind not in ("text", "thinking", "tool_call", "tool_result"):
            return
        ctx = p.get("context")
        if not ctx:
            return
        self._ctx = max(self._ctx, int(ctx))
        lim = self._limits
        if not self._warned and self._ctx >= lim.warn_at:
            self._warned = True
            window = int(lim.window or 0)
            emit(Event("handoff", text=texts.HANDOFF_NEAR.format(
                used=fmt_tokens(self._ctx), window=fmt_window(window),
                left=fmt_window(max(0, lim.at - self._ctx) // 1000 * 1000)),
                payload={"phase": "near", "step": result.step, "context": self._ctx,
                         "window": window, "at": lim.at}))

    async def _hand_off(self, spec: AgentSpec, prompt: str, result: StepResult,
                        emit: EventSink) -> str | None:
        """Retire the current session: get its handoff document (written by it, or the
        degraded stand-in after an overflow), save it, and return the successor's prompt.
        ``None`` means the step stops (runaway brake, repeated degradation)."""
        lim = self._limits
        name = result.step
        forced = result.error != self.HANDOFF_DUE  # the API refused: nothing more fits
        used = self._ctx or result.context
        if forced:
            self._calibrate(used)
            lim = self._limits
        window = int(lim.window or 0)
        if len(result.retired) >= lim.max_generations:
            result.error = texts.HANDOFF_BRAKE.format(
                n=len(result.retired), limit=lim.max_generations, at=fmt_window(lim.at),
                window=fmt_window(window))
            result.errors.append(result.error)
            return None
        base = {"step": name, "context": used, "window": window}
        why: str | None
        if forced:
            doc, why = degraded(name, prompt, why=texts.HANDOFF_WHY_OVERFLOW), \
                texts.HANDOFF_WHY_OVERFLOW
        else:
            emit(Event("handoff", text=texts.HANDOFF_WRITING.format(
                used=fmt_tokens(used), window=fmt_window(window)),
                payload={"phase": "writing", **base}))
            doc, why = await self._write_handoff(spec, result, used, window)
            if why is not None:
                doc = degraded(name, prompt, why=why)
        if why is not None:
            result.errors.append(texts.HANDOFF_NOTE_DEGRADED.format(why=why))
            self._degraded_run += 1
        else:
            self._degraded_run = 0
        path = save_document(self.workbench.notes, name, doc) if self.workbench else None
        if path is not None:  # the successor reads exactly the file a person may edit
            saved = Handoff.load(path)
            if saved is not None and saved.complete():
                doc = saved
        if why is not None:
            text = texts.HANDOFF_DONE_DEGRADED
        elif path is not None:
            text = texts.HANDOFF_DONE.format(path=path)
        else:
            text = texts.HANDOFF_DONE_NO_FILE
        emit(Event("handoff", text=text, payload={
            "phase": "done", **base, "degraded": why is not None,
            "path": str(path) if path is not None else "", "sections": doc.sections}))
        if self._degraded_run >= 2:
            result.error = texts.HANDOFF_STOP_DEGRADED.format(n=self._degraded_run)
            result.errors.append(result.error)
            return None
        if result.session_id:
            result.retired.append(result.session_id)
        result.session_id = None  # the successor's id fires on_session (lineage follows) …
        self._unannounced = True  # … once the store holds it (see _note_session)
        self._ctx, self._warned = 0, False
        successor = doc.prompt_block()
        words = self._interrupt.take()  # said during the writing round: for the successor
        if words:
            successor += "\n\n" + texts.HANDOFF_HUMAN_WORDS.format(words=words)
        return successor

    def _calibrate(self, used: int) -> None:
        """An overflow at ``used`` tokens: remember it as this endpoint's window and, unless
        the window was pinned (argument or ``FLOWER_WINDOW``), use it from now on — else a
        1M guess on a 200K gateway degrades every generation of this step."""
        remember_overflow(used, self._config())
        try:
            self._limits = self.handoff.resolved(self._config())
        except Exception as exc:
            log.warning("flower: could not resolve the handoff window: %s", exc)

    async def _write_handoff(self, spec: AgentSpec, result: StepResult, used: int,
                             window: int) -> tuple[Handoff, str | None]:
        """The writing round: the *same* session, resumed with ``HANDOFF_PROMPT``; no budget
        cap, no UI stream, exempt from the watermark. Returns the parsed document and
        ``None``, or the reason it could not be used."""
        scratch = StepResult(step=result.step, session_id=result.session_id)
        ask = HANDOFF_PROMPT.format(used=fmt_tokens(used), window=fmt_window(window))
        self._writing = True
        try:
            await self._attempt(replace(spec, max_budget_usd=None), ask, scratch,
                                resume=result.session_id, fork=False, resume_at=None,
                                emit=lambda ev: None)
        except Exception as exc:
            return Handoff(step=result.step), type(exc).__name__
        finally:
            self._writing = False
            result.cost_usd = round(result.cost_usd + scratch.cost_usd, 6)
            result.num_turns += scratch.num_turns
        if not scratch.ok:
            if is_overflow(scratch.error, *scratch.errors):
                self._calibrate(used)
                return Handoff(step=result.step), texts.HANDOFF_WHY_OVERFLOW
            return Handoff(step=result.step), one_line(scratch.error or texts.HANDOFF_WHY_UNKNOWN,
                                                       120)
        if not scratch.text.strip():
            return Handoff(step=result.step), texts.HANDOFF_WHY_EMPTY
        doc = Handoff.parse(scratch.text, step=result.step)
        if not doc.complete():
            return doc, texts.HANDOFF_WHY_MISSING.format(names="、".join(doc.missing()))
        return doc, None

    def _write_manifest(self) -> None:
        try:
            self._manifest.write([r.row(self.run_id) for r in self.results])
        except OSError as exc:  # the book must never break the run it records
            log.warning("flower: could not write %s: %s", self.manifest_path, exc)

    # -- one attempt ---------------------------------------------------------------------

    def _config(self) -> dict[str, str]:
        """The settings this Runtime runs with: the process environment plus the values
        ``.env`` files add (which never enter ``os.environ``)."""
        return {**os.environ, **self._dotenv}

    def _secrets(self) -> list[str]:
        """Every secret value this Runtime knows: the process env, ``.env`` files and the
        env of every spec it ran (``is_secret`` keys), longest first."""
        found = set(secret_values(self._config())) | self._spec_secrets
        return sorted(found, key=len, reverse=True)

    def _agent_env(self) -> dict[str, str]:
        """What flower layers under the spec's env: the ``.env`` values (credentials reach
        the agent, not this process) and the bounded CLI retries/timeouts."""
        env = dict(self._dotenv)
        if self.resilience.enabled:
            env.update(self.resilience.cli_env(self._config()))
        return env

    async def _attempt(self, spec: AgentSpec, prompt: str, result: StepResult, *,
                       resume: str | None, fork: bool, resume_at: str | None,
                       emit: EventSink) -> None:
        import anyio
        import anyio.to_thread
        from claude_agent_sdk import ClaudeSDKClient

        result.ok = False
        result.error = None
        add_dirs: list[str] | None = None
        if self.workbench is not None:
            from flower.core.workbench import inject_index

            self.workbench.refresh()
            # The index rides in a new session's first user message, not the system prompt:
            # it changes whenever a file lands and would void the prompt cache (workbench.py).
            if spec.workbench and not resume:
                prompt = inject_index(prompt, self.workbench.prompt_block())
            if self.workbench.external:
                add_dirs = [str(self.workbench.root)]
        if self.handoff.enabled and spec.compact is None:
            # two mechanisms shrinking one context cannot be told apart: handoff on ⇒ the
            # CLI's auto-compact off (an explicit CompactPolicy on the spec is respected)
            spec = replace(spec, compact=CompactPolicy(mode="no_summary"))
        if resume and hasattr(self.store, "adopt"):
            # a session written from another workspace path: make it loadable under ours
            await anyio.to_thread.run_sync(self._adopt, resume)
        options = build_options(
            self._guarded(spec), cwd=self.workspace, session_store=self.store, resume=resume,
            fork=fork,
            resume_at=resume_at, portable=self.portable, add_dirs=add_dirs,
            extra_env=self._agent_env(),
        )
        said: list[str] = []
        failure: str | None = None
        fatal: str | None = None
        full = False
        aborted = False
        client = ClaudeSDKClient(options)
        try:
            await client.connect()
            await client.query(prompt)
            async with anyio.create_task_group() as tg:
                stop = _Stopper(client)
                if not self._writing:  # words for the model wait for the successor
                    tg.start_soon(self._watch_interrupt, stop, result)
                async for message in client.receive_response():
                    self._note_session(message, result)
                    for ev in normalize(message):
                        failure = self._absorb(ev, result, said) or failure
                        emit(ev)
                        self._track_context(ev, result, emit)
                    if fatal is None:
                        fatal = _fatal_retry(message)
                        if fatal:  # the CLI is about to retry something that cannot succeed
                            await stop.now()
                    if not full and self._over_watermark(result):
                        full = True  # stop the turn like an interrupt; the session hands off
                        await stop.now()
                tg.cancel_scope.cancel()
            if fatal:
                failure = fatal
            elif full and not result.ok:  # a turn that finished anyway needs no successor
                failure = self.HANDOFF_DUE
            elif stop.sent and self._interrupt.pending:
                failure = self.INTERRUPTED
        except Exception as exc:  # every SDK failure becomes a result
            if failure is None:
                failure = f"{type(exc).__name__}: {exc}".strip()
        except BaseException:  # cancelled, Ctrl-C: the step is being abandoned
            aborted = True
            raise
        finally:
            if aborted:  # not the SDK's graceful 5 s wait for a CLI that is mid-tool
                _terminate_cli(client)
            with anyio.CancelScope(shield=True):
                # an abandoned step gets a bounded goodbye: a control request the CLI never
                # answers (an interrupt sent mid-request) must not hold the exit hostage
                with anyio.move_on_after(ABANDON_GRACE_S if aborted else None) as bounded:
                    try:
                        await client.disconnect()
                    except Exception as exc:
                        log.warning("flower: closing the agent failed: %s",
                                    redact(str(exc), self._secrets()))
                if bounded.cancelled_caught:
                    _terminate_cli(client, hard=True)
        if self._unannounced and result.session_id:  # the mirror has flushed by now
            self._announce_if_stored(result.session_id)
        if said:
            result.text = "\n".join(said).strip()
        if failure is not None:
            result.ok = False
            result.error = failure
        elif not result.ok:  # no result message at all (error was reset at the start)
            result.error = result.errors[-1] if result.errors else "no result from the agent"
        if result.error and result.error not in result.errors and \
                result.error not in (self.INTERRUPTED, self.HANDOFF_DUE):
            result.errors.append(result.error)

    def _guarded(self, spec: AgentSpec) -> AgentSpec:
        """``spec`` with the hooks its role needs (walls, foreground dispatch, workbench
        housekeeping) merged after the author's own — installed afresh on every attempt."""
        from flower.core.guard import merge_hooks, role_hooks

        walls = role_hooks(spec, workbench=self.workbench, spill_threshold=self.spill_threshold)
        return replace(spec, hooks=merge_hooks(spec.hooks, walls)) if walls else spec

    def _interrupt_pending(self) -> bool:
        return self._interrupt.pending

    async def _watch_interrupt(self, stop: _Stopper, result: StepResult) -> None:
        """Turn a human's interrupt request (from any thread) into a CLI interrupt, promptly:
        the turn stops even in the middle of a long tool call. Not before the session has an
        id: a turn stopped before that leaves nothing to resume the words into."""
        import anyio

        while not (self._interrupt.pending and result.session_id):
            await anyio.sleep(0.1)
        await stop.now()

    def _note_session(self, message: Any, result: StepResult) -> None:
        """Record the session id the moment it is first seen and tell ``on_session``."""
        sid = getattr(message, "session_id", None)
        if not sid:
            data = getattr(message, "data", None)
            if isinstance(data, dict):
                sid = data.get("session_id")
        if sid and sid != result.session_id:
            result.session_id = sid
            if not self._unannounced:
                self._announce(sid)
        elif self._unannounced and result.session_id:
            self._announce_if_stored(result.session_id)

    def _announce_if_stored(self, sid: str) -> None:
        """A handoff successor enters the lineage only once the store holds it: a kill
        before its first entries are mirrored then resumes the predecessor (which hands off
        again) instead of starting the step over from its original prompt."""
        if self.has_session(sid):
            self._unannounced = False
            self._announce(sid)

    def _announce(self, sid: str) -> None:
        hook = self.on_session
        if hook is not None and not self._writing:
            try:
                hook(sid)
            except Exception as exc:
                log.warning("flower: on_session hook failed: %s", exc)

    def _absorb(self, ev: Event, result: StepResult, said: list[str]) -> str | None:
        """Fold one event into the result; returns a failure text for an error result."""
        p = ev.payload
        if ev.kind == "text" and not p.get("subagent"):
            if ev.text.strip():
                said.append(ev.text)
        elif ev.kind == "error":
            result.errors.append(ev.text)
        elif ev.kind == "result":
            result.cost_usd = round(result.cost_usd + float(p.get("cost_usd") or 0.0), 6)
            result.num_turns += int(p.get("num_turns") or 0)
            if p.get("session_id"):
                result.session_id = p["session_id"]
            if p.get("is_error"):
                raw = ev.raw
                detail = getattr(raw, "result", None) or "; ".join(
                    getattr(raw, "errors", None) or []) or ev.text
                # an API failure reports subtype "success"; the prose alone is the reason
                if ev.text in ("", "success") or detail == ev.text:
                    return detail
                return f"{ev.text}: {detail}"
            result.ok = True
        if ev.kind in ("text", "thinking", "tool_call", "tool_result") and \
                not p.get("subagent") and p.get("context"):
            result.context = int(p["context"])
        return None


class _Stopper:
    """Asks the CLI to stop the current turn — once. The turn then ends with a result."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.sent = False

    async def now(self) -> None:
        if not self.sent:
            self.sent = True
            await self.client.interrupt()


def _with_words(prompt: str, words: str | None) -> str:
    """``prompt`` with a human's pending words appended under a clear label."""
    if not words or not words.strip():
        return prompt
    return f"{prompt}\n\n{texts.HUMAN_WORDS_PENDING.format(words=words.strip())}"


def _terminate_cli(client: Any, *, hard: bool = False) -> None:
    """SIGTERM (``hard``: SIGKILL) the client's CLI subprocess now (it stops its running
    tools and exits), so the disconnect that follows does not wait out the SDK's 5 s grace
    period first. Only for an abandoned step: a normal end keeps the graceful path, whose
    wait lets the CLI flush its last transcript entries to the store."""
    transport = getattr(client, "_transport", None)
    process = getattr(transport, "_process", None)
    if process is None or getattr(process, "returncode", 0) is not None:
        return
    try:
        process.kill() if hard else process.terminate()
    except (ProcessLookupError, OSError) as exc:
        log.debug("flower: could not stop the CLI: %s", exc)


def _fatal_retry(message: Any) -> str | None:
    """An ``api_retry`` notice for an error no retry can fix (e.g. a bad key)."""
    if getattr(message, "subtype", None) != "api_retry":
        return None
    data = getattr(message, "data", None) or {}
    if is_fatal_retry(data):
        status = data.get("error_status")
        return f"API Error: {status or ''} {data.get('error') or 'fatal'} (not retried)".strip()
    return None


def _safe_sink(on_event: EventSink | None, scrub: Callable[[str], str]) -> EventSink:
    """UI callbacks get credential-free events and can never break a step."""
    if on_event is None:
        return lambda ev: None

    def sink(ev: Event) -> None:
        try:
            on_event(_scrubbed(ev, scrub))
        except Exception as exc:
            log.warning("flower: on_event callback failed: %s", scrub(str(exc)))

    return sink


def _scrubbed(ev: Event, scrub: Callable[[str], str]) -> Event:
    """``ev`` with any secret value masked (a copy only when something had to change)."""
    text, payload = scrub(ev.text), _scrub_deep(ev.payload, scrub)
    if text == ev.text and payload == ev.payload:
        return ev
    return replace(ev, text=text, payload=payload)


def _scrub_deep(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _scrub_deep(v, scrub) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_scrub_deep(v, scrub) for v in value)
    return value

"""``Runtime``: run one step — one session — and absorb everything that goes wrong inside it.

A step is a single call, ``await runtime.run(spec, prompt)``. Inside that call flower
retries transient failures (resuming the same session rather than starting over, with a
prompt that carries no error details), waits out network outages with a free DNS+TCP
probe, resumes after a human interrupt with the human's words, and records every step in
``manifest.json`` — including the one in flight when a SIGTERM/SIGHUP arrives. Failures are
*returned* in ``StepResult``; ``run`` never raises for an agent failure.

The step loop lives here; the parts with their own job live beside it: one CLI session per
attempt (``attempt.py``), stopping a step from outside (``interrupts.py``), retiring a
full session for a successor (``handoff_control.py``) and the task's spending and time
caps (``caps.py``, with the numbers in ``ledger.py``).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.config import mark_env
from flower.core.agent import AgentSpec, HandoffPolicy
from flower.core.attempt import Attempt, EventSink
from flower.core.caps import within_caps
from flower.core.checkpoints import Position, checkpoints_for, hold_active, try_take
from flower.core.env import check_credentials, load_dotenv, project_env_lines, redact, secret_values
from flower.core.events import Event
from flower.core.handoff_control import HANDOFF_DUE, HandoffControl
from flower.core.interrupts import INTERRUPTED, Interrupt, signals_rescued, with_words
from flower.core.ledger import CAP_ERRORS, Ledger
from flower.core.manifest import FILENAME as MANIFEST_NAME
from flower.core.manifest import Manifest
from flower.core.paths import project_key as _project_key
from flower.core.privacy import open_run_dir
from flower.core.resilience import Resilience, classify, in_words, misconfigured, nap
from flower.core.runstate import check_state_paths
from flower.core.sandbox import SandboxPolicy, sandbox_policy
from flower.errors import CredentialsMissing, SandboxUnavailable
from flower.stores.backend import layered_store
from flower.stores.book import remote_book
from flower.stores.book import run_name as run_name_for
from flower.stores.pruning import PrunePolicy
from flower.stores.trimming import EphemeralPolicy, TrimPolicy

if TYPE_CHECKING:
    from flower.core.workbench import Workbench

log = logging.getLogger("flower.runtime")


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
    #: The wall its Bash ran behind: "off", "readonly", "workspace", "workspace+net".
    sandbox: str = ""

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


@dataclass
class _Next:
    """What the next attempt of a step sends: its prompt, and the session it resumes."""

    prompt: str
    resume: str | None = None
    fork: bool = False
    at: str | None = None


class Runtime:
    """Owns the workspace, the session store, the policies and the run book of one process."""

    INTERRUPTED = INTERRUPTED  # the round a human stopped (interrupts.py)
    HANDOFF_DUE = HANDOFF_DUE  # the round the context watermark stopped (handoff_control.py)
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
        sandbox: SandboxPolicy | str | bool | None = "auto",
        dotenv: bool = True,
        budget: float | None = None,
        max_hours: float | None = None,
        ledger: bool = True,
        checkpoints: bool | None = None,
    ) -> None:
        # --sandbox on|strict without a sandbox here: an error before anything else happens
        self.sandbox: SandboxPolicy = sandbox_policy(sandbox)
        unavailable = self.sandbox.problem()
        if unavailable:
            raise SandboxUnavailable(unavailable)
        self.workspace = Path(workspace).expanduser().resolve()
        self.workspace.mkdir(parents=True, exist_ok=True)
        check_state_paths(self.workspace, Path(run_dir))  # before anything is made through it
        self.run_dir = Path(run_dir).expanduser().resolve()
        # whole transcripts live here: 0700, flower's files 0600, wider ones narrowed once
        tightened = open_run_dir(self.run_dir, self.workspace)
        if tightened:
            log.warning(texts.RUN_DIR_TIGHTENED.format(path=self.run_dir, n=len(tightened)))
        self.portable = portable
        # .env values go to the agent subprocess only, never into this process's os.environ;
        # dotenv=False reads none (flower demo: a user's saved key must not reach its fake)
        self._dotenv: dict[str, str] = load_dotenv(export=False) if dotenv else {}
        for line in project_env_lines(self.workspace):  # and its .env noted before agents
            log.warning(line)
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
        self.resilience: Resilience = _offline_bound(_coerce(resilience, Resilience),
                                                     resilience, self._config())
        self.handoff: HandoffPolicy = _coerce(handoff, HandoffPolicy)
        self.workbench: Workbench | None = self._make_workbench(workbench)
        self.spill_threshold = spill_threshold or None
        self.results: list[StepResult] = []
        self.run_id = _new_run_id()
        # the task's caps and spend, beside lineage.json; None keeps the recorded cap.
        # ledger=False: a one-shot outside the task (flower once) is neither capped nor counted
        self.ledger = Ledger(self.run_dir if ledger else None, self.run_id, budget=budget,
                             max_hours=max_hours)
        self.channel: Any = None  # asked when a cap is reached (Workflow.run attaches its own)
        self.on_session: Callable[[str], None] | None = None
        #: The endpoint has answered at least once in this run (attempt.py sets it): from
        #: then on a refused connection is an outage, never a wrong setting.
        self.answered = False
        self._model_warned = False  # "served by another model" is told once (attempt.py)
        # credentials never reach the run book, even if a model echoed one into its text
        self._spec_secrets: set[str] = set()  # from every AgentSpec.env this Runtime ran
        self._manifest = Manifest(self.run_dir / MANIFEST_NAME, self.run_id,
                                  secrets=self._secrets, book=self.book)
        self._manifest.prefetch()  # parsed while the first step runs, not after it
        self._interrupt = Interrupt()
        self._current: StepResult | None = None
        self._handoff_ctl = HandoffControl(self)  # per-step handoff state
        # snapshots of the project (checkpoints.py); None: off (FLOWER_CHECKPOINTS=0, no git)
        self.checkpoints = checkpoints_for(self.run_dir, self.workspace, checkpoints)
        self.position: Position | None = None  # where Workflow.run_step is (for a rewind)
        self._active = hold_active(self.run_dir)  # `flower rewind` waits for us to end
        self._reconciled = False  # the ledger has read the killed processes' transcripts

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

    def _reconcile_spend(self) -> None:
        """Book from the transcripts what killed processes of the task paid for and did
        not book (core/reconcile.py); like the ledger, never a reason for a run to fail."""
        since = getattr(self.store, "session_since", None)
        if since is None:
            return
        try:
            self.ledger.reconcile(since)
        except Exception as exc:
            log.warning("flower: could not reconcile the spend of earlier runs: %s", exc)

    def total_cost(self) -> float:
        return round(sum(r.cost_usd for r in self.results), 4)

    def close(self) -> None:
        self.store.close()
        mark_env(self.workspace, agents_done=True)
        if self._active is not None:
            os.close(self._active)
            self._active = None

    # -- interrupt and rescue ------------------------------------------------------------

    def interrupt(self, message: str = "") -> None:
        """Ask the running step to stop at the next message boundary and resume the same
        session with ``message``. Safe from any thread; never hard-cancels."""
        self._interrupt.request(message or "")

    def hold(self) -> None:
        """Stop the running turn now and keep the step waiting until ``interrupt(words)``
        says how to go on (``interrupt("")`` = just continue). Safe from any thread."""
        self._interrupt.hold()

    def rescue(self, error: str | None = None) -> None:
        """Best-effort bookkeeping before the process dies (SIGHUP/SIGTERM handlers, or a
        terminal ending the process after Ctrl-C twice).

        Records the in-flight step as ``error`` (default ``killed-by-signal``). Never raises,
        never waits on a lock this very process might be holding.
        """
        try:
            rows = [r.row(self.run_id) for r in self.results]
            cur = self._current
            if cur is not None and all(r is not cur for r in self.results):
                dead = replace(cur, error=error or self.KILLED, ok=False, ended_at=time.time(),
                               errors=list(cur.errors), retired=list(cur.retired))
                rows.append(dead.row(self.run_id))
            self._manifest.write(rows, blocking=False)
        except BaseException:
            pass

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
        result.sandbox = self.sandbox.wall(spec.role, spec.allowed_tools, spec.sandbox)
        emit(Event("system", text=texts.SANDBOX_STEP.format(
            wall=texts.SANDBOX_WALLS[result.sandbox]),
            payload={"subtype": "sandbox", "sandbox": result.sandbox, "step": name}))
        first = _Next(prompt, resume, fork, resume_at) if resume else _Next(prompt, resume)
        self._handoff_ctl.begin_step()
        self.ledger.start()
        if not self._reconciled:  # a killed process's calls count before any cap check
            import anyio.to_thread

            self._reconciled = True
            await anyio.to_thread.run_sync(self._reconcile_spend)
        try:
            with signals_rescued(self.rescue):
                await self._rounds(spec, prompt, first, result, emit)
        except BaseException as exc:  # Ctrl-C, task cancellation: the book still says why
            result.ok = False
            result.error = f"aborted ({type(exc).__name__})"  # whatever came before, this ended it
            raise
        finally:
            result.ended_at = time.time()
            self.results.append(result)
            self._current = None
            import anyio.to_thread

            with anyio.CancelScope(shield=True):  # a cancelled step is still recorded,
                await anyio.to_thread.run_sync(self._write_manifest)  # off the event loop
                await self.checkpoint("step-end", name)
            self.ledger.write()  # this process's working time, at every step's end
        return result

    async def checkpoint(self, kind: str, step: str) -> None:
        """Snapshot the project (off the event loop; a git failure is only logged)."""
        if self.checkpoints is not None:
            import anyio.to_thread

            await anyio.to_thread.run_sync(try_take, self.checkpoints, kind, step,
                                           self.position)

    async def _rounds(self, spec: AgentSpec, prompt: str, nxt: _Next, result: StepResult,
                      emit: EventSink) -> None:
        """Attempt after attempt until one succeeds or nothing says go on: an interrupt
        resumes with the human's words, a full context hands off to a successor, a failure
        is retried within the budget. Interrupts and handoffs cost no attempt."""
        if self._interrupt.pending:  # said before this step, or between two: not stale
            nxt.prompt = with_words(nxt.prompt, await self._interrupt.words())
        attempt = 0
        while True:
            attempt += 1
            result.attempts = attempt
            if not await within_caps(self.ledger, self.channel, result, emit):
                break
            seen = len(result.errors)
            await self._attempt(spec, nxt.prompt, result, resume=nxt.resume, fork=nxt.fork,
                                resume_at=nxt.at, emit=emit)
            if result.error in CAP_ERRORS:  # stopped at a cap: ask above, then resume
                if result.session_id:
                    nxt = _Next(self.resilience.resume_prompt, result.session_id)
                    result.resumed = True
                attempt -= 1  # a cap is not a failed attempt
                continue
            # words that arrive just as the turn ends still reach the model
            interrupted = result.error == self.INTERRUPTED or (
                result.ok and self._interrupt.pending)
            if result.ok and not interrupted:
                break
            if interrupted:
                await self._after_interrupt(nxt, result, attempt, emit)
                attempt -= 1  # an interrupt is not a failed attempt
                continue
            if self._handoff_ctl.due(result, result.errors[seen:]):
                # a handoff is not a failure: no retry budget, no network wait
                successor = await self._handoff_ctl.hand_off(spec, prompt, result, emit)
                if successor is None:
                    break
                nxt = _Next(successor)
                attempt -= 1
                continue
            if not self._should_retry(result, attempt):
                break
            if not await self._before_retry(nxt, result, attempt, emit):
                break

    async def _after_interrupt(self, nxt: _Next, result: StepResult, attempt: int,
                               emit: EventSink) -> None:
        """The next attempt after a human's interrupt: the same session resumed with the
        words — or, with no session yet to resume, the step started over, words on."""
        words = await self._interrupt.words()
        if not result.session_id:  # nothing to resume: start over, words on
            nxt.prompt = with_words(nxt.prompt, words)
            return
        name = result.step
        emit(Event("retry", text=texts.RETRY_INTERRUPT.format(name=name),
                   payload={"step": name, "attempt": attempt, "source": "interrupt"}))
        nxt.prompt = (f"{words}\n\n{self.INTERRUPT_NOTE}" if words
                      else self.resilience.resume_prompt)
        nxt.resume, nxt.fork, nxt.at = result.session_id, False, None
        result.resumed = True

    async def _before_retry(self, nxt: _Next, result: StepResult, attempt: int,
                            emit: EventSink) -> bool:
        """Wait out an outage and the backoff, then set up the retry; ``False`` when the
        network never came back (the step stops)."""
        name = result.step
        base_url = self._config().get("ANTHROPIC_BASE_URL")
        wrong = await self._wrong_setting(base_url)
        if wrong:  # no retry follows, so no retry line: the step stops with this reason
            result.error = wrong
            return False
        emit(Event("retry",
                   text=texts.RETRY_AFTER_FAILURE.format(
                       step=name, attempt=attempt, error=in_words(result.error)),
                   payload={"step": name, "attempt": attempt, "source": "failure"}))
        net = {"step": name, "attempt": attempt, "source": "network"}
        heard = self._interrupt_pending  # a human's words cut any wait short
        if not await self.resilience.wait_online(
                lambda msg, p=net: emit(Event("retry", text=msg, payload=p)),
                stop=heard, base_url=base_url) \
                and not heard():
            result.error = texts.OFFLINE_GAVE_UP.format(error=in_words(result.error))
            return False
        await nap(self.resilience.delay_for(attempt), heard)
        if result.session_id:  # resume, not restart: earlier work is not lost
            nxt.prompt = self.resilience.resume_prompt
            nxt.resume, nxt.fork, nxt.at = result.session_id, False, None
            result.resumed = True
        if heard():  # the words go with the resume (or the fresh start)
            nxt.prompt = with_words(nxt.prompt, await self._interrupt.words())
        return True

    async def _wrong_setting(self, base_url: str | None) -> str | None:
        """The one line for a base URL that cannot be right (``misconfigured``), or None.
        Asked only while the endpoint has never answered in this run: once it has, the same
        refusal is an outage and is waited out."""
        if self.answered or not self.resilience.enabled:
            return None
        import anyio.to_thread

        why = await anyio.to_thread.run_sync(misconfigured, base_url)
        if why is None:
            return None
        from flower.config import origin
        from flower.core.resilience import endpoint
        from flower.stores.url import display_url

        host, port = endpoint(base_url)
        key = "ANTHROPIC_BASE_URL"
        if not base_url:
            where = texts.SETTING_DEFAULT
        elif key in os.environ:
            where = texts.SETTING_FROM_ENV
        else:
            path = origin(key) if key in self._dotenv else None
            where = texts.SETTING_FROM_FILE.format(path=path) if path else texts.SETTING_FROM_ENV
        line = texts.BASE_URL_REFUSED if why == "refused" else texts.BASE_URL_NO_HOST
        return line.format(url=display_url(base_url or ""), origin=where, host=host, port=port)

    def _should_retry(self, result: StepResult, attempt: int) -> bool:
        r = self.resilience
        if not r.enabled or attempt >= r.max_attempts:
            return False
        return r.should_retry(classify(result.error))

    async def _attempt(self, spec: AgentSpec, prompt: str, result: StepResult, *,
                       resume: str | None, fork: bool, resume_at: str | None,
                       emit: EventSink) -> None:
        """One CLI session for ``result`` (``attempt.py``); the writing round of a handoff
        goes through here too."""
        await Attempt(self, result, emit).run(spec, prompt, resume=resume, fork=fork,
                                              resume_at=resume_at)

    def _interrupt_pending(self) -> bool:
        return self._interrupt.pending

    # -- settings and bookkeeping --------------------------------------------------------

    def rebook(self, result: StepResult) -> None:
        """Rewrite the manifest after the caller changed a finished ``result`` — a
        workflow's gate refused it — so its row says what the run reported."""
        if any(r is result for r in self.results):
            self._write_manifest()

    def _write_manifest(self) -> None:
        try:
            self._manifest.write([r.row(self.run_id) for r in self.results])
        except OSError as exc:  # the book must never break the run it records
            log.warning("flower: could not write %s: %s", self.manifest_path, exc)

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

    # -- session ids and lineage ---------------------------------------------------------

    def _note_session(self, message: Any, result: StepResult) -> None:
        """Record the session id the moment it is first seen and tell ``on_session``."""
        sid = getattr(message, "session_id", None)
        if not sid:
            data = getattr(message, "data", None)
            if isinstance(data, dict):
                sid = data.get("session_id")
        if sid and sid != result.session_id:
            result.session_id = sid
            if not self._handoff_ctl.unannounced:
                self._announce(sid)
        elif self._handoff_ctl.unannounced and result.session_id:
            self._announce_if_stored(result.session_id)

    def _announce_if_stored(self, sid: str) -> None:
        """A handoff successor enters the lineage only once the store holds it: a kill
        before its first entries are mirrored then resumes the predecessor (which hands off
        again) instead of starting the step over from its original prompt."""
        if self.has_session(sid):
            self._handoff_ctl.unannounced = False
            self._announce(sid)

    def _announce(self, sid: str) -> None:
        hook = self.on_session
        if hook is not None and not self._handoff_ctl.writing:
            try:
                hook(sid)
            except Exception as exc:
                log.warning("flower: on_session hook failed: %s", exc)


def _offline_bound(policy: Resilience, given: Any, config: dict[str, str]) -> Resilience:
    """``FLOWER_OFFLINE_WAIT`` (what ``--offline-wait SECONDS`` sets) bounds the wait for the
    network of a Runtime built with the default policy; a ``Resilience`` the caller passed
    keeps its own ``max_offline_wait``. A value that is not a number is ignored."""
    raw = config.get("FLOWER_OFFLINE_WAIT", "").strip()
    if isinstance(given, Resilience) or not raw:
        return policy
    try:
        seconds = float(raw)
    except ValueError:
        log.warning("flower: FLOWER_OFFLINE_WAIT=%r is not a number of seconds", raw)
        return policy
    return replace(policy, max_offline_wait=max(0.0, seconds))


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

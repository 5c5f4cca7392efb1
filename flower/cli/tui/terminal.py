"""Driving a run from a terminal: live output, an input line that stays put, Ctrl-C, asides.

While a workflow streams, the human can still talk to it. In a terminal, prompt_toolkit
keeps one input line at the bottom (with a status bar under it, ``status_bar.Status``:
context, cost so far, elapsed, current tool) and everything printed goes above it — no torn
lines, no lost keystrokes. A submitted line is routed:

* a question is pending → the answer (a number picks that option; Enter skips it);
* it starts with ``?`` or ``？`` → an aside: a read-only oracle answers from the recent
  events and the workbench, concurrently, in its own run dir; nothing enters the run;
* otherwise → an added requirement: the coordinator's inbox, appended to ``需求.md``.

Ctrl-C once stops the current turn at once and waits for the human's words (Enter = just
carry on); pressed again while it waits (or twice within 2 s) it ends the run with exit code
130, the manifest written — within ``watchdog.HARD_EXIT_S`` even when the SDK's shielded
disconnect would take far longer.

Piped stdin is a script of answers: each line answers the next question; at EOF every
later question falls through at once ("nobody answered") — a pipe never makes a run wait.
"""

from __future__ import annotations

import collections
import contextlib
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.cli.exitcodes import ExitCode
from flower.cli.tui.status_bar import Status
from flower.errors import one_line

if TYPE_CHECKING:
    from rich.console import Console

    from flower.core.agent import AgentSpec
    from flower.core.events import Event
    from flower.core.runtime import Runtime
    from flower.workflow.base import Workflow

DOUBLE_PRESS_S = 2.0
ASIDE_EVENTS = 60
ASIDE_EVENT_CHARS = 200
ASIDE_WAIT_S = 120.0


def _event_line(ev: Event) -> str:
    who = "sub" if ev.payload.get("subagent") else "main"
    tag = f"{ev.kind}/{ev.tool}" if ev.tool else ev.kind
    text = " ".join(str(ev.text).split())
    return f"[{tag}·{who}] {text}"[:ASIDE_EVENT_CHARS]


class Session:
    """One run in the terminal: renders events, takes input, handles Ctrl-C and asides."""

    def __init__(self, out: Console, rt: Runtime, *, channel: Any = None,
                 workbench: Any = None, verbose: bool = False, notify: Any = None) -> None:
        from flower.cli.tui.render import Renderer
        from flower.cli.tui.watchdog import ExitWatch

        self.out = out
        self.rt = rt
        self.channel = channel
        self.workbench = workbench
        self.render = Renderer(out, verbose=verbose)
        self.status = Status(getattr(rt, "ledger", None), getattr(rt, "context_of", None))
        self.notify = notify  # a flower.core.notify.Notifier (--notify), or None
        self.recent: collections.deque[str] = collections.deque(maxlen=ASIDE_EVENTS)
        self.tty = sys.stdin.isatty()
        # Ctrl-C twice: the last lines and exit 130 within a bound (watchdog.py)
        self.exit_watch = ExitWatch(self._book_aborted, self.last_lines, tty=self.tty)
        self.spare: list[str] = []  # piped lines waiting for a question
        self.eof = False
        self.holding = False
        self.last_ctrl_c = 0.0
        self.quit = False
        self.asides = 0
        self._aside_rt: Runtime | None = None
        self._main_scope: Any = None
        self._asides_tg: Any = None
        self._loop: Any = None

    # -- events ---------------------------------------------------------------------------

    def on_event(self, ev: Event) -> None:
        if ev.kind not in ("thinking", "prompt", "system", "unknown"):
            self.recent.append(_event_line(ev))
        self.status.update(ev)
        self.render(ev)
        if self.notify is not None:
            self.notify.see(ev)
        p = ev.payload
        if ev.kind == "ask" and p.get("kind") != "mail" and p.get("state") == "asked" \
                and not self.tty and self.spare:
            self._answer(p["id"], self.spare.pop(0), p.get("options") or [])
            if self.eof and not self.spare:
                self._nobody_answers()

    # -- routing a line ---------------------------------------------------------------------

    def submit(self, line: str) -> None:
        """Route one line the human typed (see the module docstring)."""
        text = line.strip()
        if self.holding:  # the words for the interrupt; the next Ctrl-C starts afresh
            self.holding = False
            self.last_ctrl_c = 0.0
            self.rt.interrupt(text)
            return
        if text[:1] in ("?", "？"):
            self.aside(text[1:].strip())
            return
        pending = self.channel.pending() if self.channel is not None else []
        if pending:
            ask = pending[0]
            if not text:
                self.channel.decline(ask.id)
            else:
                self._answer(ask.id, text, ask.options)
            return
        if not text:
            return
        if self.channel is None:
            self.render.line(f"  ! {texts.NO_INBOX}", "yellow")
            return
        self.channel.send(text)

    def _answer(self, ask_id: str, text: str, options: list[str]) -> None:
        if text.isdigit() and 1 <= int(text) <= len(options):
            text = options[int(text) - 1]
        self.channel.answer(ask_id, text)

    def prompt_text(self) -> str:
        if self.holding:
            return texts.PROMPT_INTERRUPTED
        if self.channel is not None and self.channel.pending():
            return texts.PROMPT_ANSWER
        return texts.PROMPT_IDLE

    # -- Ctrl-C -----------------------------------------------------------------------------

    def ctrl_c(self) -> None:
        """Once: stop the turn now and wait for words. Again while it waits for them (or
        within 2 s anyway): end the run."""
        now = time.monotonic()
        if self.holding or now - self.last_ctrl_c <= DOUBLE_PRESS_S or not self.tty:
            self.stop()
            return
        self.last_ctrl_c = now
        self.holding = True
        self.rt.hold()
        self.render.interrupted()  # warns of lost work only while a subagent runs
        pending = self.channel.pending() if self.channel is not None else []
        if pending:
            self.render.line(f"  ! {texts.INTERRUPT_PENDING.format(n=len(pending))}", "yellow")
        self.render.line(f"  {texts.INTERRUPT_SAY}", "yellow")

    def stop(self) -> None:
        """End the run: cancel it, and give that at most ``HARD_EXIT_S`` before the
        watchdog ends the process (the SDK's shielded disconnect can take far longer)."""
        self.quit = True
        self.exit_watch.arm()
        if self.notify is not None:  # the process ends within HARD_EXIT_S: nothing may wait
            closing, _ = self.last_lines()
            self.notify.send_detached("stopped", f"{texts.STOPPED} · {closing}")
        if self.holding:
            self.holding = False
            self.rt.interrupt("")
        if self._main_scope is not None:
            self._main_scope.cancel()

    def last_lines(self) -> list[str]:
        """The lines a run stopped by Ctrl-C twice ends with, as plain text."""
        return [run_closing(self.rt, self.status.elapsed_s()), f"! {texts.STOPPED}"]

    def _book_aborted(self, error: str) -> None:
        rescue = getattr(self.rt, "rescue", None)
        if rescue is not None:
            rescue(error)

    # -- asides -----------------------------------------------------------------------------

    def aside(self, question: str) -> None:
        if not question or self._asides_tg is None:
            return
        self.asides += 1
        self._asides_tg.start_soon(self._aside, question, list(self.recent))

    async def _aside(self, question: str, recent: list[str]) -> None:
        from flower.core.roles import oracle

        try:
            rt = self._aside_runtime()
            where = self.workbench.root if self.workbench is not None else self.rt.workspace
            prompt = texts.ORACLE_PROMPT.format(question=question, events="\n".join(recent)
                                                or texts.ORACLE_NO_EVENTS, workbench=where)
            result = await rt.run(oracle(), prompt)
            self.render.line(f"  # {texts.ASIDE_HEAD}", "bold magenta")
            self.render.block(result.text or result.error or "", "    ", "magenta")
            self.render.line(f"    {texts.ASIDE_COST.format(cost=result.cost_usd)}", "dim")
        except Exception as exc:  # an aside never breaks the run
            self.render.line(f"  # {texts.ASIDE_FAILED.format(error=one_line(exc))}", "red")
        finally:
            self.asides -= 1

    def close(self) -> None:
        """Close the aside runtime, if an aside ever ran (the main one is the caller's)."""
        if self._aside_rt is not None:
            self._aside_rt.close()

    def _aside_runtime(self) -> Runtime:
        from flower.core.runtime import Runtime

        if self._aside_rt is None:
            self._aside_rt = Runtime(workspace=self.rt.workspace, run_dir=self.rt.run_dir /
                                     "aside", resilience=False, handoff=False,
                                     workbench=self.workbench or False,
                                     sandbox=getattr(self.rt, "sandbox", "auto"))
        return self._aside_rt

    # -- input sources ---------------------------------------------------------------------

    async def tty_input(self) -> None:
        """The prompt_toolkit input line, forever (cancelled when the run ends)."""
        from prompt_toolkit import PromptSession

        keys = _raw_input()
        session: Any = PromptSession(input=keys, erase_when_done=True,
                                     key_bindings=_keep_typed_lines())
        with keys.raw_mode() if keys is not None else contextlib.nullcontext():
            while True:
                session.app.erase_when_done = True
                try:
                    line = await session.prompt_async(self.prompt_text,
                                                      bottom_toolbar=self.status.line,
                                                      refresh_interval=0.5)
                except KeyboardInterrupt:
                    self.ctrl_c()
                    continue
                except EOFError:
                    self.piped_eof()
                    return
                self.submit(line)

    def start_pipe_reader(self) -> None:
        """Piped stdin: a daemon thread hands each line to the loop; EOF flips the channel to
        "nobody answers"."""
        loop = self._loop

        def read() -> None:
            try:
                for line in sys.stdin:
                    loop.call_soon_threadsafe(self.piped_line, line.rstrip("\n"))
            except (OSError, ValueError):
                pass
            loop.call_soon_threadsafe(self.piped_eof)

        threading.Thread(target=read, name="flower-stdin", daemon=True).start()

    def piped_line(self, line: str) -> None:
        text = line.strip()
        if text[:1] in ("?", "？"):
            self.aside(text[1:].strip())
            return
        pending = self.channel.pending() if self.channel is not None else []
        if pending:
            self._answer(pending[0].id, text, pending[0].options)
        elif text:
            self.spare.append(text)

    def piped_eof(self) -> None:
        self.eof = True
        if not self.spare:  # lines still waiting answer the next questions first
            self._nobody_answers()

    def _nobody_answers(self) -> None:
        """Input is over: from now on every question falls through at once."""
        if self.channel is None:
            return
        self.channel.timeout_s = 0
        for ask in self.channel.pending():
            self.channel.decline(ask.id, texts.INPUT_CLOSED)

    # -- the run ----------------------------------------------------------------------------

    async def drive(self, wf: Workflow) -> dict:
        import anyio

        self._loop = _running_loop()
        ctx: dict = {}
        async with anyio.create_task_group() as asides:
            self._asides_tg = asides
            with _patched_stdout(self.tty):
                async with anyio.create_task_group() as main:
                    self._main_scope = main.cancel_scope
                    _on_sigint(self._loop, self.ctrl_c)
                    if self.tty:
                        main.start_soon(self.tty_input)
                    else:
                        self.start_pipe_reader()
                    ctx = await wf.run(self.rt, on_event=self.on_event)
                    main.cancel_scope.cancel()
            if self.asides:
                self.render.line(f"  {texts.ASIDE_WAIT.format(n=self.asides)}", "dim")
                with anyio.move_on_after(ASIDE_WAIT_S):
                    while self.asides:
                        await anyio.sleep(0.1)
            asides.cancel_scope.cancel()
        return ctx


def _running_loop() -> Any:
    import asyncio

    return asyncio.get_running_loop()


def _on_sigint(loop: Any, handler: Any) -> None:
    """SIGINT outside the input line (between prompts, or piped) → the same Ctrl-C logic,
    instead of a KeyboardInterrupt traceback out of the event loop."""
    try:
        loop.add_signal_handler(signal.SIGINT, handler)
    except (NotImplementedError, RuntimeError, ValueError):
        pass


def _keep_typed_lines() -> Any:
    """Enter on a line with words leaves it above the output (what the human said stays
    in the scrollback); every other way the input line ends — Ctrl-C, an empty Enter, the
    run's end — erases it together with the status bar, so neither is left behind."""
    from prompt_toolkit.enums import DEFAULT_BUFFER
    from prompt_toolkit.filters import has_focus
    from prompt_toolkit.key_binding import KeyBindings

    keys = KeyBindings()

    @keys.add("enter", filter=has_focus(DEFAULT_BUFFER))
    def _(event: Any) -> None:
        event.app.erase_when_done = not event.current_buffer.text.strip()
        event.current_buffer.validate_and_handle()

    return keys


def _raw_input() -> Any:
    """The input line's keyboard, kept in raw mode for as long as the session reads it.

    prompt_toolkit puts the terminal back into cooked mode between two prompts and while it
    prints a line above the input line. A key arriving in that instant is taken by the
    terminal driver, not the input line: Ctrl-C becomes a SIGINT for the whole foreground
    process group (the agent's CLI included) or, with no controlling terminal, vanishes. The
    second Ctrl-C tends to land exactly there (it follows the line saying "press again"),
    and the run kept waiting for words. Raw throughout, every key waits for the next read.

    ``None`` without a POSIX terminal interface: prompt_toolkit's default input then."""
    try:
        from prompt_toolkit.input.vt100 import Vt100Input
    except ImportError:  # no termios (Windows)
        return None

    class RawInput(Vt100Input):
        def cooked_mode(self) -> Any:
            return contextlib.nullcontext()  # printing a line needs no cooked input

    return RawInput(sys.stdin)


def _patched_stdout(active: bool) -> Any:
    """prompt_toolkit's stdout patch (output goes above the input line) on a terminal only."""
    if not active:
        return contextlib.nullcontext()
    from prompt_toolkit.patch_stdout import patch_stdout

    return patch_stdout(raw=True)


# ------------------------------------------------------------------ entry points


def _os_error(exc: BaseException) -> OSError | None:
    """The ``OSError`` behind ``exc`` (it may arrive wrapped in an exception group)."""
    if isinstance(exc, OSError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _os_error(inner)
        if found is not None:
            return found
    return None


def run_closing(rt: Runtime, elapsed_s: float | None = None) -> str:
    """The run's last line for ``rt``: with a budget the cost is the task's (earlier wakes
    included), shown against the cap; ``render.closing_line`` words it."""
    from flower.cli.tui.render import closing_line

    ledger = getattr(rt, "ledger", None)
    if ledger is not None and ledger.budget_usd is not None:
        return closing_line(ledger.total_usd, rt.manifest_path, elapsed_s,
                            cap=ledger.budget_usd)
    return closing_line(rt.total_cost(), rt.manifest_path, elapsed_s)


def _cap_stop(rt: Runtime) -> str:
    """The line for a run stopped at a cap nobody raised; "" when it did not stop there."""
    from flower.core.caps import continue_hint

    ledger = getattr(rt, "ledger", None)
    if ledger is None or not ledger.stopped:
        return ""
    return continue_hint(ledger.stopped, ledger)


def run_workflow(out: Console, wf: Workflow, rt: Runtime, *,
                 verbose: bool = False, notify: Any = None) -> ExitCode:
    """Drive ``wf`` on ``rt`` in this terminal; prints the closing line, returns the exit
    code (0 done, 1 a step failed or aborted). Stopped with Ctrl-C twice, the process
    ends here with 130 (watchdog.py: the exit is bounded, Python's shutdown is not).
    ``notify`` (``--notify``) sees every event and is sent the end with the line printed
    for it."""
    import anyio

    from flower.core.notify import outcome
    from flower.core.update import background

    newer = background()  # a daemon thread; the run never waits for it
    session = Session(out, rt, channel=wf.channel, workbench=wf.workbench, verbose=verbose,
                      notify=notify)
    ctx: dict = {}
    disk: OSError | None = None
    try:
        ctx = anyio.run(session.drive, wf)
    except Exception as exc:  # a frozen document the disk refused: one line, not a trace
        disk = _os_error(exc)
        if disk is None:
            raise
    finally:
        session.close()
        rt.close()
    if disk is not None:
        from rich.markup import escape

        out.print(f"[red]x {escape(texts.DISK_REFUSED.format(error=disk))}[/]")
        _ended(notify, "failed", texts.DISK_REFUSED.format(error=disk))
        return ExitCode.FAILED
    if session.quit and not session.exit_watch.claim():
        threading.Event().wait()  # the watchdog prints the last lines and ends the process
    # soft_wrap: a long manifest path is the terminal's to wrap, not cut at the console width
    closing = run_closing(rt, session.status.elapsed_s())
    out.print(closing, highlight=False, soft_wrap=True)
    found = newer.notice(wait=0.0 if session.quit else 1.0)  # Ctrl-C twice waits for nothing
    if found:
        out.print(texts.UPDATE_NOTICE.format(new=found), highlight=False, markup=False)
    if session.quit:
        out.print(f"[red]! {texts.STOPPED}[/]")
        session.exit_watch.leave()  # exit 130 now: no second wait in Python's shutdown
        return ExitCode.INTERRUPTED
    failed = ctx.get("_failed_at")
    if not failed:
        _ended(notify, "done", closing)
        return ExitCode.OK
    capped = _cap_stop(rt)
    if capped:  # one line: how to go on (the same session wakes with a higher cap)
        from rich.markup import escape

        out.print(f"[red]x {escape(capped)}[/]", soft_wrap=True)
        _ended(notify, "stopped", capped, closing)
        return ExitCode.FAILED
    result = ctx.get("_results", {}).get(failed)
    from rich.markup import escape

    from flower.cli.tui.render import clean

    # a step's error may quote a tool's output
    why = clean(ctx.get("_aborted") or (result.error if result is not None else "") or "")
    out.print(f"[red]x {escape(texts.ABORTED_AT.format(step=failed, why=why))}[/]")
    _ended(notify, outcome(ok=False, why=result.error if result is not None else ""),
           texts.ABORTED_AT.format(step=failed, why=why), closing)
    if result is not None and result.error:
        from flower.cli.tui.setup_screen import reconfigure_after_failure

        reconfigure_after_failure(out, result.error, interactive=sys.stdin.isatty())
    return ExitCode.FAILED


def _ended(notify: Any, event: str, *lines: str) -> None:
    """Send the run's end to ``--notify``: the lines printed for it, joined into one."""
    if notify is not None:
        notify.send(event, " · ".join(lines))


def run_once(out: Console, rt: Runtime, spec: AgentSpec, prompt: str, *,
             resume: str | None = None, fork: bool = False,
             verbose: bool = False) -> ExitCode:
    """One ``Runtime.run`` with a renderer that keeps its totals across events (a renderer
    made per event would show elapsed 0:00 and $0.00 forever)."""
    import anyio

    from flower.cli.tui.render import Renderer

    render = Renderer(out, verbose=verbose)
    started = time.monotonic()

    async def main() -> Any:
        return await rt.run(spec, prompt, resume=resume, fork=fork, on_event=render)

    try:
        result = anyio.run(main)
    except KeyboardInterrupt:
        out.print(f"[red]! {texts.STOPPED}[/]")
        return ExitCode.INTERRUPTED
    finally:
        rt.close()
    out.print(run_closing(rt, time.monotonic() - started), highlight=False, soft_wrap=True)
    if result.session_id:
        out.print(texts.ONCE_SESSION.format(session=result.session_id), highlight=False)
    if not result.ok:
        from rich.markup import escape

        from flower.cli.tui.render import clean

        out.print(f"[red]x {escape(clean(result.error or '?'))}[/]")
        return ExitCode.FAILED
    return ExitCode.OK

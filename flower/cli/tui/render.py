"""Terminal rendering of flower events with rich. UI code sees only ``Event``, never SDK types.

ASCII icons only (emoji and box-drawing glyphs have crashed terminals' font fallback in the
original flower, twice): ``=`` step, ``~`` thinking/retry, ``>`` dispatch, ``*`` tool call,
``?`` question, ``!`` warning, ``+`` done/answered, ``x`` failure, ``#`` notices, ``<`` a
worker's report, ``.`` skipped, ``| `` subagent activity. Text from models and tools is
printed as *text* (never as markup), so a stray ``[red]`` or escape sequence cannot restyle
the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.cli.tui.formats import fmt_duration
from flower.core.human import TOOL_NAME as ASK_TOOL
from flower.core.resilience import in_words
from flower.errors import one_line

if TYPE_CHECKING:
    from rich.console import Console

    from flower.core.events import Event

# What a terminal would act on rather than show, in the order it is tried:
_ANSI = re.compile(
    # a control string — OSC, DCS, SOS, PM, APC, 7-bit or 8-bit — with its whole payload, up
    # to BEL or ST (ESC \ or U+009C); an unterminated one runs to the end of the text
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])(?:[^\x07\x1b\x9c]|\x1b(?!\\))*(?:\x07|\x1b\\|\x9c|\Z)"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*(?:[@-~]|\Z)"  # CSI (colours, cursor moves), 7- or 8-bit
    r"|\x1b[ -/]*[0-~]"  # any other escape sequence (charsets, keypad modes, RIS …)
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # a lone ESC, other C0 but \n and \t, DEL, C1
)
_C1 = re.compile(r"[\x7f-\x9f]")
REPORT_LINES = 12  # lines of a worker's report shown without -v


def clean(text: str) -> str:
    """Model/tool text made safe to print: escape sequences and their payloads, and every
    control character but newline and tab, removed — a window title, a hyperlink, a
    cleared screen or a remapped keyboard a file or tool output carries stays in the file."""
    return _ANSI.sub("", text)


def shown(text: str, secrets: Iterable[str] = ()) -> str:
    """:func:`clean` text from a transcript or a run book, credentials masked first: the
    values flower resolved (``secrets``) and anything shaped like an Anthropic key."""
    from flower.core.env import redact_keys

    return clean(redact_keys(text, secrets))


def deep(value: Any, fn: Callable[[str], str]) -> Any:
    """``value`` (a JSON-like document) with every string in it, keys too, passed through
    ``fn``: a report built from a transcript is made safe once, before any of it is shown."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {deep(k, fn): deep(v, fn) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [deep(v, fn) for v in value]
    return value


def json_text(doc: Any, secrets: Iterable[str] = (), **dump: Any) -> str:
    """``--json`` output: credentials masked, and DEL/C1 characters written as ``\\u``
    escapes (JSON escapes C0 itself; a raw U+009B is a CSI to some terminals) — the same
    data to any JSON reader."""
    import json

    from flower.core.env import redact_keys

    text = json.dumps(deep(doc, lambda s: redact_keys(s, secrets)), ensure_ascii=False,
                      indent=2, **dump)
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def closing_line(cost: float, manifest: Any, elapsed_s: float | None = None, *,
                 cap: float | None = None) -> str:
    """A run's last line: what it cost (against the budget, with one), where its book is
    and, for a run that ran, how long it took. Every way a run in this terminal ends prints
    it from here."""
    line = texts.CLOSING.format(cost=cost, manifest=manifest) if cap is None else \
        texts.CLOSING_CAPPED.format(cost=cost, cap=cap, manifest=manifest)
    if elapsed_s is not None:
        line += texts.CLOSING_ELAPSED.format(elapsed=fmt_duration(elapsed_s))
    return line


def _near(path: str) -> str:
    """``path`` relative to the working directory when it lies inside it (``.flower/…``
    reads better than the absolute path the channel keeps)."""
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if rel.startswith("..") else rel


class Renderer:
    """Prints events as they come (a callable ``on_event``)."""

    def __init__(self, console: Console, *, verbose: bool = False) -> None:
        self.console = console
        self.verbose = verbose
        #: ids of the main thread's Agent/Task calls still running (dispatched, no report)
        self.dispatched: set[str] = set()

    def __call__(self, ev: Event) -> None:
        handler = getattr(self, f"_on_{ev.kind}", None)
        if handler is not None:
            handler(ev)

    # -- output helpers -------------------------------------------------------------------

    def line(self, text: str, style: str = "") -> None:
        from rich.text import Text

        # a terminal folds a long line at its width; a pipe or a file gets it whole
        tty = self.console.is_terminal
        self.console.print(Text(clean(text), style=style), soft_wrap=not tty,
                           overflow="fold" if tty else None)

    def block(self, text: str, indent: str, style: str = "", limit: int | None = None) -> None:
        lines = clean(text).strip("\n").splitlines()
        if limit is not None and len(lines) > limit:
            lines = [*lines[:limit], f"… (+{len(lines) - limit})"]
        for s in lines:
            self.line(f"{indent}{s}", style)

    @staticmethod
    def _bar(ev: Event) -> str:
        return "  | " if ev.payload.get("subagent") else "  "

    def interrupted(self) -> None:
        """The line after a first Ctrl-C; the half-done-work warning only when a
        dispatched subagent is actually running (nothing else loses work)."""
        line = texts.INTERRUPTED
        if self.dispatched:
            line += texts.INTERRUPTED_SUBAGENTS.format(n=len(self.dispatched))
        self.line(f"  ! {line}", "bold yellow")

    # -- event kinds ----------------------------------------------------------------------

    def _on_step(self, ev: Event) -> None:
        """``== 干活 =========  3/3  <- 接上次 · 第 2 次唤醒`` (the wake shows at every step)."""
        from rich.cells import cell_len

        p = ev.payload
        tail = f"  {p.get('index', '?')}/{p.get('total', '?')}"
        if p.get("frozen"):
            tail += f"  {texts.STEP_FROZEN}"
        elif p.get("resumed"):
            tail += f"  {texts.STEP_RESUMED.format(n=p.get('woke', 1))}"
        head = f"== {clean(ev.text)} "
        fill = max(4, min(self.console.width, 110) - cell_len(head) - cell_len(tail))
        self.line(head + "=" * fill + tail, "bold blue")

    def _on_system(self, ev: Event) -> None:
        """``-v``: the wall the step's Bash runs behind (the Runtime says it at each step)."""
        if self.verbose and ev.payload.get("subtype") == "sandbox":
            self.line(f"  {ev.text}", "dim")

    def _on_text(self, ev: Event) -> None:
        if ev.payload.get("subagent") and not self.verbose:
            return
        self.block(ev.text, self._bar(ev))

    def _on_thinking(self, ev: Event) -> None:
        if ev.payload.get("subagent") and not self.verbose:
            return
        first = clean(ev.text).strip().splitlines()[:1]
        if first:
            self.line(f"{self._bar(ev)}~ {one_line(first[0], 160)}", "dim italic")

    def _on_tool_call(self, ev: Event) -> None:
        tool_input = ev.payload.get("input") or {}
        if ev.tool in ("Agent", "Task") and not ev.payload.get("subagent"):
            who = tool_input.get("subagent_type") or "agent"
            what = tool_input.get("description") or ""
            if ev.payload.get("id"):
                self.dispatched.add(str(ev.payload["id"]))
            self.line(f"  > {texts.UI_DISPATCH} {who} {what}".rstrip(), "bold cyan")
            return
        if ev.tool == ASK_TOOL:  # the question itself is shown by its ask event
            return
        self.line(self._bar(ev) + one_line(f"* {ev.tool} {ev.text}", 196), "cyan")

    def _on_tool_result(self, ev: Event) -> None:
        if not ev.payload.get("subagent"):
            self.dispatched.discard(str(ev.payload.get("tool_use_id")))
        report = ev.payload.get("report")
        if report is not None and not ev.payload.get("subagent"):
            self.line(f"  < {texts.UI_REPORT}", "bold green")
            self.block(report, "    ", "green", None if self.verbose else REPORT_LINES)
            return
        if ev.payload.get("is_error"):
            first = clean(ev.text).strip().splitlines()[:1]
            self.line(f"{self._bar(ev)}x {one_line(first[0], 160) if first else ''}", "red")
        elif self.verbose:
            self.block(ev.text, f"{self._bar(ev)}  ", "green", 6)

    def _on_error(self, ev: Event) -> None:
        if ev.payload.get("warning"):  # the step goes on, but the human must know
            self.line(f"  ! {ev.text}", "bold yellow")
            return
        # the CLI's own "API Error: … (ECONNREFUSED)" is said in the messages' language
        text = in_words(ev.text) if ev.payload.get("synthetic") else ev.text
        self.line(f"  x {text}", "bold red")

    def _on_retry(self, ev: Event) -> None:
        self.line(f"  ~ {ev.text}", "yellow")

    def _on_handoff(self, ev: Event) -> None:
        """``#`` for the warning and the writing round; when done, the four things the
        successor is told (so the human sees what survives), then where it landed."""
        p = ev.payload
        if p.get("phase") != "done":
            self.line(f"  # {ev.text}", "yellow")
            return
        sections = p.get("sections") or {}
        for key, title in zip(("doing", "decided", "deadends", "next"), texts.HANDOFF_UI_LABELS,
                              strict=True):
            first = clean(str(sections.get(key) or "")).strip().splitlines()[:1]
            self.line(f"    - {title}:{one_line(first[0], 90) if first else texts.HANDOFF_EMPTY}",
                      "yellow")
        self.line(f"  <- {ev.text}", "red" if p.get("degraded") else "yellow")

    def _on_result(self, ev: Event) -> None:
        """The end of a turn, said as what it was: done, failed, or stopped by a human."""
        p = ev.payload
        if p.get("subagent"):
            return
        self.dispatched.clear()  # a turn that ended has no dispatch still running
        cost = float(p.get("cost_usd") or 0.0)
        turns = p.get("num_turns", 0)
        if p.get("interrupted"):
            self.line(f"  ! {texts.UI_TURN_INTERRUPTED.format(turns=turns, cost=cost)}", "yellow")
        elif p.get("is_error"):
            self.line(f"  x {texts.UI_TURN_FAILED.format(turns=turns, cost=cost)}", "red")
        else:
            line = texts.UI_DONE.format(turns=turns, cost=cost)
            if p.get("budget_usd"):  # a capped run: the task's total against the cap
                line += texts.UI_DONE_TOTAL.format(total=float(p.get("total_usd") or 0),
                                                   cap=float(p["budget_usd"]))
            self.line(f"  + {line}", "magenta")

    def _on_cap(self, ev: Event) -> None:
        """A cap reached: the numbers; the question itself follows as an ask event."""
        from flower.core.ledger import fmt_duration as clock  # h:mm:ss, as the status bar

        p = ev.payload
        which = p.get("which")
        if which not in texts.CAP_REACHED_UI:
            return
        spent, cap = float(p.get("spent") or 0), float(p.get("cap") or 0)
        if which == "time":
            spent, cap = clock(spent * 3600), clock(cap * 3600)  # type: ignore
        self.line(f"  ! {texts.CAP_REACHED_UI[which].format(spent=spent, cap=cap)}",
                  "bold yellow")

    def _on_task(self, ev: Event) -> None:
        if ev.text:  # flower's own notices (e.g. unverifiable checks); SDK task pings are empty
            self.block(ev.text, "  ", "yellow")

    def _on_ask(self, ev: Event) -> None:
        p = ev.payload
        if p.get("kind") == "mail":
            if p.get("state") == "queued":
                kept = p.get("amended")
                where = (texts.UI_MAIL_KEPT.format(path=_near(kept)) if kept
                         else texts.UI_MAIL_NOT_KEPT)
                self.line(f"  + {texts.UI_MAIL_RECEIVED} · {where}", "green")
            return
        state = p.get("state")
        if state == "asked":
            self.line(f"  ? {ev.text}", "bold yellow")
            for i, option in enumerate(p.get("options") or [], 1):
                self.line(f"     {i}) {option}", "yellow")
            remaining = p.get("remaining", -1)
            if isinstance(remaining, int) and remaining >= 0:
                self.line(f"     {texts.UI_ASKS_LEFT.format(n=remaining)}", "dim")
        elif state == "answered":
            self.line(f"  + {p.get('answer', '')}", "green")
        elif state in texts.UI_ASK_STATES:
            self.line(f"  {texts.UI_ASK_STATES[state]}", "yellow")


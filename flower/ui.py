"""Terminal rendering of flower events with rich. UI code sees only ``Event``, never SDK types."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from flower.core.events import Event

_STYLE = {
    "text": "white",
    "thinking": "dim italic",
    "tool_call": "cyan",
    "tool_result": "green",
    "error": "bold red",
    "retry": "yellow",
    "result": "magenta",
    "step": "bold blue",
    "handoff": "yellow",
}


def render_event(console: Console, ev: Event) -> None:
    """Print one event as one or a few lines; quiet kinds (system, task, prompt) are skipped."""
    from rich.markup import escape

    if ev.kind in ("system", "unknown", "prompt", "task"):
        return
    style = _STYLE.get(ev.kind, "white")
    who = "  ↳ " if ev.payload.get("subagent") else ""
    if ev.kind == "tool_call":
        line = f"{who}⚙ {ev.tool}  {ev.text}"
    elif ev.kind == "tool_result":
        mark = "✗" if ev.payload.get("is_error") else "✓"
        body = ev.text.strip().splitlines()[0][:160] if ev.text.strip() else ""
        line = f"{who}  {mark} {body}"
    elif ev.kind == "result":
        cost = ev.payload.get("cost_usd") or 0.0
        line = f"{who}■ {ev.text} · {ev.payload.get('num_turns', 0)} turns · ${cost:.4f}"
    elif ev.kind == "thinking":
        line = f"{who}… {ev.text[:160]}"
    else:
        line = f"{who}{ev.text}"
    console.print(f"[{style}]{escape(line)}[/]")


def step_header(console: Console, ev: Event) -> None:
    """``== 干活 ======  3/3  <- 接上次 · 第 2 次唤醒`` — the wake is visible at every step."""
    from rich.markup import escape

    from flower import texts

    p = ev.payload
    tail = f"  {p.get('index', '?')}/{p.get('total', '?')}"
    if p.get("frozen"):
        tail += f"  {texts.STEP_FROZEN}"
    elif p.get("resumed"):
        tail += f"  {texts.STEP_RESUMED.format(n=p.get('woke', 1))}"
    console.rule(f"[bold blue]{escape(ev.text)}[/]{escape(tail)}", align="left")

"""The renderer says what a turn was: done, failed or interrupted; warns of lost subagent
work only while a dispatched subagent runs; cuts long lines between words (issue 21)."""

from __future__ import annotations

from rich.console import Console

from flower import texts
from flower.cli.tui.render import Renderer
from flower.core.events import Event


def shown(*events: Event, then=None) -> str:
    console = Console(record=True, width=300)
    render = Renderer(console)
    for ev in events:
        render(ev)
    if then is not None:
        then(render)
    return console.export_text()


def result(**payload) -> Event:
    return Event("result", text="success", payload={"num_turns": 1, "cost_usd": 0.0,
                                                     **payload})


def test_a_finished_turn_is_done() -> None:
    assert texts.UI_DONE.format(turns=1, cost=0.0) in shown(result(is_error=False))


def test_a_failed_turn_is_not_done() -> None:
    out = shown(result(is_error=True))
    assert f"x {texts.UI_TURN_FAILED.format(turns=1, cost=0.0)}" in out
    assert texts.UI_DONE.format(turns=1, cost=0.0) not in out


def test_an_interrupted_turn_is_not_done() -> None:
    out = shown(result(is_error=False, interrupted=True))
    assert f"! {texts.UI_TURN_INTERRUPTED.format(turns=1, cost=0.0)}" in out
    assert texts.UI_DONE.format(turns=1, cost=0.0) not in out


def test_the_api_error_line_is_in_words() -> None:
    out = shown(Event("error", text="API Error: Connection refused (ECONNREFUSED)",
                      payload={"synthetic": True}))
    assert f"x {texts.API_FAILED.format(what=texts.NET_REFUSED)}" in out
    assert "ECONNREFUSED" not in out


def dispatch(tool_id: str) -> Event:
    return Event("tool_call", text="", tool="Agent", payload={
        "id": tool_id, "input": {"subagent_type": "worker", "description": "写测试"}})


def test_no_subagent_warning_when_none_runs() -> None:
    out = shown(then=lambda r: r.interrupted())
    assert texts.INTERRUPTED in out
    assert texts.INTERRUPTED_SUBAGENTS.format(n=1)[:4] not in out


def test_the_subagent_warning_while_one_runs() -> None:
    out = shown(dispatch("t1"), dispatch("t2"), then=lambda r: r.interrupted())
    assert texts.INTERRUPTED + texts.INTERRUPTED_SUBAGENTS.format(n=2) in out


def test_a_reported_subagent_is_no_longer_running() -> None:
    report = Event("tool_result", text="ok", payload={"tool_use_id": "t1", "report": "done"})
    out = shown(dispatch("t1"), report, then=lambda r: r.interrupted())
    assert texts.INTERRUPTED_SUBAGENTS.format(n=1) not in out


def test_a_long_tool_line_is_cut_between_words() -> None:
    words = " ".join(["Connection"] * 40)
    out = shown(Event("tool_call", text=words, tool="Bash", payload={"input": {}}))
    line = next(s for s in out.splitlines() if "* Bash" in s)
    assert line.rstrip().endswith("Connection…")

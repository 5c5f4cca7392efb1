"""What the terminal of a run shows besides the events: the status bar (context, the tool
running), a remark's receipt, the closing line, and whole lines when piped."""

from __future__ import annotations

import io
import os

import pytest
from rich.console import Console

from flower import texts
from flower.cli.context import console
from flower.cli.tui.render import Renderer, closing_line
from flower.cli.tui.terminal import Status
from flower.core.events import Event
from flower.core.human import INBOX_NAME, TOOL_NAME


def init(session: str) -> Event:
    return Event("system", text="init", payload={"session_id": session})


def test_a_resumed_session_starts_the_bar_at_its_stored_context() -> None:
    """A wake resumes a session holding 13.3K: the bar says so before the first answer."""
    asked: list[str] = []
    status = Status(stored_context=lambda sid: asked.append(sid) or 13_300)
    assert texts.STATUS.split("{")[0] + "0 " in status.line()
    status.update(init("sess-1"))
    assert "13.3K" in status.line()
    status.update(Event("text", text="hi", payload={"context": 14_000}))
    status.update(init("sess-1"))  # the same session again: the fresh reading stands
    assert "14.0K" in status.line() and asked == ["sess-1"]


def test_a_new_session_with_nothing_stored_keeps_the_reading() -> None:
    status = Status(stored_context=lambda sid: 0)
    status.update(Event("text", text="hi", payload={"context": 5_000}))
    status.update(init("fresh"))
    assert "5.0K" in status.line()


def test_a_store_that_fails_never_breaks_the_bar() -> None:
    def broken(sid: str) -> int:
        raise OSError("disk")

    status = Status(stored_context=broken)
    status.update(init("s"))
    assert texts.STATUS.split("{")[0] + "0 " in status.line()


@pytest.mark.parametrize(("tool", "name"), [(TOOL_NAME, texts.STATUS_TOOL_ASK),
                                            (INBOX_NAME, texts.STATUS_TOOL_INBOX)])
def test_the_bar_names_the_human_tools(tool: str, name: str) -> None:
    status = Status()
    status.update(Event("tool_call", text='{"question": "给谁用?"}', tool=tool))
    assert f"* {name}" in status.line() and "mcp__" not in status.line()
    status.update(Event("tool_call", text="ls", tool="Bash"))
    assert "* Bash ls" in status.line()


def shown(ev: Event) -> str:
    out = io.StringIO()
    Renderer(Console(file=out, width=120, highlight=False))(ev)
    return out.getvalue()


def test_a_remarks_receipt_says_where_it_was_kept(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    brief = tmp_path / ".flower" / "notes" / "需求.md"
    kept = shown(Event("ask", text="加个参数", payload={"kind": "mail", "state": "queued",
                                                    "amended": str(brief)}))
    assert texts.UI_MAIL_RECEIVED in kept
    assert texts.UI_MAIL_KEPT.format(path=os.path.join(".flower", "notes", "需求.md")) in kept
    lost = shown(Event("ask", text="加个参数", payload={"kind": "mail", "state": "queued",
                                                    "amended": ""}))
    assert texts.UI_MAIL_RECEIVED in lost and texts.UI_MAIL_NOT_KEPT in lost


def test_the_closing_line_says_how_long_the_run_took() -> None:
    line = closing_line(0.1234, "runs/manifest.json", 83.0)
    assert line.startswith(texts.CLOSING.format(cost=0.1234, manifest="runs/manifest.json"))
    assert line.endswith(texts.CLOSING_ELAPSED.format(elapsed="1m23s"))
    assert closing_line(0.0, "m.json") == texts.CLOSING.format(cost=0.0, manifest="m.json")


def test_piped_output_keeps_long_lines_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """Not a terminal: a log file or a pipe gets every line in one piece."""
    long = "x" * 300
    out = console()
    assert not out.is_terminal
    Renderer(out).line(f"  {long}")
    out.print(closing_line(1.0, "/a/very/long/path/" + "p" * 200 + "/manifest.json", 1.0))
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"  {long}" and len(printed) == 2

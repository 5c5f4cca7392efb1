"""HumanChannel: every Ask state, the quota/timeout cheat-sheet, cross-thread answering, the
inbox, the Q&A log and the brief amend. Cross-thread tests synchronise on the ``asked`` event
(a ``threading.Event`` set by the UI callback), never on sleeps."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from flower import texts
from flower.core.events import Event
from flower.core.human import (
    ASK_SCHEMA,
    INBOX_NAME,
    TOOL_NAME,
    Ask,
    HumanChannel,
    Mail,
    coerce_options,
)

QUICK = 5.0  # upper bound for things that should happen at once; only hit on failure
PROMPT = QUICK / 2  # a cross-thread answer must wake the loop at once, not at the next timer


class Recorder:
    """A UI callback: keeps every event and signals (across threads) when a question waits."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.asked = threading.Event()
        self.asked_ids: list[str] = []

    def __call__(self, ev: Event) -> None:
        self.events.append(ev)
        if ev.payload.get("kind") != "mail" and ev.payload.get("state") == "asked":
            self.asked_ids.append(ev.payload["id"])
            self.asked.set()

    def states(self, ask_id: str) -> list[str]:
        return [e.payload["state"] for e in self.events if e.payload.get("id") == ask_id]


def in_thread(fn: Any) -> threading.Thread:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def tool_text(result: dict[str, Any]) -> str:
    assert [c["type"] for c in result["content"]] == ["text"]
    return result["content"][0]["text"]


# --- Ask / Mail ------------------------------------------------------------------------


def test_ask_defaults_and_event_payload() -> None:
    a = Ask("q1", "which db?", ["pg", "sqlite"])
    assert (a.state, a.answer) == ("asked", "")
    assert Ask("q2", "x").options == []
    assert 0 <= a.waited_s < QUICK
    ev = a.event(remaining=3)
    assert (ev.kind, ev.text, ev.raw) == ("ask", "which db?", a)
    assert ev.payload == {"id": "q1", "options": ["pg", "sqlite"], "state": "asked",
                          "answer": "", "remaining": 3, "asked_at": a.asked_at}
    assert a.event().payload["remaining"] == 0


def test_mail_defaults() -> None:
    m = Mail("m1", "also support csv")
    assert m.taken is False and m.sent_at > 0


# --- instant outcomes: invalid, over_budget, timeout <= 0 -----------------------------------


@pytest.mark.parametrize("question", ["", "   \n"])
async def test_blank_question_is_invalid(question: str) -> None:
    rec = Recorder()
    ch = HumanChannel(on_event=rec, timeout_s=None)
    a = await asyncio.wait_for(ch.ask(question), QUICK)
    assert (a.state, a.answer) == ("invalid", texts.INVALID_QUESTION)
    assert rec.states(a.id) == ["invalid"]  # never announced as waiting
    assert ch.pending() == []


async def test_max_asks_zero_refuses_the_first_question_instantly() -> None:
    rec = Recorder()
    ch = HumanChannel(on_event=rec, max_asks=0, timeout_s=None)  # None would hang if it waited
    assert ch.remaining == 0
    a = await asyncio.wait_for(ch.ask("may I?"), QUICK)
    assert (a.state, a.answer) == ("over_budget", texts.OVER_BUDGET)
    assert rec.states("q1") == ["over_budget"]


async def test_quota_n_counts_invalid_asks_and_refuses_the_one_after() -> None:
    ch = HumanChannel(max_asks=2, timeout_s=0)
    assert ch.remaining == 2
    first = await ch.ask("")
    assert first.state == "invalid" and ch.remaining == 1
    second = await ch.ask("real question")
    assert second.state == "timeout" and ch.remaining == 0
    third = await ch.ask("one more")
    assert (third.state, third.answer) == ("over_budget", texts.OVER_BUDGET)
    assert ch.remaining == 0  # never negative
    assert [a.id for a in ch.asks] == ["q1", "q2", "q3"]


async def test_blank_question_over_quota_is_still_invalid() -> None:
    ch = HumanChannel(max_asks=0)
    assert (await ch.ask("")).state == "invalid"


async def test_unlimited_quota_never_refuses() -> None:
    ch = HumanChannel(max_asks=None, timeout_s=0)
    assert ch.remaining == -1
    states = {(await ch.ask(f"question {i}")).state for i in range(20)}
    assert states == {"timeout"}
    assert ch.remaining == -1


async def test_custom_fall_through_texts() -> None:
    ch = HumanChannel(max_asks=1, timeout_s=0, timeout_text="T!", over_budget_text="B!")
    assert (await ch.ask("a")).answer == "T!"
    assert (await ch.ask("b")).answer == "B!"


@pytest.mark.parametrize("timeout_s", [0, 0.0, -1])
async def test_timeout_not_positive_times_out_at_once_without_asked_event(
        timeout_s: float) -> None:
    rec = Recorder()
    ch = HumanChannel(on_event=rec, timeout_s=timeout_s)
    a = await asyncio.wait_for(ch.ask("anyone?", ["y", "n"]), QUICK)
    assert (a.state, a.answer) == ("timeout", texts.TIMEOUT)
    assert rec.states(a.id) == ["timeout"]
    assert not rec.asked.is_set()
    assert ch.pending() == []
    assert await ch.next_ask(timeout=0) is None  # nothing queued for pull-mode UIs


# --- waiting outcomes ----------------------------------------------------------------------


async def test_small_positive_timeout_times_out_after_announcing() -> None:
    rec = Recorder()
    ch = HumanChannel(on_event=rec, timeout_s=0.05, max_asks=3)
    a = await asyncio.wait_for(ch.ask("anyone?"), QUICK)
    assert (a.state, a.answer) == ("timeout", texts.TIMEOUT)
    assert rec.states(a.id) == ["asked", "timeout"]
    asked = rec.events[0]
    assert asked.payload["remaining"] == 2 and asked.payload["options"] == []
    assert ch.pending() == []
    assert ch.answer(a.id, "too late") is False
    assert a.state == "timeout"


async def test_timeout_none_waits_until_answered() -> None:
    ch = HumanChannel(timeout_s=None)
    task = asyncio.create_task(ch.ask("take your time"))
    waiting = await ch.next_ask(timeout=QUICK)
    assert waiting is not None
    await asyncio.sleep(0.2)  # far longer than any small timeout; None must not fire
    assert not task.done()
    assert ch.pending() == [waiting]
    assert ch.answer(waiting.id, "done") is True
    a = await asyncio.wait_for(task, QUICK)
    assert (a.state, a.answer) == ("answered", "done")


async def test_answer_from_another_thread_while_ask_awaits() -> None:
    rec = Recorder()
    ch = HumanChannel(on_event=rec, timeout_s=None)
    results: list[bool] = []

    def human() -> None:
        assert rec.asked.wait(QUICK)
        results.append(ch.answer(rec.asked_ids[0], "postgres"))

    t = in_thread(human)
    started = time.monotonic()
    a = await asyncio.wait_for(ch.ask("which db?", ["postgres", "sqlite"]), QUICK)
    assert time.monotonic() - started < PROMPT  # woken via call_soon_threadsafe
    t.join(QUICK)
    assert results == [True]
    assert (a.state, a.answer) == ("answered", "postgres")
    assert rec.states(a.id) == ["asked", "answered"]
    assert ch.pending() == []
    assert ch.answer(a.id, "again") is False  # settled: no longer waiting
    assert ch.decline(a.id) is False
    assert a.answer == "postgres"


async def test_decline_from_another_thread_with_reason() -> None:
    rec = Recorder()
    ch = HumanChannel(on_event=rec, timeout_s=None)

    def human() -> None:
        assert rec.asked.wait(QUICK)
        assert ch.decline(rec.asked_ids[0], "busy") is True

    t = in_thread(human)
    started = time.monotonic()
    a = await asyncio.wait_for(ch.ask("which db?"), QUICK)
    assert time.monotonic() - started < PROMPT
    t.join(QUICK)
    assert a.state == "declined"
    assert a.answer == texts.DECLINED + texts.DECLINED_REASON.format(reason="busy")
    assert rec.states(a.id) == ["asked", "declined"]


async def test_decline_without_reason_and_blank_answer_declines() -> None:
    ch = HumanChannel(timeout_s=None, declined_text="skip!")
    t1 = asyncio.create_task(ch.ask("one"))
    t2 = asyncio.create_task(ch.ask("two"))
    one, two = await ch.next_ask(QUICK), await ch.next_ask(QUICK)
    assert one is not None and two is not None
    assert ch.decline(one.id) is True
    assert ch.answer(two.id, "   ") is True
    assert [(a.state, a.answer) for a in await asyncio.gather(t1, t2)] == [
        ("declined", "skip!"), ("declined", "skip!")]


async def test_unknown_id_is_not_waiting() -> None:
    ch = HumanChannel()
    assert ch.answer("q9", "x") is False
    assert ch.decline("q9") is False


@pytest.mark.parametrize("round_", range(20))
async def test_two_threads_answering_the_same_ask_exactly_one_wins(round_: int) -> None:
    rec = Recorder()
    ch = HumanChannel(on_event=rec, timeout_s=None)
    start = threading.Barrier(2)
    won: dict[str, bool] = {}

    def human(text: str) -> None:
        assert rec.asked.wait(QUICK)
        start.wait(QUICK)
        won[text] = ch.answer(rec.asked_ids[0], text)

    threads = [in_thread(lambda t=t: human(t)) for t in ("left", "right")]
    a = await asyncio.wait_for(ch.ask("race?"), QUICK)
    for t in threads:
        t.join(QUICK)
    assert sorted(won.values()) == [False, True]
    winner = next(text for text, ok in won.items() if ok)
    assert (a.state, a.answer) == ("answered", winner)
    assert rec.states(a.id) == ["asked", "answered"]  # settled (and emitted) exactly once


async def test_answer_racing_the_timeout_never_loses_a_reported_win() -> None:
    """Whatever wins, ``answer()`` returning True means the model got that answer."""
    for _ in range(20):
        rec = Recorder()
        ch = HumanChannel(on_event=rec, timeout_s=0.01)
        won: list[bool] = []
        t = in_thread(lambda ch=ch, rec=rec, won=won: (
            rec.asked.wait(QUICK), won.append(ch.answer(rec.asked_ids[0], "yes"))))
        a = await asyncio.wait_for(ch.ask("quick?"), QUICK)
        t.join(QUICK)
        if won == [True]:
            assert (a.state, a.answer) == ("answered", "yes")
        else:
            assert (a.state, a.answer) == ("timeout", texts.TIMEOUT)
        assert len(rec.states(a.id)) == 2


async def test_cancelling_a_waiting_ask_leaves_pending_and_propagates() -> None:
    ch = HumanChannel(timeout_s=None)
    task = asyncio.create_task(ch.ask("wait for me"))
    waiting = await ch.next_ask(QUICK)
    assert waiting is not None and ch.pending() == [waiting]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ch.pending() == []
    assert ch.answer(waiting.id, "late") is False


# --- pull mode -----------------------------------------------------------------------------


async def test_next_ask_returns_none_on_timeout() -> None:
    assert await HumanChannel().next_ask(timeout=0.05) is None


async def test_next_ask_wakes_on_a_new_question_and_skips_settled_ones() -> None:
    ch = HumanChannel(timeout_s=None)
    puller = asyncio.create_task(ch.next_ask())  # waits before anything is asked
    t1 = asyncio.create_task(ch.ask("first"))
    first = await asyncio.wait_for(puller, QUICK)
    assert first is not None and first.question == "first"
    t2 = asyncio.create_task(ch.ask("second"))
    t3 = asyncio.create_task(ch.ask("third"))
    await asyncio.sleep(0)  # let both register
    assert [a.question for a in ch.pending()] == ["first", "second", "third"]
    assert ch.answer("q2", "answered by push")  # settled before the UI pulled it
    nxt = await ch.next_ask(QUICK)
    assert nxt is not None and nxt.question == "third"
    ch.answer(first.id, "a")
    ch.answer(nxt.id, "c")
    assert [a.answer for a in await asyncio.gather(t1, t2, t3)] == ["a", "answered by push", "c"]
    assert await ch.next_ask(timeout=0) is None


async def test_next_ask_cancellation_propagates() -> None:
    ch = HumanChannel()
    puller = asyncio.create_task(ch.next_ask())
    await asyncio.sleep(0)
    puller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await puller
    assert ch._pullers == []


# --- the human speaking up: send / amend / inbox ---------------------------------------


def test_send_emits_mail_event_and_amends_the_brief(tmp_path: Path) -> None:
    brief = tmp_path / "notes" / "需求.md"
    brief.parent.mkdir()
    brief.write_text("# 需求\n\n## 目标\n做一个 CLI\n", encoding="utf-8")
    rec = Recorder()
    ch = HumanChannel(on_event=rec, amend_path=brief)
    mail = ch.send("  also export csv \n")
    assert mail is not None and (mail.id, mail.text, mail.taken) == ("m1", "also export csv", False)
    assert ch.mail == [mail] and ch.pending_mail() == [mail]
    [ev] = rec.events
    assert (ev.kind, ev.text) == ("ask", "also export csv")
    assert ev.payload == {"kind": "mail", "state": "queued", "id": "m1", "amended": str(brief)}
    assert "options" not in ev.payload and "remaining" not in ev.payload
    body = brief.read_text(encoding="utf-8")
    assert body.startswith("# 需求\n\n## 目标\n做一个 CLI\n")  # appended, never rewritten
    assert texts.AMEND_LIVE in body and body.rstrip().endswith("also export csv")


def test_send_blank_is_ignored_and_without_brief_amended_is_empty() -> None:
    rec = Recorder()
    ch = HumanChannel(on_event=rec)
    assert ch.send("") is None and ch.send("  \n") is None
    assert rec.events == [] and ch.mail == []
    ch.send("hello")
    assert rec.events[0].payload["amended"] == ""


async def test_ask_and_mail_ids_share_one_counter() -> None:
    ch = HumanChannel(timeout_s=0)
    await ch.ask("a")
    mail = ch.send("b")
    assert mail is not None and mail.id == "m2"
    assert (await ch.ask("c")).id == "q3"


def test_amend(tmp_path: Path) -> None:
    brief = tmp_path / "b.md"
    assert HumanChannel().amend("text") is False  # no path
    ch = HumanChannel(amend_path=brief)
    assert ch.amend("   ") is False
    assert not brief.exists()
    assert ch.amend("one", label=texts.AMEND_WAKE) is True
    assert ch.amend("two") is True
    body = brief.read_text(encoding="utf-8")
    assert body.index(texts.AMEND_WAKE) < body.index("one") < body.index(texts.AMEND_LIVE)
    assert body.index(texts.AMEND_LIVE) < body.index("two")
    assert HumanChannel(amend_path=tmp_path).amend("x") is False  # a directory: OSError


async def test_inbox_tool_delivers_each_mail_once(tmp_path: Path) -> None:
    brief = tmp_path / "需求.md"
    rec = Recorder()
    ch = HumanChannel(on_event=rec, amend_path=brief)
    ch.mcp_servers()
    inbox = ch._sdk_tools[1]
    assert inbox.name == "inbox"
    assert tool_text(await inbox.handler({})) == texts.NO_MAIL
    first, second = ch.send("use port 8080"), ch.send("no docker")
    assert first is not None and second is not None
    text = tool_text(await inbox.handler({}))
    assert "[m1] use port 8080" in text and "[m2] no docker" in text
    assert text.index("m1") < text.index("m2")
    assert texts.INBOX_PERSISTED.format(path=str(brief)) in text
    assert first.taken and second.taken and ch.pending_mail() == []
    delivered = [e.payload for e in rec.events if e.payload.get("state") == "delivered"]
    assert delivered == [{"kind": "mail", "state": "delivered", "id": i, "amended": str(brief)}
                         for i in ("m1", "m2")]
    assert tool_text(await inbox.handler({})) == texts.NO_MAIL


async def test_inbox_says_when_mail_was_not_persisted() -> None:
    ch = HumanChannel()
    ch.send("remember this")
    text = tool_text(await ch._inbox_tool({}))
    assert "remember this" in text and texts.INBOX_NOT_PERSISTED in text


# --- the MCP ask tool ------------------------------------------------------------------


def test_mcp_server_wiring() -> None:
    ch = HumanChannel()
    assert (ch.tool_name, ch.inbox_name) == ("mcp__human__ask", "mcp__human__inbox")
    assert (ch.tool_name, ch.inbox_name) == (TOOL_NAME, INBOX_NAME)
    servers = ch.mcp_servers()
    assert list(servers) == ["human"]
    assert servers["human"]["type"] == "sdk" and servers["human"]["name"] == "human"
    assert [t.name for t in ch._sdk_tools] == ["ask", "inbox"]
    assert ch._sdk_tools[0].input_schema["required"] == ["question"]


def test_ask_schema_accepts_missing_and_json_string_options() -> None:
    import jsonschema

    jsonschema.validate({"question": "q"}, ASK_SCHEMA)
    jsonschema.validate({"question": "q", "options": ["a", "b"]}, ASK_SCHEMA)
    jsonschema.validate({"question": "q", "options": '["a", "b"]'}, ASK_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"options": ["a"]}, ASK_SCHEMA)


async def test_ask_tool_returns_the_answer() -> None:
    rec = Recorder()
    ch = HumanChannel(on_event=rec, timeout_s=None)
    ch.mcp_servers()
    handler = ch._sdk_tools[0].handler
    t = in_thread(lambda: (rec.asked.wait(QUICK), ch.answer(rec.asked_ids[0], "blue")))
    result = await asyncio.wait_for(
        handler({"question": "colour?", "options": '["blue", "red"]'}), QUICK)
    t.join(QUICK)
    assert tool_text(result) == "blue"
    assert ch.asks[0].options == ["blue", "red"]  # JSON-string options tolerated


async def test_ask_tool_fall_through_texts() -> None:
    ch = HumanChannel(max_asks=2, timeout_s=0.01)
    assert tool_text(await ch._ask_tool({"question": "anyone?"})) == texts.TIMEOUT
    assert tool_text(await ch._ask_tool({"question": "  "})) == texts.INVALID_QUESTION
    assert tool_text(await ch._ask_tool({"question": "more?"})) == texts.OVER_BUDGET
    assert tool_text(await ch._ask_tool({})) == texts.INVALID_QUESTION
    assert [a.state for a in ch.asks] == ["timeout", "invalid", "over_budget", "invalid"]


@pytest.mark.parametrize(("raw", "expected"), [
    (None, []),
    (["a", " b ", "", None, 3], ["a", "b", "3"]),
    ('["x", "y"]', ["x", "y"]),
    ("just one", ["just one"]),
    ("first\nsecond\n", ["first", "second"]),
    ('"quoted"', ["quoted"]),
    (7, ["7"]),
])
def test_coerce_options(raw: Any, expected: list[str]) -> None:
    assert coerce_options(raw) == expected


# --- Q&A log, transcript, ui_errors --------------------------------------------------------


async def test_qa_log_records_every_ask_and_mail(tmp_path: Path) -> None:
    log = tmp_path / "notes" / "问答记录.md"  # parent does not exist yet
    ch = HumanChannel(log_path=log, max_asks=3, timeout_s=None)
    task = asyncio.create_task(ch.ask("which db?", ["pg", "sqlite"]))
    waiting = await ch.next_ask(QUICK)
    assert waiting is not None
    assert not log.exists()  # a question is logged once, when it settles
    ch.answer(waiting.id, "pg")
    await task
    ch.timeout_s = 0
    await ch.ask("deadline?")
    await ch.ask("")
    await ch.ask("over?")
    ch.send("extra remark")
    body = log.read_text(encoding="utf-8")
    assert body.startswith(f"{texts.QA_LOG_TITLE}\n\n{texts.QA_LOG_NOTE}\n")
    assert "q1" in body and "which db?" in body and "pg / sqlite" in body
    assert "**A [answered]**:pg" in body
    assert f"**A [timeout]**:{texts.TIMEOUT}" in body
    assert f"**A [invalid]**:{texts.INVALID_QUESTION}" in body
    assert f"**A [over_budget]**:{texts.OVER_BUDGET}" in body
    assert "m5" in body and "[queued]" in body and "extra remark" in body
    assert body.index("q1") < body.index("q2") < body.index("q3") < body.index("q4")


async def test_qa_log_is_append_only_across_channels(tmp_path: Path) -> None:
    log = tmp_path / "问答记录.md"
    first = HumanChannel(log_path=log, timeout_s=0)
    await first.ask("from the first run")
    before = log.read_text(encoding="utf-8")
    second = HumanChannel(log_path=log, timeout_s=0)
    await second.ask("from the second run")
    after = log.read_text(encoding="utf-8")
    assert after.startswith(before)
    assert "from the second run" in after[len(before):]
    assert after.count(texts.QA_LOG_TITLE) == 1


async def test_qa_log_write_failure_is_collected_not_raised(tmp_path: Path) -> None:
    ch = HumanChannel(log_path=tmp_path, timeout_s=0)  # a directory
    assert (await ch.ask("q")).state == "timeout"
    assert ch.ui_errors == [texts.QA_LOG_FAILED.format(path=tmp_path)]


async def test_transcript() -> None:
    ch = HumanChannel(timeout_s=None)
    assert ch.transcript() == ""
    task = asyncio.create_task(ch.ask("which db?", ["pg", "sqlite"]))
    waiting = await ch.next_ask(QUICK)
    assert waiting is not None
    assert texts.QA_WAITING in ch.transcript()
    ch.answer(waiting.id, "pg")
    await task
    md = ch.transcript()
    assert md.splitlines()[1:] == [texts.QA_OPTIONS.format(options="pg / sqlite"),
                                   texts.QA_ANSWER.format(state="answered", answer="pg")]
    assert "q1" in md.splitlines()[0] and "which db?" in md.splitlines()[0]


async def test_ui_callback_errors_are_collected_never_raised() -> None:
    def broken(ev: Event) -> None:
        raise ValueError(f"ui broke on {ev.payload['state']}")

    ch = HumanChannel(on_event=broken, timeout_s=0.01)
    a = await ch.ask("still works?")
    assert a.state == "timeout"
    assert ch.send("and mail too") is not None
    assert ch.ui_errors == ["ValueError: ui broke on asked", "ValueError: ui broke on timeout",
                            "ValueError: ui broke on queued"]


# --- packaging -----------------------------------------------------------------------------


def test_importing_the_module_does_not_import_the_sdk() -> None:
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import flower.core.human"],
                         capture_output=True, text=True, check=True)
    assert "claude_agent_sdk" not in out.stderr


def test_top_level_exports() -> None:
    import flower

    assert flower.HumanChannel is HumanChannel and flower.Ask is Ask
    assert {"HumanChannel", "Ask"} <= set(flower.__all__)

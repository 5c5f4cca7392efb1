"""normalize() over real SDK dataclass instances, and the per-call context meter."""

from __future__ import annotations

import subprocess
import sys
from typing import get_args

from claude_agent_sdk.types import (
    AssistantMessage,
    ConversationResetMessage,
    RateLimitEvent,
    RateLimitInfo,
    ResultMessage,
    ServerToolUseBlock,
    StreamEvent,
    SystemMessage,
    TaskNotificationMessage,
    TaskProgressMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from flower.core.events import ContextMeter, Event, EventKind, is_synthetic, normalize

USAGE = {"input_tokens": 51000, "cache_read_input_tokens": 20000,
         "cache_creation_input_tokens": 7, "output_tokens": 1}


def assistant(*blocks, model="claude-sonnet-4-5", usage=USAGE, mid="msg_1", parent=None,
              error=None) -> AssistantMessage:
    return AssistantMessage(content=list(blocks), model=model, usage=usage, message_id=mid,
                            parent_tool_use_id=parent, error=error)


def synthetic(text="API Error: Connection refused (ECONNREFUSED)", parent=None):
    zero = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0}
    return AssistantMessage(content=[TextBlock(text)], model="<synthetic>", usage=zero,
                            error="server_error", parent_tool_use_id=parent,
                            stop_reason="stop_sequence")


def test_event_kinds_are_the_fifteen_of_the_reference_plus_cap():
    # the original flower's fifteen kinds, plus "cap" (a spending/time cap reached, issue 22)
    assert set(get_args(EventKind)) == {
        "text", "thinking", "tool_call", "tool_result", "prompt", "task", "system", "reset",
        "result", "error", "unknown", "retry", "step", "handoff", "ask", "cap"}


def test_event_str():
    assert str(Event("tool_call", text="ls -la", tool="Bash")) == "[Bash] ls -la"
    assert str(Event("text", text="hi")) == "hi"
    assert str(Event("retry")) == "<retry>"
    assert Event("text").payload == {} and Event("text").payload is not Event("text").payload


def test_assistant_text_carries_meta():
    [ev] = normalize(assistant(TextBlock("hello")))
    assert ev.kind == "text" and ev.text == "hello"
    assert ev.payload == {"subagent": False, "context": 71007, "model": "claude-sonnet-4-5",
                          "message_id": "msg_1"}


def test_thinking_and_tool_call():
    msg = assistant(ThinkingBlock("hmm", "sig"),
                    ToolUseBlock("tu_1", "Bash", {"command": "x" * 300, "description": "d"}))
    think, call = normalize(msg)
    assert think.kind == "thinking" and think.text == "hmm"
    assert call.kind == "tool_call" and call.tool == "Bash" and call.text == "x" * 200
    assert call.payload["id"] == "tu_1" and call.payload["input"]["description"] == "d"
    assert call.payload["subagent"] is False and call.payload["context"] == 71007


def test_tool_call_summary_prefers_file_path_then_command_then_pattern():
    evs = normalize(assistant(
        ToolUseBlock("a", "Write", {"file_path": "/x/y.py", "content": "..."}),
        ToolUseBlock("b", "Grep", {"pattern": "def ", "path": "src"}),
        ToolUseBlock("c", "TodoWrite", {"todos": []}),
        ServerToolUseBlock("d", "web_search", {"query": "weather"}),
    ))
    assert [(e.tool, e.text) for e in evs] == [
        ("Write", "/x/y.py"), ("Grep", "def "), ("TodoWrite", ""), ("web_search", "weather")]


def test_subagent_events_carry_parent_and_context():
    [ev] = normalize(assistant(TextBlock("worker says"), parent="tu_agent"))
    assert ev.payload["subagent"] is True
    assert ev.payload["parent_tool_use_id"] == "tu_agent"
    assert ev.payload["context"] == 71007


def test_user_message_text_is_prompt_and_results_are_tool_results():
    assert [(e.kind, e.text) for e in normalize(UserMessage(content="do it"))] == [
        ("prompt", "do it")]
    msg = UserMessage(content=[
        ToolResultBlock("tu_1", content="y" * 900, is_error=False),
        ToolResultBlock("tu_2", content=[{"type": "text", "text": "listed"}], is_error=True),
        ToolResultBlock("tu_3", content=None),
        TextBlock("a note"),
    ], parent_tool_use_id="tu_agent")
    r1, r2, r3, note = normalize(msg)
    assert r1.kind == "tool_result" and r1.text == "y" * 500
    assert r1.payload == {"tool_use_id": "tu_1", "is_error": False, "subagent": True,
                          "parent_tool_use_id": "tu_agent"}
    assert r2.text == "listed" and r2.payload["is_error"] is True
    assert r3.text == "" and r3.payload["is_error"] is False
    assert note.kind == "prompt" and "context" not in note.payload


def test_empty_user_string_yields_nothing():
    assert normalize(UserMessage(content="")) == []


def test_synthetic_api_error_is_exactly_one_error_event_never_text():
    [ev] = normalize(synthetic())
    assert ev.kind == "error"
    assert ev.text == "API Error: Connection refused (ECONNREFUSED)"
    assert ev.payload["synthetic"] is True and ev.payload["error"] == "server_error"
    assert "context" not in ev.payload


def test_synthetic_with_several_blocks_is_still_one_event():
    msg = AssistantMessage(content=[TextBlock("API Error: 529"), TextBlock("overloaded")],
                           model="<synthetic>")
    evs = normalize(msg)
    assert [e.kind for e in evs] == ["error"] and evs[0].text == "API Error: 529\noverloaded"


def test_synthetic_in_subagent_keeps_parent():
    [ev] = normalize(synthetic(parent="tu_9"))
    assert ev.payload["subagent"] is True and ev.payload["parent_tool_use_id"] == "tu_9"


def test_synthetic_raw_transcript_dicts():
    entry = {"type": "assistant", "isApiErrorMessage": True, "message": {
        "model": "<synthetic>", "content": [{"type": "text", "text": "API Error: 500 boom"}]}}
    [ev] = normalize(entry)
    assert ev.kind == "error" and ev.text == "API Error: 500 boom"
    assert is_synthetic({"message": {"model": "<synthetic>"}})
    assert not is_synthetic({"type": "assistant", "message": {"model": "claude"}})
    [other] = normalize({"type": "assistant"})
    assert other.kind == "unknown" and other.text == "dict"


def test_result_message():
    msg = ResultMessage(subtype="success", duration_ms=10, duration_api_ms=5, is_error=False,
                        num_turns=2, session_id="s1", total_cost_usd=0.25, result="done",
                        terminal_reason="completed")
    [ev] = normalize(msg)
    assert ev.kind == "result" and ev.text == "success"
    assert ev.payload["session_id"] == "s1" and ev.payload["cost_usd"] == 0.25
    assert ev.payload["num_turns"] == 2 and ev.payload["is_error"] is False
    assert "result" not in ev.payload


def test_error_result_carries_result_text():
    msg = ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=True,
                        num_turns=1, session_id="s1",
                        result="Invalid API key · Fix external API key",
                        api_error_status=401, terminal_reason="api_error")
    [ev] = normalize(msg)
    assert ev.payload["is_error"] is True and ev.payload["api_error_status"] == 401
    assert ev.payload["result"].startswith("Invalid API key")


def test_task_messages():
    msgs = [
        TaskStartedMessage("task_started", {}, task_id="t", description="d", uuid="u",
                           session_id="s"),
        TaskProgressMessage("task_progress", {}, task_id="t", description="d",
                            usage={"total_tokens": 1, "tool_uses": 0, "duration_ms": 1},
                            uuid="u", session_id="s"),
        TaskUpdatedMessage("task_updated", {}, task_id="t", patch={}),
        TaskNotificationMessage("task_notification", {}, task_id="t", status="completed",
                                output_file="", summary="", uuid="u", session_id="s"),
    ]
    evs = [e for m in msgs for e in normalize(m)]
    assert [e.kind for e in evs] == ["task"] * 4
    assert [e.payload["kind"] for e in evs] == [
        "TaskStartedMessage", "TaskProgressMessage", "TaskUpdatedMessage",
        "TaskNotificationMessage"]
    assert all(e.text == "" for e in evs)


def test_system_messages():
    init = SystemMessage("init", {"session_id": "s1", "tools": []})
    [ev] = normalize(init)
    assert ev.kind == "system" and ev.text == "init" and ev.payload["session_id"] == "s1"
    ev.payload["x"] = 1
    assert "x" not in init.data  # a copy, not the SDK's dict


def test_compact_boundaries_are_resets():
    msg = SystemMessage("compact_boundary", {"compact_metadata": {
        "trigger": "auto", "pre_tokens": 150031, "post_tokens": 2765}})
    [ev] = normalize(msg)
    assert ev.kind == "reset" and "150031" in ev.text and "2765" in ev.text
    assert ev.payload == {"trigger": "auto", "pre_tokens": 150031, "post_tokens": 2765,
                          "micro": False, "subtype": "compact_boundary"}
    [micro] = normalize(SystemMessage("microcompact_boundary", {}))
    assert micro.kind == "reset" and micro.payload["micro"] is True


def test_reset_and_unknown():
    [ev] = normalize(ConversationResetMessage(new_conversation_id="n", uuid="u", session_id="s"))
    assert ev.kind == "reset" and ev.text == "conversation reset"
    [se] = normalize(StreamEvent(uuid="u", session_id="s", event={}))
    assert se.kind == "unknown" and se.text == "StreamEvent"
    [rl] = normalize(RateLimitEvent(RateLimitInfo(status="allowed"), uuid="u", session_id="s"))
    assert rl.kind == "unknown" and rl.raw is not None


def test_tool_round_trip_sequence():
    """The sdk-notes §3 order of a tool round trip, normalized end to end."""
    seq = [
        SystemMessage("init", {"session_id": "s"}),
        assistant(TextBlock("Let me look."), mid="m1"),
        assistant(ToolUseBlock("tu", "Bash", {"command": "echo hi"}), mid="m1"),
        UserMessage(content=[ToolResultBlock("tu", content="hi", is_error=False)]),
        assistant(TextBlock("It said hi."), mid="m2"),
        ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False,
                      num_turns=2, session_id="s"),
    ]
    kinds = [e.kind for m in seq for e in normalize(m)]
    assert kinds == ["system", "text", "tool_call", "tool_result", "text", "result"]


# --- ContextMeter -----------------------------------------------------------------------

def test_meter_counts_each_message_id_once():
    meter = ContextMeter()
    u1 = {"input_tokens": 51000, "cache_read_input_tokens": 20000}
    u2 = {"input_tokens": 90000, "cache_creation_input_tokens": 1000}
    assert meter.observe(assistant(TextBlock("a"), usage=u1, mid="m1")) == 71000
    assert meter.observe(assistant(ToolUseBlock("t", "Bash", {}), usage=u1, mid="m1")) is None
    assert meter.observe(assistant(TextBlock("b"), usage=u2, mid="m2")) == 91000
    assert (meter.last, meter.peak, meter.calls) == (91000, 91000, 2)


def test_meter_ignores_subagents_synthetic_and_missing_usage():
    meter = ContextMeter()
    assert meter.observe(assistant(TextBlock("w"), parent="tu", mid="s1")) is None
    assert meter.observe(synthetic()) is None
    assert meter.observe(assistant(TextBlock("x"), usage=None, mid="m0")) is None
    assert meter.observe(UserMessage(content="hi")) is None
    assert meter.calls == 0 and meter.last == 0


def test_meter_on_events_matches_meter_on_messages():
    msgs = [assistant(TextBlock("a"), mid="m1"),
            assistant(ToolUseBlock("t", "Read", {"file_path": "f"}), mid="m1"),
            assistant(TextBlock("w"), parent="tu", mid="sub"),
            synthetic(),
            assistant(TextBlock("b"), usage={"input_tokens": 5}, mid="m2")]
    by_msg, by_event = ContextMeter(), ContextMeter()
    for m in msgs:
        by_msg.observe(m)
        for ev in normalize(m):
            by_event.observe(ev)
    assert (by_msg.calls, by_msg.last, by_msg.peak) == (2, 5, 71007)
    assert (by_event.calls, by_event.last, by_event.peak) == (2, 5, 71007)


def test_meter_peak_and_reset():
    meter = ContextMeter()
    meter.observe(assistant(TextBlock("a"), usage={"input_tokens": 100}, mid="a"))
    meter.observe(assistant(TextBlock("b"), usage={"input_tokens": 40}, mid="b"))
    assert (meter.last, meter.peak) == (40, 100)
    meter.reset()
    assert (meter.last, meter.peak, meter.calls) == (0, 0, 0)
    assert meter.observe(assistant(TextBlock("a"), usage={"input_tokens": 7}, mid="a")) == 7


def test_importing_events_does_not_import_the_sdk():
    code = "import sys, flower.core.events; print('claude_agent_sdk' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_mirror_error_is_a_visible_warning_not_swallowed():
    from claude_agent_sdk import MirrorErrorMessage

    from flower import texts

    key = {"project_key": "p", "session_id": "s1"}
    msg = MirrorErrorMessage(subtype="mirror_error", data={"error": "disk full", "key": key},
                             key=key, error="disk full")
    (ev,) = normalize(msg)
    assert ev.kind == "error" and ev.payload["mirror_error"] and ev.payload["warning"]
    assert ev.text == texts.MIRROR_FAILED.format(error="disk full")
    assert ev.payload["key"] == key
    # the plain SystemMessage form (as the parser would give without the subclass) too
    (ev2,) = normalize(SystemMessage(subtype="mirror_error", data={"error": "disk full"}))
    assert ev2.kind == "error" and ev2.text == ev.text


def test_renderer_shows_a_mirror_warning():
    from rich.console import Console

    from flower import texts
    from flower.cli.tui.render import Renderer

    console = Console(record=True, width=200)
    Renderer(console)(Event("error", text=texts.MIRROR_FAILED.format(error="disk full"),
                            payload={"mirror_error": True, "warning": True}))
    out = console.export_text()
    assert "! " in out and "disk full" in out

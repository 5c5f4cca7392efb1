"""Routing with the real CLI: subagents, callable steps, thinking, per-session queues."""

from __future__ import annotations

from pathlib import Path

from flower.testing import (
    FakeServer,
    Request,
    match,
    reply,
    text,
    thinking,
    tool_result_text,
    tool_use,
)
from flower.testing.sdk import collect, of_type, options, result

PRESET = {"type": "preset", "preset": "claude_code"}


async def test_subagent_served_by_route(fake: FakeServer, workspace: Path,
                                        cli_env: dict[str, str]) -> None:
    sub = fake.route(
        match.subagent(),
        reply(tool_use("Bash", {"command": "echo from-the-subagent"})),
        "SUBAGENT REPORT: found it",
        name="subagent",
    )
    fake.script(
        reply(tool_use("Agent", {
            "description": "look around", "prompt": "SUBTASK-7 inspect the workspace",
            "subagent_type": "general-purpose", "run_in_background": False,
        })),
        "main agent: summarised",
    )
    msgs, err = await collect("delegate", options(workspace, cli_env, system_prompt=PRESET))
    assert err is None and result(msgs).result == "main agent: summarised"
    assert sub.remaining == 0 and sub.hits == 2 and fake.remaining() == 0
    assert fake.exhausted == 0

    reqs = fake.message_requests()
    subs = [r for r in reqs if r.agent_id]
    mains = [r for r in reqs if not r.agent_id]
    assert len(subs) == 2 and len(mains) == 2
    assert len({r.agent_id for r in subs}) == 1
    assert all("cc_is_subagent=true" in r.system_text for r in subs)
    assert all("SUBTASK-7" in r.first_user_text() for r in subs)
    assert {r.session_id for r in reqs} == {result(msgs).session_id}
    # the subagent's Bash result went to the subagent, its report back to the parent
    assert "from-the-subagent" in tool_result_text(subs[1].last_tool_results()[0])
    (hand_back,) = mains[1].last_tool_results()
    assert "SUBAGENT REPORT: found it" in tool_result_text(hand_back)
    names = [type(m).__name__ for m in msgs]
    assert "TaskStartedMessage" in names and "TaskNotificationMessage" in names


async def test_callable_step_and_thinking(fake: FakeServer, workspace: Path,
                                          cli_env: dict[str, str]) -> None:
    seen: list[int] = []

    def echo_last(req: Request):
        seen.append(len(req.messages))
        results = req.last_tool_results()
        if results:
            return reply(f"tool said: {tool_result_text(results[0]).strip()}")
        return reply(thinking("I should run a command", signature="sig-123"),
                     text("let me check"), tool_use("Bash", {"command": "echo 12345"}))

    fake.script(echo_last, echo_last)
    msgs, err = await collect("what does the tool say?", options(workspace, cli_env))
    assert err is None and result(msgs).result == "tool said: 12345"
    assert len(seen) == 2 and seen[1] > seen[0]
    # the thinking block is sent back verbatim with its signature
    prev = fake.last_request().messages[-2]
    assert prev["role"] == "assistant"
    (th,) = [b for b in prev["content"] if b["type"] == "thinking"]
    assert th["signature"] == "sig-123" and th["thinking"] == "I should run a command"
    blocks = [b for m in of_type(msgs, "AssistantMessage") for b in m.content]
    assert [type(b).__name__ for b in blocks][:3] == ["ThinkingBlock", "TextBlock", "ToolUseBlock"]


async def test_route_per_session_and_usage_override(fake: FakeServer, workspace: Path,
                                                    cli_env: dict[str, str]) -> None:
    sid = "0e9b1f5c-1111-4a2b-8c3d-123456789abc"
    fake.route(match.session(sid),
               reply("routed by session", usage={"input_tokens": 150000,
                                                 "cache_read_input_tokens": 20000}))
    fake.script("default queue")
    msgs, err = await collect("hi", options(workspace, cli_env, session_id=sid))
    assert err is None and result(msgs).result == "routed by session"
    (am,) = of_type(msgs, "AssistantMessage")
    assert am.usage["input_tokens"] == 150000 and am.usage["cache_read_input_tokens"] == 20000
    assert fake.message_requests(session_id=sid) == fake.message_requests()
    msgs, err = await collect("hi", options(workspace, cli_env))
    assert err is None and result(msgs).result == "default queue"
    assert fake.remaining() == 0


async def test_exhausted_script_never_hangs(fake: FakeServer, make_options) -> None:
    msgs, err = await collect("hi", make_options())
    assert err is None and result(msgs).result == "(fake: script exhausted)"
    assert fake.exhausted == 1

"""The real bundled CLI against flower.testing: normal (non-fault) conversations."""

from __future__ import annotations

from pathlib import Path

from flower.testing import FakeServer, reply, text, thinking, tool_result_text, tool_use
from flower.testing.sdk import assistant_text, collect, of_type, options, result, tool_results


async def test_text_reply(fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    fake.script("hello from the fake")
    msgs, err = await collect("say hello", options(workspace, cli_env))
    assert err is None
    res = result(msgs)
    assert res.subtype == "success" and not res.is_error
    assert res.result == "hello from the fake"
    assert "hello from the fake" in assistant_text(msgs)
    init = msgs[0]
    assert type(init).__name__ == "SystemMessage" and init.subtype == "init"
    reqs = fake.message_requests()
    assert len(reqs) == 1 and fake.exhausted == 0 and fake.remaining() == 0
    req = reqs[0]
    assert req.stream and req.query.get("beta") == "true"
    assert req.session_id == init.data["session_id"] == res.session_id
    assert "say hello" in req.last_user_text()
    assert req.headers["X-Api-Key"] == cli_env["ANTHROPIC_API_KEY"]
    assert any(m.get("role") == "system" for m in req.messages)  # sdk-notes §0.7
    # usage grows with the request: the CLI reports what the fake computed from body size
    am = of_type(msgs, "AssistantMessage")[0]
    assert am.usage["input_tokens"] == len(req.raw) // 4
    assert am.message_id.startswith("msg_fake_")


async def test_bash_round_trip(fake: FakeServer, workspace: Path,
                               cli_env: dict[str, str]) -> None:
    fake.script(
        reply("running it", tool_use("Bash", {"command": "echo bash-$((6*7))"})),
        "the answer is 42",
    )
    msgs, err = await collect("compute", options(workspace, cli_env))
    assert err is None and result(msgs).result == "the answer is 42"
    reqs = fake.message_requests()
    assert len(reqs) == 2
    (tr,) = reqs[1].last_tool_results()
    assert tr["tool_use_id"].startswith("toolu_fake_")
    assert tool_result_text(tr).strip() == "bash-42" and not tr.get("is_error")
    # the SDK yielded the same result
    (sdk_tr,) = tool_results(msgs)
    assert sdk_tr.tool_use_id == tr["tool_use_id"] and "bash-42" in str(sdk_tr.content)
    assert result(msgs).num_turns == 2


async def test_write_round_trip(fake: FakeServer, workspace: Path,
                                cli_env: dict[str, str]) -> None:
    target = workspace / "notes" / "out.txt"
    fake.script(
        reply(tool_use("Write", {"file_path": str(target), "content": "written by fake\n"})),
        "wrote it",
    )
    msgs, err = await collect("write a file", options(workspace, cli_env))
    assert err is None and result(msgs).result == "wrote it"
    assert target.read_text() == "written by fake\n"
    (tr,) = fake.last_request().last_tool_results()
    assert "File created successfully" in tool_result_text(tr) and not tr.get("is_error")
    (um,) = [m for m in of_type(msgs, "UserMessage") if m.tool_use_result]
    assert um.tool_use_result["type"] == "create"


async def test_parallel_tool_calls(fake: FakeServer, workspace: Path,
                                   cli_env: dict[str, str]) -> None:
    fake.script(
        reply(
            text("two at once"),
            tool_use("Bash", {"command": "echo first-one"}, id="toolu_a"),
            tool_use("Bash", {"command": "echo second-one"}, id="toolu_b"),
        ),
        "both done",
    )
    msgs, err = await collect("go", options(workspace, cli_env))
    assert err is None and result(msgs).result == "both done"
    req = fake.last_request()
    results = {b["tool_use_id"]: tool_result_text(b) for b in req.last_tool_results()}
    assert results == {"toolu_a": "first-one", "toolu_b": "second-one"}
    # both results arrive in ONE user message, right after the assistant message with 2 calls
    assert [m["role"] for m in req.messages[-2:]] == ["assistant", "user"]
    calls = [b for b in req.messages[-2]["content"] if b["type"] == "tool_use"]
    assert [c["id"] for c in calls] == ["toolu_a", "toolu_b"]


async def test_partial_messages_mirror_the_sse_sequence(fake: FakeServer, workspace: Path,
                                                        cli_env: dict[str, str]) -> None:
    fake.script(reply(thinking("hmm"), "streamed text"))
    msgs, err = await collect("hi", options(workspace, cli_env, include_partial_messages=True))
    assert err is None and result(msgs).result == "streamed text"
    kinds = [m.event["type"] for m in of_type(msgs, "StreamEvent")]
    assert kinds == [
        "message_start",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]


async def test_count_tokens_via_context_usage(fake: FakeServer, workspace: Path,
                                              cli_env: dict[str, str]) -> None:
    import anyio
    from claude_agent_sdk import ClaudeSDKClient

    fake.script("turn one", "turn two")
    with anyio.fail_after(60):
        async with ClaudeSDKClient(options(workspace, cli_env)) as client:
            for prompt in ("first", "second"):
                await client.query(prompt)
                async for _ in client.receive_response():
                    pass
            usage = await client.get_context_usage()
    turns = fake.message_requests()
    assert len(turns) == 2 and turns[0].session_id == turns[1].session_id
    assert "first" in turns[1].text() and "turn one" in turns[1].text()  # history replayed
    assert usage["totalTokens"] == len(turns[1].raw) // 4
    counted = [r for r in fake.requests if r.path.endswith("/count_tokens")]
    assert counted and all(r.method == "POST" for r in counted)
    assert fake.remaining() == 0 and fake.exhausted == 0  # count_tokens consumed no steps

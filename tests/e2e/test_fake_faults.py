"""The real bundled CLI against injected faults: what the SDK yields and what the fake saw.

Every test is bounded (``collect`` fails after 60 s) and keeps the CLI's own retry loop short
(``CLAUDE_CODE_MAX_RETRIES`` 0 or 1 unless recovery needs more)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from claude_agent_sdk import ResultError

from flower.testing import FakeServer, cut, delay, fault, reply, sse_error, stall, tool_use
from flower.testing.sdk import assistant_text, collect, of_type, options, result, system


def _synthetic(msgs: list) -> object:
    (am,) = [m for m in of_type(msgs, "AssistantMessage") if m.model == "<synthetic>"]
    return am


async def test_401_is_fatal(fake: FakeServer, workspace: Path, cli_env: dict[str, str]) -> None:
    fake.script(fault(401, "invalid x-api-key"), "never reached")
    msgs, err = await collect("hi", options(workspace, cli_env))  # MAX_RETRIES=0 from cli_env
    assert isinstance(err, ResultError)
    assert err.api_error_status == 401 and err.terminal_reason == "api_error"
    assert _synthetic(msgs).error == "authentication_failed"
    res = result(msgs)
    assert res.is_error and res.api_error_status == 401
    assert len(fake.message_requests()) == 1 and fake.remaining() == 1


async def test_529_once_then_success(fake: FakeServer, workspace: Path,
                                     cli_env: dict[str, str]) -> None:
    fake.script(fault(529), "after the overload")
    env = {**cli_env, "CLAUDE_CODE_MAX_RETRIES": "1"}
    msgs, err = await collect("hi", options(workspace, env))
    assert err is None and result(msgs).result == "after the overload"
    (retry,) = system(msgs, "api_retry")
    assert retry.data["error_status"] == 529 and retry.data["error"] == "overloaded"
    reqs = fake.message_requests()
    assert [r.extra["step"] for r in reqs] == ["Fault", "Reply"]
    assert reqs[0].raw == reqs[1].raw  # the retry re-sends the same request


async def test_500_then_429_honour_retry_after(fake: FakeServer, workspace: Path,
                                               cli_env: dict[str, str]) -> None:
    fake.script(fault(500, retry_after=1), fault(429, "slow down", retry_after=1), "finally")
    env = {**cli_env, "CLAUDE_CODE_MAX_RETRIES": "2"}
    msgs, err = await collect("hi", options(workspace, env))
    assert err is None and result(msgs).result == "finally"
    retries = system(msgs, "api_retry")
    assert [r.data["error_status"] for r in retries] == [500, 429]
    assert [r.data["error"] for r in retries] == ["server_error", "rate_limit"]
    assert all(1000 <= r.data["retry_delay_ms"] < 1500 for r in retries)
    t = [r.time for r in fake.message_requests()]
    assert len(t) == 3 and t[1] - t[0] >= 0.95 and t[2] - t[1] >= 0.95


async def test_500_exhausts_retries(fake: FakeServer, workspace: Path,
                                    cli_env: dict[str, str]) -> None:
    fake.script(fault(500, "boom"), fault(500, "boom"))
    env = {**cli_env, "CLAUDE_CODE_MAX_RETRIES": "1"}
    msgs, err = await collect("hi", options(workspace, env))
    assert isinstance(err, ResultError) and err.api_error_status == 500
    assert "boom" in (err.result or "")
    assert _synthetic(msgs).error == "server_error"
    assert len(system(msgs, "api_retry")) == 1 and len(fake.message_requests()) == 2


async def test_stream_cut_falls_back_to_non_stream(fake: FakeServer, workspace: Path,
                                                   cli_env: dict[str, str]) -> None:
    # MAX_RETRIES=0: a broken stream goes straight to the non-streaming fallback
    fake.script(cut(after=3, step=reply("lost in transit")), reply("via fallback"))
    msgs, err = await collect("hi", options(workspace, cli_env))
    assert err is None and result(msgs).result == "via fallback"
    assert "lost in transit" not in assistant_text(msgs)
    reqs = fake.message_requests()
    assert [(r.stream, r.extra["step"]) for r in reqs] == [(True, "Cut"), (False, "Reply")]
    assert reqs[1].body["max_tokens"] < reqs[0].body["max_tokens"]  # fallback caps output


async def test_stream_cut_replay_with_tool_round_trip(fake: FakeServer, workspace: Path,
                                                      cli_env: dict[str, str]) -> None:
    # replay=True: the cut step itself is what the retry receives; here it is a tool call
    call = reply(tool_use("Bash", {"command": "echo replayed-ok"}))
    fake.script(cut(after=4, step=call, replay=True), "done")
    msgs, err = await collect("hi", options(workspace, cli_env))
    assert err is None and result(msgs).result == "done"
    reqs = fake.message_requests()
    assert [r.stream for r in reqs] == [True, False, True]
    (tr,) = reqs[2].last_tool_results()
    assert "replayed-ok" in str(tr["content"])


async def test_sse_error_event_is_retried(fake: FakeServer, workspace: Path,
                                          cli_env: dict[str, str]) -> None:
    fake.script(sse_error("overloaded_error", "Overloaded"), "after the error event")
    env = {**cli_env, "CLAUDE_CODE_MAX_RETRIES": "1"}
    msgs, err = await collect("hi", options(workspace, env))
    assert err is None and result(msgs).result == "after the error event"
    reqs = fake.message_requests()
    assert [(r.stream, r.extra["step"]) for r in reqs] == [(True, "SseError"), (True, "Reply")]
    assert fake.exhausted == 0


async def test_delay_beyond_api_timeout(fake: FakeServer, workspace: Path,
                                        cli_env: dict[str, str]) -> None:
    fake.script(delay(30, "too late"))
    env = {**cli_env, "API_TIMEOUT_MS": "2000"}
    t0 = time.monotonic()
    msgs, err = await collect("hi", options(workspace, env))
    assert isinstance(err, ResultError) and err.terminal_reason == "api_error"
    assert "timed out" in (err.result or "").lower()
    assert "API_TIMEOUT_MS" in _synthetic(msgs).content[0].text
    assert time.monotonic() - t0 < 20  # gave up at the header timeout, not after the delay
    (req,) = fake.message_requests()
    assert req.headers["x-stainless-timeout"] == "2"


async def test_stall_hits_stream_idle_timeout(fake: FakeServer, workspace: Path,
                                              cli_env: dict[str, str]) -> None:
    # 10 s is the floor the CLI clamps CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS to. Without
    # CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK the CLI would recover via a non-stream request.
    fake.script(stall(after=1), "never reached")
    env = {**cli_env, "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK": "1"}
    t0 = time.monotonic()
    msgs, err = await collect("hi", options(workspace, env))
    elapsed = time.monotonic() - t0
    assert isinstance(err, ResultError)
    assert "idle" in (err.result or "").lower()
    assert _synthetic(msgs).error == "unknown"
    assert 9.5 <= elapsed < 30
    (req,) = fake.message_requests()
    assert req.extra["step"] == "Stall" and fake.remaining() == 1


async def test_outage_then_recovery_same_port(fake: FakeServer, workspace: Path,
                                              cli_env: dict[str, str]) -> None:
    port = fake.port
    fake.script("back online", "second query ok")
    t0 = time.monotonic()
    fake.outage(seconds=2.5)
    env = {**cli_env, "CLAUDE_CODE_MAX_RETRIES": "6"}
    msgs, err = await collect("hi", options(workspace, env))
    assert err is None and result(msgs).result == "back online"
    retries = system(msgs, "api_retry")
    assert retries and all(r.data["error_status"] is None for r in retries)
    assert time.monotonic() - t0 >= 2.5 and fake.port == port and not fake.down
    assert len(fake.message_requests()) == 1  # refused attempts never reached the server

    # a manual outage, then recover(): a new query on the same port works
    fake.outage()
    assert fake.down
    fake.recover()
    msgs, err = await collect("again", options(workspace, env))
    assert err is None and result(msgs).result == "second query ok"
    assert not system(msgs, "api_retry") and fake.port == port


async def test_outage_during_query_drops_live_stream(fake: FakeServer, workspace: Path,
                                                     cli_env: dict[str, str]) -> None:
    """An outage that starts while a stream is open: the open connection dies too."""
    fake.script(stall(after=1), "recovered after outage")
    env = {**cli_env, "CLAUDE_CODE_MAX_RETRIES": "6",
           "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK": "1"}
    outcome: dict = {}

    async def run() -> None:
        outcome["msgs"], outcome["err"] = await collect("hi", options(workspace, env))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.to_thread.run_sync(lambda: fake.wait_for(timeout=30))  # stream is open
        fake.outage(seconds=1.5)
    assert outcome["err"] is None
    assert result(outcome["msgs"]).result == "recovered after outage"
    assert len(fake.message_requests()) == 2


async def test_collect_deadline_bounds_a_hung_cli(fake: FakeServer, workspace: Path,
                                                  cli_env: dict[str, str]) -> None:
    """The helper's own watchdog: a stream that never ends (idle timeout far away) raises
    TimeoutError at the deadline, and the SDK then shuts the CLI down (≈5 s grace)."""
    fake.script(stall(after=1))
    env = {**cli_env, "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS": "600000"}
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        await collect("hi", options(workspace, env), timeout=2)
    assert time.monotonic() - t0 < 15
    fake.stop()  # the stalled handler ends at once

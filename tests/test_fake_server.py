"""Unit tests of flower.testing.FakeServer over raw HTTP (no CLI involved)."""

from __future__ import annotations

import http.client
import itertools
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flower.testing import (
    EXHAUSTED_TEXT,
    FakeServer,
    Request,
    cut,
    delay,
    fault,
    match,
    reply,
    sse_error,
    stall,
    step_from_json,
    text,
    thinking,
    tool_use,
)


def post(fake: FakeServer, body: Any, path: str = "/v1/messages?beta=true",
         headers: dict[str, str] | None = None, timeout: float = 10
         ) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(fake.host, fake.port, timeout=timeout)
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request("POST", path, body=data,
                     headers={"content-type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


_turns = itertools.count(1)


def turn(**extra: Any) -> dict[str, Any]:
    """A fresh one-message conversation: a body the fake has not answered before (a
    repeated body is a retry and gets the earlier answer again)."""
    return {"messages": [{"role": "user", "content": f"turn {next(_turns)}"}], **extra}


def parse_sse(raw: bytes) -> list[tuple[str, dict]]:
    events = []
    for frame in raw.decode().split("\n\n"):
        if not frame.strip():
            continue
        lines = dict(line.split(": ", 1) for line in frame.split("\n"))
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def read_events_until_broken(fake: FakeServer, body: dict) -> tuple[list[tuple[str, dict]], bool]:
    """Read an SSE response chunk by chunk; True if the stream ended abnormally."""
    conn = http.client.HTTPConnection(fake.host, fake.port, timeout=10)
    conn.request("POST", "/v1/messages", body=json.dumps(body).encode())
    resp = conn.getresponse()
    buf = b""
    broken = False
    try:
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            buf += chunk
    except (http.client.IncompleteRead, ConnectionError):
        broken = True
    conn.close()
    return parse_sse(buf), broken


STREAM = {"stream": True, "model": "claude-test-1",
          "messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
def server():
    with FakeServer() as s:
        yield s


def test_sse_sequence_complete(server: FakeServer) -> None:
    server.script(reply(thinking("plan", signature="s1"), "I'll run it.",
                        tool_use("Bash", {"command": "echo hi"})))
    status, headers, raw = post(server, STREAM)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = parse_sse(raw)
    names = [e for e, _ in events]
    assert names == [
        "message_start",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]
    assert all(d["type"] == e for e, d in events)
    start = events[0][1]["message"]
    assert start["id"] == "msg_fake_1" and start["model"] == "claude-test-1"
    assert set(start["usage"]) >= {"input_tokens", "output_tokens",
                                   "cache_read_input_tokens", "cache_creation_input_tokens"}
    deltas = [d["delta"] for e, d in events if e == "content_block_delta"]
    assert deltas[0] == {"type": "thinking_delta", "thinking": "plan"}
    assert deltas[1] == {"type": "signature_delta", "signature": "s1"}
    assert deltas[2] == {"type": "text_delta", "text": "I'll run it."}
    parts = [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]
    assert len(parts) >= 2 and json.loads("".join(parts)) == {"command": "echo hi"}
    tool_start = events[8][1]["content_block"]
    assert tool_start["id"] == "toolu_fake_1" and tool_start["name"] == "Bash"
    assert [d["index"] for e, d in events if e.startswith("content_block")] == \
        [0] * 4 + [1] * 3 + [2] * 4
    md = events[-2][1]
    assert md["delta"]["stop_reason"] == "tool_use" and md["usage"]["output_tokens"] > 0


def test_non_stream_json(server: FakeServer) -> None:
    server.script(reply("hi", tool_use("Read", {"file_path": "/x"}, id="toolu_mine"),
                        stop_reason="max_tokens"))
    status, headers, raw = post(server, turn(stream=False))
    msg = json.loads(raw)
    assert status == 200 and headers["content-type"] == "application/json"
    assert msg["type"] == "message" and msg["role"] == "assistant"
    assert msg["content"] == [text("hi"), {"type": "tool_use", "id": "toolu_mine",
                                           "name": "Read", "input": {"file_path": "/x"}}]
    assert msg["stop_reason"] == "max_tokens" and msg["stop_sequence"] is None
    assert msg["usage"]["input_tokens"] >= 1 and "cache_read_input_tokens" in msg["usage"]


def test_default_stop_reason_and_plain_string(server: FakeServer) -> None:
    server.script("plain")
    msg = json.loads(post(server, turn())[2])
    assert msg["content"] == [text("plain")] and msg["stop_reason"] == "end_turn"


def test_count_tokens_and_other_paths(server: FakeServer) -> None:
    body = {"messages": [{"role": "user", "content": "x" * 400}]}
    status, _, raw = post(server, body, path="/v1/messages/count_tokens?beta=true")
    assert status == 200 and json.loads(raw) == {"input_tokens": len(json.dumps(body)) // 4}
    conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
    conn.request("HEAD", "/api/hello")
    r = conn.getresponse()
    r.read()
    assert r.status == 200
    conn.request("GET", "/nope")
    r = conn.getresponse()  # same keep-alive connection
    err = json.loads(r.read())
    assert r.status == 404 and err["type"] == "error"
    assert server.remaining() == 0 and server.exhausted == 0  # none of these consumed steps
    assert [q.path for q in server.requests] == ["/v1/messages/count_tokens", "/api/hello", "/nope"]
    assert server.message_requests() == []


@pytest.mark.parametrize(("status", "etype"), [
    (400, "invalid_request_error"), (401, "authentication_error"), (403, "permission_error"),
    (429, "rate_limit_error"), (500, "api_error"), (529, "overloaded_error"),
])
def test_fault_shapes(server: FakeServer, status: int, etype: str) -> None:
    server.script(fault(status))
    got, headers, raw = post(server, STREAM)
    assert got == status and "retry-after" not in headers
    assert json.loads(raw) == {"type": "error",
                               "error": {"type": etype, "message": f"fake error {status}"}}


def test_fault_retry_after_and_custom_type(server: FakeServer) -> None:
    server.script(fault(429, "slow down", retry_after=2), fault(500, error_type="weird_error"))
    status, headers, raw = post(server, STREAM)
    assert status == 429 and headers["retry-after"] == "2"
    assert json.loads(raw)["error"]["message"] == "slow down"
    assert json.loads(post(server, STREAM)[2])["error"]["type"] == "weird_error"


def test_cut_drops_stream_after_n_events(server: FakeServer, capfd) -> None:
    server.script(cut(after=3, step=reply("a long answer")), "next")
    events, broken = read_events_until_broken(server, STREAM)
    assert broken and [e for e, _ in events] == \
        ["message_start", "content_block_start", "content_block_delta"]
    # the cut consumed its step; the next request gets the next one
    assert json.loads(post(server, turn())[2])["content"] == [text("next")]
    # a cut on a non-streaming request truncates the JSON body
    server.script(cut())
    with pytest.raises(http.client.IncompleteRead):
        post(server, turn())
    assert capfd.readouterr().err == ""  # disconnects are quiet


def test_cut_replay_requeues_step(server: FakeServer) -> None:
    server.script(cut(after=2, step=reply("whole"), replay=True), "after")
    events, broken = read_events_until_broken(server, STREAM)
    assert broken and len(events) == 2
    assert json.loads(post(server, turn())[2])["content"] == [text("whole")]
    assert json.loads(post(server, turn())[2])["content"] == [text("after")]


def test_sse_error_event(server: FakeServer) -> None:
    server.script(sse_error(), sse_error("api_error", "boom"))
    status, _, raw = post(server, STREAM)
    events = parse_sse(raw)
    assert status == 200 and [e for e, _ in events] == ["message_start", "error"]
    assert events[1][1] == {"type": "error",
                            "error": {"type": "overloaded_error", "message": "Overloaded"}}
    status, _, raw = post(server, turn())  # non-stream: an HTTP error instead
    assert status == 500 and json.loads(raw)["error"]["message"] == "boom"


def test_delay_before_headers(server: FakeServer) -> None:
    server.script(delay(0.5, "slow"))
    t0 = time.monotonic()
    status, _, raw = post(server, turn())
    assert time.monotonic() - t0 >= 0.5
    assert status == 200 and json.loads(raw)["content"] == [text("slow")]


def test_stall_goes_silent_until_client_leaves(server: FakeServer, capfd) -> None:
    server.script(stall(after=2))
    conn = http.client.HTTPConnection(server.host, server.port, timeout=0.7)
    conn.request("POST", "/v1/messages", body=json.dumps(STREAM).encode())
    resp = conn.getresponse()
    buf = b""
    with pytest.raises(TimeoutError):
        while True:
            buf += resp.read1(65536)
    assert [e for e, _ in parse_sse(buf)] == ["message_start", "content_block_start"]
    conn.close()
    t0 = time.monotonic()
    server.stop()  # never blocks on a stalled handler
    assert time.monotonic() - t0 < 2
    assert capfd.readouterr().err == ""


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return False
    except ConnectionRefusedError:
        return True


def test_outage_and_recover_same_port(server: FakeServer) -> None:
    port = server.port
    server.script("one", "two")
    server.outage()
    assert server.down and _refused(port)
    server.recover()
    assert not server.down and server.port == port
    assert json.loads(post(server, turn())[2])["content"] == [text("one")]
    server.outage(seconds=0.5)
    assert _refused(port)
    deadline = time.monotonic() + 5
    while server.down and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _refused(port)
    assert json.loads(post(server, turn())[2])["content"] == [text("two")]


def test_outage_drops_open_connections(server: FakeServer) -> None:
    server.script(stall(after=1))
    conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
    conn.request("POST", "/v1/messages", body=json.dumps(STREAM).encode())
    resp = conn.getresponse()
    server.wait_for(timeout=5)
    server.outage()
    with pytest.raises((http.client.IncompleteRead, ConnectionError)):
        while resp.read1(65536):
            pass
    conn.close()


def test_routing(server: FakeServer) -> None:
    server.script("default-1", "default-2")
    judge = server.route(match.system_contains("JUDGE"), "verdict", name="judge")
    server.route(match.last_user_contains("boom"), lambda r: 1 / 0)  # broken callable
    server.route(lambda r: r.undefined_attr, "never")  # broken predicate: skipped
    server.route(match.any_of(match.message_contains("zzz"), match.session("s-9")), "s9")

    def ask(system: str = "", content: str = "", **extra: Any) -> dict:
        content = content or turn()["messages"][0]["content"]
        return json.loads(post(server, {"system": [{"type": "text", "text": system}],
                                        "messages": [{"role": "user", "content": content}],
                                        **extra})[2])

    assert ask("You are a JUDGE")["content"] == [text("verdict")]
    # the judge route is now empty, so it is skipped
    assert ask("You are a JUDGE")["content"] == [text("default-1")]
    server.route(match.system_contains("JUDGE"), "verdict-2", name="judge")  # extends
    assert judge.remaining == 1 and ask("JUDGE")["content"] == [text("verdict-2")]
    meta = {"user_id": json.dumps({"device_id": "d", "session_id": "s-9"})}
    assert ask(metadata=meta)["content"] == [text("s9")]
    status, _, raw = post(server, {"messages": [{"role": "user", "content": "boom"}]})
    assert status == 500 and "ZeroDivisionError" in json.loads(raw)["error"]["message"]
    assert any("predicate raised" in e for e in server.errors)
    assert any("callable step raised" in e for e in server.errors)
    assert ask()["content"] == [text("default-2")]
    assert ask()["content"] == [text(EXHAUSTED_TEXT)] and server.exhausted == 1


def test_callable_steps_and_fallback(server: FakeServer) -> None:
    server.script(lambda req: f"you said {req.last_user_text()}", lambda req: None)

    def body(said: str) -> dict:
        return {"messages": [{"role": "user", "content": [text("first")]},
                             {"role": "system", "content": "env text"},
                             {"role": "user", "content": [text(said)]}]}

    assert json.loads(post(server, body("ping"))[2])["content"] == [text("you said ping")]
    assert json.loads(post(server, body("pong"))[2])["content"] == [text(EXHAUSTED_TEXT)]
    assert server.exhausted == 1
    server.fallback(lambda req: fault(529))
    assert post(server, body("a"))[0] == 529 and post(server, body("b"))[0] == 529
    assert server.exhausted == 1


def test_recording(server: FakeServer) -> None:
    server.script("a", "b")
    body = {
        "model": "m1", "stream": False,
        "system": [{"type": "text", "text": "sys one"}, {"type": "text", "text": "sys two"}],
        "tools": [{"name": "Bash"}, {"name": "Write"}],
        "messages": [
            {"role": "user", "content": [text("<reminder>"), text("do it")]},
            {"role": "system", "content": "environment"},
            {"role": "assistant", "content": [tool_use("Bash", {"command": "ls"}, id="t1")]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": [text("file.txt")]}]},
        ],
    }
    post(server, body,
         headers={"X-Claude-Code-Session-Id": "sid-1", "X-Claude-Code-Agent-Id": "ag"})
    post(server, turn(), path="/v1/messages", headers={"x-claude-code-session-id": "s2"})
    req: Request = server.message_requests(session_id="sid-1")[0]
    assert req.method == "POST" and req.path == "/v1/messages" and req.query == {"beta": "true"}
    assert req.headers["x-claude-code-session-id"] == req.headers["X-CLAUDE-CODE-SESSION-ID"]
    assert req.session_id == "sid-1" and req.agent_id == "ag" and not req.stream
    assert req.model == "m1" and req.tool_names == ["Bash", "Write"]
    assert req.system_text == "sys one\nsys two"
    assert "do it" in req.text() and "file.txt" in req.text() and "environment" in req.text()
    assert req.first_user_text() == "<reminder>\ndo it"
    assert req.last_user_text() == "file.txt"
    assert [b["tool_use_id"] for b in req.tool_results()] == ["t1"]
    assert req.body["messages"][1]["role"] == "system"
    assert server.last_request().session_id == "s2" and server.last_request("sid-1") is req
    assert len(server.requests) == 2 and req.time <= server.last_request().time
    assert match.subagent()(req) and not match.main_agent()(req)
    assert json.loads(json.dumps(req.to_json()))["session_id"] == "sid-1"


def test_usage_grows_with_body_and_overrides(server: FakeServer) -> None:
    server.script("x", "y", reply("z", usage={"input_tokens": 7, "cache_read_input_tokens": 3,
                                              "output_tokens": 5}))
    small = {"messages": [{"role": "user", "content": "a" * 100}]}
    big = {"messages": [{"role": "user", "content": "a" * 10000}]}
    u1 = json.loads(post(server, small)[2])["usage"]
    u2 = json.loads(post(server, big)[2])["usage"]
    assert u1["input_tokens"] == len(json.dumps(small)) // 4
    assert u2["input_tokens"] == len(json.dumps(big)) // 4 > u1["input_tokens"] * 50
    assert u1["cache_read_input_tokens"] == u1["cache_creation_input_tokens"] == 0
    bigger = {"messages": [{"role": "user", "content": "b" * 10000}], "stream": True}
    events = parse_sse(post(server, bigger)[2])
    usage = events[0][1]["message"]["usage"]
    assert usage["input_tokens"] == 7 and usage["cache_read_input_tokens"] == 3
    assert events[-2][1]["usage"]["output_tokens"] == 5


def test_ids_and_exhaustion_counter(server: FakeServer) -> None:
    server.script(reply(tool_use("A"), tool_use("B")))
    msg = json.loads(post(server, turn())[2])
    assert msg["id"] == "msg_fake_1"
    assert [b["id"] for b in msg["content"]] == ["toolu_fake_1", "toolu_fake_2"]
    assert msg["stop_reason"] == "tool_use"
    for _ in range(2):
        assert json.loads(post(server, STREAM)[2].split(b"\n")[1][6:])["message"]["id"]
    assert server.exhausted == 2


def test_wait_for_and_concurrency(server: FakeServer) -> None:
    import threading

    server.script(*[f"r{i}" for i in range(40)])
    threads = [threading.Thread(target=post, args=(server, turn())) for _ in range(40)]
    for t in threads:
        t.start()
    assert len(server.wait_for(count=40, timeout=10)) == 40
    for t in threads:
        t.join()
    assert server.remaining() == 0 and server.exhausted == 0
    with pytest.raises(TimeoutError):
        server.wait_for(count=41, timeout=0.2)


def test_json_script_format() -> None:
    s = step_from_json({"thinking": "t", "text": "hi",
                        "tool_use": [{"name": "Bash", "input": {"command": "ls"}}],
                        "stop_reason": "end_turn", "usage": {"input_tokens": 9}})
    assert [b["type"] for b in s.blocks] == ["thinking", "text", "tool_use"]
    assert s.stop_reason == "end_turn" and s.usage == {"input_tokens": 9}
    assert step_from_json({"fault": 529}).status == 529
    f = step_from_json({"fault": {"status": 429, "retry_after": 1, "message": "m"}})
    assert (f.status, f.retry_after, f.message) == (429, 1, "m")
    c = step_from_json({"cut": {"after": 2, "step": "x", "replay": True}})
    assert c.after == 2 and c.replay and c.step.blocks == [text("x")]
    assert step_from_json({"stall": {}}).after == 1
    assert step_from_json({"delay": {"seconds": 3, "step": {"text": "x"}}}).seconds == 3
    assert step_from_json({"sse_error": {"message": "m"}}).message == "m"
    b = step_from_json({"blocks": ["a", {"thinking": "t", "signature": "s"},
                                   {"tool_use": {"name": "X"}}, {"type": "text", "text": "r"}]})
    assert [x["type"] for x in b.blocks] == ["text", "thinking", "tool_use", "text"]
    with pytest.raises(ValueError):
        step_from_json({"bogus": 1})
    pred = match.from_json({"system_contains": "J", "any_of": [{"session": "s"},
                                                               {"subagent": True}]})
    assert callable(pred)


def test_import_is_light() -> None:
    code = ("import sys, flower.testing, flower.testing.sdk; "
            "assert 'claude_agent_sdk' not in sys.modules, 'sdk imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


def test_process_mode(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({
        "steps": [{"text": "from the script"}],
        "routes": [{"match": {"last_user_contains": "judge"}, "steps": [{"fault": 529}]}],
    }))
    log = tmp_path / "log.jsonl"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "flower.testing", "--script", str(script), "--port", str(port),
         "--log", str(log)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        url = proc.stdout.readline().strip()  # blocks until the server prints its URL
        assert url == f"http://127.0.0.1:{port}"
        fake = FakeServer(port=port)  # used only for host/port in post()
        status, headers, raw = post(fake, {"stream": True, "messages": [
            {"role": "user", "content": "judge this"}]})
        assert status == 529
        status, headers, raw = post(fake, STREAM)
        events = parse_sse(raw)
        assert headers["content-type"] == "text/event-stream"
        assert events[0][0] == "message_start" and events[-1][0] == "message_stop"
        assert events[2][1]["delta"]["text"] == "from the script"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode == 0
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["stream"] for x in lines] == [True, True] and lines[0]["path"] == "/v1/messages"


@pytest.mark.parametrize("body", [
    "[1, 2]",                                   # a list, but not of steps
    '"just a string"',                          # valid JSON, wrong shape
    '{"stepz": ["hi"]}',                        # unknown key
    '{"steps": "hi"}',                          # steps not a list
    '{"routes": [{"match": {"nope": 1}, "steps": ["x"]}]}',  # bad match key
    '{"steps": [{"fault": {}}]}',               # a fault without a status
    "{not json",
])
def test_process_mode_bad_script_is_one_line_exit_2(tmp_path: Path, body: str) -> None:
    script = tmp_path / "script.json"
    script.write_text(body, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "flower.testing", "--script", str(script)],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""  # no URL: the server never started
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("flower.testing: ") and str(script) in lines[0]


def test_process_mode_missing_script_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "flower.testing", "--script",
                           str(tmp_path / "absent.json")], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_process_mode_bare_list_is_the_steps_shorthand(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["first", {"text": "second"}]), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "flower.testing", "--script", str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url or proc.stderr.read()
        fake = FakeServer(port=int(url.rsplit(":", 1)[1]))  # host/port for post() only
        assert json.loads(post(fake, turn())[2])["content"] == [text("first")]
        assert json.loads(post(fake, turn())[2])["content"] == [text("second")]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 0


def test_load_json_script(server: FakeServer) -> None:
    server.load({
        "steps": [{"text": "s1"}],
        "routes": [{"name": "j", "match": {"system_contains": "judge"}, "steps": ["PASS"]}],
        "fallback": "fb",
    })
    assert [r.name for r in server.routes] == ["j"]
    for answer in ("PASS", "s1", "fb"):
        body = turn(system="a judge")
        assert json.loads(post(server, body)[2])["content"] == [text(answer)]
    assert server.exhausted == 0

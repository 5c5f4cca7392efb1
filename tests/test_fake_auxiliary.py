"""The fake answers the requests that are no agent turn — the CLI's session title and quota
check, flower's credential probe — by itself, so a script of the agent's answers is never
off by one (docs/testing.md, "Requests that are not the agent's turns")."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flower.testing import FakeServer, fault

TITLE = {  # the shape of the bundled CLI's title request
    "model": "claude-test-1", "max_tokens": 32000, "stream": True,
    "system": [{"type": "text", "text": "You are naming a coding session so the user can "
                                        "pick it out of a long list of sessions."}],
    "messages": [{"role": "user", "content": "<session>\nwhat does this do?\n</session>\n\n"
                  "Write the title in the predominant language of the session."}],
}
PROBE = {"model": "claude-test-1", "max_tokens": 16,  # flower/core/env.py's probe
         "messages": [{"role": "user", "content": "hi"}]}
QUOTA = {"model": "claude-test-1", "max_tokens": 1,
         "messages": [{"role": "user", "content": "quota"}]}
TURN = {"model": "claude-test-1", "max_tokens": 32000,  # an agent's turn: tools, a system
        "system": [{"type": "text", "text": "You are an agent."}],
        "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "What does this project do?"}]}


def post(fake: FakeServer, body: dict, headers: dict[str, str] | None = None) -> dict:
    conn = http.client.HTTPConnection(fake.host, fake.port, timeout=10)
    try:
        conn.request("POST", "/v1/messages?beta=true", body=json.dumps(body).encode(),
                     headers={"content-type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        raw = resp.read()
        assert resp.status == 200, raw
        return json.loads(raw)
    finally:
        conn.close()


def said(message: dict) -> str:
    return "".join(b.get("text", "") for b in message["content"])


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


@pytest.mark.parametrize(("body", "headers", "kind"), [
    (TITLE, None, "title"),
    (PROBE, {"user-agent": "flower-probe"}, "probe"),
    (QUOTA, None, "quota"),
])
def test_auxiliary_requests_pop_no_step(fake: FakeServer, body: dict,
                                        headers: dict[str, str] | None, kind: str) -> None:
    fake.script("FIRST", "SECOND")
    answer = said(post(fake, {**body, "stream": False}, headers))
    assert "FIRST" not in answer
    assert said(post(fake, TURN)) == "FIRST"  # the script's first answer is the agent's
    assert fake.remaining() == 1 and fake.exhausted == 0
    (aux,) = fake.auxiliary_requests()
    assert aux.auxiliary == kind
    assert [r.auxiliary for r in fake.message_requests()] == [None]
    assert len(fake.message_requests(auxiliary=True)) == 2
    assert fake.wait_for(count=1, timeout=1)[0].body["messages"] == TURN["messages"]


def test_the_title_is_the_json_the_cli_asked_for(fake: FakeServer) -> None:
    title = json.loads(said(post(fake, {**TITLE, "stream": False})))
    assert isinstance(title["title"], str) and title["title"]


def test_an_empty_script_is_not_exhausted_by_auxiliary_requests(fake: FakeServer) -> None:
    post(fake, {**TITLE, "stream": False})
    post(fake, PROBE, {"user-agent": "flower-probe"})
    assert fake.exhausted == 0


def test_a_small_request_of_the_users_own_is_a_turn(fake: FakeServer) -> None:
    """Only the probe's user agent marks the probe: a user's smoke test with
    ``max_tokens: 8`` and no tools gets the script's answer, not the probe's ``ok``."""
    fake.script("SCRIPTED")
    assert said(post(fake, {**PROBE, "max_tokens": 8})) == "SCRIPTED"
    assert fake.auxiliary_requests() == [] and fake.remaining() == 0


def test_auxiliary_false_scripts_the_probe(fake: FakeServer) -> None:
    """A test of the probe itself scripts its answer (here: a rejected key)."""
    with FakeServer(auxiliary=False) as server:
        server.script(fault(401))
        conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
        conn.request("POST", "/v1/messages", body=json.dumps(PROBE).encode(),
                     headers={"user-agent": "flower-probe"})
        assert conn.getresponse().status == 401
        conn.close()
        assert server.auxiliary_requests() == [] and server.remaining() == 0


def test_an_agent_turn_is_never_auxiliary(fake: FakeServer) -> None:
    """Tools offered, or a system prompt without the title instructions: a script step."""
    fake.script("A", "B", "C")
    assert said(post(fake, TURN)) == "A"
    no_tools = {k: v for k, v in TURN.items() if k != "tools"}
    second = [{"role": "user", "content": "And the tests?"}]
    assert said(post(fake, {**no_tools, "max_tokens": 16, "messages": second})) == "B"
    asks_title = {**TURN, "messages": TITLE["messages"]}
    assert said(post(fake, asks_title)) == "C"  # offers tools
    assert fake.auxiliary_requests() == []


def _serve(args: list[str], script: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "flower.testing", "--script", str(script),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


@pytest.mark.parametrize(("args", "by_fake"), [([], True), (["--no-auxiliary"], False)])
def test_process_mode_no_auxiliary_flag(tmp_path: Path, args: list[str], by_fake: bool) -> None:
    script = tmp_path / "script.json"
    script.write_text('["ANSWER"]')
    proc, url = _serve(args, script)
    try:
        host, port = url.removeprefix("http://").split(":")
        server = FakeServer(host=host, port=int(port))  # host/port for post() only
        probe = said(post(server, PROBE, {"user-agent": "flower-probe"}))
        assert (probe != "ANSWER") if by_fake else (probe == "ANSWER")
    finally:
        proc.terminate()
        proc.wait(10)

"""The fake refuses what the Messages API refuses (flower/testing/rules.py), in its words,
and answers a retried turn with the answer it gave before (docs/testing.md)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower.testing import FakeServer, cut, fault, reply, rules, tool_use


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def txt(s: str) -> dict[str, Any]:
    return {"type": "text", "text": s}


def call(i: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": "Bash", "input": {}}


def result(i: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": i, "content": "ok"}


def refused(*messages: dict[str, Any]) -> list[str]:
    return rules.violations({"messages": list(messages)})


# ---------------------------------------------------------------- the rules, one by one
def test_a_well_formed_conversation_passes() -> None:
    assert refused(user(txt("go")), assistant(txt("ok"), call("a"), call("b")),
                   user(result("a"), result("b"), txt("and then?")),
                   assistant(txt("done"))) == []


def test_a_call_without_its_result_is_refused_in_the_apis_words() -> None:
    (why,) = refused(user(txt("go")), assistant(call("a"), call("b")), user(result("a")))
    assert why == ("messages.1: `tool_use` ids were found without `tool_result` blocks "
                   "immediately after: b. Each `tool_use` block must have a corresponding "
                   "`tool_result` block in the next message.")


def test_a_result_without_its_call_is_refused() -> None:
    (why,) = refused(user(txt("go")), assistant(txt("hm")), user(result("x"), txt("?")))
    assert why.startswith("messages.2.content.0: unexpected `tool_use_id` found in "
                          "`tool_result` blocks: x.")


def test_results_must_come_first() -> None:
    (why,) = refused(user(txt("go")), assistant(call("a")), user(txt("wait"), result("a")))
    assert why.startswith("messages.2: Did not find 1 `tool_result` block(s) at the "
                          "beginning of this message.")


def test_consecutive_messages_of_one_role_are_merged_first() -> None:
    """The CLI writes one API response as several assistant lines and parallel results as
    several user lines: merged, they pair. The role ``system`` note takes no part."""
    assert refused(user(txt("go")), assistant(call("a")), assistant(call("b")),
                   user(result("a")), {"role": "system", "content": "env"},
                   user(result("b")), assistant(txt("done"))) == []


def test_a_call_left_hanging_at_the_end_is_refused() -> None:
    assert refused(user(txt("go")), assistant(call("a")))[0].startswith(
        "messages.1: `tool_use` ids were found without")


def test_ids_unique_texts_nonempty_user_first() -> None:
    assert refused(user(txt("go")), assistant(call("a")), user(result("a")),
                   assistant(call("a")), user(result("a"))) == [
        "messages.3.content.0: `tool_use` ids must be unique"]
    assert refused(user(txt(""))) == [rules.EMPTY_TEXT]
    assert refused(user(txt("  \n"))) == [rules.BLANK_TEXT]
    assert refused(assistant(txt("hi")), user(txt("go"))) == [rules.FIRST_USER]
    assert refused({"role": "user", "content": ""})[0].startswith("messages.0: all messages")


# ---------------------------------------------------------------- a property
_ids = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Well-formed exchanges: each assistant turn's calls answered, first thing, by the
    next user turn — sometimes split over several lines of one role, as the CLI writes."""
    out: list[dict[str, Any]] = [user(txt("start"))]
    n = 0
    for _ in range(draw(st.integers(0, 5))):
        calls = [f"t{n + k}" for k in range(draw(st.integers(0, 3)))]
        n += len(calls)
        blocks = [txt("thinking aloud")] + [call(c) for c in calls]
        split = draw(st.integers(1, len(blocks)))
        out += [assistant(*blocks[:split])] + ([assistant(*blocks[split:])]
                                                if blocks[split:] else [])
        if calls:
            out.append(user(*[result(c) for c in calls]))
            if draw(st.booleans()):
                out.append({"role": "system", "content": "env"})
        else:
            out.append(user(txt("more")))
    return out


@given(conversations())
def test_every_well_formed_conversation_passes(convo: list[dict[str, Any]]) -> None:
    assert refused(*convo) == []


@given(conversations(), st.data())
def test_dropping_any_result_is_refused(convo: list[dict[str, Any]], data: st.DataObject) -> None:
    sites = [(i, j) for i, m in enumerate(convo) if m["role"] == "user"
             for j, b in enumerate(m["content"]) if b["type"] == "tool_result"]
    if not sites:
        return
    i, j = data.draw(st.sampled_from(sites))
    convo[i] = {**convo[i], "content": [b for k, b in enumerate(convo[i]["content"]) if k != j]}
    if not convo[i]["content"]:
        convo[i]["content"] = [txt("lost")]
    assert refused(*convo)


# ---------------------------------------------------------------- over HTTP
def post(fake: FakeServer, body: dict[str, Any]) -> tuple[int, Any]:
    conn = http.client.HTTPConnection(fake.host, fake.port, timeout=10)
    try:
        conn.request("POST", "/v1/messages?beta=true", body=json.dumps(body).encode(),
                     headers={"content-type": "application/json"})
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, raw if body.get("stream") else json.loads(raw)
    finally:
        conn.close()


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


ORPHAN = {"messages": [user(txt("go")), assistant(call("a")), user(txt("no result"))]}


def test_a_refused_turn_is_a_400_and_spends_no_step(fake: FakeServer) -> None:
    fake.script("kept")
    status, body = post(fake, ORPHAN)
    assert status == 400
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "Did not find 1 `tool_result` block(s)" in body["error"]["message"]
    assert fake.remaining() == 1 and fake.message_requests() == []
    (req,) = fake.rejected
    assert req.rejected == body["error"]["message"]
    assert fake.message_requests(rejected=True) == [req]


def test_strict_false_accepts_anything(fake: FakeServer) -> None:
    with FakeServer(strict=False) as lax:
        lax.script("played")
        status, body = post(lax, ORPHAN)
        assert status == 200 and body["content"][0]["text"] == "played"
        assert lax.rejected == []


# ---------------------------------------------------------------- retries
TURN = {"messages": [user(txt("dispatch a worker"))], "stream": False}


def test_a_repeated_turn_gets_the_answer_it_got_before(fake: FakeServer) -> None:
    """The CLI repeats a request when its stream timed out or dropped: the model's answer
    to that turn is the one it gave; the next scripted step waits for the next turn."""
    fake.script(reply(tool_use("Agent", {"prompt": "x"})), "next turn")
    first = post(fake, TURN)[1]
    again = post(fake, {**TURN, "stream": True, "max_tokens": 64000})  # another shape
    assert again[0] == 200 and b'"name": "Agent"' in again[1]
    retry = post(fake, {**TURN})[1]
    assert retry["content"] == first["content"]  # the same call, the same id
    assert fake.remaining() == 1
    assert [r.retry for r in fake.message_requests()] == [False, True, True]


def test_a_fault_scripted_for_the_retry_is_played(fake: FakeServer) -> None:
    fake.script("answer", fault(529), "after the fault")
    post(fake, TURN)
    assert post(fake, TURN)[0] == 529  # the script asked for a fault on the retry
    assert post(fake, TURN)[1]["content"][0]["text"] == "answer"
    assert fake.remaining() == 1


def test_a_cut_answer_is_not_an_answer(fake: FakeServer) -> None:
    """Only an answer delivered in full is given again; after a cut the retry is a new
    step, as the script says."""
    fake.script(cut(after=1, step=reply("lost")), "whole")
    conn = http.client.HTTPConnection(fake.host, fake.port, timeout=10)
    conn.request("POST", "/v1/messages", body=json.dumps({**TURN, "stream": True}).encode())
    with pytest.raises((http.client.IncompleteRead, ConnectionError)):
        resp = conn.getresponse()
        while resp.read1(65536):
            pass
        raise ConnectionError("stream ended")
    conn.close()
    assert post(fake, TURN)[1]["content"][0]["text"] == "whole"


def test_another_session_is_another_turn(fake: FakeServer) -> None:
    fake.script("one", "two")
    meta = {"user_id": json.dumps({"session_id": "s-2"})}
    assert post(fake, TURN)[1]["content"][0]["text"] == "one"
    assert post(fake, {**TURN, "metadata": meta})[1]["content"][0]["text"] == "two"


@pytest.mark.parametrize(("args", "status"), [([], 400), (["--no-strict"], 200)])
def test_process_mode_is_strict_unless_told(args: list[str], status: int) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "flower.testing", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        server = FakeServer(port=int(url.rsplit(":", 1)[1]))  # host/port for post() only
        assert post(server, ORPHAN)[0] == status
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert f"{1 if status == 400 else 0} refused" in err


def test_a_lax_fake_answers_a_repeated_turn_again_too() -> None:
    """Retries are a matter of the turn, not of the request rules: ``strict=False`` keeps it."""
    with FakeServer(strict=False) as lax:
        lax.script("first", "second")
        assert post(lax, TURN)[1]["content"][0]["text"] == "first"
        assert post(lax, TURN)[1]["content"][0]["text"] == "first"
        assert lax.remaining() == 1 and [r.retry for r in lax.message_requests()] == [False, True]

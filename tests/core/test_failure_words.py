"""Failures said in words, and a wrong base URL told apart from an outage (issue 21).

``misconfigured`` is driven through its resolver/connect seams, so whether this machine has
DNS at all (a sandbox often has none) never decides a test."""

from __future__ import annotations

import socket

import anyio
import pytest

from flower import texts
from flower.core.resilience import Resilience, in_words, misconfigured
from flower.core.runtime import Runtime, _offline_bound

# --- in_words ---------------------------------------------------------------------------


@pytest.mark.parametrize(("error", "words"), [
    (ConnectionRefusedError(111, "Connection refused"), texts.NET_REFUSED),
    (socket.gaierror(-2, "Name or service not known"), texts.NET_NO_HOST),
    (TimeoutError("timed out"), texts.NET_TIMEOUT),
    (ConnectionResetError(104, "Connection reset by peer"), texts.NET_RESET),
    (OSError(113, "No route to host"), texts.NET_UNREACHABLE),
    ("API Error: Connection refused. Check your network. (ECONNREFUSED)",
     texts.API_FAILED.format(what=texts.NET_REFUSED)),
    ("API Error: 529 {\"type\":\"overloaded_error\"}",
     texts.API_FAILED.format(what=texts.FAIL_OVERLOADED)),
    ("API Error: 401 invalid x-api-key · connection", texts.API_FAILED.format(
        what=texts.FAIL_AUTH)),
    ("getaddrinfo ENOTFOUND api.example.invalid", texts.NET_NO_HOST),
])
def test_network_and_api_failures_are_said_in_words(error: object, words: str) -> None:
    assert in_words(error) == words  # type: ignore[arg-type]


def test_what_is_not_recognised_stays_as_it_was_on_one_line() -> None:
    assert in_words("the tool said\n  no") == "the tool said no"
    assert in_words(ValueError("odd")) == "ValueError: odd"
    assert in_words(None) == ""


# --- misconfigured ----------------------------------------------------------------------

def _resolver(table: dict[str, list[str]]):
    def resolve(host: str) -> list[str]:
        if host not in table:
            raise socket.gaierror(-2, "Name or service not known")
        return table[host]
    return resolve


def _refuses(address: str, port: int) -> None:
    raise ConnectionRefusedError(111, "Connection refused")


def _accepts(address: str, port: int) -> None:
    return None


def test_loopback_that_refuses_is_a_wrong_setting() -> None:
    resolve = _resolver({"127.0.0.1": ["127.0.0.1"], "localhost": ["127.0.0.1", "::1"]})
    assert misconfigured("http://127.0.0.1:9", resolve=resolve, connect=_refuses) == "refused"
    assert misconfigured("http://localhost:9", resolve=resolve, connect=_refuses) == "refused"


def test_loopback_that_listens_is_not_a_wrong_setting() -> None:
    resolve = _resolver({"127.0.0.1": ["127.0.0.1"]})
    assert misconfigured("http://127.0.0.1:8080", resolve=resolve, connect=_accepts) is None


def test_a_remote_address_that_refuses_may_be_an_outage() -> None:
    resolve = _resolver({"gw.example.com": ["203.0.113.7"]})
    assert misconfigured("https://gw.example.com", resolve=resolve, connect=_refuses) is None


def test_a_name_that_does_not_resolve_while_others_do_is_a_wrong_setting() -> None:
    resolve = _resolver({"api.anthropic.com": ["160.79.104.10"]})
    assert misconfigured("https://api.anthropc.com", resolve=resolve,
                         connect=_refuses) == "no_host"


def test_no_name_resolving_at_all_is_not_certain() -> None:
    """A sandbox or an offline laptop: DNS itself is down, the setting may be right."""
    assert misconfigured("https://api.anthropc.com", resolve=_resolver({}),
                         connect=_refuses) is None


# --- the Runtime: asks only before the endpoint ever answered; the wait's bound ---------

def test_the_wrong_setting_line_names_the_setting_and_where_it_came_from(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key-0000")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setattr("flower.core.runtime.misconfigured", lambda url: "refused")
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", dotenv=False)
    try:
        line = anyio.run(rt._wrong_setting, "http://127.0.0.1:9")
        assert line == texts.BASE_URL_REFUSED.format(
            url="http://127.0.0.1:9", origin=texts.SETTING_FROM_ENV, host="127.0.0.1", port=9)
        rt.answered = True  # it answered once: the same refusal is now an outage
        assert anyio.run(rt._wrong_setting, "http://127.0.0.1:9") is None
    finally:
        rt.close()


def test_offline_wait_setting_bounds_the_default_policy_only() -> None:
    env = {"FLOWER_OFFLINE_WAIT": "90"}
    assert _offline_bound(Resilience(), True, env).max_offline_wait == 90.0
    mine = Resilience(max_offline_wait=5.0)
    assert _offline_bound(mine, mine, env).max_offline_wait == 5.0  # the caller's own wins
    assert _offline_bound(Resilience(), True, {"FLOWER_OFFLINE_WAIT": "soon"}
                          ).max_offline_wait == Resilience().max_offline_wait

"""Resilience policy: classification, backoff, endpoint, DNS+TCP probe, offline waiting."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower import texts
from flower.core import resilience as rmod
from flower.core.resilience import Resilience, classify, endpoint, is_fatal_retry, reachable

# --- classify ---------------------------------------------------------------------------

# Every result text the bundled CLI produced in the fault experiments (sdk-notes §6), plus the
# reference word lists (reference-api §8.2).
CLASSIFY_TABLE = [
    # sdk-notes §6: exact CLI result texts
    ("API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)",
     "transient"),
    ("API Error: 500 Internal error. This is a server-side issue, usually temporary — "
     "try again in a moment.", "transient"),
    ('API Error: 529 {"type":"error","error":{"type":"overloaded_error",'
     '"message":"Overloaded"}}', "transient"),
    ("API Error: Request rejected (429) · Rate limited", "transient"),
    ("Invalid API key · Fix external API key", "fatal"),
    ('API Error: 400 {"type":"error","error":{"type":"invalid_request_error",'
     '"message":"bad"}}', "fatal"),
    ("API Error: 400 messages.0: bad field", "fatal"),
    ("Request timed out. Check your internet connection and proxy settings, or set "
     "API_TIMEOUT_MS above the limit in force (600000 by default).", "transient"),
    ("Request timed out. … set API_TIMEOUT_MS above 5000.", "transient"),
    ("API Error: stream idle: no bytes for 10000ms", "transient"),
    ("API Error: Can't reach the API server (ENOTFOUND)", "transient"),
    ("Prompt is too long", "fatal"),
    ("ResultError: No conversation found with session ID: 1234", "fatal"),
    # fatal words (reference §8.2)
    ("401 Unauthorized", "fatal"),
    ("HTTP 403 Forbidden", "fatal"),
    ("status 404 not found", "fatal"),
    ("invalid_request_error: messages must alternate", "fatal"),
    ("Your credit balance is too low", "fatal"),
    ("quota exceeded for this org", "fatal"),
    ("error_max_budget_usd", "fatal"),
    ("error_max_turns: max_turns reached", "fatal"),
    ("CLINotFoundError: Claude Code not found", "fatal"),
    ("Permission denied (publickey)", "fatal"),
    ("authentication_failed", "fatal"),
    # fatal wins although transient words are present
    ("401: connection error while authenticating", "fatal"),
    ("API Error: 401 timeout talking to auth service", "fatal"),
    ("Unauthorized — Connection error", "fatal"),
    # transient words
    ("getaddrinfo EAI_AGAIN api.example.com", "transient"),
    ("read ECONNRESET", "transient"),
    ("connect ETIMEDOUT 1.2.3.4:443", "transient"),
    ("write EPIPE", "transient"),
    ("connect EHOSTUNREACH", "transient"),
    ("ENETDOWN", "transient"),
    ("socket hang up", "transient"),
    ("TypeError: fetch failed", "transient"),
    ("Network error", "transient"),
    ("Connection error.", "transient"),
    ("502 Bad Gateway", "transient"),
    ("503 Service Unavailable", "transient"),
    ("upstream 504", "transient"),
    ("rate limit exceeded", "transient"),
    ("Too Many Requests", "transient"),
    ("TimeoutError", "transient"),
    ("resource temporarily unavailable", "transient"),
    ("Internal Server Error", "transient"),
    # status codes only as standalone numbers
    ("retry in 500ms", "unknown"),
    ("used 4000 tokens", "unknown"),
    ("no bytes, idle 15000 ms", "unknown"),
    ("request id req_011CS529abc", "unknown"),
    ("version 1.400", "unknown"),
    ("port 4011 closed", "unknown"),
    # unknown
    ("ProcessError: Command failed with exit code 1", "unknown"),
    ("something odd happened", "unknown"),
    ("", "unknown"),
    (None, "unknown"),
]


@pytest.mark.parametrize(("text", "kind"), CLASSIFY_TABLE)
def test_classify(text, kind):
    assert classify(text) == kind


def test_should_retry():
    r = Resilience()
    assert r.should_retry("transient") and r.should_retry("unknown")
    assert not r.should_retry("fatal")
    assert not Resilience(retry_unknown=False).should_retry("unknown")


def test_defaults_from_the_seed():
    r = Resilience()
    assert (r.enabled, r.max_attempts, r.base_delay, r.max_delay, r.probe_timeout,
            r.probe_interval, r.max_offline_wait, r.retry_unknown) == (
        True, 6, 4.0, 120.0, 5.0, 15.0, 3600.0, True)
    assert r.resume_prompt == (
        "上一轮在中途被打断,没有跑完。检查一下工作台里已经落盘的东西,从中断处接着做,不要重头来过。")
    for leak in ("error", "API", "ENOTFOUND", "503", "错误"):
        assert leak not in r.resume_prompt


def test_is_fatal_retry():
    assert is_fatal_retry({"attempt": 1, "error_status": 401, "error": "authentication_failed"})
    assert is_fatal_retry({"error": "billing_error"})
    assert is_fatal_retry({"error_status": 403, "error": "unknown"})
    assert not is_fatal_retry({"error_status": 500, "error": "server_error"})
    assert not is_fatal_retry({"error_status": 529, "error": "overloaded"})
    assert not is_fatal_retry({"error_status": None, "error": "unknown"})
    assert not is_fatal_retry({"error_status": 429, "error": "rate_limit"})
    assert not is_fatal_retry({})
    assert not is_fatal_retry(None)


# --- backoff ----------------------------------------------------------------------------

@given(attempt=st.integers(min_value=1, max_value=40),
       r=st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
def test_delay_jitter_within_25_percent(attempt, r):
    res = Resilience()
    base = min(4.0 * 2 ** (attempt - 1), 120.0)
    d = res.delay_for(attempt, rand=lambda: r)
    assert 0.75 * base <= d <= 1.25 * base
    assert d <= 150.0


@given(attempt=st.integers(min_value=1, max_value=12))
def test_delay_with_real_random_stays_in_bounds(attempt):
    res = Resilience()
    base = min(4.0 * 2 ** (attempt - 1), 120.0)
    assert all(0.75 * base <= res.delay_for(attempt) <= 1.25 * base for _ in range(50))


def test_delay_schedule_edges():
    res = Resilience()
    lo, hi = (lambda: 0.0), (lambda: 1.0)
    assert (res.delay_for(1, lo), res.delay_for(1, hi)) == (3.0, 5.0)
    assert (res.delay_for(2, lo), res.delay_for(2, hi)) == (6.0, 10.0)
    assert (res.delay_for(6, lo), res.delay_for(6, hi)) == (90.0, 150.0)
    assert res.delay_for(0, lo) == 3.0  # never below the first delay


# --- cli_env ----------------------------------------------------------------------------

def test_cli_env_bounds_the_cli_retries():
    env = Resilience().cli_env({})
    assert env == {"CLAUDE_CODE_MAX_RETRIES": "2", "API_TIMEOUT_MS": "300000",
                   "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS": "120000"}


def test_cli_env_respects_user_settings(monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "7")
    monkeypatch.delenv("API_TIMEOUT_MS", raising=False)
    monkeypatch.delenv("CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS", raising=False)
    env = Resilience().cli_env()
    assert "CLAUDE_CODE_MAX_RETRIES" not in env and env["API_TIMEOUT_MS"] == "300000"
    assert Resilience().cli_env({"API_TIMEOUT_MS": "1"}).keys() == {
        "CLAUDE_CODE_MAX_RETRIES", "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS"}


def test_cli_env_disabled_leaves_cli_defaults():
    assert Resilience(enabled=False).cli_env({}) == {}


# --- endpoint ---------------------------------------------------------------------------

@pytest.mark.parametrize(("url", "expected"), [
    (None, ("api.anthropic.com", 443)),
    ("", ("api.anthropic.com", 443)),
    ("https://api.anthropic.com", ("api.anthropic.com", 443)),
    ("http://gateway.local", ("gateway.local", 80)),
    ("http://127.0.0.1:8089/anthropic", ("127.0.0.1", 8089)),
    ("https://gw.example.com:8443/", ("gw.example.com", 8443)),
    ("gw.example.com:9000", ("gw.example.com", 9000)),
    ("https://[::1]:7000", ("::1", 7000)),
    ("https://host:notaport", ("host", 443)),
])
def test_endpoint_from_base_url(monkeypatch, url, expected):
    if url is None:
        monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    else:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    assert endpoint() == expected


# --- real sockets -----------------------------------------------------------------------

class Listener:
    """A TCP listener on a fixed loopback port that can be closed and reopened."""

    def __init__(self) -> None:
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.sock: socket.socket | None = None

    def open(self) -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(128)
        self.sock = s

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


@pytest.fixture
def listener(monkeypatch) -> Iterator[Listener]:
    lst = Listener()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{lst.port}")
    yield lst
    lst.close()


async def test_reachable_true_and_false(listener):
    assert not await reachable("127.0.0.1", listener.port, 1.0)
    listener.open()
    assert await reachable("127.0.0.1", listener.port, 1.0)
    listener.close()
    assert not await reachable("127.0.0.1", listener.port, 1.0)


async def test_reachable_dns_failure_is_false():
    assert not await reachable("no-such-host.invalid", 443, 2.0)


async def test_reachable_bad_port_is_false():
    assert not await reachable("127.0.0.1", 70000, 1.0)


async def _until(cond, limit: float = 10.0) -> None:
    with anyio.fail_after(limit):
        while not cond():
            await anyio.sleep(0.01)


async def test_wait_online_notices_exactly_once_each(listener, monkeypatch):
    probes = []
    real = rmod.reachable

    async def counting(host, port, timeout):
        ok = await real(host, port, timeout)
        probes.append(ok)
        return ok

    monkeypatch.setattr(rmod, "reachable", counting)
    notices: list[str] = []
    outcome: list[bool] = []
    res = Resilience(probe_interval=0.01, probe_timeout=1.0, max_offline_wait=60.0)
    waiting = texts.OFFLINE_WAIT.format(host="127.0.0.1", port=listener.port, minutes=1)

    async def waiter():
        outcome.append(await res.wait_online(notices.append))

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await _until(lambda: len(probes) >= 10)  # many failed probes…
        assert notices == [waiting]
        listener.open()                           # …one notice; now recover
        await _until(lambda: outcome)
    assert outcome == [True]
    assert notices == [waiting, f"127.0.0.1:{listener.port} 恢复,继续"]
    assert probes[-1] is True and not any(probes[:-1])


async def test_wait_online_up_at_once_says_nothing(listener):
    listener.open()
    notices: list[str] = []
    assert await Resilience(probe_interval=0.01).wait_online(notices.append)
    assert notices == []


async def test_wait_online_gives_up_after_max_offline_wait(listener):
    notices: list[str] = []
    res = Resilience(probe_interval=0.02, probe_timeout=0.5, max_offline_wait=0.3)
    with anyio.fail_after(10):
        assert await res.wait_online(notices.append) is False
    assert notices == [texts.OFFLINE_WAIT_SECONDS.format(host="127.0.0.1",
                                                         port=listener.port, seconds=1)]


async def test_wait_online_default_notice_says_60_minutes(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gw.example.com")
    answers = iter([False, False, True])

    async def fake(host, port, timeout):
        assert (host, port, timeout) == ("gw.example.com", 443, 5.0)
        return next(answers)

    monkeypatch.setattr(rmod, "reachable", fake)
    notices: list[str] = []

    async def async_notify(line: str) -> None:
        notices.append(line)

    assert await Resilience(probe_interval=0.001).wait_online(async_notify)
    assert notices == [texts.OFFLINE_WAIT.format(host="gw.example.com", port=443, minutes=60),
                       "gw.example.com:443 恢复,继续"]
    first = texts.OFFLINE_WAIT.format(host="h", port=1, minutes=60)
    assert first.startswith("h:1 不可达") and "最多等 60 分钟" in first
    assert "Ctrl-C" in first and "--offline-wait" in first and "max_offline_wait" in first


async def test_wait_online_without_notify(listener):
    res = Resilience(probe_interval=0.01, max_offline_wait=0.05, probe_timeout=0.5)
    assert await res.wait_online() is False


def test_importing_resilience_does_not_import_the_sdk():
    code = "import sys, flower.core.resilience; print('claude_agent_sdk' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"

"""Riding out network outages and overloads inside one step: probe, resume, keep errors out.

A long run will lose the network at some point. What the CLI does by default is bad for a
ten-hour run: it writes a synthetic "API Error: …" assistant message that becomes the leaf of
the session, and if the step is simply restarted all earlier work is paid for again. This
module holds the policy the Runtime's step loop applies:

* ``classify(text)`` splits failures into ``fatal`` (stop now: a wrong key never heals),
  ``transient`` (wait and retry) and ``unknown`` (retried when ``retry_unknown``). Fatal is
  checked first because 401 texts often also say "connection".
* ``wait_online()`` probes only DNS + TCP of the configured endpoint (free, no credentials),
  printing one line when it goes away and one when it comes back.
* Retries *resume* the same session with ``resume_prompt``, which carries no error details.

How flower's layer combines with the CLI's own retries
------------------------------------------------------
The bundled CLI retries by itself: 1 + 10 attempts over about 190 s for 500, 529, 429, 401
and connection refused. Left alone that is wrong twice over for a long run: a
dead network burns three minutes inside one CLI process before flower even hears of it, and a
bad key (401) is retried ten times although it can never succeed.

Decision: **two layers with a clear split.**

1. *Inside the CLI, only blips.* ``Resilience.cli_env()`` gives the agent subprocess
   ``CLAUDE_CODE_MAX_RETRIES=2`` (about 1.5 s of CLI backoff: absorbs a single dropped
   connection or one 529 without leaving the process), ``API_TIMEOUT_MS=300000`` (headers
   within 5 min instead of 10) and ``CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS=120000`` (a stream
   silent for 2 min is dead; the default lets a stall cost 5–10 min). Only keys the user has
   not set are returned: an explicit setting always wins. With ``enabled=False`` nothing is
   returned, so the CLI keeps its own default behaviour.
2. *In flower, everything longer.* When the CLI gives up, the step loop classifies the
   failure; for a transient one it probes DNS + TCP every ``probe_interval`` for up to
   ``max_offline_wait`` (an hour), then backs off ``delay_for(attempt)`` (4, 8, 16, 32, 64 s
   ±25 %) and resumes the same session. Six flower attempts × three CLI attempts cover an
   overload of several minutes, and an outage of up to an hour costs no API calls at all.
3. *Circuit breaker for hopeless retries.* The CLI announces each of its retries as
   ``SystemMessage(subtype="api_retry")``. ``is_fatal_retry(data)`` is True for
   ``authentication_failed``/``billing_error`` or a 401/403 status, so the Runtime can stop the
   CLI at the first such notice instead of waiting out its retries; the failure then
   classifies as fatal and flower does not retry either.

The import stays free of ``claude_agent_sdk`` so CLI start-up remains fast.
"""

from __future__ import annotations

import errno
import ipaddress
import math
import os
import random
import re
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from flower import texts
from flower.errors import one_line

DEFAULT_BASE_URL = "https://api.anthropic.com"

# Texts meaning "retrying cannot help". Checked before TRANSIENT.
FATAL_WORDS = (
    "invalid api key", "authentication", "unauthorized", "permission denied",
    "invalid_request", "credit balance", "billing_error", "quota exceeded", "budget",
    "max_turns", "clinotfound", "cli not found", "prompt is too long",
    "oauth token has expired", "no conversation found",
)
FATAL_CODES = ("400", "401", "403", "404")

TRANSIENT_WORDS = (
    "enotfound", "eai_again", "econnreset", "econnrefused", "etimedout", "epipe",
    "ehostunreach", "enetdown", "enetunreach", "econnaborted", "socket hang up",
    "fetch failed", "network error", "connection error", "connection refused",
    "connection reset", "can't reach the api server", "overloaded", "rate limit",
    "too many requests", "timeout", "timed out", "temporarily unavailable",
    "service unavailable", "internal server error", "bad gateway", "stream idle",
    "no bytes for",
)
TRANSIENT_CODES = ("429", "500", "502", "503", "504", "529")


def _code_pattern(codes: tuple[str, ...]) -> re.Pattern[str]:
    # A status code stands alone: "API Error: 529 {…}", "(429)", "status 401". It must not
    # match inside "15000ms", "4000 tokens", "500ms", a request id or a version number.
    return re.compile(r"(?<![\w.])(?:" + "|".join(codes) + r")(?!\w)(?!\.\d)")


_FATAL_CODE_RE = _code_pattern(FATAL_CODES)
_TRANSIENT_CODE_RE = _code_pattern(TRANSIENT_CODES)


def classify(text: str | None) -> str:
    """``"fatal"``, ``"transient"`` or ``"unknown"`` for a failure text (fatal checked first)."""
    if not text:
        return "unknown"
    low = text.lower()
    if any(w in low for w in FATAL_WORDS) or _FATAL_CODE_RE.search(low):
        return "fatal"
    if any(w in low for w in TRANSIENT_WORDS) or _TRANSIENT_CODE_RE.search(low):
        return "transient"
    return "unknown"


_FATAL_RETRY_ERRORS = frozenset({"authentication_failed", "billing_error"})
_FATAL_RETRY_STATUS = frozenset({401, 403})


def is_fatal_retry(data: Mapping[str, Any] | None) -> bool:
    """True when a CLI ``api_retry`` notice is for something retrying cannot fix.

    The CLI retries a 401 ten times (~190 s); the Runtime uses this to stop it at once.
    """
    if not data:
        return False
    if data.get("error") in _FATAL_RETRY_ERRORS:
        return True
    status = data.get("error_status")
    return isinstance(status, int) and status in _FATAL_RETRY_STATUS


def endpoint(base_url: str | None = None) -> tuple[str, int]:
    """Host and port to probe: the configured gateway, not api.anthropic.com."""
    url = (base_url if base_url is not None else os.environ.get("ANTHROPIC_BASE_URL", ""))
    url = url.strip() or DEFAULT_BASE_URL
    if "://" not in url:
        url = "https://" + url
    parts = urlsplit(url)
    default_port = 80 if parts.scheme == "http" else 443
    try:
        port = parts.port or default_port
    except ValueError:
        port = default_port
    return parts.hostname or urlsplit(DEFAULT_BASE_URL).hostname or "", port


async def reachable(host: str, port: int, timeout: float = 5.0) -> bool:
    """DNS lookup + TCP handshake, then close. No HTTP, no credentials, no cost."""
    import anyio  # lazy, like everything async here: `flower --help` never needs it

    try:
        with anyio.fail_after(timeout):
            stream = await anyio.connect_tcp(host, port)
            await stream.aclose()
        return True
    except Exception:
        return False


def _span(seconds: float, host: str, port: int) -> str:
    """The first line of a wait: how long at most, how to stop it, how to change the bound."""
    if seconds >= 60:
        return texts.OFFLINE_WAIT.format(host=host, port=port, minutes=round(seconds / 60))
    return texts.OFFLINE_WAIT_SECONDS.format(host=host, port=port,
                                             seconds=max(1, math.ceil(seconds)))


# --- a failure said in words ---------------------------------------------------------------

#: (phrase, words, status codes) — the first entry that matches a failure text names it.
#: Credential problems come first, as in ``classify``: a 401 text often says "connection".
_PHRASES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (texts.FAIL_AUTH, ("invalid api key", "authentication", "unauthorized"), ("401", "403")),
    (texts.NET_NO_HOST, ("enotfound", "eai_again", "getaddrinfo", "name or service not known",
                         "nodename nor servname", "name resolution"), ()),
    (texts.NET_REFUSED, ("econnrefused", "connection refused"), ()),
    (texts.NET_RESET, ("econnreset", "connection reset", "socket hang up", "epipe",
                       "econnaborted"), ()),
    (texts.NET_UNREACHABLE, ("ehostunreach", "enetunreach", "enetdown", "network is unreachable",
                             "no route to host"), ()),
    (texts.NET_TIMEOUT, ("etimedout", "timed out", "timeout", "stream idle", "no bytes for"), ()),
    (texts.FAIL_OVERLOADED, ("overloaded",), ("529",)),
    (texts.FAIL_RATE_LIMITED, ("rate limit", "too many requests"), ("429",)),
    (texts.FAIL_SERVER, ("internal server error", "bad gateway", "service unavailable"),
     ("500", "502", "503", "504")),
)
_PHRASE_CODES = [(_code_pattern(codes) if codes else None) for _, _, codes in _PHRASES]
_BY_ERRNO = {errno.ECONNREFUSED: texts.NET_REFUSED, errno.ECONNRESET: texts.NET_RESET,
             errno.EHOSTUNREACH: texts.NET_UNREACHABLE, errno.ENETUNREACH: texts.NET_UNREACHABLE,
             errno.ENETDOWN: texts.NET_UNREACHABLE, errno.ETIMEDOUT: texts.NET_TIMEOUT}


def in_words(error: BaseException | str | None) -> str:
    """A network or API failure said in the messages' language — ``连接被拒绝``, not
    ``ConnectionRefusedError: [Errno 111] Connection refused`` or the CLI's ``API Error: …
    (ECONNREFUSED)`` — on one line. What it does not recognise comes back as
    :func:`~flower.errors.one_line` of the original (a model's or tool's own words).

    Only for showing: ``StepResult.error`` keeps the original text, which ``classify``
    reads and a bug report needs."""
    if error is None:
        return ""
    if isinstance(error, BaseException):
        if isinstance(error, socket.gaierror):
            return texts.NET_NO_HOST
        if isinstance(error, TimeoutError):
            return texts.NET_TIMEOUT
        by_errno = _BY_ERRNO.get(getattr(error, "errno", None) or -1)
        if by_errno is not None:
            return by_errno
    text = one_line(error)
    low = text.lower()
    for (phrase, words, _codes), codes in zip(_PHRASES, _PHRASE_CODES, strict=True):
        if any(w in low for w in words) or (codes is not None and codes.search(low)):
            return texts.API_FAILED.format(what=phrase) if low.startswith("api error") \
                else phrase
    return text


# --- a wrong setting, told apart from an outage --------------------------------------------

#: Names that resolve wherever public DNS works: if none does, a name that does not resolve
#: says nothing about the setting (a sandbox, an offline laptop).
CONTROL_HOSTS = ("api.anthropic.com", "example.com")
Resolve = Callable[[str], list[str]]
Connect = Callable[[str, int], None]


def _resolve(host: str) -> list[str]:
    """The addresses of ``host``; ``OSError`` (``socket.gaierror``) when it does not resolve."""
    return sorted({info[4][0] for info in socket.getaddrinfo(host, None)})


def _connect(address: str, port: int) -> None:
    with socket.create_connection((address, port), timeout=2.0):
        pass


def misconfigured(base_url: str | None, *, resolve: Resolve = _resolve,
                  connect: Connect = _connect,
                  controls: tuple[str, ...] = CONTROL_HOSTS) -> str | None:
    """``"refused"`` or ``"no_host"`` when the endpoint cannot be right, else ``None``.

    Only for an endpoint that has not answered once in this run (the caller knows). Certain
    are: a loopback address that refuses the connection (nothing listens on this machine —
    no outage of a network is involved) and a host name that does not resolve while the
    ``controls`` do (DNS works, the name is wrong). Anything else may be an outage and is
    waited out. ``resolve`` and ``connect`` are seams for tests. Blocking: run it in a thread.
    """
    host, port = endpoint(base_url)
    try:
        addresses = resolve(host)
    except OSError:
        for control in controls:
            try:
                if resolve(control):
                    return "no_host"
            except OSError:
                continue
        return None
    try:
        loopback = bool(addresses) and all(
            ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)
    except ValueError:
        return None
    if not loopback:
        return None
    try:
        connect(addresses[0], port)
    except ConnectionRefusedError:
        return "refused"
    except OSError:
        return None
    return None


@dataclass
class Resilience:
    """Retry policy of one Runtime; defaults from the design (seed 003)."""

    enabled: bool = True
    max_attempts: int = 6
    base_delay: float = 4.0
    max_delay: float = 120.0
    probe_timeout: float = 5.0
    probe_interval: float = 15.0
    max_offline_wait: float = 3600.0
    retry_unknown: bool = True
    resume_prompt: str = texts.RESUME_PROMPT
    cli_max_retries: int = 2
    cli_api_timeout_ms: int = 300_000
    cli_stream_idle_timeout_ms: int = 120_000

    def delay_for(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        """Backoff before retry ``attempt`` (1-based), ±25 % jitter so that many processes
        do not all rush back the moment the network returns."""
        base = min(self.base_delay * 2 ** max(attempt - 1, 0), self.max_delay)
        return base * (0.75 + rand() * 0.5)

    def should_retry(self, kind: str) -> bool:
        return kind == "transient" or (kind == "unknown" and self.retry_unknown)

    def cli_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """Retry/timeout bounds for the agent subprocess, minus anything the user set."""
        if not self.enabled:
            return {}
        env = os.environ if environ is None else environ
        wanted = {
            "CLAUDE_CODE_MAX_RETRIES": str(self.cli_max_retries),
            "API_TIMEOUT_MS": str(self.cli_api_timeout_ms),
            "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS": str(self.cli_stream_idle_timeout_ms),
        }
        return {k: v for k, v in wanted.items() if k not in env}

    async def wait_online(self, notify: Callable[[str], Any] | None = None, *,
                          stop: Callable[[], bool] | None = None,
                          base_url: str | None = None) -> bool:
        """Block until the endpoint answers (True) or ``max_offline_wait`` passes (False).

        Exactly one notice when it is first found unreachable and one on recovery — an hour
        of probing every 15 s must not flood the screen. ``stop()`` turning true (a human
        interrupt is waiting) ends the wait early with False; the caller checks why.
        ``base_url`` is the endpoint to probe (default: ``ANTHROPIC_BASE_URL``).
        """
        host, port = endpoint(base_url)
        if await reachable(host, port, self.probe_timeout):
            return True
        await _say(notify, _span(self.max_offline_wait, host, port))
        deadline = time.monotonic() + self.max_offline_wait
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if not await nap(min(self.probe_interval, remaining), stop):
                return False
            if await reachable(host, port, self.probe_timeout):
                await _say(notify, texts.ONLINE_AGAIN.format(host=host, port=port))
                return True


async def nap(seconds: float, stop: Callable[[], bool] | None = None,
              tick: float = 0.1) -> bool:
    """Sleep ``seconds``; with ``stop``, wake within ``tick`` once it turns true. Returns
    False when ``stop`` cut the sleep short."""
    import anyio

    if stop is None:
        await anyio.sleep(seconds)
        return True
    deadline = time.monotonic() + seconds
    while not stop():
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        await anyio.sleep(min(tick, left))
    return False


async def _say(notify: Callable[[str], Any] | None, line: str) -> None:
    if notify is None:
        return
    out = notify(line)
    if hasattr(out, "__await__"):  # an async notify callback
        await out

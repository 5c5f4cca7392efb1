"""``FakeServer``: a scripted stand-in for the Anthropic Messages API, for the real CLI.

Runs a stdlib ``ThreadingHTTPServer`` in a daemon thread on loopback. Each ``POST
/v1/messages`` pops one step (routes first, then the default queue) and plays it as SSE or
JSON depending on the request's ``stream`` flag. Everything received is recorded so tests can
assert on what the model saw. Client disconnects are normal here (cuts, timeouts, outages),
so they are swallowed instead of printing tracebacks.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from http.server import ThreadingHTTPServer
from typing import Any

from flower.testing.handler import DEFAULT_MODEL, Handler
from flower.testing.match import Predicate
from flower.testing.request import Request
from flower.testing.script import Cut, Delay, Fault, Reply, SseError, Stall, Step

# Steps a script puts in a retry's way on purpose: they are played even when the request
# repeats one already answered (every other step waits for a new turn).
_FAULTS = (Fault, SseError, Cut, Stall, Delay)
# A reply as played: model, content blocks (tool ids filled in), stop reason, usage, output
Answer = tuple[str, list[dict[str, Any]], str, dict[str, int], int]


class Route:
    """A queue of steps served only to requests matching ``predicate``."""

    def __init__(self, predicate: Predicate | None, steps: Iterable[Step] = (),
                 name: str | None = None) -> None:
        self.predicate = predicate
        self.name = name
        self.queue: deque[Step] = deque(steps)
        self.hits = 0  # steps popped from this route

    @property
    def remaining(self) -> int:
        return len(self.queue)

    def __repr__(self) -> str:
        return f"Route({self.name!r}, remaining={self.remaining}, hits={self.hits})"


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # socketserver's default 5 resets bursts of parallel clients
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: disconnects are expected; anything else is kept for inspection."""
        import sys
        import traceback

        exc = sys.exc_info()[1]
        if not isinstance(exc, (OSError, ValueError)):
            self.fake.errors.append("".join(traceback.format_exc()))


class FakeServer:
    """Scripted fake Anthropic API. See docs/testing.md."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1",
                 on_request: Callable[[Request], None] | None = None, *,
                 auxiliary: bool = True, strict: bool = True) -> None:
        self.host = host
        self.port = port
        self.on_request = on_request
        # answer the CLI's title/quota requests and flower's probe without a step
        # (flower/testing/auxiliary.py); False scripts them like any other request
        self.auxiliary = auxiliary
        # refuse a turn the real API would refuse (flower/testing/rules.py), as it does: 400
        self.strict = strict
        self.rejected: list[Request] = []  # refused turns; ``Request.rejected`` says why
        # what each turn was answered with, by conversation: a retry gets the same answer
        self._answers: dict[bytes, Answer] = {}
        self.errors: list[str] = []  # unexpected handler/predicate errors (never raised)
        self.exhausted = 0  # message requests answered because no step was available
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._default = Route(None, name="default")
        self._routes: list[Route] = []
        self._fallback: Step | None = None
        self._requests: list[Request] = []
        self._counters = {"msg": 0, "tool": 0, "req": 0}
        self._httpd: _HTTPServer | None = None
        self._conns: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._down = False
        self._timer: threading.Timer | None = None
        self._life = threading.Lock()  # serializes start/stop/outage/recover
        self._generation = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeServer:
        with self._life:
            self._stopping.clear()
            self._down = False
            self._serve()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._life:
            if self._timer:
                self._timer.cancel()
                self._timer = None
            self._close_listener()
            self._drop_connections()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _serve(self) -> None:
        last: OSError | None = None
        for _ in range(50):  # the same port may linger briefly after an outage
            try:
                httpd = _HTTPServer((self.host, self.port), Handler)
                break
            except OSError as e:
                last = e
                time.sleep(0.05)
        else:
            raise last or OSError("cannot bind")
        httpd.fake = self
        self.port = httpd.server_address[1]
        with self._lock:
            self._httpd = httpd
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         name=f"fake-api:{self.port}", daemon=True).start()

    def _close_listener(self) -> None:
        with self._lock:
            httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()

    def _drop_connections(self) -> None:
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def outage(self, seconds: float | None = None) -> None:
        """Refuse connections now (listening socket closed ⇒ ECONNREFUSED) and drop open
        ones. ``seconds`` ⇒ recover automatically on the same port."""
        with self._life:
            with self._lock:
                self._down = True
                self._generation += 1
                if self._timer:
                    self._timer.cancel()
                    self._timer = None
            self._close_listener()
            self._drop_connections()
            if seconds is not None:
                t = threading.Timer(seconds, self._recover, args=(self._generation,))
                t.daemon = True
                self._timer = t
                t.start()

    def recover(self) -> None:
        """Listen again on the same port."""
        self._recover(None)

    def _recover(self, generation: int | None) -> None:
        # A timer armed by an earlier outage must not end a newer one.
        with self._life:
            if not self._down or self._stopping.is_set():
                return
            if generation is not None and generation != self._generation:
                return
            if self._timer:
                self._timer.cancel()
                self._timer = None
            self._serve()
            self._down = False

    @property
    def down(self) -> bool:
        return self._down

    # ------------------------------------------------------------------ scripting
    def script(self, *steps: Step) -> FakeServer:
        """Append steps to the default queue."""
        with self._lock:
            self._default.queue.extend(steps)
        return self

    def route(self, predicate: Predicate, *steps: Step, name: str | None = None) -> Route:
        """Add a routed queue (tried in order before the default queue; skipped when empty).
        Reusing a ``name`` appends to that route."""
        with self._lock:
            for r in self._routes:
                if name is not None and r.name == name:
                    r.queue.extend(steps)
                    return r
            r = Route(predicate, steps, name)
            self._routes.append(r)
            return r

    def fallback(self, step: Step | None) -> None:
        """A step (typically a callable) played, never consumed, when no queue has a step.
        It does not count as ``exhausted``."""
        with self._lock:
            self._fallback = step

    def load(self, script: dict[str, Any]) -> FakeServer:
        """Apply a JSON-format script (``steps``, ``routes``, ``fallback``; docs/testing.md)."""
        from flower.testing import match
        from flower.testing.script import step_from_json

        for route in script.get("routes", []):
            self.route(match.from_json(route.get("match", {})),
                       *[step_from_json(s) for s in route.get("steps", [])],
                       name=route.get("name"))
        self.script(*[step_from_json(s) for s in script.get("steps", [])])
        if script.get("fallback") is not None:
            self.fallback(step_from_json(script["fallback"]))
        return self

    def remaining(self) -> int:
        """Steps not yet played, across all queues."""
        with self._lock:
            return self._default.remaining + sum(r.remaining for r in self._routes)

    @property
    def routes(self) -> list[Route]:
        with self._lock:
            return list(self._routes)

    def reset(self) -> None:
        """Forget scripts, routes and recordings (the server keeps running)."""
        with self._lock:
            self._default.queue.clear()
            self._routes.clear()
            self._fallback = None
            self._requests.clear()
            self.rejected.clear()
            self._answers.clear()
            self.exhausted = 0

    def _queue_for(self, req: Request) -> Route | None:
        """The queue the next step for ``req`` comes from (None: every queue is empty)."""
        for r in self._routes:
            if not r.queue:
                continue
            try:
                hit = bool(r.predicate(req)) if r.predicate else True
            except Exception as e:  # a buggy predicate must not kill the server
                self.errors.append(f"route {r.name!r} predicate raised {e!r}")
                hit = False
            if hit:
                return r
        return self._default if self._default.queue else None

    def _next_step(self, req: Request) -> tuple[Step | None, Route | None]:
        with self._lock:
            route = self._queue_for(req)
            if req.extra.get("retry_of") and (
                    route is None or not isinstance(route.queue[0], _FAULTS)):
                req.extra["answered_again"] = True  # no fault scripted for this repeat
                return None, None
            if route is not None:
                route.hits += 1
                return route.queue.popleft(), route
            if self._fallback is not None:
                return self._fallback, None
            self.exhausted += 1
            req.extra["exhausted"] = True
            return None, None

    # ------------------------------------------------------------------ retries
    @staticmethod
    def conversation_key(req: Request) -> bytes:
        """What makes two requests the same turn: one session, one agent, the same
        messages. A retry after a timeout, a dropped stream or a refused request repeats
        them (its ``stream``, ``max_tokens`` or tool list may differ: the CLI's non-streaming
        fallback and its degraded re-sends change those)."""
        convo = json.dumps([req.session_id, req.agent_id, req.messages], sort_keys=True,
                           ensure_ascii=False)
        return hashlib.sha256(convo.encode()).digest()

    def _earlier_answer(self, req: Request) -> Answer | None:
        """Key ``req`` as a turn (``req.turn``) and return the answer an earlier request of
        that turn got in full, marking ``req`` a retry (``extra["retry_of"]``) when one did."""
        req.turn = self.conversation_key(req)
        with self._lock:
            answer = self._answers.get(req.turn)
        if answer is not None:
            req.extra["retry_of"] = True
        return answer

    def _remember(self, req: Request, answer: Answer) -> None:
        """Keep the answer a scripted turn got in full (auxiliary answers are no turn's)."""
        if req.turn is not None:
            with self._lock:
                self._answers[req.turn] = answer

    def _push_front(self, route: Route | None, step: Step | None) -> None:
        if route is not None and step is not None:
            with self._lock:
                route.queue.appendleft(step)

    def _next_id(self, kind: str) -> int:
        with self._lock:
            self._counters[kind] += 1
            return self._counters[kind]

    # ------------------------------------------------------------------ recording
    def _record(self, req: Request) -> None:
        with self._cond:
            req.index = len(self._requests)
            self._requests.append(req)
            self._cond.notify_all()
        if self.on_request:
            try:
                self.on_request(req)
            except Exception as e:
                self.errors.append(f"on_request raised {e!r}")

    @property
    def requests(self) -> list[Request]:
        """Snapshot of every request received (all paths and methods)."""
        with self._lock:
            return list(self._requests)

    def message_requests(self, session_id: str | None = None, *,
                         auxiliary: bool = False, rejected: bool = False) -> list[Request]:
        """Only model turns (``POST /v1/messages``), optionally for one session. The
        requests the fake answered on its own (a title, a probe) are left out unless
        ``auxiliary=True``, and those it refused as the API would unless ``rejected=True``:
        neither is a turn of the script."""
        return [r for r in self.requests if r.is_message
                and (auxiliary or not r.auxiliary)
                and (rejected or not r.rejected)
                and (session_id is None or r.session_id == session_id)]

    def auxiliary_requests(self) -> list[Request]:
        """The requests the fake answered on its own, oldest first (``Request.auxiliary``
        says which kind each was)."""
        return [r for r in self.requests if r.auxiliary]

    def last_request(self, session_id: str | None = None) -> Request | None:
        """The newest model turn (optionally for one session), or None."""
        reqs = self.message_requests(session_id)
        return reqs[-1] if reqs else None

    def wait_for(self, predicate: Callable[[Request], bool] | None = None, count: int = 1,
                 timeout: float = 10.0) -> list[Request]:
        """Block until ``count`` model turns matching ``predicate`` were recorded; returns
        them. Raises TimeoutError — a condition to wait on instead of sleeping."""
        deadline = time.monotonic() + timeout

        def matching() -> list[Request]:
            return [r for r in self._requests if r.is_message and not r.auxiliary
                    and not r.rejected and (predicate is None or predicate(r))]

        with self._cond:
            while len(found := matching()) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(found)}/{count} matching requests after {timeout}s")
                self._cond.wait(left)
            return found

    # ------------------------------------------------------------------ playing
    def _usage(self, req: Request, step: Reply) -> tuple[dict[str, int], int]:
        usage = {"input_tokens": max(1, len(req.raw) // 4),
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        over = dict(step.usage or {})
        out = over.pop("output_tokens", None)
        usage.update(over)
        if out is None:
            out = max(1, len(json.dumps(step.blocks)) // 4)
        return usage, int(out)

    def _materialize(self, req: Request, step: Reply) -> tuple[str, str, list[dict], str,
                                                               dict[str, int], int]:
        blocks = []
        for b in step.blocks:
            b = dict(b)
            if b["type"] == "tool_use" and not b.get("id"):
                b["id"] = f"toolu_fake_{self._next_id('tool')}"
            blocks.append(b)
        msg_id = f"msg_fake_{self._next_id('msg')}"
        model = step.model or req.model or DEFAULT_MODEL
        usage, out = self._usage(req, step)
        return msg_id, model, blocks, step.effective_stop_reason, usage, out

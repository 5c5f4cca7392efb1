"""``FakeServer``: a scripted stand-in for the Anthropic Messages API, for the real CLI.

Runs a stdlib ``ThreadingHTTPServer`` in a daemon thread on loopback. Each ``POST
/v1/messages`` pops one step (routes first, then the default queue) and plays it as SSE or
JSON depending on the request's ``stream`` flag. Everything received is recorded so tests can
assert on what the model saw. Client disconnects are normal here (cuts, timeouts, outages),
so they are swallowed instead of printing tracebacks.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from flower.testing import sse
from flower.testing.match import Predicate
from flower.testing.request import Headers, Request
from flower.testing.script import (
    EXHAUSTED_TEXT,
    STATUS_FOR_TYPE,
    Cut,
    Delay,
    Fault,
    Reply,
    SseError,
    Stall,
    Step,
    reply,
    resolve,
)

DEFAULT_MODEL = "claude-opus-5-5"
DEFAULT_TEXT = "(fake reply)"  # inner step of cut()/stall()/delay() when none is given


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
                 on_request: Callable[[Request], None] | None = None) -> None:
        self.host = host
        self.port = port
        self.on_request = on_request
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

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeServer:
        self._stopping.clear()
        self._serve()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            if self._timer:
                self._timer.cancel()
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
                httpd = _HTTPServer((self.host, self.port), _Handler)
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
        with self._lock:
            self._down = True
            if self._timer:
                self._timer.cancel()
                self._timer = None
        self._close_listener()
        self._drop_connections()
        if seconds is not None:
            t = threading.Timer(seconds, self.recover)
            t.daemon = True
            with self._lock:
                self._timer = t
            t.start()

    def recover(self) -> None:
        """Listen again on the same port."""
        with self._lock:
            if not self._down or self._stopping.is_set():
                return
            if self._timer and self._timer is not threading.current_thread():
                self._timer.cancel()
            self._timer = None
        self._serve()
        with self._lock:
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
            self.exhausted = 0

    def _next_step(self, req: Request) -> tuple[Step | None, Route | None]:
        with self._lock:
            for r in self._routes:
                if not r.queue:
                    continue
                try:
                    hit = bool(r.predicate(req)) if r.predicate else True
                except Exception as e:  # a buggy predicate must not kill the server
                    self.errors.append(f"route {r.name!r} predicate raised {e!r}")
                    hit = False
                if hit:
                    r.hits += 1
                    return r.queue.popleft(), r
            if self._default.queue:
                self._default.hits += 1
                return self._default.queue.popleft(), self._default
            if self._fallback is not None:
                return self._fallback, None
            self.exhausted += 1
            req.extra["exhausted"] = True
            return None, None

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

    def message_requests(self, session_id: str | None = None) -> list[Request]:
        """Only model turns (``POST /v1/messages``), optionally for one session."""
        return [r for r in self.requests if r.is_message
                and (session_id is None or r.session_id == session_id)]

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
            return [r for r in self._requests if r.is_message
                    and (predicate is None or predicate(r))]

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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "flower-fake-anthropic/0.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    @property
    def fake(self) -> FakeServer:
        return self.server.fake

    def handle(self) -> None:
        with self.fake._lock:
            self.fake._conns.add(self.connection)
        try:
            super().handle()
        except (OSError, ValueError):
            pass  # the client went away, or an outage/stop shut the socket
        finally:
            with self.fake._lock:
                self.fake._conns.discard(self.connection)

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET

    # ---------------------------------------------------------------- plumbing
    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            raw = b"".join(parts)
        else:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        enc = self.headers.get("content-encoding", "").lower()
        if enc in ("gzip", "deflate") and raw:
            raw = zlib.decompress(raw, 47 if enc == "gzip" else 15)
        return raw

    def _abort(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _gone_within(self, seconds: float | None) -> bool:
        """Wait up to ``seconds`` (None = forever) for the client to hang up or the server to
        stop/go down. True if the connection is gone (or must be treated so)."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            if self.fake._stopping.is_set() or self.fake._down:
                return True
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                return False
            try:
                r, _, _ = select.select([self.connection], [], [], left)
                if r and not self.connection.recv(4096):
                    return True
            except (OSError, ValueError):
                return True

    def _headers(self, status: int, ctype: str, length: int | None,
                 extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("request-id", f"req_fake_{self.fake._next_id('req')}")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if length is None:
            self.send_header("transfer-encoding", "chunked")
            self.send_header("cache-control", "no-cache")
        else:
            self.send_header("content-length", str(length))
        self.end_headers()

    def _json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self._headers(status, "application/json", len(data), extra)
        if self.command != "HEAD":
            self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # ---------------------------------------------------------------- routing
    def _dispatch(self) -> None:
        fake = self.fake
        if fake._down:
            self._abort()
            return
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        parts = urlsplit(self.path)
        req = Request(
            method=self.command, path=parts.path, query=dict(parse_qsl(parts.query)),
            headers=Headers(list(self.headers.items())), raw=raw, body=body, time=time.time(),
        )
        fake._record(req)
        path = parts.path.rstrip("/")
        if self.command == "POST" and path.endswith("/v1/messages"):
            step, route = fake._next_step(req)
            self._play(req, step, route)
        elif self.command == "POST" and path.endswith("/v1/messages/count_tokens"):
            self._json(200, {"input_tokens": max(1, len(raw) // 4)})
        elif self.command in ("GET", "HEAD") and path in ("", "/api/hello", "/health"):
            self._json(200, {"ok": True})
        else:
            self._json(404, sse.error_body("not_found_error", f"fake: no route {parts.path}"))

    # ---------------------------------------------------------------- steps
    def _play(self, req: Request, step: Step | None, route: Route | None) -> None:
        fake = self.fake
        try:
            concrete = resolve(step, req)
        except Exception as e:  # a broken callable step: answer 500 rather than hang
            fake.errors.append(f"callable step raised {e!r}")
            concrete = Fault(500, f"fake: callable step raised {e!r}")
        if concrete is None:
            if step is not None:  # a callable chose "nothing"
                fake.exhausted += 1
                req.extra["exhausted"] = True
            concrete = reply(EXHAUSTED_TEXT)
        req.extra["step"] = type(concrete).__name__
        if isinstance(concrete, Reply):
            self._reply(req, concrete)
        elif isinstance(concrete, Fault):
            extra = dict(concrete.headers)
            if concrete.retry_after is not None:
                extra["retry-after"] = f"{concrete.retry_after:g}"
            self._json(concrete.status, sse.error_body(concrete.type, concrete.text), extra)
        elif isinstance(concrete, SseError):
            if req.stream:
                self._headers(200, "text/event-stream", None)
                self._chunk(sse.encode(*sse.message_start(
                    f"msg_fake_{fake._next_id('msg')}", req.model or DEFAULT_MODEL,
                    {"input_tokens": max(1, len(req.raw) // 4)})))
                self._chunk(sse.encode("error", sse.error_body(concrete.error_type,
                                                                concrete.message)))
                self._end_chunks()
            else:
                status = STATUS_FOR_TYPE.get(concrete.error_type, 500)
                self._json(status, sse.error_body(concrete.error_type, concrete.message))
        elif isinstance(concrete, Delay):
            if self._gone_within(concrete.seconds):
                self._abort()
                return
            self._play(req, concrete.step or reply(DEFAULT_TEXT), None)
        elif isinstance(concrete, Cut):
            self._partial(req, concrete.step, concrete.after, stall=False)
            if concrete.replay:
                fake._push_front(route, concrete.step or reply(DEFAULT_TEXT))
        elif isinstance(concrete, Stall):
            self._partial(req, concrete.step, concrete.after, stall=True)

    def _reply(self, req: Request, step: Reply) -> None:
        msg_id, model, blocks, stop, usage, out = self.fake._materialize(req, step)
        if req.stream:
            self._headers(200, "text/event-stream", None)
            for name, data in sse.stream_events(msg_id, model, blocks, stop, usage, out):
                self._chunk(sse.encode(name, data))
            self._end_chunks()
        else:
            self._json(200, sse.message_json(msg_id, model, blocks, stop, usage, out))

    def _partial(self, req: Request, inner: Step | None, after: int, stall: bool) -> None:
        """Deliver the first ``after`` events (or half the JSON body), then drop or go silent."""
        concrete = resolve(inner, req) if inner is not None else reply(DEFAULT_TEXT)
        if not isinstance(concrete, Reply):
            concrete = reply(DEFAULT_TEXT)
        msg_id, model, blocks, stop, usage, out = self.fake._materialize(req, concrete)
        if req.stream:
            self._headers(200, "text/event-stream", None)
            events = sse.stream_events(msg_id, model, blocks, stop, usage, out)
            for name, data in events[:max(0, after)]:
                self._chunk(sse.encode(name, data))
        else:
            data = json.dumps(sse.message_json(msg_id, model, blocks, stop, usage, out)).encode()
            self._headers(200, "application/json", len(data))
            if not stall:
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
        if stall:
            self._gone_within(None)
        self._abort()

"""The HTTP side of ``FakeServer``: parse a request, record it, play the popped step.

Kept apart from ``server.py`` so the wire behaviour of each step (SSE, JSON, cut, stall…)
reads in one place. Client disconnects are normal here and are swallowed.
"""

from __future__ import annotations

import json
import select
import socket
import time
import zlib
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from flower.testing import auxiliary, rules, sse
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

if TYPE_CHECKING:
    from flower.testing.server import FakeServer, Route, _HTTPServer

DEFAULT_MODEL = "claude-opus-5-5"
DEFAULT_TEXT = "(fake reply)"  # inner step of cut()/stall()/delay() when none is given


class Handler(BaseHTTPRequestHandler):
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
        path = parts.path.rstrip("/")
        aside = None
        refused: list[str] = []
        again = None
        if fake.auxiliary and req.is_message:  # marked before a waiter can see it
            aside = auxiliary.kind(req)
            if aside is not None:
                req.extra["auxiliary"] = aside
        if req.is_message and aside is None:
            refused = rules.violations(body) if fake.strict else []
            if refused:
                req.extra["rejected"] = refused[0]
            else:
                again = fake._earlier_answer(req)
        fake._record(req)
        if self.command == "POST" and path.endswith("/v1/messages"):
            if aside is not None:  # the CLI's or flower's own request: no step for it
                self._play(req, auxiliary.answer(aside), None)
                return
            if refused:  # as the API answers it: no step is spent on a refused turn
                with fake._lock:
                    fake.rejected.append(req)
                self._json(400, sse.error_body("invalid_request_error", refused[0]))
                return
            step, route = fake._next_step(req)
            if again is not None and req.extra.get("answered_again"):
                req.extra["step"] = "Reply"
                self._send(req, f"msg_fake_{fake._next_id('msg')}", *again)
                return
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
                with fake._lock:
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
            if concrete.replay:  # re-queued *before* the cut: the client's retry may be
                # on the wire the instant the connection drops
                fake._push_front(route, concrete.step or reply(DEFAULT_TEXT))
            self._partial(req, concrete.step, concrete.after, stall=False)
        elif isinstance(concrete, Stall):
            self._partial(req, concrete.step, concrete.after, stall=True)

    def _reply(self, req: Request, step: Reply) -> None:
        msg_id, model, blocks, stop, usage, out = self.fake._materialize(req, step)
        self._send(req, msg_id, model, blocks, stop, usage, out)
        if not req.extra.get("exhausted"):  # delivered in full: a retry gets it again
            self.fake._remember(req, (model, blocks, stop, usage, out))

    def _send(self, req: Request, msg_id: str, model: str, blocks: list[dict[str, Any]],
              stop: str, usage: dict[str, int], out: int) -> None:
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

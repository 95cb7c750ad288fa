"""A small scriptable HTTP/1.1 server on 127.0.0.1 for tests: routes, recorded requests, scripted replies.

It is a real server (`ThreadingHTTPServer` in a background thread, keep-alive, Content-Length
framing), so clients under test go through their real HTTP stack. Subclasses describe an API by
returning `Route`s from `routes()`; tests then

* read `server.requests` (every request, in arrival order, with lower-cased headers and raw body);
* `server.enqueue(...)` replies that pre-empt the routes for the next matching requests: a `Reply`,
  or a `Responder` (a function of the request, e.g. "the normal answer, but with one vector less");
* script a `Reply(stall=True)` to hold a request until the server closes (client timeouts).

Nothing here sleeps to synchronise: a stalled request waits on an event that `close()` sets, and
`close()` shuts every open connection down and joins its thread, so no test leaves threads behind.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import traceback
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

import orjson

POLL_INTERVAL_S = 0.01
"""How often the serving thread checks for shutdown: bounds how long close() takes."""
STALL_LIMIT_S = 30.0
"""Longest a stalled request is held if the test never closes the server (a safety net only)."""


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server saw it."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    """Header names lower-cased."""
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass(frozen=True, slots=True)
class Reply:
    """What the server answers. `stall` holds the answer until the server closes."""

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    stall: bool = False

    @classmethod
    def json(cls, payload: object, status: int = 200, headers: Sequence[tuple[str, str]] = ()) -> Reply:
        return cls(status, orjson.dumps(payload), (("Content-Type", "application/json"), *headers))

    @classmethod
    def text(cls, text: str, status: int = 200, headers: Sequence[tuple[str, str]] = ()) -> Reply:
        return cls(status, text.encode(), (("Content-Type", "text/plain; charset=utf-8"), *headers))


Responder = Callable[[RecordedRequest], Reply]
Scripted = Reply | Responder
Handler = Callable[[RecordedRequest, "re.Match[str]"], Reply]


@dataclass(frozen=True, slots=True)
class Route:
    """`pattern` must match the whole request path; its groups reach the handler."""

    method: str
    pattern: str
    handler: Handler

    def match(self, request: RecordedRequest) -> re.Match[str] | None:
        return re.fullmatch(self.pattern, request.path) if request.method == self.method else None


@dataclass(slots=True)
class _Script:
    reply: Scripted
    path: str | None = None


class FakeHTTPServer:
    """Base of the fakes. Use as a context manager, or call `start()` and `close()`."""

    api_prefix = ""
    """Path prefix of the API; `base_url` = root URL + prefix."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._scripts: deque[_Script] = deque()
        self._release = threading.Event()
        self._failures: list[str] = []
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(POLL_INTERVAL_S,), name=type(self).__name__, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Release stalled requests, stop serving, drop open connections, join every thread."""
        self._release.set()
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.drop_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def root_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        return self.root_url + self.api_prefix

    # -- what tests use ----------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path_part: str) -> list[RecordedRequest]:
        """Requests whose path contains `path_part`."""
        return [r for r in self.requests if path_part in r.path]

    @property
    def failures(self) -> list[str]:
        """Tracebacks of exceptions raised inside the fake itself (answered as HTTP 500)."""
        with self._lock:
            return list(self._failures)

    def enqueue(self, *replies: Scripted, path: str | None = None) -> None:
        """Answer the next requests (whose path contains `path`, if given) with `replies`, in order."""
        with self._lock:
            self._scripts.extend(_Script(r, path) for r in replies)

    def stall(self) -> Reply:
        return Reply(stall=True)

    # -- for subclasses ----------------------------------------------------------------------

    def routes(self) -> list[Route]:
        """The API. Extend with `[*super().routes(), Route(...)]`."""
        return []

    def authorize(self, request: RecordedRequest) -> Reply | None:
        """An error reply when the request's credentials are wrong; None to let it through."""
        return None

    def not_found(self, request: RecordedRequest) -> Reply:
        return Reply.text("404 page not found", 404)

    def dispatch(self, request: RecordedRequest) -> Reply:
        """The unscripted answer: credentials, then the first matching route."""
        denied = self.authorize(request)
        if denied is not None:
            return denied
        for route in self.routes():
            match = route.match(request)
            if match is not None:
                return route.handler(request, match)
        return self.not_found(request)

    # -- called by the request threads -------------------------------------------------------

    def _handle(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
            script = next((s for s in self._scripts if s.path is None or s.path in request.path), None)
            if script is not None:
                self._scripts.remove(script)
        try:
            if script is None:
                reply = self.dispatch(request)
            else:
                reply = script.reply if isinstance(script.reply, Reply) else script.reply(request)
        except Exception:
            with self._lock:
                self._failures.append(traceback.format_exc())
            return Reply.text(traceback.format_exc(), 500)
        if reply.stall:
            self._release.wait(STALL_LIMIT_S)
        return reply


class _Server(ThreadingHTTPServer):
    """Tracks open connections so that close() can end keep-alive threads at once."""

    fake: FakeHTTPServer

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (after its own timeout) is expected; stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=split.path,
            query=dict(parse_qsl(split.query)),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        reply = self.server.fake._handle(request)
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

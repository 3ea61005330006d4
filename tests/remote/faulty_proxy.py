"""A small HTTP proxy on loopback that forwards to a SPARQL server, or fails on purpose.

Each request is counted (method, path, headers) before any fault applies, so a test can tell how
many attempts a client made. A fault applies to requests whose path matches, after the first
`after` of them have passed, for `times` requests (all, when None), and (with `marker`) only
to queries whose text contains the marker. A `hold` fault keeps each matching request waiting
until `release()`, and counts it in `held` as it starts waiting, so a test knows when the
client is stuck on it.
"""

from __future__ import annotations

import http.client
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal
from urllib.parse import parse_qs

Kind = Literal["status", "delay", "truncate", "malformed", "close", "hold"]


@dataclass
class Fault:
    kind: Kind
    status: int = 503
    body: bytes = b""
    delay: float = 0.0
    paths: tuple[str, ...] | None = None
    after: int = 0
    times: int | None = None
    marker: str | None = None


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class FaultyProxy:
    """Forwards to `upstream` (host, port); `fault` (when set) decides what goes wrong."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.fault: Fault | None = None
        self.seen: list[Seen] = []
        self._matched = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._released = threading.Event()
        self.held = threading.Semaphore(0)
        """Released once for each request a `hold` fault starts holding."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def inject(self, fault: Fault | None) -> None:
        with self._lock:
            self.fault = fault
            self._matched = 0
            self._released.clear()
            self.seen.clear()

    def release(self) -> None:
        """Let every held request (and any to come) through."""
        self._released.set()

    def count(self, path: str | None = None) -> int:
        return sum(1 for seen in self.seen if path is None or seen.path == path)

    def stop(self) -> None:
        self._stopping.set()
        self._released.set()
        self._server.shutdown()
        self._server.server_close()

    def _fault_for(self, seen: Seen) -> Fault | None:
        with self._lock:
            self.seen.append(seen)
            fault = self.fault
            if fault is None or (fault.paths is not None and seen.path not in fault.paths):
                return None
            if fault.marker is not None and fault.marker not in _query_text(seen):
                return None
            self._matched += 1
            index = self._matched - fault.after
            if index <= 0 or (fault.times is not None and index > fault.times):
                return None
            return fault


def _handler(proxy: FaultyProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: object) -> None:
            pass

        def do_GET(self) -> None:
            self._handle()

        def do_POST(self) -> None:
            self._handle()

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0]
            seen = Seen(self.command, path, dict(self.headers.items()), body)
            fault = proxy._fault_for(seen)
            try:
                self._respond(fault, body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first, as a timing-out client should
            self.close_connection = True

        def _respond(self, fault: Fault | None, body: bytes) -> None:
            if fault is not None and fault.kind == "close":
                return
            if fault is not None and fault.kind == "status":
                self._send(fault.status, "text/plain", fault.body)
                return
            if fault is not None and fault.kind == "delay":
                if proxy._stopping.wait(fault.delay):
                    return
            if fault is not None and fault.kind == "hold":
                proxy.held.release()
                proxy._released.wait()
                if proxy._stopping.is_set():
                    return
            status, content_type, data = self._forward(body)
            if fault is not None and fault.kind == "malformed":
                self._send(200, content_type, fault.body)
            elif fault is not None and fault.kind == "truncate":
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
            else:
                self._send(status, content_type, data)

        def _forward(self, body: bytes) -> tuple[int, str, bytes]:
            connection = http.client.HTTPConnection(*proxy.upstream, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
            try:
                connection.request(self.command, self.path, body=body or None, headers=headers)
                response = connection.getresponse()
                return (response.status, response.getheader("Content-Type") or "text/plain",
                        response.read())
            finally:
                connection.close()

        def _send(self, status: int, content_type: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _query_text(seen: Seen) -> str:
    """The query a protocol request carries: in the URL, the form body or a direct POST."""
    form = parse_qs(seen.body.decode("utf-8", "replace"))
    return " ".join(form.get("query", [])) or seen.body.decode("utf-8", "replace")

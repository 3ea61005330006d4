"""A scripted stand-in for an OpenAI-compatible chat server, on 127.0.0.1, for tests.

Tests queue replies (one per chat call, in order) and read back every request the server got.
A reply can be plain text or a list of stream deltas, an HTTP error, malformed JSON, a
stream that is cut off mid-way, or one the model ended at its token limit. Each request records
how many replies still held for earlier requests had their client connected when it came in,
which tells whether a retry hung up on the request it abandoned. A reply may also be a function of the request body, for tests
that must answer with ids only known once the prompt has been sent.
"""

from __future__ import annotations

import json
import re
import select
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Reply:
    content: str | Sequence[str] = ""
    """The answer text, or the deltas a stream sends (joined when not streamed)."""
    model: str = "fake-model"
    prompt_tokens: int = 11
    completion_tokens: int = 7
    status: int = 200
    """Anything but 200 sends an OpenAI-style error body with this status."""
    error_message: str = "scripted failure"
    malformed: bool = False
    """Send a body (or, streamed, a data line) that is not JSON."""
    cut_after: int | None = None
    """Streamed: after this many deltas, send half an HTTP chunk and close the connection."""
    held: threading.Event | None = None
    """Send nothing until the test sets this: an LLM still thinking, for as long as a test
    needs to look at what happened meanwhile."""
    paced: threading.Semaphore | None = None
    """Streamed: each delta waits for one release, so a test drives the stream delta by delta."""
    finish_reason: str = "stop"
    """"length": the model stopped at max_tokens."""

    @property
    def deltas(self) -> list[str]:
        return [self.content] if isinstance(self.content, str) else list(self.content)

    @property
    def text(self) -> str:
        return "".join(self.deltas)


FACT_LINE = re.compile(r"([0-9a-f]{8}(?:-[0-9]+)?): (.*) \| (.*) \| (.*)")
"""An edge or fact line of a selection or answer prompt."""
HELD_AT_MOST = 60.0
"""Seconds a held or paced reply waits for its test before it gives up and drops the call."""
Script = Reply | Callable[[dict[str, Any]], Reply]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    held_and_connected: int = 0
    """Earlier requests whose reply was still held and whose client was still connected."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        assert self.body is not None
        return self.body["messages"]

    @property
    def user_prompt(self) -> str:
        return next(m["content"] for m in self.messages if m["role"] == "user")


@dataclass
class FakeOpenAI:
    url: str = ""
    """http://127.0.0.1:PORT (append /v1 for the OpenAI base URL)."""
    models: list[str] = field(default_factory=lambda: ["fake-model"])
    replies: list[Script] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    holding: set[socket.socket] = field(default_factory=set)
    """The connections of the requests whose reply (or its next delta) is held."""

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def script(self, *replies: Script) -> None:
        with self.lock:
            self.replies.extend(replies)

    @property
    def chat_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path == "/v1/chat/completions"]

    def _next(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            if not self.replies:
                return Reply(status=500, error_message="fake server: no scripted reply left")
            script = self.replies.pop(0)
        return script(body) if callable(script) else script


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 10

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _record(self, body: dict[str, Any] | None) -> None:
            with fake.lock:
                connected = sum(1 for held in fake.holding if not _hung_up(held))
                request = Request(self.command, self.path, dict(self.headers.items()), body,
                                  connected)
                fake.requests.append(request)

        def do_GET(self) -> None:
            self._record(None)
            if self.path != "/v1/models":
                self._not_found()
                return
            data = [
                {"id": model, "object": "model", "created": 0, "owned_by": "fake"}
                for model in fake.models
            ]
            self._json(200, {"object": "list", "data": data})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"null")
            self._record(body)
            if self.path != "/v1/chat/completions":
                self._not_found()
                return
            reply = fake._next(body)
            if reply.held is not None and not self._waiting(
                    lambda: reply.held.wait(HELD_AT_MOST)):
                self.close_connection = True  # the test never let it answer
                return
            if reply.status != 200:
                error = {"message": reply.error_message, "type": "server_error", "code": None}
                self._json(reply.status, {"error": error})
            elif body.get("stream"):
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                try:
                    self._stream(reply, include_usage)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client stopped reading: its choice
            elif reply.malformed:
                self._raw(200, b'{"id": "chatcmpl-fake", "choices": [', "application/json")
            else:
                self._json(200, _completion(reply))

        def _waiting(self, wait: Callable[[], bool]) -> bool:
            """`wait()`, with this connection counted as held meanwhile."""
            with fake.lock:
                fake.holding.add(self.connection)
            try:
                return wait()
            finally:
                with fake.lock:
                    fake.holding.discard(self.connection)

        def _not_found(self) -> None:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def _json(self, status: int, data: dict[str, Any]) -> None:
            self._raw(status, json.dumps(data).encode("utf-8"), "application/json")

        def _raw(self, status: int, payload: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, reply: Reply, include_usage: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            # Event 0 is the role event; events 1..n carry the deltas.
            for index, event in enumerate(_events(reply, include_usage)):
                if reply.cut_after is not None and index == reply.cut_after + 1:
                    # Half an HTTP chunk, then the socket closes: a transport-level break.
                    self.wfile.write(b"40\r\ndata: {\"id\": ")
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if reply.paced is not None and 0 < index <= len(reply.deltas):
                    if not self._waiting(lambda: reply.paced.acquire(timeout=HELD_AT_MOST)):
                        self.close_connection = True
                        return
                self._chunk(event)
            self._chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def _completion(reply: Reply) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": reply.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def _events(reply: Reply, include_usage: bool) -> Iterator[bytes]:
    def event(data: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(data).encode("utf-8") + b"\n\n"

    base = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": reply.model,
    }
    yield event({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    for delta in reply.deltas:
        if reply.malformed:
            yield b"data: {\"choices\": [{\"delta\": \n\n"
            continue
        choice = {"index": 0, "delta": {"content": delta}, "finish_reason": None}
        yield event({**base, "choices": [choice]})
    yield event({**base, "choices": [{"index": 0, "delta": {},
                                      "finish_reason": reply.finish_reason}]})
    if include_usage:
        usage = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
        yield event({**base, "choices": [], "usage": usage})


def prompt_facts(prompt: str) -> list[dict[str, str]]:
    """The edge or fact lines of a prompt whose labels hold no " | ", in order."""
    return [{"id": found[1], "s": found[2], "p": found[3], "o": found[4]}
            for line in prompt.split("\n") if (found := FACT_LINE.fullmatch(line))]


def _hung_up(connection: socket.socket) -> bool:
    """The client closed its end: the socket reads as ended (or is gone)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class _Server(ThreadingHTTPServer):
    """Quiet when a client hangs up mid-reply, which the tests of timeouts and retries make
    clients do on purpose; any other error is reported as the standard library does."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    server = _Server(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    host, port = server.server_address[:2]
    fake.url = f"http://{host}:{port}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-openai", daemon=True
    )
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

"""An OpenAI-compatible server that is dead in the worst way: it accepts every connection and
reads the request, then never answers. Tests wait on `requested`, set once a request is in."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest


@dataclass
class SilentServer:
    url: str = ""
    requested: threading.Event = field(default_factory=threading.Event)
    """Set once a whole request head has come in: the client is now waiting for its reply."""
    connections: list[socket.socket] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.url + "/v1"


def _serve(listener: socket.socket, server: SilentServer) -> None:
    while True:
        try:
            connection, _ = listener.accept()
        except OSError:
            return  # the listener was closed: the test is over
        server.connections.append(connection)  # kept open, never answered
        threading.Thread(target=_read_head, args=(connection, server), daemon=True).start()


def _read_head(connection: socket.socket, server: SilentServer) -> None:
    received = b""
    try:
        while b"\r\n\r\n" not in received:
            data = connection.recv(65536)
            if not data:
                return
            received += data
    except OSError:
        return
    server.requested.set()


@pytest.fixture
def silent_llm() -> Iterator[SilentServer]:
    listener = socket.create_server(("127.0.0.1", 0))
    server = SilentServer(url=f"http://127.0.0.1:{listener.getsockname()[1]}")
    thread = threading.Thread(target=_serve, args=(listener, server), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        try:
            listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() under way
        except OSError:
            pass
        listener.close()
        for connection in server.connections:
            connection.close()
        thread.join(timeout=5)

"""An Oxigraph server on a free local port, for the tests that run against a real endpoint."""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def oxigraph_server(location: Path) -> Iterator[str]:
    """The server's base URL (queries at /query, updates at /update); skips without it."""
    beside = Path(sys.executable).parent / "oxigraph"
    binary = str(beside) if beside.is_file() else shutil.which("oxigraph")
    if binary is None:
        pytest.skip("the oxigraph server binary is not installed (pip install oxigraph)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([binary, "serve", "--location", str(location),
                                "--bind", f"127.0.0.1:{port}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
                connection.request("GET", "/")
                connection.getresponse().read()
                connection.close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)

"""Real SPARQL servers for the tests, on 127.0.0.1 and stopped afterwards: what starting one
takes, shared by the test packages (the fixtures are in the conftest files).

Oxigraph server 0.5 (the `oxigraph` binary of the `oxigraph` package, in the test extra) serves
the `rdf12` dialect; the root conftest's session fixture `oxigraph` runs one for every package.
"""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from tgsparql.rdf.terms import Dialect
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.remote import RemoteStore

STARTUP_SECONDS = 120
"""The longest a server may take to answer after it starts: Virtuoso making its database on a
2-core machine shared with other work takes well over 20 s; a server that is up is used at once."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class Server:
    """A running SPARQL server: where to send queries, updates and Graph Store requests."""

    host: str
    port: int
    query_path: str
    update_path: str
    store_path: str | None
    dialect: Dialect = "rdf12"
    kg_graph: str | None = None
    clear_update: str = "DROP ALL"

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    def endpoint(self, base: str | None = None) -> Endpoint:
        """This server's endpoint, or `base`'s (a proxy in front of it)."""
        root = base or self.base
        return Endpoint(
            root + self.query_path,
            update_url=root + self.update_path,
            graph_store_url=root + self.store_path if self.store_path else None,
            dialect=self.dialect,
            kg_graph=self.kg_graph,
        )

    def store(self, base: str | None = None, **changes: Any) -> RemoteStore:
        """A RemoteStore on this server, or on `base`, with `changes` to its endpoint."""
        return RemoteStore(replace(self.endpoint(base), **changes))

    def clear(self) -> None:
        """Empty the store, so the next test starts afresh."""
        self.store().update(self.clear_update)


def oxigraph_binary() -> Path | None:
    beside = Path(sys.executable).parent / "oxigraph"
    if beside.is_file():
        return beside
    found = shutil.which("oxigraph")
    return Path(found) if found else None


def wait_until_up(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            error = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"the server exited with {process.returncode}: {error.strip()}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            connection.request("GET", "/")
            connection.getresponse().read()
            connection.close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the server did not answer on port {port} within {STARTUP_SECONDS} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def serve_oxigraph(binary: Path, location: Path, dialect: Dialect) -> Iterator[Server]:
    port = free_port()
    process = subprocess.Popen(
        [str(binary), "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until_up(process, port)
        yield Server("127.0.0.1", port, "/query", "/update", "/store", dialect)
    finally:
        stop(process)


@contextmanager
def oxigraph_server(location: Path) -> Iterator[str]:
    """A private Oxigraph server on `location`; its base URL (queries at /query, updates at
    /update). Skips the test without the binary."""
    binary = oxigraph_binary()
    if binary is None:
        pytest.skip("the oxigraph server binary is not installed (pip install oxigraph)")
    server = serve_oxigraph(binary, location, "rdf12")
    try:
        yield next(server).base
    finally:
        server.close()

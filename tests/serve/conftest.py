"""A served demo store: two answered sessions and one failed one, on a free loopback port."""

from __future__ import annotations

import datetime as dt
import json
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.resources import as_file, files
from pathlib import Path

import pytest

from tgsparql.asking.llm.base import Backend
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.data.loader import load_files
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.serve import ServerConfig, TgsparqlServer
from tgsparql.stores.store import open_store

QUESTIONS = ("Who did Marie Curie marry, and what prize did she win?",
             "Who did Marie Curie marry, and where was she born?")
FAILED_QUESTION = "What did <b>Pierre</b> & \"Marie\" discover?"
FAILED_ERROR = "the LLM timed out after 30 s"


@dataclass
class Served:
    url: str
    store: Path
    sessions: list[str]
    failed: str

    def get(self, path: str, headers: Mapping[str, str] | None = None) -> Response:
        return fetch(self.url + path, headers=headers)

    def post(self, path: str, body: bytes, content_type: str,
             headers: Mapping[str, str] | None = None) -> Response:
        return fetch(self.url + path, body, {"Content-Type": content_type, **(headers or {})})

    def recovered(self, headers: Mapping[str, str], within: float = 60.0) -> Response:
        """`ASK {}` once a worker answers it. A worker killed at the timeout is replaced by a
        fresh process, which takes its time to start on a loaded machine; until then each try
        waits up to the server's timeout for an idle worker and is refused as busy."""
        deadline = time.monotonic() + within
        while (reply := self.get("/sparql?query=ASK%20%7B%7D", headers)).status != 200:
            assert "every query worker stayed busy" in reply.text, reply.text
            assert time.monotonic() < deadline, reply.text
        return reply


@dataclass
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


def fetch(url: str, body: bytes | None = None,
          headers: Mapping[str, str] | None = None, method: str | None = None) -> Response:
    request = urllib.request.Request(url, data=body, headers=dict(headers or {}), method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return Response(reply.status, dict(reply.headers), reply.read())
    except urllib.error.HTTPError as error:
        return Response(error.code, dict(error.headers), error.read())


def build_store(path: Path) -> tuple[list[str], str]:
    """The demo KG with two answered sessions and one that failed after its session record."""
    store = open_store(path)
    with as_file(files("tgsparql.data.demo").joinpath("curie.trig")) as demo:
        assert not load_files(store, [demo]).failed
    rag = GraphRag(store, OfflineBackend())
    sessions = [list(rag.query(q))[0].explain_id or "" for q in QUESTIONS]
    ids = SessionIds.new()
    started = dt.datetime(2024, 5, 1, 9, 30, tzinfo=dt.timezone.utc)
    graph = vocab.DEFAULT_COLLECTION.graph
    store.run("record_session", graph=graph, session=ids.session, question=FAILED_QUESTION,
              started=started)
    store.run("record_failure", graph=graph, session=ids.session, error=FAILED_ERROR,
              ended=started + dt.timedelta(seconds=30), started=started)
    store.close()
    return sessions, ids.session.value


@contextmanager
def running(config: ServerConfig, backend: Backend | None = None) -> Iterator[TgsparqlServer]:
    """The server in a thread of the test process; `backend` answers its asks (with --ask)."""
    server = TgsparqlServer(config, backend)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class ServeProcess(Served):
    """A `tgsparql serve` command running in its own process, as a user starts it."""

    process: subprocess.Popen[str] | None = None
    started: dict[str, object] = field(default_factory=dict)
    stderr: list[str] = field(default_factory=list)
    """Every line it wrote to stderr after its startup line, as it comes."""


STARTUP_SECONDS = 60


@contextmanager
def serve_process(built: tuple[Path, list[str], str], *args: str,
                  endpoint: str | None = None) -> Iterator[ServeProcess]:
    """`tgsparql serve --store STORE --port 0 ARGS…` (or `--endpoint ENDPOINT`), ready once it
    prints its startup line; stopped by SIGTERM, as a service manager would, and expected to
    exit 0."""
    path, sessions, failed = built
    served_from = ["--endpoint", endpoint] if endpoint else ["--store", str(path)]
    command = [str(Path(sys.executable).with_name("tgsparql")), "serve", *served_from,
               "--port", "0", *args]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        before = []
        while True:
            line = lines.get(timeout=STARTUP_SECONDS)
            assert line is not None, f"serve exited {process.wait()}: {before}"
            if line.startswith("{"):
                started = json.loads(line)
                break
            before.append(line)
        served = ServeProcess(str(started["url"]), path, sessions, failed, process, started,
                              before)

        def collect() -> None:
            while (line := lines.get()) is not None:
                served.stderr.append(line)

        collector = threading.Thread(target=collect, daemon=True)
        collector.start()
        yield served
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
        reader.join(timeout=30)
    collector.join(timeout=30)
    assert code == 0, served.stderr


@pytest.fixture(scope="package")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], str]:
    path = tmp_path_factory.mktemp("served") / "store"
    sessions, failed = build_store(path)
    return path, sessions, failed


@pytest.fixture(scope="package")
def served(built: tuple[Path, list[str], str]) -> Iterator[Served]:
    """The demo store served with generous limits, no token."""
    path, sessions, failed = built
    with running(ServerConfig(store=path, port=0, timeout=20, max_results=10_000)) as server:
        yield Served(server.url, path, sessions, failed)


@pytest.fixture(scope="package")
def strict(built: tuple[Path, list[str], str]) -> Iterator[Served]:
    """The same store behind a token, a 1 s timeout, 5 results at most and a 4 KiB request cap."""
    path, sessions, failed = built
    config = ServerConfig(store=path, port=0, timeout=1.0, max_results=5, token="s3cret",
                          max_request=4096, workers=1)
    with running(config) as server:
        yield Served(server.url, path, sessions, failed)

"""`tgsparql serve`: a read-only SPARQL endpoint, saved BI queries and trace pages over a store.

Design. The HTTP side is the standard library's `ThreadingHTTPServer`: it only parses requests,
checks the token and sizes, and relays; every query runs in a small pool of worker processes.
Processes rather than threads because a running pyoxigraph query cannot be cancelled from
Python: a query past `--timeout` is stopped by killing its worker (a fresh one takes its place),
which no in-process server, WSGI or ASGI, could do. With the work in the workers, a third-party
web framework would add a dependency without removing any of this code. Wrapping
`oxigraph serve-read-only` instead was measured (`benchmarks/results/serve.md`): the same engine,
10–20 % more requests per second, but it reads the store as it was when it started and never
sees a session recorded after that, so it cannot serve a store that is still being written.

Sharing the store with a writer. pyoxigraph's on-disk store takes an exclusive lock, so a
second `ox.Store(path)` fails while `tgsparql query` records sessions. `ox.Store.read_only`
takes no lock and, on opening, replays the writer's write-ahead log, so it sees every committed
write up to that moment, and nothing after. Each worker therefore keeps one read-only handle
and reopens it when the store's WAL, MANIFEST or CURRENT files have changed since (a directory
scan, well under a millisecond; a reopen costs tens of milliseconds and happens only after a
write). A request sees every session committed before it started. Should a compaction remove a
file the old handle still needed, the query is retried once on a fresh handle.

Serving a remote store (`--endpoint`). Each worker holds a RemoteStore instead and forwards every
query to the endpoint; the results come back through pyoxigraph's parsers and are served with the
same content negotiation, caps and timeout (the worker waiting on a slow endpoint is stopped like
one running a slow query). A failing endpoint is answered 502 with its one-line reason.

Hostile clients. Every wait, size and allocation is bounded: a query by --timeout (its process
killed) and by --max-memory (its process's RLIMIT_DATA: a failed allocation ends the process,
and the query is answered 503); a request by `max_request` (256 KiB), whether its body comes
with a Content-Length or in chunks, and its request line with it. /sparql may hold --workers
of the processes at once, so one is always left for the pages and saved queries. A Host header must
name the server, so a page elsewhere cannot reach it through a browser by rebinding its own
name to this address; and every answer forbids scripts, sniffing, framing and referrers.

Asking (`--ask`, ask.py). The main process then holds the store as its one writer and runs each
ask's pipeline in its request's thread, streaming the messages out as they come; the query
processes read on as before and see each session once it is committed.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import math
import multiprocessing
import os
import queue
import re
import resource
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyoxigraph as ox

from tgsparql import vocab
from tgsparql.explain import SessionNotFound, SessionSummary
from tgsparql.iris import SessionIds
from tgsparql.llm.base import Backend
from tgsparql.migrate import MIGRATE_HINT, needs_migration
from tgsparql.pipeline import StageError
from tgsparql.serve import editor, pages
from tgsparql.serve.ask import AskLimits, Asker, AskPage, EventStream, Framing, JsonLines, \
    negotiate, offer_in_nav, read_question, refused_page, render_page, same_origin
from tgsparql.remote import RemoteStore, display_url
from tgsparql.serve.records import SHAPES, serialize_records
from tgsparql.serve.saved import saved_queries
from tgsparql.serve.sparql import READ_ONLY, Answer, ProtocolError, QueryRequest, Result, \
    execute, read_request, refuse_service, serialize
from tgsparql.store import EmbeddedStore, Store, StoreError
from tgsparql.templates import Templates
from tgsparql.validate_session import validate_session

SAVED_FORMATS = ("csv", "tsv", "json", "ndjson")
"""The extensions of /queries/NAME.EXT; `.json?shape=objects` is records in one array."""
HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
JSON = "application/json"
SECURITY_HEADERS = {
    "Content-Security-Policy": pages.CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
"""On every answer: pages run no script and load nothing from elsewhere, nothing is sniffed
into another type, no URL of this server leaks in a Referer, no other site frames a page."""
_DIGITS = re.compile(r"[0-9]{1,18}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")


@dataclass(frozen=True)
class ServerConfig:
    store: Path | None = None
    """The on-disk store to serve, opened read-only; or None with `endpoint`."""
    endpoint: str | None = None
    """The SPARQL query endpoint of a remote store to serve instead."""
    endpoint_options: Mapping[str, Any] = field(default_factory=dict)
    """RemoteStore's keyword arguments (dialect, auth, timeouts, kg_graph)."""
    host: str = "127.0.0.1"
    port: int = 7879
    token: str | None = None
    timeout: float = 30.0
    max_results: int = 100_000
    max_request: int = 256 * 1024
    """Bytes of query string or request body at most (413 beyond)."""
    max_memory: int | None = 1 << 30
    """Bytes of data memory each query process may use (503 beyond); None for no bound."""
    allowed_hosts: tuple[str, ...] = ()
    """Host header names accepted besides the loopback names and `host` (DNS rebinding)."""
    workers: int = 2
    page_workers: int = 1
    """Query processes /sparql may not take, kept for pages and saved queries."""
    collection: str = vocab.DEFAULT_COLLECTION
    log: bool = False
    ask: AskLimits | None = None
    """With limits, POST /ask answers questions, the server holding the store as its writer."""
    lock_timeout: float = 30.0
    """Seconds `--ask` waits for another writer to release the store at startup."""

    def __post_init__(self) -> None:
        if (self.store is None) == (self.endpoint is None):
            raise StoreError("serve one store: an on-disk store or a SPARQL endpoint")
        if self.ask is not None and self.store is None:
            raise StoreError("--ask needs an on-disk --store to record sessions in; it does not "
                             "write to a remote endpoint")


class ReadOnlyStore(EmbeddedStore):
    """The store as the Store protocol, read-only, on a handle refreshed after each write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: ox.Store | None = None
        self._signature: tuple[Any, ...] = ()

    @property
    def _store(self) -> ox.Store:
        signature = _signature(self.path)
        if self._handle is None or signature != self._signature:
            try:
                self._handle = ox.Store.read_only(str(self.path))
                self._signature = signature
            except OSError as error:
                if self._handle is None:
                    raise StoreError(f"cannot open the store at {self.path}: {error}") from None
        return self._handle

    def refresh(self) -> None:
        """Drop the handle, so the next read reopens the store."""
        self._handle = None

    def query(
        self,
        query: str,
        *,
        default_graph: Sequence[ox.NamedNode] | None = None,
        named_graphs: Sequence[ox.NamedNode] = (),
    ) -> Result:
        """pyoxigraph's own result, for the protocol endpoint to serialize."""
        options: dict[str, Any] = {}
        if default_graph:
            options["default_graph"] = list(default_graph)
        if named_graphs:
            options["named_graphs"] = list(named_graphs)
        return self.oxigraph.query(query, **options)

    def update(self, update: str) -> None:
        raise StoreError(READ_ONLY)

    def bulk_load(self, *_: Any, **__: Any) -> None:
        raise StoreError(READ_ONLY)

    def close(self) -> None:
        self._handle = None


def _signature(path: Path) -> tuple[Any, ...]:
    """What changes when a writer commits: the WAL files, the MANIFEST and CURRENT."""
    try:
        entries = [
            (entry.name, (stat := entry.stat()).st_size, stat.st_mtime_ns)
            for entry in os.scandir(path)
            if entry.name.endswith(".log") or entry.name.startswith("MANIFEST-")
            or entry.name == "CURRENT"
        ]
    except OSError:
        return ()
    return tuple(sorted(entries))


class Worker:
    """One query process and its end of the pipe."""

    def __init__(self, config: ServerConfig) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child, config), daemon=True)
        self.process.start()
        child.close()

    def ready(self, timeout: float = 60.0) -> bool:
        try:
            return self.conn.poll(timeout) and self.conn.recv() == "ready"
        except (EOFError, OSError):
            return False

    def stop(self) -> None:
        self.process.kill()
        self.process.join()
        self.conn.close()


class WorkerPool:
    """Runs each job in an idle worker; a job past the timeout kills its worker (503), and so
    does one past the memory bound (its worker dies of it).

    There are `workers + page_workers` processes, and /sparql queries may hold `workers` of them
    at once: slow SPARQL queries cannot starve the pages and saved queries, which may use any.
    The idle worker used last goes first: its store handle's caches hold what recent queries
    read, where a round robin would spread a dashboard's reads over every process's caches."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self._idle: queue.LifoQueue[Worker] = queue.LifoQueue()
        self._all: set[Worker] = set()
        self._busy_since: dict[Worker, float] = {}
        self._lock = threading.Lock()
        self._sparql_slots = threading.BoundedSemaphore(config.workers)
        starting = [self._spawn() for _ in range(config.workers + config.page_workers)]
        for worker in starting:
            if not worker.ready():
                self.close()
                raise StoreError("a query worker did not start" + (
                    f" within --max-memory {_size(config.max_memory)}"
                    if worker.process.exitcode in OUT_OF_MEMORY else ""))
            self._idle.put(worker)

    def run(self, job: tuple[Any, ...], timeout: float | None = None) -> Answer:
        """The job's answer, within `timeout` seconds (--timeout unless shorter); a /sparql job
        first waits for one of its slots."""
        if timeout is not None and timeout < self.config.timeout:
            return self._run(job, timeout, timeout)
        timeout = self.config.timeout
        if job[0] != "sparql":
            return self._run(job, timeout)
        started = time.monotonic()
        if not self._sparql_slots.acquire(timeout=timeout):
            raise self._busy()
        try:
            return self._run(job, max(0.0, started + timeout - time.monotonic()))
        finally:
            self._sparql_slots.release()

    def _busy(self) -> ProtocolError:
        return ProtocolError(503, f"every query worker stayed busy for {self.config.timeout:g} s "
                                  "(--timeout); try again later", retry_after=self._next_free())

    def _run(self, job: tuple[Any, ...], wait: float, timeout: float | None = None) -> Answer:
        timeout = self.config.timeout if timeout is None else timeout
        try:
            worker = self._idle.get(timeout=wait)
        except queue.Empty:
            raise self._busy() from None
        with self._lock:
            self._busy_since[worker] = time.monotonic()
        try:
            worker.conn.send(job)
            if worker.conn.poll(timeout):
                status, content_type, body = worker.conn.recv()
                self._done(worker)
                self._idle.put(worker)
                return Answer(status, content_type, body)
        except (EOFError, OSError):
            self._replace(worker)
            if worker.process.exitcode in OUT_OF_MEMORY and self.config.max_memory:
                raise ProtocolError(503, "the query needed more memory than the "
                                         f"{_size(self.config.max_memory)} bound (--max-memory) "
                                         "and was stopped") from None
            raise ProtocolError(500, "the query worker failed; it has been restarted") from None
        self._replace(worker)
        raise ProtocolError(503, f"the query ran longer than the {timeout:g} s timeout "
                                 "(--timeout) and was stopped")

    def _next_free(self) -> int:
        """Whole seconds until the first busy worker is done or stopped by the timeout."""
        with self._lock:
            started = min(self._busy_since.values(), default=time.monotonic())
        return max(1, math.ceil(started + self.config.timeout - time.monotonic()))

    def _done(self, worker: Worker) -> None:
        with self._lock:
            self._busy_since.pop(worker, None)

    def close(self) -> None:
        with self._lock:
            for worker in self._all:
                worker.stop()
            self._all.clear()

    def _spawn(self) -> Worker:
        worker = Worker(self.config)
        with self._lock:
            self._all.add(worker)
        return worker

    def _replace(self, worker: Worker) -> None:
        """Kill the worker now; its successor joins the pool once it has started."""
        self._done(worker)
        with self._lock:
            self._all.discard(worker)
        worker.stop()

        def start() -> None:
            fresh = self._spawn()
            if fresh.ready():
                self._idle.put(fresh)

        threading.Thread(target=start, daemon=True).start()


def open_served(config: ServerConfig) -> ReadOnlyStore | RemoteStore:
    """The store a worker answers from: the on-disk store read-only, or the endpoint."""
    if config.endpoint is not None:
        return RemoteStore(config.endpoint, **config.endpoint_options)
    assert config.store is not None
    return ReadOnlyStore(config.store)


def _refuse_unmigrated(config: ServerConfig) -> None:
    """The saved BI queries read fields older versions did not record: on such a collection
    they would count wrong, so serving waits until the store is migrated."""
    with open_served(config) as store:
        graph = vocab.explainability_graph(config.collection)
        if needs_migration(store, Templates(store.dialect), graph):
            raise StoreError(f"{graph.value} holds sessions recorded by an older version, which "
                             f"the saved BI queries would miscount; {MIGRATE_HINT}")


OUT_OF_MEMORY_EXIT = 3
OUT_OF_MEMORY = (OUT_OF_MEMORY_EXIT, -signal.SIGABRT, -signal.SIGKILL)
"""How a worker past --max-memory ends: Python's MemoryError exits with OUT_OF_MEMORY_EXIT, a
failed allocation in pyoxigraph's Rust code aborts, and the kernel's OOM killer kills."""


def _worker_main(conn: Connection, config: ServerConfig) -> None:
    """A worker's life: bound its memory, open the store read-only, then answer jobs until the
    pipe closes."""
    if config.max_memory:
        # RLIMIT_DATA counts what allocators use (heap and private writable mappings), not the
        # address space merely reserved, which for pyoxigraph and glibc is several times more.
        resource.setrlimit(resource.RLIMIT_DATA, (config.max_memory, config.max_memory))
        os.environ["RUST_BACKTRACE"] = "0"  # a failed allocation: one line, not a backtrace
    store = open_served(config)
    templates = Templates(store.dialect)
    if config.ask is not None:
        offer_in_nav()
    conn.send("ready")
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        try:
            answer = _run_job(store, templates, config, job)
        except MemoryError:
            os._exit(OUT_OF_MEMORY_EXIT)  # the pool answers 503 and starts a fresh process
        except ProtocolError as error:
            answer = _failure(config, job, error.status, error.message)
        except Exception as error:  # a failing request must not take the worker with it
            # One line: what follows the first (a response body quoted in it) is not repeated.
            first = (str(error).splitlines() or [""])[0][:300]
            answer = _failure(config, job, 500, f"{type(error).__name__}: {first}")
        conn.send((answer.status, answer.content_type, answer.body))


def _run_job(
    store: ReadOnlyStore | RemoteStore, templates: Templates, config: ServerConfig,
    job: tuple[Any, ...],
) -> Answer:
    kind, *args = job
    for attempt in (1, 2):
        try:
            if kind == "sparql" and _on_page(args[0]):
                return editor.results_page(store, args[0], config.max_results,
                                           templates.dialect, config.collection)
            if kind == "sparql":
                return execute(store, args[0], config.max_results)
            if kind == "saved":
                name, params, fmt = args
                saved = saved_queries()[name]
                text = templates.render(saved.template, **saved.bind(params))
                refuse_service(text)
                if fmt in SHAPES:
                    return serialize_records(store.query(text), fmt, config.max_results)
                return serialize(store.query(text), fmt, config.max_results)
            if kind == "sessions":
                return _sessions_page(store, templates, config, *args)
            if kind == "validate":
                return _validation(store, *args)
            if kind == "entity":
                return _entity_page(store, templates, *args)
            return _session_page(store, templates, config, *args)
        except (OSError, StoreError) as error:
            if isinstance(store, RemoteStore):  # it has retried what may be retried
                raise ProtocolError(502, str(error)) from None
            if attempt == 2:
                raise
            store.refresh()  # a file the old handle needed may have been compacted away
    raise AssertionError("unreachable")


def _sessions_page(
    store: Store, templates: Templates, config: ServerConfig, text: str, limit: int
) -> Answer:
    rows = store.select(templates.render(
        "serve/find_sessions", graph=vocab.explainability_graph(config.collection),
        question=text, limit=limit,
    ))
    found = [SessionSummary.from_row(row) for row in rows]
    return Answer(200, HTML, pages.render_sessions(found, text, limit).encode("utf-8"))


def _session_page(
    store: Store, templates: Templates, config: ServerConfig, uuid: str,
    conformance: dict[str, Any] | None = None,
) -> Answer:
    try:
        view = pages.session_view(store, templates, config.collection, uuid,
                                  pages.Conformance.from_json(conformance) if conformance else None)
    except (SessionNotFound, ValueError):
        raise ProtocolError(404, f"no session {uuid} in collection {config.collection!r}") \
            from None
    return Answer(200, HTML, pages.render_session(view).encode("utf-8"))


VALIDATION_SECONDS = 10.0
"""The longest a session page waits for its session's validation (or --timeout if shorter)."""


def _validation(store: Store, uuid: str) -> Answer:
    """The session against the bundled shapes, as `validate --session` checks it: only queries,
    nothing written. A session it cannot find is reported as such, not raised: the page says."""
    try:
        report = validate_session(store, uuid)
    except (SessionNotFound, ValueError) as error:
        found = pages.Conformance.not_checked(str(error))
    else:
        found = pages.Conformance.of(report)
    return Answer(200, JSON, json.dumps(found.to_json()).encode("utf-8"))


def _conformance(pool: WorkerPool, uuid: str) -> dict[str, Any]:
    """The session's validation from a worker, bounded by VALIDATION_SECONDS; a validation that
    fails or takes longer leaves the page saying why it is not validated."""
    bound = min(VALIDATION_SECONDS, pool.config.timeout)
    try:
        answer = pool.run(("validate", uuid), bound)
    except ProtocolError as error:
        reason = f"the validation did not finish within {bound:g} s" \
            if error.status == 503 and "timeout" in error.message else error.message
        return pages.Conformance.not_checked(reason).to_json()
    if answer.status != 200:
        return pages.Conformance.not_checked(
            answer.body.decode("utf-8", "replace").strip()[:300]).to_json()
    return json.loads(answer.body)


def _entity_page(store: Store, templates: Templates, iri: str, page: int) -> Answer:
    try:
        view = pages.entity_view(store, templates, iri, page)
    except ValueError:
        raise ProtocolError(400, f"iri={iri!r:.200} is not an IRI") from None
    return Answer(200, HTML, pages.render_entity(view).encode("utf-8"))


def _saved_format(extension: str, params: dict[str, list[str]]) -> str:
    """The answer's format: the extension's, or records for `.json?shape=objects`; the
    `shape` parameter is taken out of the query's own parameters."""
    shapes = params.pop("shape", None)
    if shapes is None:
        return extension
    if extension != "json" or shapes not in (["objects"], ["sparql"]):
        raise ProtocolError(400, "shape is for NAME.json only, once: shape=objects (records) or "
                                 "shape=sparql (SPARQL JSON results, the default)")
    return "objects" if shapes == ["objects"] else "json"


def _on_page(request: QueryRequest) -> bool:
    """A query from the SPARQL page, answered as the page."""
    return (request.format or "").lower() == "html"


def _failure(config: ServerConfig, job: tuple[Any, ...], status: int, message: str) -> Answer:
    """A job's error: in place on the SPARQL page for a query from it, else as its route's."""
    if job[0] == "sparql" and _on_page(job[1]):
        return editor.page(job[1].query, _dialect(config), config.collection, error=message,
                           status=status)
    return _error(status, message, html=job[0] in ("sessions", "session", "entity"))


def _dialect(config: ServerConfig) -> str:
    """The served store's dialect: an on-disk store's is RDF 1.2."""
    return str(config.endpoint_options.get("dialect", "rdf12"))


def _error(status: int, message: str, *, html: bool = False) -> Answer:
    if html:
        return Answer(status, HTML, pages.render_error(status, message).encode("utf-8"))
    return Answer(status, TEXT, (message + "\n").encode("utf-8"))


ASK_OFF = "asking is off on this server: start it with tgsparql serve --ask"


class Handler(BaseHTTPRequestHandler):
    """Routes: /sparql, /queries, /queries/NAME.EXT, /sessions, /sessions/UUID, /ask."""

    server: TgsparqlServer
    server_version = "tgsparql"
    protocol_version = "HTTP/1.1"
    timeout = 60  # a client that stops sending is dropped
    disable_nagle_algorithm = True  # headers and body leave at once, no 40 ms delayed-ACK wait

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._refuse_method()

    do_DELETE = do_PATCH = do_PUT

    def _refuse_method(self) -> None:
        self._send(_error(405, f"{self.command} is not allowed: this endpoint is read-only and "
                               "answers GET and POST"), {"Allow": "GET, POST"})

    def handle_one_request(self) -> None:
        """The standard library's, with the request line allowed up to the request cap (and the
        method and path around it) instead of 64 KiB, so a long GET query is a 413 like a long
        POST body, and a longer line is a 414."""
        limit = self.server.config.max_request + 8 * 1024
        try:
            self.raw_requestline = self.rfile.readline(limit + 1)
            if len(self.raw_requestline) > limit:
                self.requestline = self.request_version = self.command = ""
                self.send_error(414, f"the request line is longer than {limit} bytes")
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            method = getattr(self, "do_" + self.command, None)
            if method is None:
                self.send_error(501, f"{self.command!r:.40} is not a method this server knows")
                return
            method()
            self.wfile.flush()
        except TimeoutError:
            self.close_connection = True

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """The standard library's errors (bad request line, headers too long, …) as ours: one
        plain-text line, with the same headers as every answer."""
        self.close_connection = True
        self._send(_error(code, message or self.responses.get(code, ("error",))[0]))

    def _handle(self, method: str) -> None:
        config = self.server.config
        url = urlsplit(self.path)
        if method != "POST" and ("Content-Length" in self.headers
                                 or "Transfer-Encoding" in self.headers):
            self.close_connection = True  # an unread body must not be read as the next request
        try:
            self._check_host()
            self._authorize(config)
            if len(url.query) > config.max_request:
                raise ProtocolError(413, f"the query string is larger than {config.max_request} "
                                         "bytes")
            asking = url.path == "/ask" and method == "POST"
            limit = min(config.max_request, config.ask.body) if asking and config.ask \
                else config.max_request
            body = self._body(limit) if method == "POST" else b""
            if asking:
                self._ask(body)
                return
            answer = self._route(method, url.path, url.query, body)
        except ProtocolError as error:
            html = (url.path.startswith("/sessions") or url.path == "/ask" and self._wants_html()
                    ) and error.status != 401
            extra = {"WWW-Authenticate": 'Bearer realm="tgsparql"'} if error.status == 401 else {}
            if error.retry_after is not None:
                extra["Retry-After"] = str(error.retry_after)
            self._send(_error(error.status, error.message, html=html), extra)
            return
        self._send(answer)

    def _check_host(self) -> None:
        """Refuse a Host this server was not started under: a page whose name was rebound to
        this address (DNS rebinding) must not read it through a visitor's browser."""
        if not self._host_allowed():
            raise ProtocolError(400, f"Host {self.headers.get('Host', '')!r:.100} is not a name "
                                     "this server answers to; start it with --allowed-host NAME "
                                     "to add one")

    def _host_allowed(self) -> bool:
        given = self.headers.get_all("Host") or []
        if not given:
            return True  # no browser leaves it out
        if len(given) > 1:
            return False
        return self.server.accepts_host(given[0])

    def _authorize(self, config: ServerConfig) -> None:
        if config.token is None:
            return
        given = self.headers.get("Authorization", "")
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            token.strip().encode("utf-8"), config.token.encode("utf-8")
        ):
            raise ProtocolError(401, "a bearer token is required: send "
                                     "'Authorization: Bearer TOKEN'" if not given
                                else "the bearer token is wrong")

    def _body(self, limit: int) -> bytes:
        """The POST body, at most `limit` bytes, by Content-Length or chunked; on any
        refusal the connection closes, as what is left of the body cannot be told apart from
        a next request."""
        try:
            return self._read_body(limit)
        except ProtocolError:
            self.close_connection = True
            raise

    def _read_body(self, limit: int) -> bytes:
        lengths = self.headers.get_all("Content-Length") or []
        coding = self.headers.get_all("Transfer-Encoding") or []
        if coding:
            if lengths:
                raise ProtocolError(400, "give Content-Length or Transfer-Encoding, not both")
            if [c.strip().lower() for c in coding] != ["chunked"]:
                raise ProtocolError(501, "the only Transfer-Encoding accepted is chunked")
            return self._read_chunked(limit)
        if not lengths:
            raise ProtocolError(411, "a POST needs a Content-Length (or a chunked body)")
        if len(lengths) > 1 or not _DIGITS.fullmatch(lengths[0].strip()):
            raise ProtocolError(400, "Content-Length must be one non-negative integer")
        size = int(lengths[0])
        if size > limit:
            raise ProtocolError(413, f"the request body is larger than {limit} bytes")
        body = self.rfile.read(size)
        if len(body) != size:
            raise ProtocolError(400, "the request body is shorter than its Content-Length")
        return body

    def _read_chunked(self, limit: int) -> bytes:
        """A chunked body, refused (413) as soon as its chunks add up to more than `limit`."""
        body = bytearray()
        while True:
            size_line = self.rfile.readline(1024).split(b";", 1)[0].strip()
            if not _HEX.fullmatch(size_line):
                raise ProtocolError(400, "a chunk size is not a hexadecimal number")
            size = int(size_line, 16)
            if size == 0:
                break
            if len(body) + size > limit:
                raise ProtocolError(413, f"the request body is larger than {limit} bytes")
            chunk = self.rfile.read(size)
            if len(chunk) != size or self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise ProtocolError(400, "a chunk is shorter than its size")
            body += chunk
        for _ in range(64):  # trailer fields, ignored, up to the empty line
            if self.rfile.readline(8192) in (b"\r\n", b"\n", b""):
                return bytes(body)
        raise ProtocolError(400, "too many trailer fields after the chunked body")

    def _route(self, method: str, path: str, query: str, body: bytes) -> Answer:
        pool = self.server.pool
        if path == "/sparql":
            config = self.server.config
            if method == "GET" and editor.wants_page(query, self.headers.get("Accept", "")):
                return editor.page(editor.starting_query(config.collection), _dialect(config),
                                   config.collection)
            request = None
            try:
                request = read_request(method, query, self.headers.get("Content-Type", ""),
                                       body, self.headers.get("Accept", ""))
                return pool.run(("sparql", request))
            except ProtocolError as error:
                if request is not None:
                    shown = request.query if _on_page(request) else None
                else:  # refused before it was read: an empty box, an update
                    shown = editor.query_on_page(query)
                if shown is None:
                    raise
                answer = editor.page(shown, _dialect(config), config.collection,
                                     error=error.message, status=error.status)
                return replace(answer, headers={"Retry-After": str(error.retry_after)}
                               if error.retry_after is not None else {})
        if method != "GET":
            raise ProtocolError(405, f"{path} answers GET only")
        if path == "/ask":
            if self.server.asker is None:
                raise ProtocolError(404, ASK_OFF)
            return Answer(200, HTML, render_page().encode("utf-8"))
        if path in ("/", ""):
            return Answer(303, TEXT, b"see /sessions\n", {"Location": "/sessions"})
        if path == "/queries":
            listed = [q.to_json() for q in saved_queries().values()]
            return Answer(200, HTML, pages.render_queries(listed).encode("utf-8"))
        if path.startswith("/queries/"):
            name, _, extension = path[len("/queries/"):].rpartition(".")
            if name not in saved_queries() or extension not in SAVED_FORMATS:
                raise ProtocolError(404, f"no saved query {path[len('/queries/'):]!r}; see "
                                         "/queries (NAME.csv, NAME.tsv, NAME.json or "
                                         "NAME.ndjson)")
            params = parse_qs(query, keep_blank_values=True)
            return pool.run(("saved", name, params, _saved_format(extension, params)))
        if path == "/sessions":
            params = parse_qs(query, keep_blank_values=True)
            unknown = sorted(set(params) - {"q", "limit"})
            if unknown:
                raise ProtocolError(400, f"unknown parameter {unknown[0]!r}; /sessions takes q "
                                         "and limit")
            text = params.get("q", [""])[-1]
            limit = params.get("limit", ["100"])[-1]
            if not limit.isdigit() or not 1 <= int(limit) <= 10_000:
                raise ProtocolError(400, "limit must be an integer from 1 to 10000")
            return pool.run(("sessions", text, int(limit)))
        if path.startswith("/sessions/"):
            uuid = path[len("/sessions/"):]
            return pool.run(("session", uuid, _conformance(pool, uuid)))
        if path == "/entity":
            params = parse_qs(query, keep_blank_values=True)
            unknown = sorted(set(params) - {"iri", "page"})
            if unknown or len(params.get("iri", [])) != 1:
                return _error(400, "/entity takes iri (once) and page", html=True)
            page = params.get("page", ["1"])[-1]
            if not page.isdigit() or not 1 <= int(page) <= pages.ENTITY_PAGES:
                return _error(400, f"page must be an integer from 1 to {pages.ENTITY_PAGES}",
                              html=True)
            return pool.run(("entity", params["iri"][0], int(page)))
        raise ProtocolError(404, f"nothing at {path}; see /sessions, /queries or /sparql")

    def _wants_html(self) -> bool:
        try:
            return negotiate(self.headers.get("Accept", "")) == "html"
        except ProtocolError:
            return False

    def _ask(self, body: bytes) -> None:
        """POST /ask: the session's messages, each written and flushed as it comes."""
        asker = self.server.asker
        if asker is None:
            raise ProtocolError(404, ASK_OFF)
        if not same_origin(self.headers.get("Origin"), self.headers.get("Sec-Fetch-Site"),
                           self.headers.get("Host")):
            raise ProtocolError(403, "an ask must come from this server's own page, not from "
                                     "another site's")
        kind = negotiate(self.headers.get("Accept", ""))
        try:
            question = read_question(self.headers.get("Content-Type", ""), body)
            with asker.limiter.admitted(self.client_address[0]), asker.running():
                self._stream_ask(asker, question, kind)
        except ProtocolError as error:
            if kind != "html":
                raise
            self._send(Answer(error.status, HTML, refused_page(body, error).encode("utf-8")),
                       {"Retry-After": str(error.retry_after)} if error.retry_after else {})

    def _stream_ask(self, asker: Asker, question: str, kind: str) -> None:
        framing: Framing = {"sse": EventStream, "ndjson": JsonLines}.get(
            kind, lambda: AskPage(question, asker.labels))()
        messages = asker.rag.query(question, stream=True)
        outcome, session, answered = "went away", "-", False
        try:
            self._start_stream(framing.content_type)
            self._write_chunk(framing.head())
            for message in messages:
                if message.message_type == "explain" and message.explain_id:
                    if session == "-":
                        session = message.explain_id
                    answered = message.explain_id == SessionIds.from_session_iri(
                        session).answer.value
                if message.end_of_session:
                    outcome = "failed" if message.error else "complete"
                self._write_chunk(framing.message(message))
                # Stopping ends the session at its next message, unless all that is left is
                # to send the sources of a session already recorded as complete.
                if asker.stopping.is_set() and not message.end_of_session and not answered:
                    stopped = messages.throw(StageError("ask", RuntimeError(
                        "the server stopped while the session ran")))
                    outcome = "failed"
                    self._write_chunk(framing.message(stopped))
                    break
            self._write_chunk(framing.tail())
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:  # the client went away, or stopped reading past the timeout
            self.close_connection = True
        finally:
            messages.close()  # the session, if still open, is closed as failed
            if self.server.config.log:
                sys.stderr.write(f"{self.address_string()} ask {session} {outcome}\n")

    def _start_stream(self, content_type: str) -> None:
        self.send_response(200)
        headers = {"Content-Type": content_type, "Transfer-Encoding": "chunked",
                   "Cache-Control": "no-store", "X-Accel-Buffering": "no", **SECURITY_HEADERS}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        """One HTTP chunk, sent at once (an empty one would end the body, so none is sent)."""
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def _send(self, answer: Answer, extra: Mapping[str, str] | None = None) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        headers = {**SECURITY_HEADERS, **answer.headers, **(extra or {})}
        if answer.status == 503:
            headers.setdefault("Retry-After", "1")  # a fresh worker is about to be ready
        for name, value in headers.items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer.body)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.config.log:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")


class TgsparqlServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, config: ServerConfig, ask_backend: Backend | None = None) -> None:
        self.config = config
        self.host_names = {"localhost", "127.0.0.1", "::1", _host_name(config.host)} | {
            _host_name(name) for name in config.allowed_hosts}
        self.any_address = config.host in ("", "0.0.0.0", "::")
        if config.endpoint is not None:  # fail here, once, rather than in every worker
            with open_served(config) as remote:
                remote.ask(Templates(remote.dialect).render("serve/endpoint_reachable"))
        _refuse_unmigrated(config)
        self.asker: Asker | None = None
        if config.ask is not None:
            if ask_backend is None:
                raise StoreError("--ask needs an LLM backend")
            assert config.store is not None
            self.asker = Asker(config.store, ask_backend, collection=config.collection,
                               limits=config.ask, lock_timeout=config.lock_timeout)
            offer_in_nav()
        try:
            self.pool = WorkerPool(config)
            try:
                super().__init__((config.host, config.port), Handler)
            except OSError:
                self.pool.close()
                raise
        except BaseException:
            if self.asker is not None:
                self.asker.close()
            raise

    def accepts_host(self, header: str) -> bool:
        """A Host header naming this server: a loopback name, the address it listens on, an
        --allowed-host name, or (listening on every address) any IP address."""
        name = _host_name(header)
        if name in self.host_names:
            return True
        if not self.any_address:
            return False
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def server_close(self) -> None:
        super().server_close()
        if self.asker is not None:
            self.asker.close()
        self.pool.close()


def _host_name(header: str) -> str:
    """The name of a Host header or address: lower case, without port, brackets or final dot."""
    value = header.strip().lower()
    if value.startswith("["):
        value = value[1:].split("]", 1)[0]
    elif value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def _size(size: int | None) -> str:
    """Bytes as people write them: 1 GiB, 512 MiB."""
    if size is None:
        return "unbounded"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} bytes"


def is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def describe(server: TgsparqlServer) -> str:
    """The startup line: where it listens and what it serves."""
    config = server.config
    served = {"store": str(config.store)} if config.endpoint is None else {
        "endpoint": display_url(config.endpoint), "dialect": config.endpoint_options.get(
            "dialect", "rdf12")}
    return json.dumps({
        "url": server.url, **served, "token": config.token is not None,
        "timeout_s": config.timeout, "max_results": config.max_results,
        "max_memory": _size(config.max_memory), "workers": config.workers,
        "page_workers": config.page_workers,
        "ask": None if config.ask is None else {
            "in_flight": config.ask.in_flight, "per_minute": config.ask.per_minute},
        "hosts": sorted(server.host_names) + (["any IP address"] if server.any_address else []),
    })


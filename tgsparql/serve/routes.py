"""The HTTP side of `tgsparql serve`: each request checked (host, token, sizes) and routed to a
job for the worker pool, or to the ask stream. What it answers is ROUTES, listed below."""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from tgsparql.asking.pipeline import StageError
from tgsparql.rdf.iris import SessionIds
from tgsparql.record.conformance import Conformance
from tgsparql.serve import editor, pages
from tgsparql.serve.ask import (
    Asker, AskPage, EventStream, Framing, JsonLines, negotiate, read_question, refused_page,
    render_page, same_origin,
)
from tgsparql.serve.config import ServerConfig
from tgsparql.serve.jobs import (
    HTML, TEXT, EntityJob, SavedJob, SessionJob, SessionsJob, SparqlJob, ValidateJob, error_answer,
)
from tgsparql.serve.saved import saved_queries
from tgsparql.serve.sparql import (
    PAGE, Answer, ProtocolError, description_format, endpoint_iri, read_request,
    service_description,
)
from tgsparql.serve.workers import WorkerPool

SAVED_FORMATS = ("csv", "tsv", "json", "ndjson")
"""The extensions of /queries/NAME.EXT; `.json?shape=objects` is records in one array."""
SECURITY_HEADERS = {
    "Content-Security-Policy": pages.CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
"""On every answer: pages run no script and load nothing from elsewhere, nothing is sniffed
into another type, no URL of this server leaks in a Referer, no other site frames a page."""
ASK_OFF = "asking is off on this server: start it with tgsparql serve --ask"
VALIDATION_SECONDS = 10.0
"""The longest a session page waits for its session's validation (or --timeout if shorter)."""
_DIGITS = re.compile(r"[0-9]{1,18}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")
_PLACEHOLDER = re.compile(r"[A-Z][A-Z.]*")
"""The last segment of a route's path that stands for any rest of the path: UUID, NAME.EXT."""


@dataclass(frozen=True)
class Request:
    """What a route is given of a checked request: `rest` is what its path's placeholder
    matched (the UUID of /sessions/UUID), empty for a path without one."""

    method: str
    query: str
    body: bytes
    rest: str = ""


@dataclass(frozen=True)
class Route:
    """One thing this server answers: a method on a path, whose last segment may be a
    placeholder (UPPER CASE) for the rest of the path. The handler answers, or returns None
    once it has streamed its own answer."""

    method: str
    path: str
    handler: Callable[[Handler, Request], Answer | None]
    description: str

    def rest(self, path: str) -> str | None:
        """What the placeholder matches in `path` ("" without one), or None if it does not
        match."""
        head, _, last = self.path.rpartition("/")
        if _PLACEHOLDER.fullmatch(last):
            return path[len(head) + 1:] if path.startswith(head + "/") else None
        return "" if path == self.path else None


@dataclass(frozen=True)
class Hosts:
    """The names a Host header may give (DNS rebinding): the loopback names, the address the
    server listens on, the --allowed-host names, and (listening on every address) any IP
    address."""

    names: frozenset[str]
    any_address: bool

    @classmethod
    def of(cls, config: ServerConfig) -> Hosts:
        return cls(frozenset({"localhost", "127.0.0.1", "::1", _host_name(config.host)}
                             | {_host_name(name) for name in config.allowed_hosts}),
                   config.host in ("", "0.0.0.0", "::"))

    def accept(self, header: str) -> bool:
        name = _host_name(header)
        if name in self.names:
            return True
        if not self.any_address:
            return False
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True

    def described(self) -> list[str]:
        return sorted(self.names) + (["any IP address"] if self.any_address else [])


def _host_name(header: str) -> str:
    """The name of a Host header or address: lower case, without port, brackets or final dot."""
    value = header.strip().lower()
    if value.startswith("["):
        value = value[1:].split("]", 1)[0]
    elif value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


class Server(Protocol):
    """What the routes use of the server."""

    config: ServerConfig
    pool: WorkerPool
    asker: Asker | None
    hosts: Hosts


def _allowed(routes: Sequence[Route]) -> list[str]:
    """The methods `routes` answer, with HEAD after GET, then OPTIONS."""
    methods = []
    for method in dict.fromkeys(route.method for route in routes):
        methods += [method, "HEAD"] if method == "GET" else [method]
    return methods + ["OPTIONS"]


def _saved_job(file: str, query: str) -> SavedJob:
    """/queries/NAME.EXT: the saved query NAME in the format of EXT."""
    name, _, extension = file.rpartition(".")
    if name not in saved_queries() or extension not in SAVED_FORMATS:
        raise ProtocolError(404, f"no saved query {file!r}; see /queries (NAME.csv, NAME.tsv, "
                                 "NAME.json or NAME.ndjson)")
    params = parse_qs(query, keep_blank_values=True)
    return SavedJob(name, params, _saved_format(extension, params))


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


def _sessions_job(query: str) -> SessionsJob:
    """/sessions?q=TEXT&limit=N."""
    params = parse_qs(query, keep_blank_values=True)
    unknown = sorted(set(params) - {"q", "limit"})
    if unknown:
        raise ProtocolError(400, f"unknown parameter {unknown[0]!r}; /sessions takes q and limit")
    limit = params.get("limit", ["100"])[-1]
    if not limit.isdigit() or not 1 <= int(limit) <= 10_000:
        raise ProtocolError(400, "limit must be an integer from 1 to 10000")
    return SessionsJob(params.get("q", [""])[-1], int(limit))


def _conformance(pool: WorkerPool, uuid: str) -> dict[str, Any]:
    """The session's validation from a worker, bounded by VALIDATION_SECONDS; a validation that
    fails or takes longer leaves the page saying why it is not validated."""
    bound = min(VALIDATION_SECONDS, pool.config.timeout)
    try:
        answer = pool.run(ValidateJob(uuid), bound)
    except ProtocolError as error:
        reason = f"the validation did not finish within {bound:g} s" \
            if error.status == 503 and "timeout" in error.message else error.message
        return Conformance.not_checked(reason).to_json()
    if answer.status != 200:
        return Conformance.not_checked(
            answer.body.decode("utf-8", "replace").strip()[:300]).to_json()
    return json.loads(answer.body)


class Handler(BaseHTTPRequestHandler):
    """Checks each request, then answers it by its route in ROUTES."""

    server: Server  # type: ignore[assignment]
    server_version = "tgsparql"
    protocol_version = "HTTP/1.1"
    timeout = 60  # a client that stops sending is dropped
    disable_nagle_algorithm = True  # headers and body leave at once, no 40 ms delayed-ACK wait

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_HEAD(self) -> None:
        self._handle("HEAD")

    def do_OPTIONS(self) -> None:
        self._handle("OPTIONS")

    def do_PUT(self) -> None:
        self._refuse_method()

    do_DELETE = do_PATCH = do_PUT

    def _refuse_method(self) -> None:
        methods = _allowed(ROUTES)
        self._send(error_answer(405, f"{self.command} is not allowed: this endpoint is read-only "
                                     f"and answers {', '.join(methods)}"),
                   {"Allow": ", ".join(methods)})

    def handle_one_request(self) -> None:
        """The standard library's, with the request line allowed up to the request cap (and the
        method and path around it) instead of 64 KiB, so a long GET query is a 413 like a long
        POST body, and a longer line is a 414."""
        limit = self.server.config.max_request + 8 * 1024
        try:
            self.raw_requestline = self.rfile.readline(limit + 1)
            if len(self.raw_requestline) > limit:
                self.requestline = self.command = ""
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
        """Every refusal before a request is routed, ours and the standard library's (a bad
        request line, headers too large, an HTTP version it does not speak), as ours: one
        plain-text line with the headers of every answer, and the connection closed. It is an
        HTTP/1.1 answer even to a line without a usable version, which would otherwise get a bare
        body without a header. The library's messages quote the request; the quote is left out,
        so nothing a client sent comes back."""
        self.close_connection = True
        self.request_version = self.protocol_version
        said = (message or self.responses.get(code, ("error",))[0]).split(" (", 1)[0]
        self._send(error_answer(code, said))

    def _handle(self, method: str) -> None:
        config = self.server.config
        url = urlsplit(self.path)
        if method != "POST" and ("Content-Length" in self.headers
                                 or "Transfer-Encoding" in self.headers):
            self.close_connection = True  # an unread body must not be read as the next request
        try:
            self._check_headers()
            self._check_host()
            if method != "OPTIONS":  # a CORS preflight never carries the token
                self._authorize(config)
            if len(url.query) > config.max_request:
                raise ProtocolError(413, f"the query string is larger than {config.max_request} "
                                         "bytes")
            asking = url.path == "/ask" and method == "POST"
            limit = min(config.max_request, config.ask.body) if asking and config.ask \
                else config.max_request
            body = self._body(limit) if method == "POST" else b""
            answer = self._options(url.path or "/") if method == "OPTIONS" \
                else self._route(method, url.path or "/", url.query, body)
        except ProtocolError as error:
            html = (url.path.startswith("/sessions") or url.path == "/ask" and self._wants_html()
                    ) and error.status != 401
            extra = {"WWW-Authenticate": 'Bearer realm="tgsparql"'} if error.status == 401 else {}
            if error.retry_after is not None:
                extra["Retry-After"] = str(error.retry_after)
            self._send(error_answer(error.status, error.message, html=html), extra)
            return
        if answer is not None:
            self._send(answer)

    def _check_headers(self) -> None:
        """Refuse a header folded over lines (obs-fold, RFC 9112 §5.2): read as one value it
        could smuggle a Transfer-Encoding past a proxy that reads it otherwise."""
        if any("\r" in value or "\n" in value for value in self.headers.values()):
            self.close_connection = True
            raise ProtocolError(400, "a header is folded over several lines (obs-fold), which "
                                     "HTTP/1.1 does not allow")

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
        return self.server.hosts.accept(given[0])

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
        """A chunked body, refused (413) as soon as its chunks add up to more than `limit`.
        Every line of it ends in CRLF (RFC 9112 §7.1): a bare LF, which another reader in front
        of this server may count differently, is refused."""
        body = bytearray()
        while True:
            size_line = self._chunk_line(1024).split(b";", 1)[0].strip()
            if not _HEX.fullmatch(size_line):
                raise ProtocolError(400, "a chunk size is not a hexadecimal number")
            size = int(size_line, 16)
            if size == 0:
                break
            if len(body) + size > limit:
                raise ProtocolError(413, f"the request body is larger than {limit} bytes")
            chunk = self.rfile.read(size)
            if len(chunk) != size or self._chunk_line(3) != b"":
                raise ProtocolError(400, "a chunk is shorter than its size")
            body += chunk
        for _ in range(64):  # trailer fields, ignored, up to the empty line
            if self._chunk_line(8192) == b"":
                return bytes(body)
        raise ProtocolError(400, "too many trailer fields after the chunked body")

    def _chunk_line(self, limit: int) -> bytes:
        """One line of a chunked body without its CRLF; refused if it ends otherwise."""
        line = self.rfile.readline(limit)
        if not line.endswith(b"\r\n") or b"\r" in line[:-2] or b"\n" in line[:-2]:
            raise ProtocolError(400, "a line of the chunked body does not end in CRLF")
        return line[:-2]

    def _route(self, method: str, path: str, query: str, body: bytes) -> Answer | None:
        """The answer of the route for this method and path, from ROUTES; HEAD is answered
        as GET, without the body."""
        methods = []
        routed = "GET" if method == "HEAD" else method
        for route in ROUTES:
            rest = route.rest(path)
            if rest is None:
                continue
            if route.method == routed:
                return route.handler(self, Request(routed, query, body, rest))
            methods.append(route.method)
        if methods:
            raise ProtocolError(405, f"{path} answers {' and '.join(methods)} only")
        raise ProtocolError(404, f"nothing at {path}; there is "
                                 + ", ".join(dict.fromkeys(route.path for route in ROUTES)))

    def _options(self, path: str) -> Answer:
        """OPTIONS: the methods the path answers, and for a CORS preflight from an origin of
        --cors, what it may send."""
        methods = _allowed([route for route in ROUTES if route.rest(path) is not None])
        if len(methods) == 1:
            raise ProtocolError(404, f"nothing at {path}")
        headers = {"Allow": ", ".join(methods)}
        if self._cors_origin() and "Access-Control-Request-Method" in self.headers:
            headers |= {"Access-Control-Allow-Methods": ", ".join(methods),
                        "Access-Control-Allow-Headers": "Accept, Authorization, Content-Type",
                        "Access-Control-Max-Age": "600"}
        return Answer(204, TEXT, b"", headers)

    def _cors_origin(self) -> str | None:
        """The Access-Control-Allow-Origin for this request: its Origin if --cors names it,
        `*` if --cors is `*`; never with credentials (a token is a header the client sets)."""
        allowed = self.server.config.cors
        origin = (self.headers.get("Origin") or "").strip().lower().rstrip("/")
        if not origin or not allowed:
            return None
        return "*" if "*" in allowed else origin if origin in allowed else None

    def _endpoint(self) -> str:
        """The URL this request reached: its Host (checked already, else the address it came
        in on) and its own path. The base of a query's relative IRIs, the endpoint a service
        description names; nothing outside is asked."""
        path = urlsplit(self.path).path
        named = self.headers.get("Host", "").strip()
        if named and (iri := endpoint_iri(named, path)) is not None:
            return iri
        host, port = self.connection.getsockname()[:2]
        return f"http://[{host}]:{port}{path}" if ":" in host else f"http://{host}:{port}{path}"

    def _home(self, request: Request) -> Answer:
        return Answer(303, TEXT, b"see /sessions\n", {"Location": "/sessions"})

    def _ask_page(self, request: Request) -> Answer:
        if self.server.asker is None:
            raise ProtocolError(404, ASK_OFF)
        return Answer(200, HTML, render_page().encode("utf-8"))

    def _queries(self, request: Request) -> Answer:
        listed = [q.to_json() for q in saved_queries().values()]
        return Answer(200, HTML, pages.render_queries(listed).encode("utf-8"))

    def _saved(self, request: Request) -> Answer:
        return self.server.pool.run(_saved_job(request.rest, request.query))

    def _sessions(self, request: Request) -> Answer:
        return self.server.pool.run(_sessions_job(request.query))

    def _session(self, request: Request) -> Answer:
        return self.server.pool.run(SessionJob(request.rest,
                                               _conformance(self.server.pool, request.rest)))

    def _sparql(self, request: Request) -> Answer:
        """/sparql: the SPARQL page, or a query's results; a query from the page that is
        refused is shown on it again with the reason."""
        config = self.server.config
        method, query, accept = request.method, request.query, self.headers.get("Accept", "")
        described = description_format(query, accept) if method == "GET" else None
        if described == PAGE:
            return editor.page(editor.starting_query(config.collection), config.dialect,
                               config.collection)
        if described is not None:
            return service_description(self._endpoint(), described)
        job = None
        try:
            job = SparqlJob(read_request(method, query, self.headers.get("Content-Type", ""),
                                         request.body, accept, self._endpoint()))
            return self.server.pool.run(job)
        except ProtocolError as error:
            if job is not None:
                shown = job.request.query if job.on_page else None
            else:  # refused before it was read: an empty box, an update
                shown = editor.query_on_page(query)
            if shown is None:
                raise
            answer = editor.page(shown, config.dialect, config.collection,
                                 error=error.message, status=error.status)
            return replace(answer, headers={"Retry-After": str(error.retry_after)}
                           if error.retry_after is not None else {})

    def _entity(self, request: Request) -> Answer:
        params = parse_qs(request.query, keep_blank_values=True)
        unknown = sorted(set(params) - {"iri", "page"})
        if unknown or len(params.get("iri", [])) != 1:
            return error_answer(400, "/entity takes iri (once) and page", html=True)
        page = params.get("page", ["1"])[-1]
        if not page.isdigit() or not 1 <= int(page) <= pages.ENTITY_PAGES:
            return error_answer(400, f"page must be an integer from 1 to {pages.ENTITY_PAGES}",
                                html=True)
        return self.server.pool.run(EntityJob(params["iri"][0], int(page)))

    def _wants_html(self) -> bool:
        try:
            return negotiate(self.headers.get("Accept", "")) == "html"
        except ProtocolError:
            return False

    def _ask(self, request: Request) -> None:
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
            question = read_question(self.headers.get("Content-Type", ""), request.body)
            with asker.limiter.admitted(self.client_address[0]), asker.running():
                self._stream_ask(asker, question, kind)
        except ProtocolError as error:
            if kind != "html":
                raise
            self._send(Answer(error.status, HTML,
                              refused_page(request.body, error).encode("utf-8")),
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
        if answer.status != 204:  # No Content: no body, so nothing to type or count
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
        headers = {**SECURITY_HEADERS, **self._cors_headers(), **answer.headers, **(extra or {})}
        if answer.status == 503:
            headers.setdefault("Retry-After", "1")  # a fresh worker is about to be ready
        for name, value in headers.items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer.body)

    def _cors_headers(self) -> dict[str, str]:
        """Vary on what an answer depends on, and with --cors, who may read it."""
        if not self.server.config.cors:
            return {"Vary": "Accept"}
        origin = self._cors_origin() if hasattr(self, "headers") else None
        return {"Vary": "Accept, Origin",
                **({"Access-Control-Allow-Origin": origin} if origin else {})}

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.config.log:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")


ROUTES = (
    Route("GET", "/sparql", Handler._sparql,
          "the SPARQL page, or the results of query= (by Accept or format=)"),
    Route("POST", "/sparql", Handler._sparql,
          "the results of a query sent as a form or as application/sparql-query"),
    Route("GET", "/", Handler._home, "a redirect to /sessions"),
    Route("GET", "/queries", Handler._queries, "the saved queries, each with its parameters"),
    Route("GET", "/queries/NAME.EXT", Handler._saved,
          "the saved query NAME as csv, tsv, json (shape=objects for records) or ndjson"),
    Route("GET", "/sessions", Handler._sessions, "the sessions newest first (q=words, limit=N)"),
    Route("GET", "/sessions/UUID", Handler._session, "one session's page, validated"),
    Route("GET", "/entity", Handler._entity,
          "the edges that touch an entity (iri=IRI, page=N)"),
    Route("GET", "/ask", Handler._ask_page, "the ask page (with --ask)"),
    Route("POST", "/ask", Handler._ask,
          "one question answered and recorded, its messages streamed (with --ask)"),
)
"""Everything this server answers, in the order it is matched."""

__doc__ = f"{__doc__}\n\nRoutes:\n\n" + "\n".join(
    f"- {route.method} {route.path}: {route.description}" for route in ROUTES)

"""`tgsparql serve` under attack: each test runs the attack against a real `tgsparql serve`
process and checks that it fails the way the server promises (docs/serving.md, "What serve promises")."""

from __future__ import annotations

import http.client
import re
import socket
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tgsparql.serve.sparql import NO_SERVICE, ProtocolError, check_query

from .conftest import Response, ServeProcess, serve_process

ASK = "/sparql?" + urllib.parse.urlencode({"query": "ASK {}"})


def sparql(query: str) -> str:
    return "/sparql?" + urllib.parse.urlencode({"query": query})


def uuid_of(session: str) -> str:
    return session.rsplit(":", 1)[1]


@pytest.fixture(scope="module")
def server(built: tuple[Path, list[str], str]) -> Iterator[ServeProcess]:
    """The demo store served as a user would: defaults, but for a 10 s timeout."""
    with serve_process(built, "--timeout", "10") as served:
        yield served


def raw(served: ServeProcess, request: bytes, body_parts: tuple[bytes, ...] = ()) -> Response:
    """Send bytes as they are, then read the one answer (no client fixes anything up)."""
    host, port = urllib.parse.urlsplit(served.url).netloc.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        try:
            connection.sendall(request)
            for part in body_parts:
                connection.sendall(part)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before reading it all, as it should
        reply = http.client.HTTPResponse(connection)
        reply.begin()
        return Response(reply.status, dict(reply.headers), reply.read())


def post_head(served: ServeProcess, headers: str) -> bytes:
    return (f"POST /sparql HTTP/1.1\r\nHost: {urllib.parse.urlsplit(served.url).netloc}\r\n"
            f"Content-Type: application/sparql-query\r\n{headers}\r\n").encode()


# --- 1. no outbound requests ----------------------------------------------------------------

class Listener:
    """A loopback HTTP server that counts connections and answers each with a secret body."""

    SECRET = b"UPSTREAM-SECRET-BODY"

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(16)
        self.connections = 0
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/sparql"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.connections += 1
            with connection:
                connection.recv(65536)
                connection.sendall(b"HTTP/1.1 500 Oops\r\nConnection: close\r\nContent-Length: "
                                   + str(len(self.SECRET)).encode() + b"\r\n\r\n" + self.SECRET)


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.socket.close()


SERVICE_QUERIES = [
    "SELECT * WHERE { SERVICE <{url}> { ?s ?p ?o } }",
    "SELECT * WHERE { SERVICE SILENT <{url}> { ?s ?p ?o } }",
    "ASK { SERVICE <{url}> { ?s ?p ?o } }",
    "ASK { SERVICE SILENT <{url}> { ?s ?p ?o } }",
    "CONSTRUCT { ?s ?p ?o } WHERE { service silent <{url}> { ?s ?p ?o } }",
    "PREFIX up: <{url}#> SELECT * WHERE { SeRvIcE up: { ?s ?p ?o } }",
    "PREFIX : <{url}#> SELECT * WHERE { SERVICE:x { ?s ?p ?o } }",
    "SELECT * WHERE { ?a ?b ?c .SERVICE <{url}> { ?s ?p ?o } }",
    "SELECT * WHERE { GRAPH ?g { ?a ?b 1 } SERVICE<{url}>{ ?s ?p ?o } }",
    "SELECT * WHERE { ?a ?b 1SERVICE <{url}> { ?s ?p ?o } }",
    "SELECT ?x WHERE { BIND(<{url}> AS ?u) SERVICE ?u { ?x ?p ?o } } # service",
]


@pytest.mark.parametrize("query", SERVICE_QUERIES)
def test_service_is_refused_and_nothing_is_sent(server: ServeProcess, listener: Listener,
                                                query: str) -> None:
    text = query.replace("{url}", listener.url)
    for reply in (server.get(sparql(text)),
                  server.post("/sparql", text.encode(), "application/sparql-query"),
                  server.post("/sparql", urllib.parse.urlencode({"query": text}).encode(),
                              "application/x-www-form-urlencoded")):
        assert reply.status == 400, reply.text
        assert reply.text == NO_SERVICE + "\n"
    assert listener.connections == 0


def test_the_word_service_elsewhere_is_no_refusal(server: ServeProcess,
                                                  listener: Listener) -> None:
    query = (f'PREFIX service: <{listener.url}#> SELECT ?service WHERE {{ '
             f'BIND("SERVICE <{listener.url}> {{}}" AS ?service) '
             f'FILTER(?service != service:SERVICE) }} # SERVICE <{listener.url}>')
    reply = server.get(sparql(query), {"Accept": "text/csv"})
    assert reply.status == 200, reply.text
    assert reply.text.splitlines()[1] == f"SERVICE <{listener.url}> {{}}"
    assert listener.connections == 0


GAPS = st.sampled_from([" ", "\n", "\t", "  ", " # SERVICE? no\n", "", "#x\n"])


@settings(max_examples=200, deadline=None)
@given(word=st.sampled_from(["SERVICE", "service", "Service", "sErViCe"]), silent=st.booleans(),
       gap=GAPS, before=st.sampled_from(["", "?a ?b ?c . ", "?a ?b 1", "GRAPH ?g { ?a ?b ?c } ",
                                          "OPTIONAL { ?a ?b ?c } ", "FILTER(true) "]),
       target=st.sampled_from(["<http://127.0.0.1:9/x>", "?u", ":x", " <urn:x>"]))
def test_the_service_keyword_is_refused_however_it_is_written(
    word: str, silent: bool, gap: str, before: str, target: str
) -> None:
    clause = word + (gap or " ") + ("SILENT" + (gap or " ") if silent else "") + target
    query = f"PREFIX : <http://127.0.0.1:9/> SELECT * WHERE {{ {before}{clause} {{ ?s ?p ?o }} }}"
    with pytest.raises(ProtocolError, match="SERVICE is refused"):
        check_query(query)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40).map(lambda text: f"{text} SERVICE <http://127.0.0.1:9/> {{}} {text}"))
def test_service_inside_a_string_is_no_keyword(text: str) -> None:
    literal = str(ox.Literal(text))  # N-Triples escaping
    assert check_query(f"SELECT ?service WHERE {{ BIND({literal} AS ?service) }}") == "select"


def test_a_dataset_naming_another_server_fetches_nothing(server: ServeProcess,
                                                        listener: Listener) -> None:
    query = f"SELECT * FROM <{listener.url}> FROM NAMED <{listener.url}#g> WHERE {{ ?s ?p ?o }}"
    reply = server.get(sparql(query) + "&" + urllib.parse.urlencode(
        {"default-graph-uri": listener.url, "named-graph-uri": listener.url + "#n"}))
    assert reply.status == 200, reply.text
    assert listener.connections == 0


def test_a_saved_query_parameter_cannot_add_service(server: ServeProcess,
                                                    listener: Listener) -> None:
    evil = f'") }} SERVICE <{listener.url}> {{ ?s ?p ?o }} FILTER(CONTAINS("'
    reply = server.get("/queries/failed_sessions.csv?" + urllib.parse.urlencode(
        {"error_contains": evil}))
    assert reply.status == 200 and reply.text.splitlines()[1:] == []
    assert listener.connections == 0


# --- 2. bounded bodies ----------------------------------------------------------------------

@pytest.mark.parametrize(("headers", "status"), [
    ("Content-Length: -1\r\n", 400),
    ("Content-Length: -100\r\n", 400),
    ("Content-Length: abc\r\n", 400),
    ("Content-Length: +6\r\n", 400),
    ("Content-Length: 0x10\r\n", 400),
    ("Content-Length: 6\r\nContent-Length: 6\r\n", 400),
    ("Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", 400),
    ("Transfer-Encoding: gzip\r\n", 501),
    ("", 411),
    ("Transfer-Encoding:\r\n chunked\r\n", 400),
    ("Transfer-Encoding: chunked\r\n\t, identity\r\n", 400),
], ids=["minus-one", "negative", "letters", "plus-sign", "hex", "twice", "with-chunked",
        "other-coding", "missing", "folded-chunked", "folded-onto-chunked"])
def test_a_body_of_unknown_length_is_refused_unread(server: ServeProcess, headers: str,
                                                    status: int) -> None:
    megabyte = b"ASK {}" + b" " * (1 << 20)  # the attack: -1 used to read to the end
    reply = raw(server, post_head(server, headers), (megabyte,))
    assert reply.status == status, reply.body
    assert reply.headers["Connection"] == "close" and len(reply.body.splitlines()) == 1


def test_a_chunked_body_counts_against_the_cap(server: ServeProcess) -> None:
    chunk = b"x" * 16384
    chunks = tuple(b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(20))  # 320 KiB
    reply = raw(server, post_head(server, "Transfer-Encoding: chunked\r\n"), chunks)
    assert reply.status == 413 and b"262144 bytes" in reply.body


def test_a_chunked_query_within_the_cap_is_answered(server: ServeProcess) -> None:
    parts = (b"3\r\nASK\r\n", b"3;note=x\r\n {}\r\n", b"0\r\n\r\n")
    reply = raw(server, post_head(server, "Transfer-Encoding: chunked\r\n"
                                          "Accept: text/csv\r\n"), parts)
    assert reply.status == 200 and reply.body.strip() == b"true"


@pytest.mark.parametrize("parts", [
    (b"3\nASK\r\n", b"3\r\n {}\r\n", b"0\r\n\r\n"),
    (b"3\r\nASK\n", b"3\r\n {}\r\n", b"0\r\n\r\n"),
    (b"3\r\nASK\r\n", b"3\r\n {}\r\n", b"0\n\r\n"),
    (b"3\r\nASK\r\n", b"3\r\n {}\r\n", b"0\r\n\n"),
    (b"3\r\nASK\r\n", b"3\r\n {}\r\n", b"0\r\nX-Note: x\n\r\n"),
    (b"3\r\nASK\r\n", b"3\r\n {}\r\r\n", b"0\r\n\r\n"),
], ids=["size-line", "after-data", "last-chunk", "end", "trailer", "bare-cr"])
def test_a_chunked_body_whose_lines_end_in_a_bare_lf_is_refused(
        server: ServeProcess, parts: tuple[bytes, ...]) -> None:
    reply = raw(server, post_head(server, "Transfer-Encoding: chunked\r\n"), parts)
    assert reply.status == 400 and reply.headers["Connection"] == "close", reply.body


def test_a_get_query_is_capped_at_256_kib_like_a_body(server: ServeProcess) -> None:
    comment = " # " + "x" * (200 * 1024)  # above the standard library's 64 KiB request line
    assert server.get(sparql("ASK {}" + comment), {"Accept": "text/csv"}).text.strip() == "true"
    over = server.get(sparql("ASK {} # " + "x" * (258 * 1024)))
    assert over.status == 413 and over.text == "the query string is larger than 262144 bytes\n"
    path = "/sparql?" + "query=ASK%7B%7D&x=" + "y" * (300 * 1024)
    assert raw(server, f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()).status == 414


# --- 3. bounded memory ----------------------------------------------------------------------

def nested_replace(depth: int) -> str:
    """About 1 KB of SPARQL asking for a string of 10 ** depth characters."""
    binds = " ".join(f'BIND(REPLACE(?x{i}, "a", "aaaaaaaaaa") AS ?x{i + 1})'
                     for i in range(1, depth))
    return ('SELECT (STRLEN(?x{d}) AS ?n) WHERE {{ BIND("aaaaaaaaaa" AS ?x1) {b} }}'
            .format(d=depth, b=binds))


def test_a_query_past_max_memory_is_503_and_its_process_replaced(
    built: tuple[Path, list[str], str]
) -> None:
    with serve_process(built, "--max-memory", "256MiB", "--workers", "1") as served:
        assert served.started["max_memory"] == "256 MiB"
        reply = served.get(sparql(nested_replace(9)))  # 10⁹ characters
        assert reply.status == 503, reply.text
        assert reply.text == ("the query needed more memory than the 256 MiB bound "
                              "(--max-memory) and was stopped\n")
        assert int(reply.headers["Retry-After"]) >= 1
        small = served.get(sparql(nested_replace(4)), {"Accept": "text/csv"})  # a new process
        assert small.status == 200 and small.text.split()[1] == "10000"
    assert not any("stack backtrace" in line for line in served.stderr), served.stderr


def test_max_memory_must_be_a_size(built: tuple[Path, list[str], str]) -> None:
    from click.testing import CliRunner

    from tgsparql.cli import main

    for value, message in (("lots", "not a size"), ("1MiB", "at least 64MiB")):
        result = CliRunner().invoke(main, ["serve", "--store", str(built[0]), "--port", "0",
                                           "--max-memory", value])
        assert result.exit_code == 2 and message in result.stderr, result.stderr


# --- 4. pages run no script -------------------------------------------------------------------

def assert_security_headers(headers: Mapping[str, str]) -> None:
    policy = headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy
    assert re.search(r"style-src 'sha256-[A-Za-z0-9+/]+=*';", policy)
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert headers["X-Frame-Options"] == "DENY"


def test_every_answer_carries_the_security_headers(server: ServeProcess) -> None:
    for path in ("/sessions", f"/sessions/{uuid_of(server.sessions[0])}", "/queries",
                 "/sessions/nope", ASK, "/queries/failed_sessions.csv", "/nothing"):
        assert_security_headers(server.get(path).headers)


SCRIPT = b"/<script>alert(1)</script>"
"""In each request the standard library refuses before it is routed: it must not come back."""
LONG_HEADER = b"X-Big: " + SCRIPT
"""The start of a header line one byte longer than the standard library reads (64 KiB)."""


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"GET " + SCRIPT + b" x HTTP/1.1\r\n", 400),
    (b"GET " + SCRIPT + b" HTTP/x.y\r\n", 400),
    (b"POST " + SCRIPT + b"\r\n", 400),
    (b"GET " + SCRIPT + b" HTTP/2.0\r\n", 505),
    (b"GET / HTTP/1.1\r\n" + LONG_HEADER + b"a" * (65537 - len(LONG_HEADER)), 431),
    (b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: %s\r\n" % (n, SCRIPT) for n in range(101)), 431),
], ids=["request-line", "bad-version", "http-0.9-post", "http-2", "header-too-long",
        "too-many-headers"])
def test_the_standard_librarys_refusals_carry_the_security_headers(
    server: ServeProcess, request_bytes: bytes, status: int
) -> None:
    """Each request stops where the server stops reading it, so the answer is not lost to a
    reset over bytes left unread."""
    reply = raw(server, request_bytes)
    assert reply.status == status, reply.body
    assert_security_headers(reply.headers)
    assert reply.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert reply.headers["Connection"] == "close"
    assert len(reply.body.splitlines()) == 1 and b"<" not in reply.body, reply.body


# --- 5. DNS rebinding -------------------------------------------------------------------------

def get_as(served: ServeProcess, path: str, host: str) -> Response:
    """GET with the Host header a browser would send for a page on `host`."""
    return raw(served, f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
                       .encode())


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}",
                                  "localhost.attacker.example", "127.0.0.1.nip.io:{port}",
                                  "192.168.1.20:{port}", ""])
def test_a_host_the_server_was_not_started_under_is_400(server: ServeProcess, host: str) -> None:
    port = server.url.rsplit(":", 1)[1]
    for path in ("/sessions", f"/sessions/{uuid_of(server.sessions[0])}", ASK,
                 "/queries/edges_per_session.csv"):
        reply = get_as(server, path, host.replace("{port}", port))
        assert reply.status == 400, (path, reply.status)
        assert b"is not a name this server answers to" in reply.body
        assert b"Marie Curie" not in reply.body


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}", "[::1]:{port}",
                                  "LOCALHOST", "localhost.:{port}"])
def test_loopback_names_are_accepted(server: ServeProcess, host: str) -> None:
    port = server.url.rsplit(":", 1)[1]
    reply = get_as(server, "/sessions", host.replace("{port}", port))
    assert reply.status == 200 and b"Marie Curie" in reply.body


def test_allowed_host_adds_a_name(built: tuple[Path, list[str], str]) -> None:
    with serve_process(built, "--allowed-host", "kg.internal.example",
                       "--allowed-host", "other.example") as served:
        port = served.url.rsplit(":", 1)[1]
        assert get_as(served, "/sessions", f"kg.internal.example:{port}").status == 200
        assert get_as(served, "/sessions", "other.example").status == 200
        assert get_as(served, "/sessions", "attacker.example").status == 400


# --- 6. no starvation -------------------------------------------------------------------------

def slow_query() -> str:
    return "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"


def test_a_503_says_when_to_retry(built: tuple[Path, list[str], str]) -> None:
    with serve_process(built, "--timeout", "1", "--max-results", "1") as served:
        capped = served.get(sparql("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }"))
        assert capped.status == 503 and int(capped.headers["Retry-After"]) >= 1
        stopped = served.get(sparql(slow_query()))
        assert stopped.status == 503 and "timeout" in stopped.text
        assert int(stopped.headers["Retry-After"]) >= 1


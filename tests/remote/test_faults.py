"""Faults between tgsparql and its SPARQL server, injected by a proxy on loopback: each gives one
clear line naming the endpoint and what failed; only reads and INSERT DATA are tried again; a
query whose recording fails ends as a failed session, or with an error on the stream."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.remote.conftest import Server, free_port
from tests.remote.faulty_proxy import Fault, FaultyProxy
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.cli import main
from tgsparql.cli.ask import DEMO_QUESTION
from tgsparql.data.loader import load_files
from tgsparql.rdf import vocab
from tgsparql.record.explain import explain_session
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.remote import EndpointUnreachable, RemoteStore
from tgsparql.stores.store import StoreError

SELECT = "SELECT * WHERE { ?s ?p ?o }"
INSERT = "INSERT DATA { <urn:a> <urn:b> <urn:c> }"
ATTEMPTS = 3  # the `remote` fixture: 2 retries


def failure(call, *args: object, **kwargs: object) -> str:
    with pytest.raises(StoreError) as raised:
        call(*args, **kwargs)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_an_endpoint_that_is_down_is_named_unreachable() -> None:
    url = f"http://127.0.0.1:{free_port()}/query"
    store = RemoteStore(Endpoint(url, retries=2, backoff=0.01))
    with pytest.raises(EndpointUnreachable) as raised:
        store.select(SELECT)
    assert str(raised.value) == (
        f"SPARQL endpoint {url}: unreachable: Connection refused (after 3 attempts)")


def test_a_server_error_on_a_read_is_retried_then_named(remote: RemoteStore,
                                                        proxy: FaultyProxy) -> None:
    proxy.inject(Fault("status", status=500, body=b"boom\nstack trace line"))
    assert failure(remote.select, SELECT) == (
        f"SPARQL endpoint {proxy.url}/query: HTTP 500 Internal Server Error: boom "
        f"(after {ATTEMPTS} attempts)")
    assert proxy.count("/query") == ATTEMPTS


def test_a_read_succeeds_once_the_server_recovers(remote: RemoteStore, proxy: FaultyProxy) -> None:
    proxy.inject(Fault("status", status=503, times=2))
    assert remote.ask("ASK {}") is True
    assert proxy.count("/query") == 3


def test_retries_back_off_exponentially(remote: RemoteStore, proxy: FaultyProxy,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr("tgsparql.stores.remote.time.sleep", pauses.append)
    proxy.inject(Fault("status", status=503))
    failure(remote.ask, "ASK {}")
    assert pauses == [0.01, 0.02]


def test_a_client_error_is_not_retried(remote: RemoteStore, proxy: FaultyProxy) -> None:
    message = failure(remote.select, "SELEC")
    assert message.startswith(f"SPARQL endpoint {proxy.url}/query: HTTP 400 Bad Request: ")
    assert proxy.count("/query") == 1


def test_a_refused_read_says_so(remote: RemoteStore, proxy: FaultyProxy) -> None:
    proxy.inject(Fault("status", status=401, body=b"Unauthorized"))
    assert failure(remote.ask, "ASK {}") == (
        f"SPARQL endpoint {proxy.url}/query: read refused: HTTP 401 Unauthorized: Unauthorized")
    assert proxy.count() == 1


def test_insert_data_is_retried_after_a_server_error(remote: RemoteStore,
                                                     proxy: FaultyProxy) -> None:
    proxy.inject(Fault("status", status=503, body=b"busy", times=1))
    remote.update(INSERT)
    assert proxy.count("/update") == 2
    proxy.inject(None)
    assert remote.ask("ASK { <urn:a> <urn:b> <urn:c> }") is True


@pytest.mark.parametrize("update", [
    "DELETE WHERE { ?s ?p ?o }",
    "DROP SILENT GRAPH <urn:g> ; INSERT DATA { <urn:a> <urn:b> <urn:c> }",
    "INSERT { ?s <urn:b> 'c' } WHERE { ?s ?p ?o }",
])
def test_other_updates_are_never_retried(remote: RemoteStore, proxy: FaultyProxy,
                                         update: str) -> None:
    proxy.inject(Fault("status", status=503, body=b"busy"))
    assert failure(remote.update, update) == (
        f"SPARQL endpoint {proxy.url}/update: HTTP 503 Service Unavailable: busy")
    assert proxy.count("/update") == 1


def test_an_update_endpoint_that_refuses_writes(remote: RemoteStore, proxy: FaultyProxy) -> None:
    proxy.inject(Fault("status", status=403, body=b"read-only endpoint\n", paths=("/update",)))
    assert failure(remote.update, INSERT) == (
        f"SPARQL endpoint {proxy.url}/update: update refused: HTTP 403 Forbidden: "
        "read-only endpoint")
    assert proxy.count("/update") == 1
    assert remote.ask("ASK {}") is True  # reads still work


def test_a_read_timeout_is_retried_then_named(oxigraph: Server, proxy: FaultyProxy) -> None:
    store = oxigraph.store(proxy.url, retries=1, backoff=0.01, read_timeout=0.3)
    proxy.inject(Fault("delay", delay=3))
    assert failure(store.select, SELECT) == (
        f"SPARQL endpoint {proxy.url}/query: no response within 0.3 s (read timeout) "
        "(after 2 attempts)")
    assert proxy.count("/query") == 2


def test_a_slow_response_within_the_read_timeout_is_fine(oxigraph: Server,
                                                         proxy: FaultyProxy) -> None:
    store = oxigraph.store(proxy.url, read_timeout=5)
    proxy.inject(Fault("delay", delay=0.3))
    assert store.ask("ASK {}") is True
    assert proxy.count() == 1


def test_a_truncated_body_is_retried_then_named(remote: RemoteStore, proxy: FaultyProxy) -> None:
    remote.update(INSERT)
    proxy.inject(Fault("truncate"))
    message = failure(remote.select, SELECT)
    assert re.fullmatch(
        rf"SPARQL endpoint {re.escape(proxy.url)}/query: truncated response body "
        rf"\(\d+ bytes received, \d+ missing\) \(after {ATTEMPTS} attempts\)", message), message
    assert proxy.count("/query") == ATTEMPTS


def test_a_connection_closed_without_a_response(remote: RemoteStore, proxy: FaultyProxy) -> None:
    proxy.inject(Fault("close", times=1))
    assert remote.ask("ASK {}") is True
    proxy.inject(Fault("close"))
    assert failure(remote.ask, "ASK {}") == (
        f"SPARQL endpoint {proxy.url}/query: connection failed mid-request: Remote end closed "
        f"connection without response (after {ATTEMPTS} attempts)")


@pytest.mark.parametrize(("body", "detail"), [
    (b'{"head": {"vars": ["s"]}, "results": {"bindings": [{"s": {"type": "uri"',
     "Parser error at line 1 column 72"),
    (b"<html><body>Welcome to our portal</body></html>", "Parser error at line 1"),
])
def test_a_malformed_result_body_is_named_and_not_retried(
        remote: RemoteStore, proxy: FaultyProxy, body: bytes, detail: str) -> None:
    proxy.inject(Fault("malformed", body=body))
    message = failure(remote.select, SELECT)
    assert message.startswith(f"SPARQL endpoint {proxy.url}/query: malformed SPARQL JSON "
                              "results: "), message
    assert detail in message
    assert proxy.count() == 1


def test_a_malformed_ask_and_construct_body(remote: RemoteStore, proxy: FaultyProxy) -> None:
    proxy.inject(Fault("malformed", body=b'{"head": {"vars": []}, "results": {"bindings": []}}'))
    assert failure(remote.ask, "ASK {}") == (
        f"SPARQL endpoint {proxy.url}/query: malformed SPARQL JSON results: no boolean")
    proxy.inject(Fault("malformed", body=b"<urn:a> <urn:b> oops .\n"))
    assert failure(remote.construct, "CONSTRUCT WHERE { ?s ?p ?o }").startswith(
        f"SPARQL endpoint {proxy.url}/query: malformed N-Triples: ")


# -- a query whose recording fails ------------------------------------------------------------


@pytest.fixture
def rag(remote: RemoteStore, tgsparql_demo_file: Path) -> GraphRag:
    assert not load_files(remote, [tgsparql_demo_file]).failed
    return GraphRag(remote, OfflineBackend())


def test_a_refused_write_mid_query_ends_as_a_failed_session(
        rag: GraphRag, remote: RemoteStore, proxy: FaultyProxy) -> None:
    # over HTTP, session, retrieval and selection are written together; the answer is refused
    # once; the failure is recorded, with everything done before it
    proxy.inject(Fault("status", status=403, body=b"writes are paused", paths=("/update",),
                       after=1, times=1))
    messages = list(rag.query(DEMO_QUESTION))
    assert [m.message_type for m in messages] == ["explain"] * 3 + ["chunk", "error"]
    expected = (f"answer failed: SPARQL endpoint {proxy.url}/update: update refused: "
                "HTTP 403 Forbidden: writes are paused")
    assert messages[-1].error is not None and messages[-1].error.message == expected
    assert messages[-1].end_of_session
    assert proxy.count("/update") == 3
    explained = explain_session(remote, vocab.DEFAULT_COLLECTION,
                                messages[0].explain_id or "")
    assert (explained.status, explained.error) == ("failed", expected)
    assert explained.selected and explained.answer is None


def test_an_unreachable_store_mid_query_gives_an_error_on_the_stream(
        rag: GraphRag, remote: RemoteStore, proxy: FaultyProxy) -> None:
    proxy.inject(Fault("status", status=503, body=b"down", paths=("/update",), after=1))
    messages = list(rag.query(DEMO_QUESTION))
    assert [m.message_type for m in messages] == ["explain"] * 3 + ["chunk", "error"]
    down = (f"SPARQL endpoint {proxy.url}/update: HTTP 503 Service Unavailable: down "
            f"(after {ATTEMPTS} attempts)")
    assert messages[-1].error is not None
    assert messages[-1].error.message == (
        f"answer failed: {down}; recording the failure also failed: {down}")
    assert proxy.count("/update") == 1 + 2 * ATTEMPTS
    proxy.inject(None)
    explained = explain_session(remote, vocab.DEFAULT_COLLECTION,
                                messages[0].explain_id or "")
    assert explained.status is None  # left open, never passed off as complete


def test_the_cli_reports_a_failed_recording_in_one_line(
        oxigraph: Server, proxy: FaultyProxy, tgsparql_demo_file: Path) -> None:
    runner = CliRunner()
    args = ["--endpoint", proxy.url + "/query", "--update-endpoint", proxy.url + "/update"]
    assert runner.invoke(main, ["load", *args, str(tgsparql_demo_file)]).exit_code == 0
    proxy.inject(Fault("status", status=403, body=b"read-only", paths=("/update",)))
    result = runner.invoke(main, ["query", *args, "--no-stream", DEMO_QUESTION])
    assert result.exit_code == 1
    refused = f"SPARQL endpoint {proxy.url}/update: update refused: HTTP 403 Forbidden: read-only"
    assert result.stderr == (
        f"error: selection failed: {refused}; recording the failure also failed: {refused}\n")

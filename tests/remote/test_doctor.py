"""`tgsparql doctor` against a real Oxigraph 0.5 server, directly and behind faults."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tests.remote.conftest import Server, free_port
from tests.remote.faulty_proxy import Fault, FaultyProxy
from tgsparql.cli import main
from tgsparql.stores.doctor import diagnose
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.remote import RemoteStore

OXIGRAPH_05 = {
    "reachable": "ok", "read": "ok", "update": "ok", "named graphs": "ok", "union graph": "ok",
    "triple terms": "ok", "quoted triples": "no", "cleanup": "ok", "reification": "ok",
}


def args(base: str) -> list[str]:
    return ["doctor", "--endpoint", base + "/query", "--update-endpoint", base + "/update"]


def test_oxigraph_05_is_served_in_rdf12(remote: RemoteStore, proxy: FaultyProxy) -> None:
    diagnosis = diagnose(remote)
    assert {c.name: c.result for c in diagnosis.checks} == OXIGRAPH_05
    assert (diagnosis.dialect, diagnosis.ok) == ("rdf12", True)
    quoted = next(c for c in diagnosis.checks if c.name == "quoted triples")
    assert quoted.detail == "<< s p o >> is read as an RDF 1.2 reifier (a blank node), not a triple"


def test_the_probes_leave_nothing_behind(remote: RemoteStore, proxy: FaultyProxy) -> None:
    diagnose(remote)
    assert remote.select("SELECT * WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }") == []


def test_the_text_table_and_exit_0(oxigraph: Server, proxy: FaultyProxy) -> None:
    result = CliRunner().invoke(main, args(proxy.url))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"endpoint {proxy.url}/query (updates: {proxy.url}/update)"
    assert lines[1].split() == ["CHECK", "RESULT", "DETAIL"]
    assert [line.split("  ")[0] for line in lines[2:11]] == list(OXIGRAPH_05)
    assert lines[-2:] == ["recommended dialect: rdf12",
                          "verdict: ok, the endpoint can serve tgsparql"]


def test_the_json_report(oxigraph: Server, proxy: FaultyProxy) -> None:
    result = CliRunner().invoke(main, [*args(proxy.url), "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {c["check"]: c["result"] for c in report["checks"]} == OXIGRAPH_05
    assert (report["dialect"], report["ok"], report["reason"]) == ("rdf12", True, None)


def test_a_dialect_the_endpoint_does_not_serve_exits_1(oxigraph: Server,
                                                       proxy: FaultyProxy) -> None:
    result = CliRunner().invoke(main, [*args(proxy.url), "--dialect", "rdfstar"])
    assert result.exit_code == 1
    assert result.stderr == ("error: the endpoint does not serve the rdfstar dialect; "
                             "use --dialect rdf12\n")


def test_a_read_only_endpoint_cannot_serve_tgsparql(oxigraph: Server, proxy: FaultyProxy) -> None:
    proxy.inject(Fault("status", status=403, body=b"read-only", paths=("/update",)))
    result = CliRunner().invoke(main, args(proxy.url))
    assert result.exit_code == 1
    assert "update       no" in result.stdout
    assert result.stderr == (f"error: update: SPARQL endpoint {proxy.url}/update: update "
                             "refused: HTTP 403 Forbidden: read-only\n")
    assert proxy.count("/update") == 1  # the probe INSERT DATA is refused, not retried


def test_an_unreachable_endpoint_exits_1() -> None:
    url = f"http://127.0.0.1:{free_port()}/query"
    diagnosis = diagnose(RemoteStore(Endpoint(url, retries=0)))
    assert [(c.name, c.result) for c in diagnosis.checks] == [
        ("reachable", "no"), ("read", "skipped"), ("reification", "no")]
    assert diagnosis.reason == f"reachable: SPARQL endpoint {url}: unreachable: Connection refused"
    assert diagnosis.dialect is None


def test_a_broken_read_is_named(remote: RemoteStore, proxy: FaultyProxy) -> None:
    proxy.inject(Fault("status", status=404, body=b"no such dataset"))
    diagnosis = diagnose(remote)
    assert diagnosis.reason == (f"read: SPARQL endpoint {proxy.url}/query: HTTP 404 Not Found: "
                                "no such dataset")


def test_doctor_needs_an_endpoint() -> None:
    result = CliRunner().invoke(main, ["doctor"], env={"TGSPARQL_ENDPOINT": None})
    assert result.exit_code == 2
    assert "give --endpoint URL (or set TGSPARQL_ENDPOINT)" in result.output


def test_oxigraph_04_is_served_in_rdfstar(oxigraph04: Server) -> None:
    oxigraph04.store().update("DROP ALL")
    diagnosis = diagnose(oxigraph04.store())
    results = {c.name: c.result for c in diagnosis.checks}
    assert results == {**OXIGRAPH_05, "triple terms": "no", "quoted triples": "ok"}
    assert (diagnosis.dialect, diagnosis.ok) == ("rdfstar", True)
    terms = next(c for c in diagnosis.checks if c.name == "triple terms")
    assert terms.detail.startswith(f"SPARQL endpoint {oxigraph04.base}/update: HTTP 400 Bad "
                                   "Request: ")

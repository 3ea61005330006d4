"""RemoteStore against a real Oxigraph server (through the counting proxy): the Store protocol,
dataset parameters, bulk loads, auth, configuration, and the CLI's --endpoint."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from urllib.parse import parse_qs

import pyoxigraph as ox
import pytest
from click.testing import CliRunner

from tests.remote.conftest import Server
from tests.remote.faulty_proxy import Fault, FaultyProxy
from tgsparql.cli import main
from tgsparql.cli.ask import DEMO_QUESTION
from tgsparql.data.loader import load_files
from tgsparql.rdf.iris import statement_iri
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.remote import RemoteStore, display_url, is_insert_data
from tgsparql.stores.store import Store, StoreError

S = ox.NamedNode("http://example.org/s")
P = ox.NamedNode("http://example.org/p")
O = ox.NamedNode("http://example.org/o")
G = ox.NamedNode("urn:graph:g")
FACT = ox.Triple(S, P, ox.Literal("née Skłodowska", language="pl"))
EDGE = ox.Triple(O, P, FACT)


def params(proxy: FaultyProxy, index: int = -1) -> dict[str, list[str]]:
    return parse_qs(proxy.seen[index].body.decode())


def test_it_is_a_store(remote: RemoteStore) -> None:
    assert isinstance(remote, Store) and remote.dialect == "rdf12"


def test_triple_terms_and_language_literals_survive_a_round_trip(remote: RemoteStore) -> None:
    remote.update(f"INSERT DATA {{ {O} {P} <<( {FACT} )>> }}")
    assert remote.select("SELECT ?s ?o WHERE { ?s ?p ?o }") == [{"s": O, "o": FACT}]
    assert remote.construct("CONSTRUCT WHERE { ?s ?p ?o }") == [EDGE]
    assert remote.ask(f"ASK {{ ?s ?p <<( {FACT} )>> }}") is True


def test_unbound_variables_are_left_out_of_a_row(remote: RemoteStore) -> None:
    rows = remote.select("SELECT ?a ?b WHERE { BIND(1 AS ?a) }")
    assert rows == [{"a": ox.Literal("1", datatype=ox.NamedNode(
        "http://www.w3.org/2001/XMLSchema#integer"))}]


def test_reads_are_posted_as_sparql_protocol_forms_asking_for_sparql_json(
        remote: RemoteStore, proxy: FaultyProxy) -> None:
    remote.select("SELECT * WHERE { ?s ?p ?o }")
    seen = proxy.seen[-1]
    assert (seen.method, seen.path) == ("POST", "/query")
    assert seen.headers["Accept"] == "application/sparql-results+json"
    assert params(proxy) == {"query": ["SELECT * WHERE { ?s ?p ?o }"]}
    remote.construct("CONSTRUCT WHERE { ?s ?p ?o }")
    assert proxy.seen[-1].headers["Accept"] == "application/n-triples"


def test_updates_go_to_the_update_endpoint(remote: RemoteStore, proxy: FaultyProxy) -> None:
    remote.update(f"INSERT DATA {{ {S} {P} {O} }}")
    assert proxy.seen[-1].path == "/update"
    assert params(proxy) == {"update": [f"INSERT DATA {{ {S} {P} {O} }}"]}


def test_the_update_endpoint_defaults_to_the_query_endpoint(proxy: FaultyProxy) -> None:
    store = RemoteStore(Endpoint(proxy.url + "/query", retries=0))
    with pytest.raises(StoreError):
        store.update(f"INSERT DATA {{ {S} {P} {O} }}")
    assert proxy.seen[-1].path == "/query"


def test_union_and_graph_lists_become_protocol_parameters(
        remote: RemoteStore, proxy: FaultyProxy) -> None:
    remote.update(f"INSERT DATA {{ {S} {P} 'default' . GRAPH {G} {{ {S} {P} 'named' }} }}")
    query = f"SELECT ?o WHERE {{ {S} {P} ?o }}"
    values = lambda rows: sorted(row["o"].value for row in rows)  # noqa: E731
    assert values(remote.select(query)) == ["default"]
    assert values(remote.select(query, default_graph="union")) == ["default", "named"]
    assert params(proxy)["union-default-graph"] == ["true"]
    assert values(remote.select(query, default_graph=[G])) == ["named"]
    assert params(proxy)["default-graph-uri"] == [G.value]
    assert values(remote.select(query, default_graph=[ox.DefaultGraph()])) == ["default"]
    assert remote.ask(f"ASK {{ {S} {P} 'named' }}", default_graph="union") is True


def test_a_graph_list_mixing_the_default_graph_is_refused(remote: RemoteStore,
                                                          proxy: FaultyProxy) -> None:
    with pytest.raises(StoreError) as raised:
        remote.select("SELECT * WHERE { ?s ?p ?o }", default_graph=[ox.DefaultGraph(), G])
    assert str(raised.value) == (
        f"SPARQL endpoint {proxy.url}/query: the SPARQL protocol cannot name the default graph "
        "beside named graphs in default-graph-uri")
    assert proxy.count() == 0


def test_a_union_read_without_a_union_parameter_is_refused(oxigraph: Server) -> None:
    store = oxigraph.store(union_parameter=None)
    with pytest.raises(StoreError, match="cannot ask this server for the union of all graphs"):
        store.ask("ASK {}", default_graph="union")


def nquads(*quads: ox.Quad) -> io.BytesIO:
    return io.BytesIO(ox.serialize(list(quads), format=ox.RdfFormat.N_QUADS))


QUADS = [ox.Quad(ox.NamedNode(f"http://example.org/n{i}"), P, ox.Literal(str(i)), G)
         for i in range(5)] + [ox.Quad(O, P, FACT)]


def stored(store: RemoteStore) -> set[ox.Quad]:
    rows = store.select("SELECT ?s ?p ?o ?g WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }")
    return {ox.Quad(r["s"], r["p"], r["o"], r.get("g", ox.DefaultGraph())) for r in rows}


def test_bulk_load_posts_n_quads_batches_to_the_graph_store(
        oxigraph: Server, proxy: FaultyProxy) -> None:
    store = oxigraph.store(proxy.url, batch_size=4)
    sent: list[int] = []
    store.bulk_load(nquads(*QUADS), ox.RdfFormat.N_QUADS, progress=sent.append)
    assert sent == [4, 2]
    assert [(s.path, s.headers["Content-Type"]) for s in proxy.seen] == [
        ("/store", "application/n-quads")] * 2
    assert stored(store) == set(QUADS)


def test_a_load_that_fails_midway_says_how_much_stays_and_that_loading_again_completes_it(
        oxigraph: Server, proxy: FaultyProxy, tmp_path: Path) -> None:
    store = oxigraph.store(proxy.url, batch_size=4)
    path = tmp_path / "data.nq"
    path.write_bytes(nquads(*QUADS).getvalue())
    proxy.inject(Fault("status", status=400, body=b"full", paths=("/store",), after=1))
    report = load_files(store, [path])
    assert report.failed[path].startswith(f"{path}: ")
    assert report.failed[path].endswith(
        "(after 4 quads were written); what was written before the failure stays: once its "
        "cause is put right, loading the file again completes it")
    assert stored(store) == set(QUADS[:4])
    proxy.inject(None)
    assert not load_files(store, [path]).failed
    assert set(QUADS) <= stored(store)  # with the label index's version


def test_bulk_load_without_a_graph_store_sends_insert_data(
        oxigraph: Server, proxy: FaultyProxy) -> None:
    store = RemoteStore(Endpoint(proxy.url + "/query", update_url=proxy.url + "/update",
                                 batch_size=5))
    store.bulk_load(nquads(*QUADS), ox.RdfFormat.N_QUADS)
    assert [s.path for s in proxy.seen] == ["/update", "/update"]
    assert all(params(proxy, i)["update"][0].count("INSERT DATA") == 1 for i in (0, 1))
    assert stored(store) == set(QUADS)


def test_bulk_load_into_a_graph_puts_default_graph_triples_there(remote: RemoteStore) -> None:
    data = io.BytesIO(f"{S} {P} {O} .\n".encode())
    remote.bulk_load(data, ox.RdfFormat.N_TRIPLES, graph=G)
    assert stored(remote) == {ox.Quad(S, P, O, G)}


def test_bulk_load_in_the_reification_dialect_writes_statements(
        oxigraph: Server, proxy: FaultyProxy) -> None:
    store = oxigraph.store(dialect="reification")
    store.bulk_load(nquads(ox.Quad(O, P, FACT, G)), ox.RdfFormat.N_QUADS)
    rdf = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    stmt = statement_iri(FACT)
    assert stored(store) == {
        ox.Quad(O, P, stmt, G),
        ox.Quad(stmt, ox.NamedNode(rdf + "type"), ox.NamedNode(rdf + "Statement"), G),
        ox.Quad(stmt, ox.NamedNode(rdf + "subject"), S, G),
        ox.Quad(stmt, ox.NamedNode(rdf + "predicate"), P, G),
        ox.Quad(stmt, ox.NamedNode(rdf + "object"), FACT.object, G),
    }


def test_bulk_load_refuses_blank_nodes_before_sending_anything(
        remote: RemoteStore, proxy: FaultyProxy) -> None:
    with pytest.raises(StoreError, match=r"^bulk load failed: blank node in .*skolemize"):
        remote.bulk_load(io.BytesIO(b'_:b <http://example.org/p> "x" .\n'),
                         ox.RdfFormat.N_TRIPLES)
    assert proxy.count() == 0


def test_bulk_load_names_the_line_of_a_syntax_error(remote: RemoteStore) -> None:
    with pytest.raises(StoreError, match=r"^bulk load failed: .*line 2"):
        remote.bulk_load(io.BytesIO(f"{S} {P} {O} .\n<oops\n".encode()), ox.RdfFormat.N_TRIPLES)


def test_basic_auth_is_sent_on_reads_updates_and_graph_store_posts(
        oxigraph: Server, proxy: FaultyProxy) -> None:
    store = oxigraph.store(proxy.url, user="ada", password="s3cret")
    store.ask("ASK {}")
    store.update(f"INSERT DATA {{ {S} {P} {O} }}")
    store.bulk_load(nquads(ox.Quad(S, P, O)), ox.RdfFormat.N_QUADS)
    expected = "Basic " + base64.b64encode(b"ada:s3cret").decode()
    assert [s.headers.get("Authorization") for s in proxy.seen] == [expected] * 3


def test_a_bearer_token_is_sent(oxigraph: Server, proxy: FaultyProxy) -> None:
    oxigraph.store(proxy.url, token="tok-123").ask("ASK {}")
    assert proxy.seen[-1].headers["Authorization"] == "Bearer tok-123"


def test_a_closed_store_says_so(remote: RemoteStore, proxy: FaultyProxy) -> None:
    remote.close()
    with pytest.raises(StoreError) as raised:
        remote.ask("ASK {}")
    assert str(raised.value) == f"SPARQL endpoint {proxy.url}/query: the store is closed"


def test_credentials_in_a_url_are_never_printed() -> None:
    assert display_url("http://ada:s3cret@db.example:8890/sparql?x=1") == (
        "http://db.example:8890/sparql?x=1")
    assert display_url("https://db.example/sparql") == "https://db.example/sparql"


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        ("INSERT DATA { <urn:a> <urn:b> 'c' }", True),
        ("PREFIX tg: <urn:tg:>\n# DELETE WHERE in a comment\nINSERT DATA { <urn:a> tg:b "
         "'DROP ALL; DELETE WHERE' }", True),
        ("insert data { graph <urn:g> { <urn:a#DELETE> <urn:b> \"\"\"x\ny\"\"\" } }", True),
        ("DROP SILENT GRAPH <urn:g> ; INSERT DATA { <urn:a> <urn:b> 'c' }", False),
        ("INSERT DATA { <urn:a> <urn:b> 'c' } ; DELETE DATA { <urn:a> <urn:b> 'c' }", False),
        ("INSERT { ?s <urn:b> 'c' } WHERE { ?s ?p ?o }", False),
        ("DELETE WHERE { ?s ?p ?o }", False),
        ("WITH <urn:g> DELETE { ?s ?p ?o } INSERT { ?s ?p 1 } WHERE { ?s ?p ?o }", False),
        ("LOAD <http://example.org/data.ttl>", False),
    ],
)
def test_only_a_lone_insert_data_counts_as_safe_to_repeat(update: str, expected: bool) -> None:
    assert is_insert_data(update) is expected


# -- the CLI's --endpoint ----------------------------------------------------------------------


def endpoint_args(server: Server) -> list[str]:
    return ["--endpoint", server.base + "/query", "--update-endpoint", server.base + "/update"]


def test_cli_loads_queries_and_lists_sessions_over_an_endpoint(
        oxigraph: Server, proxy: FaultyProxy, tgsparql_demo_file) -> None:
    runner = CliRunner()
    args = endpoint_args(oxigraph)
    loaded = runner.invoke(main, ["load", *args, str(tgsparql_demo_file)])
    assert loaded.exit_code == 0, loaded.output
    assert re.search(r"loaded .*curie\.trig: \d+ quads", loaded.output)
    asked = runner.invoke(main, ["query", *args, "--no-stream", DEMO_QUESTION])
    assert asked.exit_code == 0, asked.output
    assert "Warsaw" in asked.stdout
    listed = runner.invoke(main, ["sessions", *args, "--format", "json"])
    assert listed.exit_code == 0, listed.output
    assert [s["question"] for s in json.loads(listed.stdout)] == [DEMO_QUESTION]


def test_cli_takes_the_endpoint_from_the_environment(oxigraph: Server, proxy: FaultyProxy) -> None:
    result = CliRunner().invoke(main, ["sessions"], env={
        "TGSPARQL_ENDPOINT": proxy.url + "/query", "TGSPARQL_STORE": None})
    assert result.exit_code == 0, result.output
    assert proxy.count("/query") >= 1


def test_cli_store_and_endpoint_exclude_each_other(tmp_path, proxy: FaultyProxy) -> None:
    result = CliRunner().invoke(main, ["sessions", "--store", str(tmp_path),
                                       "--endpoint", proxy.url + "/query"])
    assert result.exit_code == 2
    assert "--store and --endpoint are mutually exclusive" in result.output


def test_cli_an_endpoint_flag_on_the_command_line_wins_over_a_store_in_the_environment(
        tmp_path, proxy: FaultyProxy) -> None:
    result = CliRunner().invoke(main, ["sessions", "--endpoint", proxy.url + "/query"],
                                env={"TGSPARQL_STORE": str(tmp_path / "kg")})
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "kg").exists() and proxy.count("/query") >= 1


def test_cli_remote_flags_need_an_endpoint() -> None:
    result = CliRunner().invoke(main, ["sessions", "--dialect", "rdfstar"],
                                env={"TGSPARQL_ENDPOINT": None})
    assert result.exit_code == 2
    assert "--dialect needs --endpoint URL (or TGSPARQL_ENDPOINT)" in result.output


def test_cli_an_unreachable_endpoint_is_a_one_line_error() -> None:
    from tests.remote.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/query"
    result = CliRunner().invoke(main, ["sessions", "--endpoint", url],
                                env={"TGSPARQL_STORE": None})
    assert result.exit_code == 1
    assert result.stderr == (f"error: SPARQL endpoint {url}: unreachable: Connection refused "
                             "(after 4 attempts)\n")

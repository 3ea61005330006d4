"""`tgsparql validate --endpoint` and `query --validate` over Oxigraph server 0.5 (`rdf12`) and
over `tgsparql serve`: the same report, result for result, as validating the same data in an
embedded store; an endpoint that does not show every graph is refused."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib.resources import as_file, files
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.remote.conftest import Server
from tests.serve.conftest import ServeProcess, running, serve_process
from tgsparql.serve import ServerConfig
from tgsparql.stores.locking import exclusive_store
from tgsparql.stores.store import open_store

QUESTION = "Who did Marie Curie marry?"
SESSION_RE = re.compile(r"urn:trustgraph:session:[0-9a-f-]{36}")
CORRUPTIONS = """
PREFIX tg: <https://trustgraph.ai/ns/>
PREFIX ent: <https://example.org/demo/entity/>
INSERT DATA { ent:Marie_Curie <https://example.org/demo/rel/likes> ent:Paris } ;
DELETE { GRAPH ?g { ?edge tg:edge ?t } }
INSERT { GRAPH ?g { ?edge tg:edge <<( ent:Paris <https://example.org/demo/rel/x> ent:Warsaw )>> } }
WHERE { GRAPH ?g { ?edge tg:edge ?t } FILTER(STRENDS(STR(?edge), ":0")) } ;
DELETE { GRAPH <urn:graph:library> { ?chunk tg:content ?c } }
INSERT { GRAPH <urn:graph:library> { ?chunk tg:content "tampered" } }
WHERE { GRAPH <urn:graph:library> { ?chunk tg:content ?c }
        FILTER(STRSTARTS(STR(?chunk), "urn:chunk:6e9a")) }
"""


def endpoint(server: Server) -> list[str]:
    return ["--endpoint", server.base + server.query_path,
            "--update-endpoint", server.base + server.update_path,
            "--graph-store", server.base + (server.store_path or "")]


def mirror(path: Path, server: Server) -> None:
    """The store's quads, by export, on the server, which holds nothing else."""
    dump = path.parent / "dump.nq"
    assert cli("export", "--store", path, "--format", "nquads", "--output", dump).exit_code == 0
    server.clear()
    loaded = cli("load", *endpoint(server), dump)
    assert loaded.exit_code == 0, loaded.stderr


@pytest.fixture(scope="module")
def demo() -> Iterator[Path]:
    with as_file(files("tgsparql.data.demo").joinpath("curie.trig")) as path:
        yield path


@pytest.fixture(scope="module")
def both(oxigraph: Server, tmp_path_factory: pytest.TempPathFactory,
         demo: Path) -> tuple[Path, str]:
    """The demo, a session and three corruptions in an on-disk store, and the same quads (by
    export) on the server; the session's IRI."""
    path = tmp_path_factory.mktemp("validate") / "store"
    assert cli("load", "--store", path, demo).exit_code == 0
    asked = cli("query", QUESTION, "--store", path)
    session = SESSION_RE.search(asked.stderr)
    assert asked.exit_code == 0 and session is not None, asked.stderr
    store = open_store(path)
    store.update(CORRUPTIONS)
    store.close()
    mirror(path, oxigraph)
    return path, session.group(0)


@pytest.fixture(scope="module")
def serving(both: tuple[Path, str]) -> Iterator[ServeProcess]:
    """`tgsparql serve --ask` on the corrupted store: it holds the store for writing."""
    path, session = both
    with serve_process((path, [session], ""), "--ask", "--max-results", "1000000") as served:
        yield served


@pytest.mark.parametrize("route", ["oxigraph", "serve"])
@pytest.mark.parametrize("scope", ["store", "session"])
def test_validation_over_the_endpoint_equals_the_embedded_report(
    both: tuple[Path, str], oxigraph: Server, serving: ServeProcess, scope: str, route: str
) -> None:
    path, session = both
    extra = ["--session", session] if scope == "session" else []
    embedded = cli("validate", "--store", path, "--format", "json", *extra)
    over = endpoint(oxigraph) if route == "oxigraph" else ["--endpoint", serving.url + "/sparql"]
    remote = cli("validate", *over, "--format", "json", *extra)
    assert embedded.exit_code == remote.exit_code == 1, remote.stderr
    assert json.loads(remote.stdout) == json.loads(embedded.stdout)
    found = {(r["sourceConstraint"] or {}).get("value", "").rsplit("/", 1)[-1]
             for r in json.loads(remote.stdout)["results"]}
    # the documents the edge selection names no longer state its (replaced) fact: a warning
    expected = {"SelectedEdgeIsAFact", "SelectedEdgeWasRetrieved", "FactDocumentStatesTheFact"}
    if scope == "store":
        expected |= {"FactHasProvenance", "ChunkTextMatchesItsDocument",
                     "ContentMatchesItsSha256", "EvidenceMatchesItsChunk"}
    assert found == expected


def test_the_junit_reports_are_equal_too(both: tuple[Path, str], oxigraph: Server) -> None:
    path, _ = both
    embedded = cli("validate", "--store", path, "--format", "junit")
    remote = cli("validate", *endpoint(oxigraph), "--format", "junit")
    assert remote.stdout == embedded.stdout and "<testsuite" in remote.stdout


def test_query_validate_over_the_endpoint_checks_the_new_session(
    both: tuple[Path, str], oxigraph: Server
) -> None:
    run = cli("query", "Where was Marie Curie born?", *endpoint(oxigraph), "--validate")
    assert run.exit_code == 0, run.stderr
    assert re.search(r"^validate: conforms: \d+ shapes checked, 0 warnings$", run.stderr,
                     re.MULTILINE), run.stderr


def test_validate_store_reads_a_store_another_process_writes(
    both: tuple[Path, str], serving: ServeProcess
) -> None:
    """`serve --ask` holds the store; validation only reads it, so needs no writer's turn."""
    path, _ = both
    run = cli("validate", "--store", path, "--lock-timeout", "0")
    assert run.exit_code == 1 and run.stdout.startswith("Does not conform"), run.stderr


def test_validate_store_beside_a_writer_of_this_process(tmp_path: Path, demo: Path) -> None:
    path = tmp_path / "store"
    assert cli("load", "--store", path, demo).exit_code == 0
    with exclusive_store(path, timeout=0):
        run = cli("validate", "--store", path, "--lock-timeout", "0")
    assert run.exit_code == 0, run.stderr


def test_an_endpoint_that_ignores_the_union_is_refused(
    both: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that answers a union read from its default graph alone: validating there would
    pass what it never read, so validation stops (exit 2) and says why."""
    path, session = both
    monkeypatch.setattr("tgsparql.serve.sparql.UNION_PARAMETER", "not-this-one")
    with running(ServerConfig(store=path, port=0)) as server:
        url = server.url + "/sparql"
        for extra in ([], ["--session", session]):
            run = cli("validate", "--endpoint", url, *extra)
            assert run.exit_code == 2 and run.stdout == "", run.stdout
            assert f"error: {url} does not show the named graphs" in run.stderr, run.stderr
        named = cli("validate", "--endpoint", url, "--graph", "urn:graph:explainability")
    assert named.exit_code == 1, named.stderr


def test_shapes_that_read_the_shapes_graph_are_refused_on_an_endpoint(
    both: tuple[Path, str], oxigraph: Server, tmp_path: Path
) -> None:
    """`$shapesGraph` needs the shapes graph in the data's dataset, which validation never
    writes to an endpoint: exit 2 with the reason, where the store itself validates."""
    path, _ = both
    shapes = tmp_path / "shapes.ttl"
    shapes.write_text("""@prefix sh: <http://www.w3.org/ns/shacl#> .
        <urn:S> a sh:NodeShape ; sh:targetNode <https://example.org/demo/entity/Marie_Curie> ;
          sh:sparql [ sh:select
            "SELECT $this WHERE { GRAPH $shapesGraph { $currentShape ?p ?o } }" ] .
        """)
    run = cli("validate", *endpoint(oxigraph), "--shapes", shapes)
    assert run.exit_code == 2 and run.stdout == "", run.stdout
    assert "$shapesGraph" in run.one_error_line and "endpoint" in run.one_error_line
    assert cli("validate", "--store", path, "--shapes", shapes).exit_code == 1

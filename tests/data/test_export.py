"""Export in the reification dialect, for tools without triple terms, and into a closed pipe."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pyoxigraph as ox
import pytest
from click.testing import CliRunner

from tgsparql.asking.pipeline import GraphRag
from tgsparql.cli import main
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import statement_iri
from tgsparql.stores.store import EmbeddedStore, open_store
from tgsparql.validation import Shapes, Validator

SHAPES = Path(__file__).resolve().parents[2] / "shapes"
EDGE_COUNT = re.compile(r'(<https://trustgraph\.ai/ns/edgeCount> )"\d+"')


@pytest.fixture
def recorded(
    tgsparql_demo_pipeline: GraphRag, tgsparql_demo_store: EmbeddedStore, tmp_path: Path
) -> Path:
    """The demo KG and one answered session, in a store directory."""
    assert list(tgsparql_demo_pipeline.query("Where was Marie Curie born?"))[-1].error is None
    path = tmp_path / "kg"
    with open_store(path) as disk:
        disk.oxigraph.extend(tgsparql_demo_store.oxigraph)
    return path


def export(store: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["export", "--store", str(store), "--format", "nquads",
                                       *args], env={"TGSPARQL_ENDPOINT": None})
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_reification_writes_statements_where_rdf12_writes_triple_terms(recorded: Path) -> None:
    rdf12 = list(ox.parse(export(recorded).encode(), ox.RdfFormat.N_QUADS))
    reified = set(ox.parse(export(recorded, "--dialect", "reification").encode(),
                           ox.RdfFormat.N_QUADS))
    assert not any(isinstance(q.object, ox.Triple) for q in reified)
    references = [q for q in rdf12 if isinstance(q.object, ox.Triple)]
    assert {q.predicate.value.removeprefix(vocab.TG) for q in references} >= {
        "edge", "retrievedEdge", "contains"}
    for quad in references:
        iri, (s, p, o) = statement_iri(quad.object), quad.object
        assert ox.Quad(quad.subject, quad.predicate, iri, quad.graph_name) in reified
        for part, term in (("subject", s), ("predicate", p), ("object", o)):
            assert ox.Quad(iri, ox.NamedNode(vocab.RDF + part), term, quad.graph_name) in reified
        assert ox.Quad(iri, vocab.RDF_TYPE, ox.NamedNode(vocab.RDF + "Statement"),
                       quad.graph_name) in reified
    assert {q for q in rdf12 if not isinstance(q.object, ox.Triple)} <= reified


def pyshacl_results(nquads: str) -> tuple[bool, set[str]]:
    """pyshacl (rdflib) on the union of the export's graphs: the verdict and the shapes hit."""
    rdflib = pytest.importorskip("rdflib")
    pyshacl = pytest.importorskip("pyshacl")
    data = rdflib.Dataset(default_union=True)
    data.parse(data=nquads, format="nquads")
    shapes = rdflib.Graph()
    for name in ("explainability.ttl", "extraction.ttl", "edges-reification.ttl"):
        shapes.parse(SHAPES / name, format="turtle")
    conforms, report, _ = pyshacl.validate(data, shacl_graph=shapes)
    sh = "http://www.w3.org/ns/shacl#"
    hit = {str(report.value(r, rdflib.URIRef(sh + "sourceShape")))
           for r in report.objects(None, rdflib.URIRef(sh + "result"))}
    return conforms, hit


def ours(nquads: str) -> tuple[bool, set[str]]:
    store = open_store()
    store.oxigraph.load(nquads.encode(), ox.RdfFormat.N_QUADS)
    report = Validator(Shapes.bundled("reification")).validate(store)
    return report.conforms, {r.source_shape.value for r in report.results
                             if r.severity.value.endswith("Violation")}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # rdflib, inside pyshacl
def test_pyshacl_validates_a_reification_export_as_we_do(recorded: Path) -> None:
    nquads = export(recorded, "--dialect", "reification")
    assert pyshacl_results(nquads) == ours(nquads) == (True, set())
    broken = EDGE_COUNT.sub(r'\1"999"', nquads, count=1)
    assert broken != nquads
    assert pyshacl_results(broken) == ours(broken) == (
        False, {"https://trustgraph.ai/shapes/Retrieval"})


def test_rdfstar_is_not_an_export_dialect(recorded: Path) -> None:
    result = CliRunner().invoke(main, ["export", "--store", str(recorded), "--format", "trig",
                                       "--dialect", "rdfstar"], env={"TGSPARQL_ENDPOINT": None})
    assert result.exit_code == 2 and "an export writes rdf12 or reification" in result.stderr


def test_a_reader_that_stops_reading_ends_the_export_quietly(recorded: Path) -> None:
    """`tgsparql export … | head`: no broken-pipe message, no traceback."""
    export_ = subprocess.Popen(
        [sys.executable, "-c", "from tgsparql.cli import main; main()", "export", "--store",
         str(recorded), "--format", "trig"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert export_.stdout is not None and export_.stderr is not None
    export_.stdout.close()  # no reader left: the first write meets a broken pipe
    _, err = export_.communicate(timeout=120)
    assert err == b""
    assert export_.returncode == 1

"""Export a store, or some of its graphs, as N-Quads or TriG: RDF 1.2, graph names intact.

What `tgsparql load` reads back into an identical store (blank nodes aside: they are renamed,
as every RDF parser may). In the `reification` dialect, every edge reference (a triple term
object) is written as the statement IRI that dialect uses, described as an `rdf:Statement` in the
same graph: data that SPARQL 1.1 tools and rdflib-based validators (pyshacl) can read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import BinaryIO, Literal

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.iris import statement_iri
from tgsparql.stores.store import EmbeddedStore, Store

ExportFormat = Literal["nquads", "trig"]
FORMATS: dict[str, ox.RdfFormat] = {"nquads": ox.RdfFormat.N_QUADS, "trig": ox.RdfFormat.TRIG}
Graph = ox.NamedNode | ox.DefaultGraph
ExportDialect = Literal["rdf12", "reification"]
PARTS = (vocab.RDF_SUBJECT, vocab.RDF_PREDICATE, vocab.RDF_OBJECT)


def export(
    store: Store, output: BinaryIO, format: ExportFormat, graphs: Sequence[Graph] | None = None,
    dialect: ExportDialect = "rdf12",
) -> None:
    """Write every quad of `graphs` (default: the whole store) to `output`, edge references in
    `dialect`."""
    rdf_format = FORMATS[format]
    prefixes = vocab.PREFIXES if format == "trig" else None
    quads: Iterable[ox.Quad]
    if isinstance(store, EmbeddedStore):
        native = store.oxigraph
        if graphs is None and dialect == "rdf12":
            native.dump(output, rdf_format, prefixes=prefixes)
            return
        quads = [quad for graph in dict.fromkeys(graphs or [None])
                 for quad in native.quads_for_pattern(None, None, None, graph)]
    else:
        quads = _remote_quads(store, graphs)
    if dialect == "reification":
        quads = list(dict.fromkeys(reified(quads)))
    ox.serialize(quads, output, rdf_format, prefixes=prefixes)


def reified(quads: Iterable[ox.Quad]) -> Iterator[ox.Quad]:
    """The quads with each triple-term object replaced by its statement IRI, and the statement
    (and any statement nested in its object) described in the quad's graph."""
    for quad in quads:
        if not isinstance(quad.object, ox.Triple):
            yield quad
            continue
        yield ox.Quad(quad.subject, quad.predicate, statement_iri(quad.object), quad.graph_name)
        pending = [quad.object]
        while pending:
            triple = pending.pop()
            iri = statement_iri(triple)
            yield ox.Quad(iri, vocab.RDF_TYPE, vocab.RDF_STATEMENT, quad.graph_name)
            for part, term in zip(PARTS, (triple.subject, triple.predicate, triple.object)):
                if isinstance(term, ox.Triple):
                    pending.append(term)
                    term = statement_iri(term)
                yield ox.Quad(iri, part, term, quad.graph_name)


def _remote_quads(store: Store, graphs: Sequence[Graph] | None) -> list[ox.Quad]:
    named = None if graphs is None else [g for g in graphs if isinstance(g, ox.NamedNode)]
    include_default = graphs is None or any(isinstance(g, ox.DefaultGraph) for g in graphs)
    rows = store.run("export_quads", named=named, include_default=include_default).rows
    default = ox.DefaultGraph()
    return [ox.Quad(row["s"], row["p"], row["o"], row.get("g", default))  # type: ignore[arg-type]
            for row in rows]

"""Export a store, or some of its graphs, as N-Quads or TriG: RDF 1.2, graph names intact.

What `tgsparql load` reads back into an identical store (blank nodes aside: they are renamed,
as every RDF parser may).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import BinaryIO, Literal

import pyoxigraph as ox

from tgsparql import vocab
from tgsparql.store import EmbeddedStore, Store
from tgsparql.templates import Templates

ExportFormat = Literal["nquads", "trig"]
FORMATS: dict[str, ox.RdfFormat] = {"nquads": ox.RdfFormat.N_QUADS, "trig": ox.RdfFormat.TRIG}
Graph = ox.NamedNode | ox.DefaultGraph


def export(
    store: Store, output: BinaryIO, format: ExportFormat, graphs: Sequence[Graph] | None = None
) -> None:
    """Write every quad of `graphs` (default: the whole store) to `output`."""
    rdf_format = FORMATS[format]
    prefixes = vocab.PREFIXES if format == "trig" else None
    if isinstance(store, EmbeddedStore):
        native = store.oxigraph
        if graphs is None:
            native.dump(output, rdf_format, prefixes=prefixes)
            return
        quads = [quad for graph in dict.fromkeys(graphs)
                 for quad in native.quads_for_pattern(None, None, None, graph)]
    else:
        quads = _remote_quads(store, graphs)
    ox.serialize(quads, output, rdf_format, prefixes=prefixes)


def _remote_quads(store: Store, graphs: Sequence[Graph] | None) -> list[ox.Quad]:
    templates = Templates(store.dialect)
    named = None if graphs is None else [g for g in graphs if isinstance(g, ox.NamedNode)]
    include_default = graphs is None or any(isinstance(g, ox.DefaultGraph) for g in graphs)
    rows = store.select(templates.render("export_quads", named=named,
                                         include_default=include_default))
    default = ox.DefaultGraph()
    return [ox.Quad(row["s"], row["p"], row["o"], row.get("g", default))  # type: ignore[arg-type]
            for row in rows]

"""Validation of many focus nodes keeps memory to one compiled query at a time.

Each compiled query lists every focus node, so the text of all of them grows as (queries x focus
nodes): holding them all at once is what made a long-running validating process grow.
"""

from __future__ import annotations

import tracemalloc

import pyoxigraph as ox

from tgsparql.stores.store import EmbeddedStore
from tgsparql.validation import Shapes, Validator
from tgsparql.validation.compiler import FOCUS_STAND_IN

PREFIXES = "@prefix sh: <http://www.w3.org/ns/shacl#> .\n@prefix ex: <http://example.org/> .\n"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
SHAPES = 200


def test_validating_many_focus_nodes_holds_far_less_than_all_query_texts() -> None:
    shapes = Shapes.from_text(PREFIXES + "".join(
        f"ex:S{i} sh:targetClass ex:A ; sh:property [ sh:path ex:p{i} ; sh:maxCount 1 ] .\n"
        for i in range(SHAPES)
    ))
    focus = [ox.NamedNode(f"http://example.org/node/{i}") for i in range(1000)]
    store = EmbeddedStore()
    store.oxigraph.extend(ox.Quad(node, RDF_TYPE, ox.NamedNode("http://example.org/A")) for node in focus)
    store.oxigraph.extend(  # one node has a value of each property, so no shape is left idle
        ox.Quad(focus[0], ox.NamedNode(f"http://example.org/p{i}"), ox.Literal("x")) for i in range(SHAPES)
    )
    validator = Validator(shapes)
    listed = len(" ".join(f"<{node.value}>" for node in focus))
    every_text = sum(len(q.text) + q.text.count(FOCUS_STAND_IN) * listed for q in validator.scoped)
    tracemalloc.start()
    try:
        report = validator.validate(store, focus=focus)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.queries_run == SHAPES
    assert peak < every_text / 4, (peak, every_text)

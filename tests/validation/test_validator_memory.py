"""Validation of many focus nodes keeps memory to one compiled query at a time.

Each compiled query lists every focus node, so the text of all of them grows as (queries x focus
nodes): holding them all at once is what made a long-running validating process grow.
"""

from __future__ import annotations

import tracemalloc

import pyoxigraph as ox

from tgsparql.store import EmbeddedStore
from tgsparql.validation import Shapes, Validator
from tgsparql.validation.compiler import compile_shapes

PREFIXES = "@prefix sh: <http://www.w3.org/ns/shacl#> .\n@prefix ex: <http://example.org/> .\n"
SHAPES = 100


def test_validating_many_focus_nodes_holds_far_less_than_all_query_texts() -> None:
    shapes = Shapes.from_text(PREFIXES + "".join(
        f"ex:S{i} sh:targetClass ex:A ; sh:property [ sh:path ex:p{i} ; sh:minCount 1 ] .\n"
        for i in range(SHAPES)
    ))
    focus = [ox.NamedNode(f"http://example.org/node/{i}") for i in range(1000)]
    validator = Validator(shapes)
    every_text = sum(len(q.text) for q in compile_shapes(shapes, validator.templates, focus))
    tracemalloc.start()
    try:
        report = validator.validate(EmbeddedStore(), focus=focus)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.queries_run == SHAPES
    assert peak < every_text / 4, (peak, every_text)

"""Shapes compiled to SPARQL: per shape, one query for its Core constraints and one for each
SHACL-SPARQL constraint, each over all its focus nodes at once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

import pyoxigraph as ox

from tgsparql.rdf.templates import TemplateError, Templates
from tgsparql.stores.store import query_form
from tgsparql.validation.errors import ShapesError
from tgsparql.validation.model import Constraint, Shape
from tgsparql.validation.shapes import Shapes
from tgsparql.validation.sparql import SparqlConstraint

SPARQL_BASED = ("Sparql", "SparqlComponent")


class CompiledQuery(NamedTuple):
    """A query whose rows are violations; `?k` indexes `constraints` (absent for SHACL-SPARQL).

    With `per_focus_node`, `text` lists the focus nodes (?this) and `per_focus_node` is the
    query to run for each with $this pre-bound to it."""

    shape: Shape
    component: ox.NamedNode
    constraints: tuple[Constraint, ...]
    text: str
    per_focus_node: str | None = None


FOCUS_STAND_IN = "urn:x-tgsparql:focus-nodes:"
"""In the queries for a few focus nodes, `<FOCUS_STAND_IN{shape.key}>` stands for the nodes the
targets of that shape reach; the validator writes them in before each run."""


def compile_shapes(
    shapes: Shapes,
    templates: Templates,
    scoped: bool = False,
    lexical: bool = False,
) -> Iterator[CompiledQuery]:
    """Every query validation runs, in a stable order; shapes no focus node reaches run none.
    `lexical` has sh:datatype read the data's own datatype and lexical form from the records
    of tgsparql.rdf.lexical, for a store that holds some.

    One at a time: each query lists every focus node, so holding all of them at once would cost
    (queries x focus nodes) of text, tens of MB for a few thousand nodes.
    """
    for shape in shapes:
        _refuse_nested_sparql(shape)
        if shape.has_focus:
            yield from compile_shape(shape, templates, scoped, lexical)


def check_shapes(shapes: Shapes, templates: Templates) -> None:
    """Refuses, when the shapes graph is read, what no query could run: nested SHACL-SPARQL,
    and SHACL-SPARQL queries that do not parse. The Core constraints are rendered only when
    needed: a validator for a few focus nodes renders the queries of the shapes it reaches."""
    for shape in shapes:
        _refuse_nested_sparql(shape)
        if shape.has_focus:
            for constraint in shape.constraints:
                if constraint.component in SPARQL_BASED:
                    _sparql(shape, constraint, templates, FOCUS_STAND_IN, check=True)


def compile_shape(
    shape: Shape,
    templates: Templates,
    scoped: bool = False,
    lexical: bool = False,
) -> Iterator[CompiledQuery]:
    """The queries of one shape: its Core constraints in one query, whose sh:minCount and
    sh:maxCount share one count of the value nodes and whose checks of each value node share one
    walk of the path (validation/_constraint), then each SHACL-SPARQL constraint alone."""
    focus_nodes = FOCUS_STAND_IN if scoped else None
    for constraint in shape.constraints:
        if constraint.component in SPARQL_BASED:
            yield _sparql(shape, constraint, templates, focus_nodes, check=False)
    core = [c for c in shape.constraints if c.component not in SPARQL_BASED]
    if core:
        text = _render(templates, "validation/_constraint", shape, shape=shape,
                       constraints=core, focus_nodes=focus_nodes, lexical=lexical)
        yield CompiledQuery(shape, core[0].component_iri, tuple(core), text)


def _sparql(
    shape: Shape,
    constraint: Constraint,
    templates: Templates,
    focus_nodes: str | None,
    check: bool,
) -> CompiledQuery:
    query: SparqlConstraint = constraint.value  # type: ignore[assignment]
    # A SHACL-SPARQL query compares the values the store keeps: it reads no records of
    # tgsparql.rdf.lexical.
    focus = dict(shape=shape, focus_nodes=focus_nodes, lexical=False)
    per_node = None
    if not query.ask:
        prefixes = _render(templates, "validation/_sparql_prefixes", shape, constraint=query)
        per_node = prefixes + query.text(_render(templates, "validation/_path", shape,
                                                 path=shape.path, lexical=False))
    run_per_node = not query.ask and not query.one_query
    if query.ask:
        text = _render(templates, "validation/_sparql_ask", shape, constraint=query, **focus)
    elif run_per_node:
        text = _render(templates, "validation/_focus_nodes", shape, **focus)
    else:
        text = _render(templates, "validation/_sparql_constraint", shape, constraint=query,
                       **focus)
    if check:
        _check(shape, query, None if run_per_node else text, per_node)
    return CompiledQuery(
        shape, constraint.component_iri, (constraint,), text, per_node if run_per_node else None
    )


def _check(shape: Shape, query: SparqlConstraint, text: str | None, per_node: str | None) -> None:
    """A query that does not parse is an error of the shapes graph, not of the data (SHACL
    §5.2.1 has the processor report a failure). Pre-binding a focus node keeps it parsing, so
    a query run per focus node is checked as written."""
    for checked in (text, per_node):
        try:
            if checked is not None:
                query_form(checked)
        except SyntaxError as error:
            message = str(error).splitlines()[0]
            what = "validator" if query.component is not None else "sh:sparql query"
            raise ShapesError(f"shape {shape.name}: {what} does not parse: {message}") from None


def _render(templates: Templates, name: str, owner: Shape, **params: object) -> str:
    try:
        return templates.render(name, **params)
    except TemplateError as error:
        raise ShapesError(f"shape {owner.name}: {error}") from None


def _refuse_nested_sparql(shape: Shape) -> None:
    """sh:sparql cannot be inlined into another shape's pattern; say so rather than skip it."""
    for nested in _referenced(shape, set()):
        if any(c.component in SPARQL_BASED for c in nested.constraints):
            raise ShapesError(
                f"shape {nested.name}: sh:sparql in a shape used through sh:node, sh:not, sh:and, "
                f"sh:or, sh:xone or sh:qualifiedValueShape (from {shape.name}) is not supported"
            )


def _referenced(shape: Shape, seen: set[int]) -> Iterator[Shape]:
    for constraint in shape.constraints:
        for nested in _shape_parameters(constraint):
            if id(nested) not in seen:
                seen.add(id(nested))
                yield nested
                yield from _nested_all(nested, seen)


def _nested_all(shape: Shape, seen: set[int]) -> Iterator[Shape]:
    for child in shape.properties:
        if id(child) not in seen:
            seen.add(id(child))
            yield child
            yield from _nested_all(child, seen)
    yield from _referenced(shape, seen)


def _shape_parameters(constraint: Constraint) -> Iterable[Shape]:
    value = constraint.value
    if isinstance(value, Shape):
        yield value
    elif isinstance(value, tuple):
        yield from (v for v in value if isinstance(v, Shape))
    yield from constraint.extra.get("siblings", ())  # type: ignore[misc]

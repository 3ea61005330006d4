"""Running the compiled queries on a store and turning their rows into validation results."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import replace
from functools import cached_property

import pyoxigraph as ox

from tgsparql.store import DataGraph, EmbeddedStore, Solution, Store
from tgsparql.templates import Dialect, Templates, Term, render_term, to_iri
from tgsparql.validation.compiler import FOCUS_STAND_IN, CompiledQuery, compile_shapes
from tgsparql.validation.messages import default_message
from tgsparql.validation.report import ValidationReport, ValidationResult
from tgsparql.validation.errors import ShapesError
from tgsparql.validation.prebinding import substitute
from tgsparql.validation.shapes import Shape, Shapes
from tgsparql.validation.sparql import SparqlConstraint

_PLACEHOLDER = re.compile(r"\{[?$]([A-Za-z_][A-Za-z0-9_]*)\}")
_STAND_IN = re.compile(f"<{re.escape(FOCUS_STAND_IN)}([0-9]+)>")


class Validator:
    """Shapes compiled once for a store dialect; `validate` runs them on any store."""

    def __init__(self, shapes: Shapes, dialect: Dialect = "rdf12") -> None:
        self.shapes = shapes
        self.templates = Templates(dialect)
        self.paths = shapes.paths()
        self.scoped: list[CompiledQuery] = list(
            compile_shapes(shapes, self.templates, scoped=True, check=True)
        )
        """The queries for a few focus nodes, rendered once with stand-ins for the nodes."""

    @cached_property
    def queries(self) -> list[CompiledQuery]:
        """The queries of a run over every focus node (rendered on first use)."""
        return list(compile_shapes(self.shapes, self.templates))

    def validate(
        self,
        store: Store,
        default_graph: DataGraph = "union",
        focus: Collection[str | ox.NamedNode] | None = None,
    ) -> ValidationReport:
        """Every result over the data graph; `focus` restricts the targeted focus nodes."""
        queries: Iterable[CompiledQuery]
        if focus is None:
            queries = self.queries
        else:
            nodes = sorted({to_iri(node) for node in focus}, key=str)
            targeted, reached = self._reaching(store, nodes, default_graph)
            listed: dict[frozenset[Term], str] = {}  # one text per set of nodes, shared

            def nodes_of(key: int) -> str:
                found = targeted.get(key, frozenset())
                if found not in listed:
                    listed[found] = " ".join(
                        render_term(n, self.templates.dialect) for n in sorted(found, key=str)
                    )
                return listed[found]

            queries = (  # one at a time: each text lists the nodes
                replace(query, text=_STAND_IN.sub(lambda m: nodes_of(int(m[1])), query.text))
                for query in self.scoped
                if query.shape.key in reached
            )
        results: list[ValidationResult] = []
        checked: dict[int, Shape] = {}
        run = 0
        for query in queries:
            rows = store.select(query.text, default_graph=default_graph)
            if query.per_focus_node is not None:
                rows = self._per_focus_node(store, query.per_focus_node, rows, default_graph)
            results.extend(self._result(query, row) for row in rows)
            checked.setdefault(query.shape.key, query.shape)
            run += 1
        return ValidationReport(
            results=results,
            shapes=[(shape.node, shape.name) for shape in checked.values()],
            paths=self.paths,
            queries_run=run,
        )

    def _reaching(
        self, store: Store, nodes: list[ox.NamedNode], default_graph: DataGraph
    ) -> tuple[dict[int, frozenset[Term]], set[int]]:
        """(the nodes each shape's own targets reach, by shape key; the keys of the shapes with
        a focus node among `nodes`, by their targets or their ancestors' through sh:property).
        The other shapes have no result, so validating a few nodes runs only these queries."""
        targets: dict[str, set[Term]] = {}
        for shape in self.shapes:
            for kind, target in shape.target_pairs:
                targets.setdefault(kind, set()).add(target)
        ordered = {kind: sorted(found, key=str) for kind, found in targets.items()}
        rows = store.select(
            self.templates.render("validation/_targeted", targets=ordered, focus_nodes=nodes),
            default_graph=default_graph,
        )
        found: dict[tuple[str, Term], set[Term]] = {}
        for row in rows:
            found.setdefault((row["kind"].value, row["target"]), set()).add(row["node"])
        met = {pair: frozenset(reached) for pair, reached in found.items()}
        for node in nodes:
            met[("targetNode", node)] = frozenset((node,))
        shared: dict[frozenset[Term], frozenset[Term]] = {}  # shapes alike share one set
        targeted = {
            shape.key: shared.setdefault(union, union)
            for shape in self.shapes
            if not shape.deactivated
            for union in [frozenset().union(*(met.get(pair, ()) for pair in shape.target_pairs))]
        }
        reached: set[int] = set()

        def reaches(shape: Shape) -> bool:
            if shape.key not in reached and not shape.deactivated and (
                targeted.get(shape.key) or any(reaches(parent) for parent in shape.parents)
            ):
                reached.add(shape.key)
            return shape.key in reached

        for shape in self.shapes:
            reaches(shape)
        return targeted, reached

    def _per_focus_node(
        self, store: Store, text: str, focus_rows: list[Solution], default_graph: DataGraph
    ) -> list[Solution]:
        """The query's rows for each focus node in turn, $this pre-bound to it: written into
        the text as a constant, or (a blank node, which no query text can name) handed to the
        embedded store as a substitution."""
        found: dict[Term, list[Solution]] = {}
        rows: list[Solution] = []
        for focus in focus_rows:
            node = focus["this"]
            if node not in found:
                if _has_blank_node(node):
                    if not isinstance(store, EmbeddedStore):
                        raise ShapesError(
                            "a SHACL-SPARQL query that needs one run per focus node cannot "
                            "pre-bind the blank node focus node of an endpoint"
                        )
                    found[node] = store.select(text, default_graph=default_graph,
                                               substitutions={"this": node})
                else:
                    bound = substitute(text, {"this": render_term(node, self.templates.dialect)})
                    found[node] = store.select(bound, default_graph=default_graph)
            rows += [{**focus, **row, "this": node} for row in found[node]]
        return rows

    def _result(self, query: CompiledQuery, row: Solution) -> ValidationResult:
        shape = query.shape
        if "k" in row:
            constraint = query.constraints[int(row["k"].value)]
            source_constraint = None
            messages = shape.messages
        else:
            constraint = query.constraints[0]
            sparql: SparqlConstraint = constraint.value  # type: ignore[assignment]
            if sparql.component is None:
                source_constraint = sparql.node
                messages = sparql.messages or shape.messages
            else:  # §6: a component's results name no constraint; the shape's messages first
                source_constraint = None
                messages = shape.messages or sparql.messages
                row = {**dict(sparql.parameters), **row}
        path: Term | None = row.get("path")
        if path is None and shape.path is not None:
            path = shape.path.node
        value = row.get("value")
        if value is None and "k" not in row and shape.path is None:
            value = row["this"]
        if "message" in row and isinstance(row["message"], ox.Literal):
            messages = (row["message"],)
        messages = tuple(_substitute(m, row) for m in messages)
        text = _preferred(messages) if messages else default_message(shape, constraint, row)
        return ValidationResult(
            focus_node=row["this"],
            result_path=path,
            value=value,
            severity=shape.severity,
            source_shape=shape.node,
            source_constraint_component=constraint.component_iri,
            source_constraint=source_constraint,
            message=text,
            messages=messages,
        )


def _substitute(message: ox.Literal, row: Solution) -> ox.Literal:
    """`{?var}` and `{$var}` in a message replaced by the row's values."""
    if "{" not in message.value:
        return message
    text = _PLACEHOLDER.sub(
        lambda m: _plain(row[m.group(1)]) if m.group(1) in row else m.group(0), message.value
    )
    if message.language:
        return ox.Literal(text, language=message.language)
    return ox.Literal(text, datatype=message.datatype)


def _has_blank_node(term: Term) -> bool:
    if isinstance(term, ox.Triple):
        return any(_has_blank_node(t) for t in (term.subject, term.predicate, term.object))
    return isinstance(term, ox.BlankNode)


def _plain(term: Term) -> str:
    return term.value if isinstance(term, (ox.NamedNode, ox.Literal)) else str(term)


def _preferred(messages: tuple[ox.Literal, ...]) -> str:
    """The English (or untagged) message for people, else the first."""
    for message in messages:
        if not message.language or message.language.lower().startswith("en"):
            return message.value
    return messages[0].value


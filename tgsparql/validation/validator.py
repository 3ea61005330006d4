"""Running the compiled queries on a store and turning their rows into validation results."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

import pyoxigraph as ox

from tgsparql.store import DataGraph, Solution, Store
from tgsparql.templates import Dialect, Templates, Term, to_iri
from tgsparql.validation.compiler import CompiledQuery, compile_shapes
from tgsparql.validation.messages import default_message
from tgsparql.validation.report import ValidationReport, ValidationResult
from tgsparql.validation.shapes import Shape, Shapes

_PLACEHOLDER = re.compile(r"\{[?$]([A-Za-z_][A-Za-z0-9_]*)\}")


class Validator:
    """Shapes compiled once for a store dialect; `validate` runs them on any store."""

    def __init__(self, shapes: Shapes, dialect: Dialect = "rdf12") -> None:
        self.shapes = shapes
        self.templates = Templates(dialect)
        self.queries: list[CompiledQuery] = list(compile_shapes(shapes, self.templates))
        self.paths = shapes.paths()

    def validate(
        self,
        store: Store,
        default_graph: DataGraph = "union",
        focus: Collection[str | ox.NamedNode] | None = None,
    ) -> ValidationReport:
        """Every result over the data graph; `focus` restricts the targeted focus nodes."""
        queries: Iterable[CompiledQuery] = self.queries
        if focus is not None:
            nodes = sorted({to_iri(node) for node in focus}, key=str)
            queries = compile_shapes(self.shapes, self.templates, nodes)
        results: list[ValidationResult] = []
        checked: dict[int, Shape] = {}
        run = 0
        for query in queries:
            rows = store.select(query.text, default_graph=default_graph)
            results.extend(self._result(query, row) for row in rows)
            checked.setdefault(id(query.shape), query.shape)
            run += 1
        return ValidationReport(
            results=results,
            shapes=[(shape.node, shape.name) for shape in checked.values()],
            paths=self.paths,
            queries_run=run,
        )

    def _result(self, query: CompiledQuery, row: Solution) -> ValidationResult:
        shape = query.shape
        if "k" in row:
            constraint = query.constraints[int(row["k"].value)]
            source_constraint = None
            messages = shape.messages
        else:
            constraint = query.constraints[0]
            source_constraint = constraint.value.node  # type: ignore[attr-defined]
            messages = constraint.value.messages or shape.messages  # type: ignore[attr-defined]
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
            source_constraint_component=query.component,
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


def _plain(term: Term) -> str:
    return term.value if isinstance(term, (ox.NamedNode, ox.Literal)) else str(term)


def _preferred(messages: tuple[ox.Literal, ...]) -> str:
    """The English (or untagged) message for people, else the first."""
    for message in messages:
        if not message.language or message.language.lower().startswith("en"):
            return message.value
    return messages[0].value


"""`assert_conforms`: SHACL validation as a test assertion whose failure reads like a report."""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tgsparql.rdf.terms import Dialect
    from tgsparql.stores.store import DataGraph, Store
    from tgsparql.validation import Shapes, ValidationReport, ValidationResult

MAX_LISTED = 50


class NonConformance(AssertionError):
    """The store does not conform; `report` holds every result."""

    def __init__(self, message: str, report: ValidationReport) -> None:
        super().__init__(message)
        self.report = report


def assert_conforms(
    store: Store,
    shapes: Any = None,
    *,
    session: str | None = None,
    focus: Collection[str] | None = None,
    default_graph: DataGraph = "union",
    warnings: bool = True,
) -> ValidationReport:
    """Validate `store` (bundled shapes unless `shapes` gives a Shapes or shape files).

    `session` validates one session's entities only, `focus` any list of nodes. Warnings are
    allowed unless `warnings=False`. Returns the report; raises NonConformance listing each
    violation (shape, focus node, path, value, message) otherwise.
    """
    from tgsparql.record.conformance import session_nodes
    from tgsparql.validation import Validator

    validator = Validator(_shapes(shapes, store.dialect), dialect=store.dialect)
    nodes: Collection[Any] | None = focus
    if session is not None:
        nodes = session_nodes(store, session, default_graph)
    report = validator.validate(store, default_graph=default_graph, focus=nodes)
    failing = report.results if not warnings else report.violations
    if failing:
        raise NonConformance(describe(failing, len(report.results)), report)
    return report


def describe(results: Sequence[ValidationResult], total: int) -> str:
    """One numbered block per result, most useful fields first; at most MAX_LISTED of them."""
    lines = [f"the store does not conform: {len(results)} failing results ({total} in all)"]
    for number, result in enumerate(results[:MAX_LISTED], 1):
        severity = result.severity.value.rsplit("#", 1)[-1]
        component = result.source_constraint_component.value.rsplit("#", 1)[-1]
        lines.append(f"  {number}. [{severity}] {result.message}")
        lines.append(f"       focus {_term(result.focus_node)}; shape {_term(result.source_shape)}"
                     f" ({component})")
        if result.result_path is not None or result.value is not None:
            lines.append(f"       path {_term(result.result_path)}; value {_term(result.value)}")
    if len(results) > MAX_LISTED:
        lines.append(f"  … and {len(results) - MAX_LISTED} more")
    return "\n".join(lines)


def _term(term: object) -> str:
    if term is None:
        return "-"
    text = str(term)
    return text if len(text) <= 160 else text[:159] + "…"


def _shapes(shapes: Any, dialect: Dialect) -> Shapes:
    from tgsparql.validation import Shapes

    if shapes is None:
        return Shapes.bundled(dialect)
    if isinstance(shapes, Shapes):
        return shapes
    if isinstance(shapes, (str, os.PathLike)):
        return Shapes.from_files([shapes])
    return Shapes.from_files(list(shapes))

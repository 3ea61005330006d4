"""What a validation run looks at (the data graph named on the command line, one session) and
how its verdict reads: a line for logs, a report in four formats, the session page's summary.

Kept apart from the validator, which knows nothing of sessions or of how graphs are named by
people; kept apart from the CLI, so `validate` and `query --validate` choose alike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

import pyoxigraph as ox

from tgsparql.rdf.iris import SessionIds
from tgsparql.rdf.terms import Dialect
from tgsparql.record.explain import SessionNotFound
from tgsparql.stores.store import DataGraph, Store
from tgsparql.validation.report import VIOLATION, ValidationReport, show_term
from tgsparql.validation.shapes import Shapes
from tgsparql.validation.validator import Validator

DEFAULT_GRAPH_NAME = "default"
ReportFormat = Literal["text", "turtle", "json", "junit"]
FINDINGS_SHOWN = 50
"""How many validation results the page lists; `tgsparql validate --session` lists them all."""


class GraphNameError(ValueError):
    """A --graph value that names no graph."""


def data_graph(names: Sequence[str]) -> DataGraph:
    """The union of every graph when no name is given; else exactly the graphs named."""
    return named_graphs(names) if names else "union"


def named_graphs(names: Sequence[str]) -> list[ox.NamedNode | ox.DefaultGraph]:
    """The graphs named: the word `default` names the store's default graph (the KG); anything
    else must be an IRI."""
    graphs: list[ox.NamedNode | ox.DefaultGraph] = []
    for name in names:
        if name == DEFAULT_GRAPH_NAME:
            graphs.append(ox.DefaultGraph())
            continue
        try:
            graphs.append(ox.NamedNode(name))
        except ValueError:
            raise GraphNameError(
                f"--graph {name!r} is neither an IRI nor the word {DEFAULT_GRAPH_NAME!r}"
            ) from None
    return graphs


def empty_graphs(store: Store, graph: DataGraph) -> list[str]:
    """The graphs named on the command line that hold no triple: validating them proves nothing."""
    if graph == "union" or graph is None:
        return []
    return [
        DEFAULT_GRAPH_NAME if isinstance(name, ox.DefaultGraph) else f"<{name.value}>"
        for name in graph
        if not store.run("validation/any_triple", default_graph=[name]).boolean
    ]


def session_nodes(store: Store, session: str, graph: DataGraph = "union") -> list[ox.NamedNode]:
    """The IRIs of the session's entities in the data graph; SessionNotFound when it has none.

    `session` is its IRI or bare UUID (ValueError for anything else).
    """
    ids = SessionIds.from_session_iri(session)
    rows = store.run(
        "session_nodes",
        default_graph=graph,
        session=ids.session,
        retrieval=ids.retrieval,
        selection=ids.selection,
        answer=ids.answer,
        document=ids.answer_document,
    ).rows
    nodes = [row["node"] for row in rows if isinstance(row.get("node"), ox.NamedNode)]
    if ids.session not in nodes:
        raise SessionNotFound(f"no session {ids.session.value} in the data graph")
    return nodes


def validate_session(
    store: Store, session: str, shapes: Shapes | None = None, graph: DataGraph = "union"
) -> ValidationReport:
    """Validate one recorded session (the bundled shapes of the store's dialect unless others
    are given)."""
    nodes = session_nodes(store, session, graph)
    validator = (
        bundled_validator(store.dialect) if shapes is None else Validator(shapes, store.dialect)
    )
    return validator.validate(store, default_graph=graph, focus=nodes)


@cache
def bundled_validator(dialect: Dialect) -> Validator:
    """The bundled shapes' validator, built once per process and dialect (building renders
    every query)."""
    return Validator(Shapes.bundled(dialect), dialect=dialect)


def verdict(report: ValidationReport) -> str:
    """One line for logs: conforms or not (warnings do not fail), with the counts."""
    warnings = len(report.results) - len(report.violations)
    if report.violations:
        return (
            f"does not conform: {len(report.violations)} violations and {warnings} warnings "
            f"from {len(report.shapes)} shapes"
        )
    return f"conforms: {len(report.shapes)} shapes checked, {warnings} warnings"


@dataclass(frozen=True)
class Finding:
    """One validation result, as the page lists it."""

    severity: str
    focus: str
    path: str
    message: str


@dataclass(frozen=True)
class Conformance:
    """The session checked against the bundled shapes, or why it could not be."""

    checked: bool
    conforms: bool = False
    shapes: int = 0
    violations: int = 0
    warnings: int = 0
    findings: tuple[Finding, ...] = ()
    reason: str = ""

    @classmethod
    def of(cls, report: ValidationReport) -> Conformance:
        """The page's view of a report: its counts and its first FINDINGS_SHOWN results,
        violations first."""
        ordered = sorted(report.results, key=lambda r: r.severity.value != VIOLATION.value)
        return cls(True, not report.violations, len(report.shapes), len(report.violations),
                   len(report.results) - len(report.violations), tuple(
                       Finding(r.to_json()["severity"], show_term(r.focus_node),  # type: ignore
                               show_term(r.result_path), r.message)
                       for r in ordered[:FINDINGS_SHOWN]))

    @classmethod
    def not_checked(cls, reason: str) -> Conformance:
        return cls(False, reason=reason)

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "findings": [f.__dict__ for f in self.findings]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Conformance:
        return cls(**{**data, "findings": tuple(Finding(**f) for f in data["findings"])})


def render(report: ValidationReport, format: ReportFormat) -> str:
    """The report as text for people, a standard sh:ValidationReport, JSON, or JUnit XML."""
    if format == "json":
        return json.dumps(report.to_json(), ensure_ascii=False, indent=2) + "\n"
    if format == "turtle":
        return report.to_turtle()
    if format == "junit":
        return report.to_junit()
    return report.to_text()

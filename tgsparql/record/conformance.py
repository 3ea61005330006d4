"""What a validation run looks at (the data graph named on the command line, one session) and
how its verdict reads: a line for logs, a report in four formats as a build judges it (what fails
it, a summary per shape, many alike results as one finding), the session page's summary.

Kept apart from the validator, which knows nothing of sessions or of how graphs are named by
people; kept apart from the CLI, so `validate` and `query --validate` choose alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds, SessionNotFound, pasted_iri
from tgsparql.rdf.templates import Prepared, stand_in, templates_for
from tgsparql.rdf.terms import Dialect, Term
from tgsparql.stores.store import DataGraph, Store
from tgsparql.validation.report import VIOLATION, ValidationReport, ValidationResult, show_term
from tgsparql.validation.cache import kept_prepared, kept_validator
from tgsparql.validation.errors import ShapesError
from tgsparql.validation.shapes import Shapes, bundled_sources, shapes_file
from tgsparql.validation.validator import Validator

DEFAULT_GRAPH_NAME = "default"
ReportFormat = Literal["text", "turtle", "json", "junit"]
FINDINGS_SHOWN = 50
"""How many validation results the page lists; `tgsparql validate --session` lists them all."""
FOCUS_NODES_SHOWN = 3
"""How many focus nodes a shape's line of the summary names."""
UNSOURCED_FACTS_SHOWN = 10
"""How many facts without extraction provenance the text lists, when some facts have it."""
FACT_PROVENANCE = ox.NamedNode(vocab.TGS + "FactProvenance")


class GraphNameError(ValueError):
    """A --graph value that names no graph."""


class ShapeNameError(ValueError):
    """An --ignore-shape value that is not an IRI."""


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
    text = _session_query(store.dialect).fill(
        session=ids.session, retrieval=ids.retrieval, selection=ids.selection, answer=ids.answer,
        document=ids.answer_document,
    )
    rows = store.select(text, default_graph=graph)
    nodes = [row["node"] for row in rows if isinstance(row.get("node"), ox.NamedNode)]
    if ids.session not in nodes:
        raise SessionNotFound(f"no session {ids.session.value} in the data graph")
    return nodes


@cache
def _session_query(dialect: Dialect) -> Prepared:
    """session_nodes with its IRIs as stand-ins, once per process and dialect, read back from
    the cache of validators when it has it: a run over one session then never loads the
    template engine."""
    return kept_prepared(
        "session_nodes", templates_for(dialect),
        **{name: stand_in(name) for name in ("session", "retrieval", "selection", "answer",
                                             "document")},
    )


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
    """The bundled shapes' validator: once per process and dialect, read back from the cache
    of validators when it has one (building reads the shapes and renders their queries)."""
    return kept_validator(
        [(f"bundled:{name}", text) for name, text in bundled_sources(dialect)], dialect,
        lambda: Validator(Shapes.bundled(dialect), dialect=dialect),
    )


def files_validator(paths: Sequence[Path], dialect: Dialect) -> Validator:
    """The validator of the shapes in these files (and the local files they import), read back
    from the cache of validators when it has one; ShapesError when a file cannot be read or
    parsed, or none holds a shape."""
    sources = [(path.resolve().as_uri(), shapes_file(path)) for path in paths]
    validator = kept_validator(
        sources, dialect, lambda: Validator(Shapes.from_files(paths), dialect=dialect))
    if not len(validator.shapes):
        raise ShapesError(f"{validator.shapes.origin}: no shapes (nothing to validate against)")
    return validator


def shape_iris(names: Sequence[str]) -> frozenset[ox.NamedNode]:
    """The shapes named by --ignore-shape, as written or in angle brackets (`pasted_iri`)."""
    shapes = set()
    for name in names:
        try:
            shapes.add(ox.NamedNode(pasted_iri(name)))
        except ValueError:
            raise ShapeNameError(f"--ignore-shape {name!r} is not an IRI") from None
    return frozenset(shapes)


def verdict(report: ValidationReport, fail_on: ox.NamedNode = VIOLATION) -> str:
    """One line for logs: conforms or not (only results at or above `fail_on` fail), with the
    counts."""
    warnings = len(report.results) - len(report.violations)
    if report.failing(fail_on):
        return (
            f"does not conform: {len(report.violations)} violations and {warnings} warnings "
            f"from {len(report.shapes)} shapes"
        )
    return f"conforms: {len(report.shapes)} shapes checked, {warnings} warnings"


class Finding(NamedTuple):
    """One validation result, as the page lists it."""

    severity: str
    focus: str
    path: str
    message: str


class Conformance(NamedTuple):
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
                       Finding(r.severity_name, show_term(r.focus_node),
                               show_term(r.result_path), r.message)
                       for r in ordered[:FINDINGS_SHOWN]))

    @classmethod
    def not_checked(cls, reason: str) -> Conformance:
        return cls(False, reason=reason)

    def to_json(self) -> dict[str, Any]:
        return {**self._asdict(), "findings": [f._asdict() for f in self.findings]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Conformance:
        return cls(**{**data, "findings": tuple(Finding(**f) for f in data["findings"])})


class Folding(NamedTuple):
    """Many results of one shape read as their first `shown`, then `note` for the rest."""

    shown: int
    note: str


class ShapeSummary(NamedTuple):
    """One shape's line of the summary: its results, how severe the worst, where the first."""

    name: str
    severity: str
    count: int
    focus_nodes: tuple[str, ...]
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"shape": self.name, "severity": self.severity, "count": self.count,
                "focusNodes": list(self.focus_nodes), **({"note": self.note} if self.note else {})}


class Judgement(NamedTuple):
    """A report as a build judges it: results at or above `fail_on` fail it; the results of a
    folded shape read as one finding."""

    report: ValidationReport
    fail_on: ox.NamedNode = VIOLATION
    folded: Mapping[Term, Folding] = MappingProxyType({})

    @property
    def failing(self) -> list[ValidationResult]:
        return self.report.failing(self.fail_on)

    def by_shape(self) -> dict[Term, list[ValidationResult]]:
        grouped: dict[Term, list[ValidationResult]] = {}
        for result in self.report.results:
            grouped.setdefault(result.source_shape, []).append(result)
        return grouped

    def summary(self) -> list[ShapeSummary]:
        """A line per shape with results, the most severe and most frequent first."""
        rows = []
        for shape, results in self.by_shape().items():
            focus = list(dict.fromkeys(show_term(r.focus_node) for r in results))
            folding = self.folded.get(shape)
            rows.append((max(r.rank for r in results), ShapeSummary(
                self.report.shape_name(shape), max(results, key=lambda r: r.rank).severity_name,
                len(results), tuple(focus[:FOCUS_NODES_SHOWN]),
                folding.note if folding else "")))
        rows.sort(key=lambda row: (-row[0], -row[1].count, row[1].name))
        return [row for _, row in rows]

    def to_text(self) -> str:
        """The headline, each result (a folded shape's first few, then its note), and the
        summary table."""
        lines = [self.report.headline(self.fail_on)]
        for shape, results in self.by_shape().items():
            folding = self.folded.get(shape)
            shown = results if folding is None else results[:folding.shown]
            lines += [r.text_line(self.report.shape_name(shape)) for r in shown]
            if folding is not None:
                lines.append(f"{results[0].severity_name.upper()}: {folding.note}")
        return "\n".join(lines + _table(self.summary())) + "\n"

    def to_json(self) -> dict[str, Any]:
        """The report's every result, and the summary."""
        fail_on = self.fail_on.value.removeprefix(vocab.SH).lower()
        return {**self.report.to_json(), "failOn": fail_on, "failing": len(self.failing),
                "summary": [row.to_json() for row in self.summary()]}

    def to_junit(self) -> str:
        """A test suite per shape checked and a test case per focus node with results (a shape
        without any has one passing case), failing where a result is at or above `fail_on`; the
        results below it are the passing case's output."""
        from xml.sax.saxutils import quoteattr  # it loads urllib.request: only for JUnit

        by_shape = self.by_shape()
        shapes = [node for node, _ in self.report.shapes]
        shapes += [node for node in by_shape if node not in shapes]
        suites = []
        tests = failures = 0
        for shape in sorted(shapes, key=self.report.shape_name):
            name = self.report.shape_name(shape)
            cases = [self._case(name, *case) for case in self._cases(shape, by_shape)]
            failed = sum(failing for _, failing in cases)
            tests, failures = tests + len(cases), failures + failed
            suites.append(
                f'  <testsuite name={quoteattr(name)} tests="{len(cases)}" failures="{failed}" '
                f'errors="0" skipped="0">\n' + "".join(case for case, _ in cases) + "  </testsuite>"
            )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites name="shacl" tests="{tests}" failures="{failures}" errors="0">\n'
            + "".join(f"{suite}\n" for suite in suites)
            + "</testsuites>\n"
        )

    def _cases(
        self, shape: Term, by_shape: Mapping[Term, list[ValidationResult]]
    ) -> list[tuple[str, list[ValidationResult], str]]:
        """(test case name, results, what it says of them) for one shape: one per focus node, or
        one summary of them all when the shape is folded to no result."""
        results = by_shape.get(shape, [])
        if not results:
            return [("no results", [], "")]
        folding = self.folded.get(shape)
        if folding is not None and not folding.shown:
            return [("summary", results, folding.note)]
        grouped: dict[str, list[ValidationResult]] = {}
        for result in results:
            grouped.setdefault(show_term(result.focus_node), []).append(result)
        name = self.report.shape_name(shape)
        return [(focus, found, "\n".join(r.text_line(name) for r in found))
                for focus, found in grouped.items()]

    def _case(
        self, shape: str, name: str, results: list[ValidationResult], text: str
    ) -> tuple[str, bool]:
        """One <testcase> and whether it fails."""
        from xml.sax.saxutils import escape, quoteattr

        detail = escape(text)
        failing = [r for r in results if r.at_least(self.fail_on)]
        if failing:
            worst = max(failing, key=lambda r: r.rank).severity_name
            message = quoteattr(f"{len(failing)} result(s) at or above --fail-on")
            body = f'<failure message={message} type="sh:{worst}">{detail}</failure>'
        else:
            body = f"<system-out>{detail}</system-out>" if results else ""
        attributes = f"classname={quoteattr(shape)} name={quoteattr(name)}"
        return f"    <testcase {attributes}>{body}</testcase>\n", bool(failing)


def _table(rows: list[ShapeSummary]) -> list[str]:
    """The summary as a table people read at the end of a CI log."""
    if not rows:
        return []
    cells = [("Shape", "Severity", "Count", "First focus nodes")] + [
        (row.name, row.severity, str(row.count), ", ".join(row.focus_nodes)) for row in rows]
    widths = [max(len(cell[i]) for cell in cells) for i in range(3)]
    return [""] + [
        f"{name:<{widths[0]}}  {severity:<{widths[1]}}  {count:>{widths[2]}}  {focus}".rstrip()
        for name, severity, count, focus in cells
    ]


def judge(
    store: Store, report: ValidationReport, graph: DataGraph = "union", *,
    fail_on: ox.NamedNode = VIOLATION, ignored: frozenset[ox.NamedNode] = frozenset(),
    all_results: bool = False,
) -> Judgement:
    """The report without the results of the ignored shapes, judged at `fail_on`; unless
    `all_results`, the facts without extraction provenance folded."""
    kept = ValidationReport(
        [r for r in report.results if r.source_shape not in ignored],
        [shape for shape in report.shapes if shape[0] not in ignored],
        report.paths, report.queries_run,
    )
    folded = {} if all_results else _unsourced_facts(store, kept, graph)
    return Judgement(kept, fail_on, folded)


def _unsourced_facts(
    store: Store, report: ValidationReport, graph: DataGraph
) -> dict[Term, Folding]:
    """A KG loaded without extraction provenance lacks it for every fact: one finding says so.
    Where some facts have it, those without are listed, the first UNSOURCED_FACTS_SHOWN in text."""
    facts = [r for r in report.results if r.source_shape == FACT_PROVENANCE]
    if not facts:
        return {}
    listed = "--all-results lists them"
    if not store.run("validation/any_extraction", default_graph=graph).boolean:
        severity = max(facts, key=lambda r: r.rank).severity_name.lower()
        return {FACT_PROVENANCE: Folding(0, (
            f"{len(facts)} facts carry no extraction provenance "
            f"({report.shape_name(FACT_PROVENANCE)}, {severity}); {listed}"))}
    if len(facts) <= UNSOURCED_FACTS_SHOWN:
        return {}
    more = len(facts) - UNSOURCED_FACTS_SHOWN
    return {FACT_PROVENANCE: Folding(UNSOURCED_FACTS_SHOWN, (
        f"and {more} more facts without extraction provenance; {listed}"))}


def render(judgement: Judgement, format: ReportFormat) -> str:
    """The report as text for people, a standard sh:ValidationReport, JSON, or JUnit XML."""
    if format == "json":
        import json  # for --format json only: the command's start is a CI step's to wait for

        return json.dumps(judgement.to_json(), ensure_ascii=False, indent=2) + "\n"
    if format == "turtle":
        return judgement.report.to_turtle()
    if format == "junit":
        return judgement.to_junit()
    return judgement.to_text()

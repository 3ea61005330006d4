"""Validation results and the report forms people and machines read: Turtle, JSON, text; the
severities a build can fail on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.terms import Term
from tgsparql.validation.model import Path

SH = vocab.SH
VIOLATION = ox.NamedNode(SH + "Violation")
WARNING = ox.NamedNode(SH + "Warning")
INFO = ox.NamedNode(SH + "Info")
SEVERITIES = {"violation": VIOLATION, "warning": WARNING, "info": INFO}
"""The SHACL severities by their names, as `--fail-on` takes them."""
_RANK = {INFO: 0, WARNING: 1, VIOLATION: 2}
_SH = {name: ox.NamedNode(SH + name) for name in (
    "ValidationReport", "ValidationResult", "conforms", "result", "focusNode", "resultPath",
    "value", "resultSeverity", "sourceShape", "sourceConstraintComponent", "sourceConstraint",
    "resultMessage",
)}


def _order(term: Term | None) -> str:
    return "" if term is None else str(term)


class ValidationResult(NamedTuple):
    focus_node: Term
    result_path: Term | None
    value: Term | None
    severity: ox.NamedNode
    source_shape: Term
    source_constraint_component: ox.NamedNode
    source_constraint: Term | None
    message: str
    messages: tuple[ox.Literal, ...] = ()
    """The message as RDF literals (one per language) for the Turtle report."""

    def sort_key(self) -> tuple[str, ...]:
        return (
            _order(self.source_shape), _order(self.source_constraint_component),
            _order(self.focus_node), _order(self.result_path), _order(self.value),
            _order(self.source_constraint), self.message,
        )

    @property
    def severity_name(self) -> str:
        return _local(self.severity)

    @property
    def rank(self) -> int:
        """How severe the result is: a severity of the shapes' own ranks as sh:Info."""
        return _RANK.get(self.severity, 0)

    def at_least(self, severity: ox.NamedNode) -> bool:
        return self.rank >= _RANK[severity]

    def text_line(self, shape_name: str) -> str:
        """The result on one line, for people."""
        where = f" {show_term(self.result_path)}" if self.result_path is not None else ""
        value = f" = {show_term(self.value)}" if self.value is not None else ""
        return (
            f"{self.severity_name.upper()}: {show_term(self.focus_node)}{where}{value}: "
            f"{self.message} [{_local(self.source_constraint_component)} of {shape_name}]"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "focusNode": _json_term(self.focus_node),
            "resultPath": _json_term(self.result_path),
            "value": _json_term(self.value),
            "severity": self.severity_name,
            "sourceShape": _json_term(self.source_shape),
            "sourceConstraintComponent": _local(self.source_constraint_component),
            "sourceConstraint": _json_term(self.source_constraint),
            "message": self.message,
        }


class ValidationReport:
    """A run's results, in order (ValidationResult.sort_key). Written out rather than a
    dataclass, as Shape is (tgsparql.validation.model)."""

    def __init__(
        self,
        results: Iterable[ValidationResult],
        shapes: list[tuple[Term, str]] | None = None,
        paths: Mapping[Term, Path] | None = None,
        queries_run: int = 0,
    ) -> None:
        self.results = sorted(results, key=ValidationResult.sort_key)
        self.shapes = [] if shapes is None else shapes
        """(node, name) of every shape that was checked, for the per-shape JUnit test cases."""
        self.paths: Mapping[Term, Path] = {} if paths is None else paths
        """Each blank-node path of the shapes graph, copied into sh:resultPath."""
        self.queries_run = queries_run

    def __repr__(self) -> str:
        return (f"ValidationReport({len(self.results)} results, {len(self.shapes)} shapes, "
                f"{self.queries_run} queries)")

    @property
    def conforms(self) -> bool:
        """Conformance as SHACL defines it: no result of any severity."""
        return not self.results

    @property
    def violations(self) -> list[ValidationResult]:
        return [r for r in self.results if r.severity == VIOLATION]

    def triples(self) -> list[ox.Triple]:
        """The standard sh:ValidationReport graph."""
        report = ox.BlankNode()
        out = [
            ox.Triple(report, vocab.RDF_TYPE, _SH["ValidationReport"]),
            ox.Triple(report, _SH["conforms"], ox.Literal(self.conforms)),
        ]
        for result in self.results:
            node = ox.BlankNode()
            out += [
                ox.Triple(report, _SH["result"], node),
                ox.Triple(node, vocab.RDF_TYPE, _SH["ValidationResult"]),
                ox.Triple(node, _SH["focusNode"], result.focus_node),
                ox.Triple(node, _SH["resultSeverity"], result.severity),
                ox.Triple(node, _SH["sourceShape"], result.source_shape),
                ox.Triple(node, _SH["sourceConstraintComponent"], result.source_constraint_component),
            ]
            if result.result_path is not None:
                out += self._path(node, result.result_path)
            if result.value is not None:
                out.append(ox.Triple(node, _SH["value"], result.value))
            if result.source_constraint is not None:
                out.append(ox.Triple(node, _SH["sourceConstraint"], result.source_constraint))
            for message in result.messages or (ox.Literal(result.message),):
                out.append(ox.Triple(node, _SH["resultMessage"], message))
        return out

    def _path(self, result: ox.BlankNode, path: Term) -> list[ox.Triple]:
        """sh:resultPath with a blank-node path copied afresh, as each result owns its path."""
        if path not in self.paths:
            return [ox.Triple(result, _SH["resultPath"], path)]
        root, structure = self.paths[path].copy()
        return [ox.Triple(result, _SH["resultPath"], root), *structure]

    def to_turtle(self) -> str:
        prefixes = {"sh": SH, "rdf": vocab.RDF, "xsd": vocab.XSD, **vocab.PREFIXES}
        return ox.serialize(self.triples(), format=ox.RdfFormat.TURTLE, prefixes=prefixes).decode()

    def to_json(self) -> dict[str, object]:
        return {
            "conforms": self.conforms,
            "violations": len(self.violations),
            "results": [r.to_json() for r in self.results],
            "queriesRun": self.queries_run,
        }

    def failing(self, fail_on: ox.NamedNode = VIOLATION) -> list[ValidationResult]:
        """The results that fail a build which fails on `fail_on` and anything more severe."""
        return [r for r in self.results if r.at_least(fail_on)]

    def shape_name(self, shape: Term) -> str:
        """The name the report lists a shape by (its IRI), or the term for a shape it did not
        name."""
        return dict(self.shapes).get(shape) or show_term(shape)

    def headline(self, fail_on: ox.NamedNode = VIOLATION) -> str:
        """The verdict people and CI act on: results at or above `fail_on` fail (exit 1)."""
        if self.conforms:
            return f"Conforms: {len(self.shapes)} shapes checked, no results."
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.severity_name] = counts.get(result.severity_name, 0) + 1
        summary = ", ".join(f"{n} {k.lower()}{'s' if n != 1 else ''}" for k, n in sorted(counts.items()))
        if self.failing(fail_on):
            return f"Does not conform: {summary}."
        return f"Conforms, with {summary}."

    def to_text(self) -> str:
        lines = [self.headline()]
        lines += [r.text_line(self.shape_name(r.source_shape)) for r in self.results]
        return "\n".join(lines) + "\n"


def _local(iri: ox.NamedNode) -> str:
    return iri.value[len(SH):] if iri.value.startswith(SH) else iri.value


def show_term(term: Term | None) -> str:
    """A term for people: prefixed name when a known prefix fits, else N-Triples."""
    if isinstance(term, ox.NamedNode):
        for prefix, namespace in vocab.PREFIXES.items():
            if term.value.startswith(namespace) and term.value != namespace:
                return f"{prefix}:{term.value[len(namespace):]}"
        return f"<{term.value}>"
    if isinstance(term, ox.Literal):
        return str(term)
    if isinstance(term, ox.Triple):
        return f"<<( {show_term(term.subject)} {show_term(term.predicate)} {show_term(term.object)} )>>"
    return "a blank node" if isinstance(term, ox.BlankNode) else ""


def _json_term(term: Term | None) -> object:
    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return {"type": "iri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        out: dict[str, object] = {"type": "literal", "value": term.value}
        if term.language:
            out["language"] = term.language
        else:
            out["datatype"] = term.datatype.value
        return out
    return {
        "type": "triple",
        "subject": _json_term(term.subject),
        "predicate": _json_term(term.predicate),
        "object": _json_term(term.object),
    }

"""The W3C SHACL Core test suite, run against our validator and compared as the suite prescribes.

`python -m tests.validation.w3c_suite` prints the full and partial pass counts and every miss; the
suite is found under `TGSPARQL_DATA` (`benchmarks.data`), and without it the run says it skipped.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import pyoxigraph as ox

from benchmarks.data import MissingData, data_path
from tgsparql.stores.store import EmbeddedStore
from tgsparql.validation import Shapes, ShapesError, ValidationResult, Validator

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
SHT = "http://www.w3.org/ns/shacl-test#"
SH = "http://www.w3.org/ns/shacl#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
TYPE = ox.NamedNode(RDF + "type")
KEPT = {
    ox.NamedNode(SH + name)
    for name in (
        "focusNode", "resultPath", "resultSeverity", "sourceConstraint",
        "sourceConstraintComponent", "sourceShape", "value",
    )
}
MESSAGE = ox.NamedNode(SH + "resultMessage")
Outcome = Literal["full", "partial", "fail"]
Statement = tuple[ox.NamedNode | ox.BlankNode, ox.NamedNode, object]


@dataclass(frozen=True)
class Case:
    name: str
    file: Path
    data: Path
    shapes: Path
    result: ox.NamedNode | ox.BlankNode


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    reason: str


@cache
def parse(path: Path) -> tuple[ox.Quad, ...]:
    """A file's quads, parsed once so data, shapes and expected results share blank nodes."""
    return tuple(ox.parse(path=str(path), format=ox.RdfFormat.TURTLE, base_iri=path.as_uri()))


class Graph:
    def __init__(self, quads: tuple[ox.Quad, ...] | list[ox.Triple]) -> None:
        self.index: dict[object, list[tuple[ox.NamedNode, object]]] = {}
        for q in quads:
            self.index.setdefault(q.subject, []).append((q.predicate, q.object))

    def objects(self, subject: object, predicate: str) -> list[object]:
        return [o for p, o in self.index.get(subject, []) if p.value == predicate]

    def items(self, head: object) -> list[object]:
        out = []
        while head != ox.NamedNode(RDF + "nil"):
            out.append(self.objects(head, RDF + "first")[0])
            head = self.objects(head, RDF + "rest")[0]
        return out


def cases(manifest: Path | None = None) -> list[Case]:
    """Every sht:Validate test reachable from `manifest` (the suite's root manifest) through
    mf:include; MissingData when the suite is not there."""
    manifest = manifest or data_path("w3c-shacl", "manifest.ttl")
    graph = Graph(parse(manifest))
    found: list[Case] = []
    root = ox.NamedNode(manifest.as_uri())
    for include in graph.objects(root, MF + "include"):
        found += cases(_path(include))
    for entries in graph.objects(root, MF + "entries"):
        for test in graph.items(entries):
            if ox.NamedNode(SHT + "Validate") not in graph.objects(test, RDF + "type"):
                continue
            action = graph.objects(test, MF + "action")[0]
            found.append(Case(
                name=f"{manifest.parent.name}/{test.value.rsplit('/', 1)[-1]}",
                file=manifest,
                data=_path(graph.objects(action, SHT + "dataGraph")[0]),
                shapes=_path(graph.objects(action, SHT + "shapesGraph")[0]),
                result=graph.objects(test, MF + "result")[0],
            ))
    return found


def _path(iri: object) -> Path:
    assert isinstance(iri, ox.NamedNode) and iri.value.startswith("file://")
    return Path(iri.value[len("file://"):])


def normalise(graph: Graph, report: object, keep_messages: set[object] | None) -> list[ox.Quad]:
    """The comparable part of a report: report and result nodes as fresh typed blank nodes, the
    standard properties, paths with their structure; messages only where `keep_messages` has them
    (None keeps all)."""
    out: list[Statement] = []
    node = ox.BlankNode()
    out.append((node, TYPE, ox.NamedNode(SH + "ValidationReport")))
    for conforms in graph.objects(report, SH + "conforms"):
        out.append((node, ox.NamedNode(SH + "conforms"), conforms))
    for result in graph.objects(report, SH + "result"):
        fresh = ox.BlankNode()
        out.append((node, ox.NamedNode(SH + "result"), fresh))
        out.append((fresh, TYPE, ox.NamedNode(SH + "ValidationResult")))
        for predicate, value in graph.index.get(result, []):
            if predicate in KEPT:
                out.append((fresh, predicate, value))
                if predicate.value == SH + "resultPath":
                    out += _closure(graph, value)
            elif predicate == MESSAGE and (keep_messages is None or value in keep_messages):
                out.append((fresh, predicate, value))
    return [ox.Quad(s, p, o) for s, p, o in dict.fromkeys(out)]  # type: ignore[arg-type]


def _closure(graph: Graph, node: object) -> list[Statement]:
    out: list[Statement] = []
    pending, seen = [node], set()
    while pending:
        current = pending.pop()
        if not isinstance(current, ox.BlankNode) or current in seen:
            continue
        seen.add(current)
        for predicate, value in graph.index.get(current, []):
            out.append((current, predicate, value))
            pending.append(value)
    return out


def canonical(quads: list[ox.Quad]) -> str:
    dataset = ox.Dataset(quads)
    dataset.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
    return "\n".join(sorted(str(dataset).splitlines()))


def run(case: Case) -> Verdict:
    expected_graph = Graph(parse(case.file))
    expected = normalise(expected_graph, case.result, None)
    messages = {q.object for q in expected if q.predicate == MESSAGE}
    conforms = next(q.object for q in expected if q.predicate.value == SH + "conforms")
    store = EmbeddedStore()
    store.extend(ox.Quad(q.subject, q.predicate, q.object) for q in parse(case.data))
    try:
        report = Validator(Shapes(parse(case.shapes), str(case.shapes))).validate(store)
    except ShapesError as error:
        return Verdict("fail", f"ShapesError: {error}")
    triples = report.triples()
    ours_graph = Graph(triples)
    root = next(t.subject for t in triples if t.object == ox.NamedNode(SH + "ValidationReport"))
    ours = normalise(ours_graph, root, messages)
    if canonical(ours) == canonical(expected):
        return Verdict("full", "")
    if ox.Literal(report.conforms) == conforms:
        return Verdict("partial", _difference(ours, expected))
    return Verdict("fail", f"conforms is {report.conforms}; " + _difference(ours, expected))


def scoped_against_full(case: Case) -> Verdict:
    """The results on IRI focus nodes of a run focused on every IRI of the data, against those
    of the whole run."""
    store = EmbeddedStore()
    quads = parse(case.data)
    store.extend(ox.Quad(q.subject, q.predicate, q.object) for q in quads)
    try:
        validator = Validator(Shapes(parse(case.shapes), str(case.shapes)))
    except ShapesError as error:
        return Verdict("full", f"not run: {error}")
    iris = {t for q in quads for t in (q.subject, q.object) if isinstance(t, ox.NamedNode)}

    def on_iris(report: object) -> list[ValidationResult]:
        return [r for r in report.results if isinstance(r.focus_node, ox.NamedNode)]  # type: ignore[attr-defined]

    whole, focused = on_iris(validator.validate(store)), on_iris(validator.validate(store, focus=iris))
    if whole == focused:
        return Verdict("full", "")
    return Verdict("fail", f"{len(focused)} results on IRIs focused, {len(whole)} in the whole run")


def _difference(ours: list[ox.Quad], expected: list[ox.Quad]) -> str:
    count = lambda quads: sum(1 for q in quads if q.predicate.value == SH + "result")  # noqa: E731
    return f"{count(ours)} results, expected {count(expected)}"


def main() -> int:
    try:
        suite = cases()
    except MissingData as error:
        print(f"W3C SHACL Core: skipped: {error}")
        return 0
    verdicts = [(case, run(case)) for case in suite]
    full = sum(v.outcome == "full" for _, v in verdicts)
    partial = sum(v.outcome in ("full", "partial") for _, v in verdicts)
    print(f"W3C SHACL Core: {len(verdicts)} tests, {full} full passes, {partial} partial passes")
    misses = [(case, verdict) for case, verdict in verdicts if verdict.outcome != "full"]
    for case, verdict in misses:
        print(f"  {verdict.outcome:7} {case.name}: {verdict.reason}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())

"""Four SHACL engines behind one call, each reduced to the same comparable outcome.

Every engine is given the same data and shapes *text* (Turtle) and reads it itself; its report is
serialised as RDF and read back with pyoxigraph, so all four are compared on what their
`sh:ValidationReport` says, not on their Python objects. rdflib (under pyshacl) is never handed
text with triple terms: it cannot represent them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pyoxigraph as ox

SH = "http://www.w3.org/ns/shacl#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDF_TYPE = ox.NamedNode(RDF + "type")
RDF_FIRST = ox.NamedNode(RDF + "first")
RDF_REST = ox.NamedNode(RDF + "rest")
RDF_NIL = ox.NamedNode(RDF + "nil")
SH_CONFORMS = ox.NamedNode(SH + "conforms")
SH_RESULT = ox.NamedNode(SH + "result")
SH_FOCUS = ox.NamedNode(SH + "focusNode")
SH_PATH = ox.NamedNode(SH + "resultPath")
SH_VALUE = ox.NamedNode(SH + "value")
SH_COMPONENT = ox.NamedNode(SH + "sourceConstraintComponent")
SH_SEVERITY = ox.NamedNode(SH + "resultSeverity")
SH_REPORT = ox.NamedNode(SH + "ValidationReport")
PATH_OPERATORS = {
    ox.NamedNode(SH + "inversePath"): "^{}",
    ox.NamedNode(SH + "zeroOrMorePath"): "({})*",
    ox.NamedNode(SH + "oneOrMorePath"): "({})+",
    ox.NamedNode(SH + "zeroOrOnePath"): "({})?",
}
SH_ALTERNATIVE = ox.NamedNode(SH + "alternativePath")
XSD_BOOLEAN = ox.NamedNode("http://www.w3.org/2001/XMLSchema#boolean")

BLANK = "_:"
"""Every blank node of a report renders as this. Engines relabel the data's blank nodes when
they parse it, so labels cannot be matched across engines; results about blank nodes are
compared as a multiset of otherwise equal rows instead."""

ResultKey = tuple[str, str | None, str | None, str, str]
"""(focus node, result path, value, constraint component, severity), each rendered as text."""


@dataclass(frozen=True)
class Outcome:
    """What one engine concluded: the verdict and the multiset of its results."""

    conforms: bool
    results: Counter[ResultKey]


class TripleTermsRefused(ValueError):
    """Text with RDF 1.2 triple terms was about to reach an engine that cannot read them."""


def render(term: ox.Term) -> str:
    """N-Triples form of a term, blank nodes (also inside triple terms) as one placeholder."""
    if isinstance(term, ox.BlankNode):
        return BLANK
    if isinstance(term, ox.Triple):
        parts = (render(term.subject), render(term.predicate), render(term.object))
        return "<<( {} {} {} )>>".format(*parts)
    return str(term)


class _Graph:
    """A parsed report graph with the few lookups normalisation needs."""

    def __init__(self, triples: Iterable[ox.Triple]) -> None:
        self.by_subject: dict[ox.Term, list[ox.Triple]] = {}
        for triple in triples:
            self.by_subject.setdefault(triple.subject, []).append(triple)

    def objects(self, subject: ox.Term, predicate: ox.NamedNode) -> list[ox.Term]:
        return [t.object for t in self.by_subject.get(subject, ()) if t.predicate == predicate]

    def one(self, subject: ox.Term, predicate: ox.NamedNode) -> ox.Term | None:
        values = self.objects(subject, predicate)
        if len(values) > 1:
            raise AssertionError(f"report gives {len(values)} values of {predicate} on a result")
        return values[0] if values else None

    def items(self, head: ox.Term) -> list[ox.Term]:
        out: list[ox.Term] = []
        while head != RDF_NIL:
            out.append(self.one(head, RDF_FIRST))  # type: ignore[arg-type]
            head = self.one(head, RDF_REST)  # type: ignore[assignment]
        return out

    def path(self, node: ox.Term) -> str:
        """A SHACL path node in SPARQL property-path syntax, whatever the engine labelled it."""
        if isinstance(node, ox.NamedNode):
            return str(node)
        if self.objects(node, RDF_FIRST):
            return "(" + " / ".join(self.path(item) for item in self.items(node)) + ")"
        alternatives = self.objects(node, SH_ALTERNATIVE)
        if alternatives:
            return "(" + " | ".join(self.path(item) for item in self.items(alternatives[0])) + ")"
        for predicate, form in PATH_OPERATORS.items():
            inner = self.objects(node, predicate)
            if inner:
                return form.format(self.path(inner[0]))
        raise AssertionError(f"report has a path node that is no SHACL path: {node}")


def outcome_from_report(text: str, format: ox.RdfFormat = ox.RdfFormat.TURTLE) -> Outcome:
    """The verdict and the top-level results (never `sh:detail`) of one report graph."""
    graph = _Graph(ox.parse(text, format))
    reports = [
        subject
        for subject, triples in graph.by_subject.items()
        if any(t.predicate == RDF_TYPE and t.object == SH_REPORT for t in triples)
    ]
    if len(reports) != 1:
        raise AssertionError(f"expected one sh:ValidationReport, found {len(reports)}")
    (report,) = reports
    conforms = graph.one(report, SH_CONFORMS)
    results: Counter[ResultKey] = Counter()
    for result in graph.objects(report, SH_RESULT):
        path, value = graph.one(result, SH_PATH), graph.one(result, SH_VALUE)
        results[
            (
                render(graph.one(result, SH_FOCUS)),  # type: ignore[arg-type]
                None if path is None else graph.path(path),
                None if value is None else render(value),
                str(graph.one(result, SH_COMPONENT)),
                str(graph.one(result, SH_SEVERITY)),
            )
        ] += 1
    return Outcome(conforms == ox.Literal("true", datatype=XSD_BOOLEAN), results)



def has_triple_terms(text: str) -> bool:
    return any(
        isinstance(term, ox.Triple)
        for quad in ox.parse(text, ox.RdfFormat.TURTLE)
        for term in (quad.subject, quad.object)
    )


def run_ours(data: str, shapes: str) -> Outcome:
    """tgsparql's validator on an in-memory store holding the data in its default graph."""
    from tgsparql.stores.store import open_store
    from tgsparql.validation import Shapes, Validator

    store = open_store()
    store.oxigraph.load(data, format=ox.RdfFormat.TURTLE)
    validator = Validator(Shapes.from_text(shapes, format=ox.RdfFormat.TURTLE))
    return outcome_from_report(validator.validate(store, default_graph=None).to_turtle())


def run_pyshacl(data: str, shapes: str, dataset: bool = False) -> Outcome:
    """pyshacl on rdflib graphs parsed from the texts; refuses triple terms before rdflib sees them.

    `dataset` holds the data in a dataset's default graph, for shapes whose queries say GRAPH."""
    if has_triple_terms(data) or has_triple_terms(shapes):
        raise TripleTermsRefused("pyshacl (rdflib) cannot read RDF 1.2 triple terms")
    import pyshacl
    import rdflib

    data_graph = (rdflib.Dataset() if dataset else rdflib.Graph()).parse(
        data=data, format="turtle"
    )
    shapes_graph = rdflib.Graph().parse(data=shapes, format="turtle")
    _, report, _ = pyshacl.validate(
        data_graph, shacl_graph=shapes_graph, inference="none", advanced=False
    )
    return outcome_from_report(report.serialize(format="nt"), ox.RdfFormat.N_TRIPLES)


def run_shacl(data: str, shapes: str) -> Outcome:
    """The PyPI `shacl` package (a Rust engine), which reads RDF 1.2 Turtle."""
    import shacl

    report = shacl.Shapes.from_text(shapes, "turtle").validate_text(data, "turtle")
    return outcome_from_report(report.serialize("ntriples"), ox.RdfFormat.N_TRIPLES)


def run_pyrudof(data: str, shapes: str) -> Outcome:
    """pyrudof's native SHACL engine, strict parsing so a reading error is not a pass."""
    import pyrudof

    rudof = pyrudof.Rudof(pyrudof.RudofConfig())
    rudof.read_data(data, format=pyrudof.RDFFormat.Turtle, reader_mode=pyrudof.ReaderMode.Strict)
    rudof.read_shacl(shapes, format=pyrudof.ShaclFormat.Turtle, reader_mode=pyrudof.ReaderMode.Strict)
    rudof.validate_shacl(mode=pyrudof.ShaclValidationMode.Native)
    text = rudof.serialize_shacl_validation_results(
        format=pyrudof.ResultShaclValidationFormat.NTriples
    )
    return outcome_from_report(text, ox.RdfFormat.N_TRIPLES)


ENGINES: dict[str, Callable[[str, str], Outcome]] = {
    "tgsparql": run_ours,
    "pyshacl": run_pyshacl,
    "shacl": run_shacl,
    "pyrudof": run_pyrudof,
}

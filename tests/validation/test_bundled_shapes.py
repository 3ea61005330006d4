"""The bundled shapes: real records conform, and each targeted corruption of a real record gives
exactly the results it should — focus, shape, constraint, value — with a message naming it.

Every record and corruption is checked in the `rdf12` dialect (triple terms) and in the
`reification` dialect (rdf:Statement IRIs, SPARQL 1.1): the same results, a statement IRI as the
value where rdf12 has the triple term."""

from __future__ import annotations

import datetime as dt
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import REPO
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tgsparql.asking.grounding import update_label_index
from tgsparql.asking.labels import LabeledEdge
from tgsparql.asking.llm.base import SelectionOutput, SelectionRequest
from tgsparql.asking.llm.offline import OfflineAnswer, OfflineBackend
from tgsparql.asking.llm.usage import Usage
from tgsparql.asking.pipeline import GraphRag
from tgsparql.data.loader import load_files
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds, statement_iri
from tgsparql.rdf.terms import Dialect
from tgsparql.record import conformance as sessions
from tgsparql.record.conformance import Judgement, session_nodes
from tgsparql.record.explain import SessionNotFound
from tgsparql.stores.store import EmbeddedStore, open_store
from tgsparql.validation import Shapes, ShapesError, ValidationReport, ValidationResult, Validator

QUESTION = "Who did Marie Curie marry, and where was she born?"
TGS = "https://trustgraph.ai/shapes/"
SH = "http://www.w3.org/ns/shacl#"
PREFIXES = """\
PREFIX tg: <https://trustgraph.ai/ns/>
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
PREFIX dc: <http://purl.org/dc/elements/1.1/>
PREFIX dcterms: <http://purl.org/dc/terms/>
PREFIX ent: <https://example.org/demo/entity/>
PREFIX rel: <https://example.org/demo/rel/>
PREFIX doc: <https://example.org/demo/doc/>
"""
ANY = object()
"""An expected value that is not compared (it depends on the clock)."""

# Real IRIs of the demo's extraction provenance.
CHUNK = "urn:chunk:6e9a0e2c-72cd-408b-b488-7bb5b5e81ee2"
FIRST_CHUNK = "urn:chunk:73279646-822c-4a72-96b1-9c31356333ba"
PAGE = "urn:page:b58fd2cb-4f8f-48bb-a158-28e440a1f627"
SUBGRAPH = "https://trustgraph.ai/subgraph/c482e836-cca8-4bea-bbec-532078a805ac"
ACTIVITY = "urn:activity:da5a3fea-cec7-4aa3-bcfa-0db576fcd5f8"
AGENT = "https://example.org/demo/agent/curator"
MARIE = "https://example.org/demo/entity/Marie_Curie"
RADIUM_DOC = "https://example.org/demo/doc/radium-institute"
PIERRE_DOC = "https://example.org/demo/doc/pierre-curie"
MARIE_DOC = "https://example.org/demo/doc/marie-curie"
FAKE_EDGE = "<https://example.org/x/a> <https://example.org/x/b> <https://example.org/x/c>"
UNRETRIEVED_FACT = ("<https://example.org/demo/entity/Paris> "
                    "<https://example.org/demo/rel/capitalOf> <https://example.org/demo/entity/France>")


@dataclass(frozen=True)
class Found:
    """A result as the tests compare it: local names, and the value in plain text."""

    severity: str
    focus: str
    shape: str
    what: str
    """The sh:sparql constraint's local name, else the Core component's (without the suffix)."""
    value: object


def found(result: ValidationResult) -> Found:
    constraint = result.source_constraint
    if isinstance(constraint, ox.NamedNode):
        what = constraint.value.removeprefix(TGS)
    else:
        what = result.source_constraint_component.value.removeprefix(SH).removesuffix(
            "ConstraintComponent"
        )
    return Found(
        result.severity.value.removeprefix(SH),
        plain(result.focus_node),
        result.source_shape.value.removeprefix(TGS),  # type: ignore[union-attr]
        what,
        plain(result.value),
    )


def plain(term: object) -> str | None:
    if term is None:
        return None
    if isinstance(term, (ox.NamedNode, ox.Literal)):
        return term.value
    return str(term)


def same(actual: set[Found], expected: set[Found]) -> bool:
    """Equal sets, where an expected value of ANY matches any value."""
    def key(f: Found) -> tuple[str, ...]:
        return f.severity, f.focus, f.shape, f.what

    exact = {e for e in expected if e.value is not ANY}
    loose = [key(e) for e in expected if e.value is ANY]
    return exact <= actual and sorted(map(key, actual - exact)) == sorted(loose)


_TRIPLE_TERM = re.compile(r"<<\( (.+?) \)>>")
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"


def n_triple(text: str) -> ox.Triple:
    [quad] = ox.parse(text + " .", format=ox.RdfFormat.N_TRIPLES)
    return quad.triple


def in_dialect(text: str, dialect: Dialect) -> tuple[str, list[ox.Triple]]:
    """SPARQL text with its `<<( s p o )>>` triple terms as `dialect` references them, and the
    triples referenced (whose rdf:Statement a reification record describes)."""
    if dialect == "rdf12":
        return text, []
    triples = [n_triple(m.group(1)) for m in _TRIPLE_TERM.finditer(text)]
    return _TRIPLE_TERM.sub(lambda m: str(statement_iri(n_triple(m.group(1)))), text), triples


def value_in(value: object, dialect: Dialect) -> object:
    """An expected result value as `dialect` writes it: a triple (N-Triples text) becomes the
    statement IRI of the reification dialect."""
    if dialect == "reification" and isinstance(value, str) and value.startswith("<"):
        return statement_iri(n_triple(value)).value
    return value


class _Group:
    """One graph's triples, as the bulk_insert template takes them."""

    def __init__(self, graph: ox.NamedNode | None, triples: list[ox.Triple]) -> None:
        self.graph, self.triples = graph, triples


def load_demo(store: EmbeddedStore, path: Path) -> None:
    """The demo sample, its edge references written in the store's dialect (an embedded store
    bulk-loads triple terms as they are, so a reification store gets them by INSERT DATA)."""
    if store.dialect == "rdf12":
        assert not load_files(store, [path]).failed
        return
    groups: dict[ox.NamedNode | None, list[ox.Triple]] = {}
    for quad in ox.parse(path=str(path)):
        graph = quad.graph_name if isinstance(quad.graph_name, ox.NamedNode) else None
        groups.setdefault(graph, []).append(quad.triple)
    store.run("bulk_insert", groups=[_Group(g, t) for g, t in groups.items()])
    update_label_index(store)


@pytest.fixture(params=["rdf12", "reification"])
def dialect(request: pytest.FixtureRequest) -> Dialect:
    return request.param


@pytest.fixture
def demo_store(dialect: Dialect, tgsparql_demo_file: Path) -> EmbeddedStore:
    """The demo sample in an embedded store that records in `dialect`."""
    store = open_store()
    store.dialect = dialect  # type: ignore[misc]
    load_demo(store, tgsparql_demo_file)
    return store


@pytest.fixture
def rag(demo_store: EmbeddedStore, tgsparql_pipeline: Callable[..., GraphRag]) -> GraphRag:
    """The offline pipeline over the demo store that records in `dialect`."""
    return tgsparql_pipeline(store=demo_store)


@cache
def bundled_validator(dialect: Dialect) -> Validator:
    return Validator(Shapes.bundled(dialect), dialect)


@pytest.fixture
def validator(dialect: Dialect) -> Validator:
    return bundled_validator(dialect)


@dataclass
class Recorded:
    store: EmbeddedStore
    ids: SessionIds

    def iri(self, text: str) -> str:
        return text.replace("UUID", self.ids.uuid)

    def corrupt(self, update: str) -> None:
        """Apply literal SPARQL UPDATE text, UUID standing for the session's UUID; in the
        reification dialect its triple terms become statements, described as a recorder would."""
        text, triples = in_dialect(update, self.store.dialect)
        for triple in triples:
            text += f""" ;
                INSERT DATA {{ GRAPH <{vocab.DEFAULT_COLLECTION.graph.value}> {{
                    <{statement_iri(triple).value}> a <{RDF}Statement> ;
                        <{RDF}subject> {triple.subject} ; <{RDF}predicate> {triple.predicate} ;
                        <{RDF}object> {triple.object} }} }}"""
        self.store.update(PREFIXES + self.iri(text))


def record(rag: GraphRag, question: str = QUESTION) -> Recorded:
    messages = list(rag.query(question))
    assert messages[-1].error is None, messages[-1].error
    return Recorded(rag.store, SessionIds.from_session_iri(messages[0].explain_id or ""))


@pytest.fixture
def recorded(rag: GraphRag) -> Recorded:
    return record(rag)


@pytest.fixture
def failed(rag: GraphRag) -> Recorded:
    """A session its client stopped reading after the first message: recorded as failed."""
    messages = rag.query(QUESTION)
    first = next(messages)
    messages.close()
    return Recorded(rag.store, SessionIds.from_session_iri(first.explain_id or ""))


@pytest.fixture
def failed_at_start(rag: GraphRag) -> Recorded:
    """A session that failed before it retrieved anything: no triple terms in its record."""
    ids = SessionIds.new()
    started = dt.datetime.now(dt.timezone.utc)
    rag.recorder.write(
        rag.recorder.session(ids, QUESTION, started),
        rag.recorder.failure(ids, "retrieval failed: the store is unreachable", started,
                             started=started),
    )
    return Recorded(rag.store, ids)


@pytest.fixture
def extraction(demo_store: EmbeddedStore) -> Recorded:
    """The demo's extraction provenance alone, no session."""
    return Recorded(demo_store, SessionIds("00000000-0000-4000-8000-000000000000"))


def assert_results(report: ValidationReport, expected: set[Found], *mentions: str) -> None:
    actual = {found(r) for r in report.results}
    assert len(actual) == len(report.results), "a result is reported twice"
    assert same(actual, expected), f"got {actual}\nexpected {expected}"
    for result in report.results:
        if result.source_constraint is not None and result.value is not None:
            assert plain(result.value) in result.message, result.message
    messages = " | ".join(r.message for r in report.results)
    for text in mentions:
        assert text in messages, f"{text!r} not in {messages!r}"


# --- real records conform ---------------------------------------------------------------------


def test_a_recorded_session_and_the_demo_extraction_conform(recorded, validator) -> None:
    report = validator.validate(recorded.store)
    assert report.results == []
    assert report.conforms


def test_a_reification_record_references_edges_by_statement_iris_only(recorded) -> None:
    """The premise of the reification cases: no triple term anywhere, a statement per edge."""
    quads = list(recorded.store.oxigraph.quads_for_pattern(None, None, None, None))
    terms = [q for q in quads if isinstance(q.object, ox.Triple)]
    statements = {q.object for q in quads if q.predicate.value in (
        vocab.TG + "edge", vocab.TG + "retrievedEdge", vocab.TG + "contains")}
    if recorded.store.dialect == "rdf12":
        assert terms and all(isinstance(s, ox.Triple) for s in statements)
        return
    assert terms == [] and len(statements) > 10
    assert all(isinstance(s, ox.NamedNode) and s.value.startswith("urn:trustgraph:stmt:")
               for s in statements)


def test_the_demo_extraction_alone_conforms(extraction, validator) -> None:
    assert validator.validate(extraction.store).results == []


def test_a_failed_session_conforms(failed, validator) -> None:
    status = failed.store.select(PREFIXES + failed.iri(
        "SELECT ?s WHERE { GRAPH ?g { <urn:trustgraph:session:UUID> tg:status ?s } }"
    ))
    assert [row["s"].value for row in status] == ["failed"]
    assert validator.validate(failed.store).results == []


def test_a_session_without_recorded_retrieved_edges_conforms(demo_store, validator) -> None:
    rag = GraphRag(demo_store, OfflineBackend(), record_retrieved_edges=False)
    record(rag)
    assert validator.validate(demo_store).results == []


def test_a_language_tagged_question_conforms(recorded, validator) -> None:
    recorded.corrupt("""
        DELETE { GRAPH ?g { ?s tg:query ?q } } INSERT { GRAPH ?g { ?s tg:query "Qui a épousé Marie Curie ?"@fr } }
        WHERE { GRAPH ?g { ?s tg:query ?q } }""")
    assert validator.validate(recorded.store).results == []


class ReportingUsage(OfflineBackend):
    """The offline backend reporting what a served LLM does: the selection its model and token
    counts, the answer (streamed without usage) its model only."""

    def select(self, request: SelectionRequest) -> SelectionOutput:
        return replace(super().select(request), usage=Usage("gpt-4o mini", 812, 95))

    def answer(self, question: str, facts: Sequence[LabeledEdge], *, stream: bool) -> OfflineAnswer:
        answer = super().answer(question, facts, stream=stream)
        answer.usage = Usage("gpt-4o mini")
        return answer


def test_a_session_recording_its_calls_usage_conforms_and_one_disagreeing_is_reported(
    demo_store, validator, dialect
) -> None:
    session = record(GraphRag(demo_store, ReportingUsage()))
    assert validator.validate(demo_store).results == []
    session.corrupt("""
        DELETE { GRAPH ?g { ?selection tg:inToken 812 } } INSERT { GRAPH ?g { ?selection tg:inToken 813 } }
        WHERE { GRAPH ?g { ?selection tg:inToken 812 } }""")
    # the usage names 812, which no call says, and no usage names the 813 the Selection says
    recorded = ('<urn:trustgraph:llm:gpt-4o%20mini> <https://trustgraph.ai/ns/inToken> '
                '"812"^^<http://www.w3.org/2001/XMLSchema#integer>')
    missing = "(none with https://trustgraph.ai/ns/inToken 813)"
    assert_results(validator.validate(demo_store), {
        violation(session.iri(SESSION), "Session", "SessionUsageMatchesItsCalls",
                  value_in(recorded, dialect)),
        violation(session.iri(SESSION), "Session", "SessionUsageMatchesItsCalls", missing),
    }, "ns/selectionUsage")


def test_a_dcterms_title_conforms(extraction, validator) -> None:
    extraction.corrupt("""
        DELETE { GRAPH ?g { doc:radium-institute dc:title ?t } }
        INSERT { GRAPH ?g { doc:radium-institute dcterms:title ?t } }
        WHERE { GRAPH ?g { doc:radium-institute dc:title ?t } }""")
    assert validator.validate(extraction.store).results == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=st.text(alphabet=st.sampled_from("abcdeMarieCuréPolnium ?'\""), min_size=1, max_size=40))
def test_every_session_the_pipeline_records_has_no_violation(rag, validator, question) -> None:
    messages = list(rag.query(question))
    session = messages[0].explain_id
    if session is None:  # refused before anything was recorded
        assert messages[-1].error is not None
        return
    nodes = session_nodes(rag.store, session)
    assert validator.validate(rag.store, focus=nodes).violations == []


# --- each corruption of a real session gives exactly its results ------------------------------


def violation(focus: str, shape: str, what: str, value: object = None) -> Found:
    return Found("Violation", focus, shape, what, value)


SESSION = "urn:trustgraph:session:UUID"
RETRIEVAL = "urn:trustgraph:prov:retrieval:UUID"
SELECTION = "urn:trustgraph:prov:selection:UUID"
ANSWER = "urn:trustgraph:prov:answer:UUID"
DOCUMENT = "urn:trustgraph:answer:UUID"
EDGE0 = "urn:trustgraph:prov:edge:UUID:0"
EDGE1 = "urn:trustgraph:prov:edge:UUID:1"
"""Marie Curie's birthplace: a fact only her document states."""
SELECTED = 2
"""Edges the offline selector picks for QUESTION: the marriage, then her birthplace."""
SEED_CUT = "urn:trustgraph:prov:seed:UUID:0"
CITATION0 = "urn:trustgraph:prov:citation:UUID:0"
OTHER_RETRIEVAL = "urn:trustgraph:prov:retrieval:00000000-0000-4000-8000-000000000000"


EDGE0_DOCUMENTS_STALE = tuple(
    Found("Warning", EDGE0, "EdgeSelectionDocuments", "FactDocumentStatesTheFact", document)
    for document in (MARIE_DOC, PIERRE_DOC))
"""What an edge selection whose fact is replaced also gets: the documents it names (those of
the marriage) no longer state its fact."""


@dataclass(frozen=True)
class Case:
    update: str
    expected: tuple[Found, ...]
    mentions: tuple[str, ...] = ()


def rename(old: str, new: str) -> str:
    """SPARQL UPDATE text renaming an IRI wherever it is a subject or an object."""
    return f"""
        DELETE {{ GRAPH ?g {{ <{old}> ?p ?o }} }} INSERT {{ GRAPH ?g {{ <{new}> ?p ?o }} }}
        WHERE {{ GRAPH ?g {{ <{old}> ?p ?o }} }} ;
        DELETE {{ GRAPH ?g {{ ?s ?p <{old}> }} }} INSERT {{ GRAPH ?g {{ ?s ?p <{new}> }} }}
        WHERE {{ GRAPH ?g {{ ?s ?p <{old}> }} }}"""


SESSION_CASES = {
    "the answer is deleted": Case(
        f"""DELETE WHERE {{ GRAPH ?g {{ <{ANSWER}> tg:citation ?c . ?c ?cp ?co }} }} ;
            DELETE WHERE {{ GRAPH ?g {{ <{ANSWER}> ?p ?o }} }}""",
        (violation(SESSION, "Session", "CompleteSessionHasEveryStage", SESSION),),
        ("is complete but has no Answer",),
    ),
    "the retrieval is deleted": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{RETRIEVAL}> ?p ?o }} }}",
        (violation(SESSION, "Session", "CompleteSessionHasEveryStage", SESSION),),
        ("is complete but has no Retrieval",),
    ),
    "the answer no longer derives from the selection": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{ANSWER}> prov:wasDerivedFrom ?s }} }}",
        (violation(ANSWER, "Answer-selection", "MinCount"),
         violation(SESSION, "Session", "CompleteSessionHasEveryStage", SESSION),
         *(violation(ANSWER, "Answer", "AnswerCitesItsSelectedEdges", EDGE0[:-1] + str(i))
           for i in range(SELECTED))),
        ("has no Answer", "is not an edge its Selection selected"),
    ),
    "a second retrieval is generated by the session": Case(
        f"""INSERT DATA {{ GRAPH <urn:graph:explainability> {{
            <{OTHER_RETRIEVAL}> a prov:Entity ; rdfs:label "Retrieved edges" ;
                prov:wasGeneratedBy <{SESSION}> ; tg:edgeCount 0 . }} }}""",
        (violation(SESSION, "Session-retrieval", "MaxCount"),
         violation(SESSION, "Session", "SessionEntitiesShareItsUuid", OTHER_RETRIEVAL)),
        ("but its IRI does not carry",),
    ),
    "the day is not the day the session started": Case(
        f"""DELETE {{ GRAPH ?g {{ <{SESSION}> tg:day ?d }} }}
            INSERT {{ GRAPH ?g {{ <{SESSION}> tg:day "2000-01-01"^^xsd:date }} }}
            WHERE {{ GRAPH ?g {{ <{SESSION}> tg:day ?d }} }}""",
        (violation(SESSION, "Session", "SessionDayIsItsStartDay", "2000-01-01"),
         violation(SESSION, "Session", "ClosedSessionDayMatchesItsStatus", ANY),
         violation(SESSION, "Session", "SessionDayHoldsSessions", "2000-01-01")),
        ("not on that day (UTC)", "does not agree with its status and tg:day"),
    ),
    "the day is missing (a record of an older version)": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{SESSION}> tg:day ?d }} }}",
        (violation(SESSION, "Session-day", "MinCount"),
         violation(SESSION, "Session", "ClosedSessionDayMatchesItsStatus", ANY)),
        ("run tgsparql migrate",),
    ),
    "the day is a dateTime": Case(
        f"""DELETE {{ GRAPH ?g {{ <{SESSION}> tg:day ?d }} }}
            INSERT {{ GRAPH ?g {{ <{SESSION}> tg:day ?t }} }}
            WHERE {{ GRAPH ?g {{ <{SESSION}> tg:day ?d ; prov:startedAtTime ?t }} }}""",
        (violation(SESSION, "Session-day", "Datatype", ANY),
         violation(SESSION, "Session", "ClosedSessionDayMatchesItsStatus", ANY),
         violation(SESSION, "Session", "SessionDayHoldsSessions", ANY)),
    ),
    "a complete session has no complete day": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{SESSION}> tg:completeDay ?d }} }}",
        (violation(SESSION, "Session", "ClosedSessionDayMatchesItsStatus", "(none)"),),
    ),
    "a complete session also records a failed day": Case(
        f"""INSERT {{ GRAPH ?g {{ <{SESSION}> tg:failedDay ?d }} }}
            WHERE {{ GRAPH ?g {{ <{SESSION}> tg:day ?d }} }}""",
        (violation(SESSION, "Session", "ClosedSessionDayMatchesItsStatus", ANY),),
    ),
    "a session whose answer cites its edges records an uncited day": Case(
        f"""INSERT {{ GRAPH ?g {{ <{SESSION}> tg:uncitedDay ?d }} }}
            WHERE {{ GRAPH ?g {{ <{SESSION}> tg:day ?d }} }}""",
        (violation(SESSION, "Session", "UncitedDayMatchesItsAnswer", ANY),),
        ("does not agree with its Answer",),
    ),
    "an answer citing none of its selected edges and no uncited day": Case(
        f"""DELETE {{ GRAPH ?g {{ <{ANSWER}> tg:citedEdgeCount ?c }} }}
            INSERT {{ GRAPH ?g {{ <{ANSWER}> tg:citedEdgeCount 0 }} }}
            WHERE {{ GRAPH ?g {{ <{ANSWER}> tg:citedEdgeCount ?c }} }}""",
        (violation(SESSION, "Session", "UncitedDayMatchesItsAnswer", "(none)"),),
        ("run tgsparql migrate",),
    ),
    "the selected edge count is off by one": Case(
        f"""DELETE {{ GRAPH ?g {{ <{SELECTION}> tg:selectedEdgeCount ?c }} }}
            INSERT {{ GRAPH ?g {{ <{SELECTION}> tg:selectedEdgeCount ?wrong }} }}
            WHERE {{ GRAPH ?g {{ <{SELECTION}> tg:selectedEdgeCount ?c }} BIND(?c + 1 AS ?wrong) }}""",
        (violation(SELECTION, "Selection", "SelectedEdgeCountMatchesSelectedEdges", ANY),),
        ("selected edges",),
    ),
    "the selected edge count is missing (a record of an older version)": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{SELECTION}> tg:selectedEdgeCount ?c }} }}",
        (violation(SELECTION, "Selection-selectedEdgeCount", "MinCount"),),
    ),
    "the source documents are missing (a record of an older version)": Case(
        f"""DELETE WHERE {{ GRAPH ?g {{ <{SELECTION}> tg:sourceDocumentCount ?c }} }} ;
            DELETE WHERE {{ GRAPH ?g {{ <{SELECTION}> tg:sourceDocument ?d }} }} ;
            DELETE WHERE {{ GRAPH ?g {{ ?edgeSelection tg:factDocument ?d }} }}""",
        (violation(SELECTION, "Selection-sourceDocumentCount", "MinCount"),),
        ("run tgsparql migrate",),
    ),
    "the source document count is off by one": Case(
        f"""DELETE {{ GRAPH ?g {{ <{SELECTION}> tg:sourceDocumentCount ?c }} }}
            INSERT {{ GRAPH ?g {{ <{SELECTION}> tg:sourceDocumentCount ?wrong }} }}
            WHERE {{ GRAPH ?g {{ <{SELECTION}> tg:sourceDocumentCount ?c }} BIND(?c + 1 AS ?wrong) }}""",
        (violation(SELECTION, "Selection", "SourceDocumentCountMatchesSourceDocuments", ANY),),
    ),
    "an edge selection's document is missing": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{EDGE1}> tg:factDocument ?d }} }}",
        (Found("Warning", EDGE1, "EdgeSelectionDocuments", "FactStatingDocumentIsNamed",
               MARIE_DOC),),
        ("ingested since the session",),
    ),
    "an edge selection names a document that does not state its fact": Case(
        f"""INSERT DATA {{ GRAPH <urn:graph:explainability> {{
            <{EDGE1}> tg:factDocument <{PIERRE_DOC}> }} }}""",
        (Found("Warning", EDGE1, "EdgeSelectionDocuments", "FactDocumentStatesTheFact",
               PIERRE_DOC),),
        ("re-extracted since the session",),
    ),
    "the selection names a document none of its edge selections does": Case(
        f"""INSERT DATA {{ GRAPH <urn:graph:explainability> {{
            <{SELECTION}> tg:sourceDocument <{RADIUM_DOC}> }} }}""",
        (violation(SELECTION, "Selection", "SourceDocumentsAreThoseOfItsEdges", RADIUM_DOC),
         violation(SELECTION, "Selection", "SourceDocumentCountMatchesSourceDocuments", ANY)),
        ("but by none of its edge selections",),
    ),
    "the status is missing": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{SESSION}> tg:status ?s }} }}",
        (violation(SESSION, "Session-status", "MinCount"),
         violation(SESSION, "Session", "ClosedSessionDayMatchesItsStatus", ANY)),
    ),
    "the status is unknown": Case(
        f"""DELETE {{ GRAPH ?g {{ <{SESSION}> tg:status ?s }} }}
            INSERT {{ GRAPH ?g {{ <{SESSION}> tg:status "done" }} }}
            WHERE {{ GRAPH ?g {{ <{SESSION}> tg:status ?s }} }}""",
        (violation(SESSION, "Session-status", "In", "done"),
         violation(SESSION, "Session", "ClosedSessionDayMatchesItsStatus", ANY)),
        ('"complete" or "failed"',),
    ),
    "a complete session records an error": Case(
        f'INSERT DATA {{ GRAPH <urn:graph:explainability> {{ <{SESSION}> tg:error "disk full" }} }}',
        (violation(SESSION, "Session", "ErrorOnlyOnFailedSession", "disk full"),),
    ),
    "the session ends before it starts": Case(
        f"""DELETE {{ GRAPH ?g {{ <{SESSION}> prov:endedAtTime ?t }} }}
            INSERT {{ GRAPH ?g {{ <{SESSION}> prov:endedAtTime "2000-01-01T00:00:00Z"^^xsd:dateTime }} }}
            WHERE {{ GRAPH ?g {{ <{SESSION}> prov:endedAtTime ?t }} }}""",
        (violation(SESSION, "Session-started", "LessThanOrEquals", ANY),),
    ),
    "the question is a number": Case(
        f"""DELETE {{ GRAPH ?g {{ <{SESSION}> tg:query ?q }} }}
            INSERT {{ GRAPH ?g {{ <{SESSION}> tg:query 42 }} }}
            WHERE {{ GRAPH ?g {{ <{SESSION}> tg:query ?q }} }}""",
        (violation(SESSION, "Session-query", "Or", "42"),),
    ),
    "the edge count is off by one": Case(
        f"""DELETE {{ GRAPH ?g {{ <{RETRIEVAL}> tg:edgeCount ?c }} }}
            INSERT {{ GRAPH ?g {{ <{RETRIEVAL}> tg:edgeCount ?wrong }} }}
            WHERE {{ GRAPH ?g {{ <{RETRIEVAL}> tg:edgeCount ?c }} BIND(?c - 1 AS ?wrong) }}""",
        (violation(RETRIEVAL, "Retrieval", "EdgeCountMatchesRetrievedEdges", ANY),),
        ("retrieved edges",),
    ),
    "the edge count is a string": Case(
        f"""DELETE {{ GRAPH ?g {{ <{RETRIEVAL}> tg:edgeCount ?c }} }}
            INSERT {{ GRAPH ?g {{ <{RETRIEVAL}> tg:edgeCount ?text }} }}
            WHERE {{ GRAPH ?g {{ <{RETRIEVAL}> tg:edgeCount ?c }} BIND(STR(?c) AS ?text) }}""",
        (violation(RETRIEVAL, "Retrieval-edgeCount", "Datatype", ANY),
         violation(RETRIEVAL, "Retrieval-edgeCount", "MinInclusive", ANY)),
        ("xsd:integer",),
    ),
    "a retrieved edge is not a fact": Case(
        f"""DELETE {{ GRAPH ?g {{ <{RETRIEVAL}> tg:edgeCount ?c }} }}
            INSERT {{ GRAPH ?g {{ <{RETRIEVAL}> tg:edgeCount ?more ;
                                     tg:retrievedEdge <<( {FAKE_EDGE} )>> }} }}
            WHERE {{ GRAPH ?g {{ <{RETRIEVAL}> tg:edgeCount ?c }} BIND(?c + 1 AS ?more) }}""",
        (violation(RETRIEVAL, "Retrieval", "RetrievedEdgeIsAFact", FAKE_EDGE),),
    ),
    "a seed entity is a literal": Case(
        f'INSERT DATA {{ GRAPH <urn:graph:explainability> {{ <{RETRIEVAL}> tg:entity "Marie" }} }}',
        (violation(RETRIEVAL, "Retrieval-entity", "NodeKind", "Marie"),),
    ),
    "the invalid id count is negative": Case(
        f"""DELETE {{ GRAPH ?g {{ <{SELECTION}> tg:invalidIdCount ?c }} }}
            INSERT {{ GRAPH ?g {{ <{SELECTION}> tg:invalidIdCount -1 }} }}
            WHERE {{ GRAPH ?g {{ <{SELECTION}> tg:invalidIdCount ?c }} }}""",
        (violation(SELECTION, "Selection-invalidIdCount", "MinInclusive", "-1"),),
    ),
    "a selected edge is neither a fact nor retrieved": Case(
        f"""DELETE {{ GRAPH ?g {{ <{EDGE0}> tg:edge ?t }} }}
            INSERT {{ GRAPH ?g {{ <{EDGE0}> tg:edge <<( {FAKE_EDGE} )>> }} }}
            WHERE {{ GRAPH ?g {{ <{EDGE0}> tg:edge ?t }} }}""",
        (violation(EDGE0, "EdgeSelection", "SelectedEdgeIsAFact", FAKE_EDGE),
         violation(EDGE0, "EdgeSelection", "SelectedEdgeWasRetrieved", FAKE_EDGE),
         *EDGE0_DOCUMENTS_STALE),
        ("is not a fact of the knowledge graph", f"not among the edges retrieved by {RETRIEVAL}"),
    ),
    "a selected edge is a fact that was not retrieved": Case(
        f"""DELETE {{ GRAPH ?g {{ <{EDGE0}> tg:edge ?t }} }}
            INSERT {{ GRAPH ?g {{ <{EDGE0}> tg:edge <<( {UNRETRIEVED_FACT} )>> }} }}
            WHERE {{ GRAPH ?g {{ <{EDGE0}> tg:edge ?t }} }}""",
        (violation(EDGE0, "EdgeSelection", "SelectedEdgeWasRetrieved", UNRETRIEVED_FACT),
         EDGE0_DOCUMENTS_STALE[0]),  # Pierre Curie's document states this fact too
    ),
    "a selected edge is an IRI, not a triple": Case(
        f"""DELETE {{ GRAPH ?g {{ <{EDGE0}> tg:edge ?t }} }}
            INSERT {{ GRAPH ?g {{ <{EDGE0}> tg:edge ent:Paris }} }}
            WHERE {{ GRAPH ?g {{ <{EDGE0}> tg:edge ?t }} }}""",
        (violation(EDGE0, "EdgeSelection", "SelectedEdgeIsATriple", "https://example.org/demo/entity/Paris"),
         *EDGE0_DOCUMENTS_STALE),
    ),
    "an edge selection gives no reason": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{EDGE0}> tg:reasoning ?r }} }}",
        (violation(EDGE0, "EdgeSelection-reasoning", "MinCount"),),
    ),
    "a seed cut names an entity that is no seed of its retrieval": Case(
        f"""DELETE {{ GRAPH ?g {{ <{SEED_CUT}> tg:seed ?s }} }}
            INSERT {{ GRAPH ?g {{ <{SEED_CUT}> tg:seed ent:Paris }} }}
            WHERE {{ GRAPH ?g {{ <{SEED_CUT}> tg:seed ?s }} }}""",
        (violation(RETRIEVAL, "Retrieval", "SeedCutIsOfASeed",
                   "https://example.org/demo/entity/Paris"),),
    ),
    "a seed cut says both how many edges and more than that": Case(
        f"""INSERT {{ GRAPH ?g {{ <{SEED_CUT}> tg:candidateEdgesOver 2000 }} }}
            WHERE {{ GRAPH ?g {{ <{SEED_CUT}> tg:seed ?s }} }}""",
        (violation(SEED_CUT, "SeedCut", "Xone", SEED_CUT),),
    ),
    "a seed cut's count is no integer": Case(
        f"""DELETE {{ GRAPH ?g {{ <{SEED_CUT}> tg:candidateEdges ?n }} }}
            INSERT {{ GRAPH ?g {{ <{SEED_CUT}> tg:candidateEdges "many" }} }}
            WHERE {{ GRAPH ?g {{ <{SEED_CUT}> tg:candidateEdges ?n }} }}""",
        (violation(SEED_CUT, "SeedCut-candidateEdges", "Datatype", "many"),
         violation(SEED_CUT, "SeedCut-candidateEdges", "MinInclusive", "many")),
    ),
    "the collection says a second record format, and not as an integer": Case(
        """INSERT DATA { GRAPH <urn:graph:explainability> {
            <urn:graph:explainability> tg:recordFormat "one" } }""",
        (violation("urn:graph:explainability", "CollectionFormat-recordFormat", "MaxCount"),
         violation("urn:graph:explainability", "CollectionFormat-recordFormat", "Datatype", "one"),
         violation("urn:graph:explainability", "CollectionFormat-recordFormat", "MinInclusive",
                   "one")),
    ),
    "a citation's sentence is not the answer's text there": Case(
        f"""DELETE {{ GRAPH ?g {{ <{CITATION0}> tg:sentence ?s }} }}
            INSERT {{ GRAPH ?g {{ <{CITATION0}> tg:sentence "Paris is in Poland." }} }}
            WHERE {{ GRAPH ?g {{ <{CITATION0}> tg:sentence ?s }} }}""",
        (violation(CITATION0, "Citation", "CitationSentenceIsTheAnswerText", CITATION0),),
        ("is not the answer's text at its offsets",),
    ),
    "a citation cites what the answer does not": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{ANSWER}> tg:cites <{EDGE0}> }} }}",
        (violation(ANSWER, "Answer", "AnswerCitesItsSelectedEdges", EDGE0),),
        ("without tg:cites",),
    ),
    "an answer cites an edge selection of no selection": Case(
        f"""INSERT DATA {{ GRAPH <urn:graph:explainability> {{
            <{ANSWER}> tg:cites <urn:trustgraph:prov:edge:UUID:99> }} }}""",
        (violation(ANSWER, "Answer-cites", "Class", "urn:trustgraph:prov:edge:UUID:99"),
         violation(ANSWER, "Answer", "AnswerCitesItsSelectedEdges",
                   "urn:trustgraph:prov:edge:UUID:99")),
    ),
    "an edge selection's truncation flag is a string": Case(
        f'INSERT DATA {{ GRAPH <urn:graph:explainability> {{ <{EDGE0}> tg:truncated "yes" }} }}',
        (violation(EDGE0, "EdgeSelection-truncated", "Datatype", "yes"),
         violation(EDGE0, "EdgeSelection-truncated", "In", "yes")),
        ("tg:truncated true",),
    ),
    "an answer says twice that it was cut": Case(
        f"""INSERT DATA {{ GRAPH <urn:graph:explainability> {{
            <{ANSWER}> tg:truncated true, false }} }}""",
        (violation(ANSWER, "Answer-truncated", "MaxCount"),
         violation(ANSWER, "Answer-truncated", "In", "false")),
        ("tg:truncated true",),
    ),
    "an edge selection belongs to no selection": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{SELECTION}> tg:selectedEdge <{EDGE0}> }} }}",
        (violation(EDGE0, "EdgeSelection-selection", "MinCount"),
         violation(ANSWER, "Answer", "AnswerCitesItsSelectedEdges", EDGE0),
         violation(SELECTION, "Selection", "SelectedEdgeCountMatchesSelectedEdges", ANY),
         # only the marriage came from Pierre Curie's document
         violation(SELECTION, "Selection", "SourceDocumentsAreThoseOfItsEdges", PIERRE_DOC)),
    ),
    "an edge selection IRI has no index": Case(
        rename(EDGE0, EDGE0[:-1] + "first"),
        (violation(EDGE0[:-1] + "first", "EdgeSelection", "Pattern", EDGE0[:-1] + "first"),
         violation(SELECTION, "Selection-edge", "Pattern", EDGE0[:-1] + "first")),
    ),
    "a retrieval IRI is misspelt": Case(
        rename(RETRIEVAL, RETRIEVAL.replace("retrieval:", "retrievals:")),
        (violation(RETRIEVAL.replace("retrieval:", "retrievals:"), "Retrieval", "Pattern",
           RETRIEVAL.replace("retrieval:", "retrievals:")),
         violation(SELECTION, "Selection-retrieval", "Pattern", RETRIEVAL.replace("retrieval:", "retrievals:"))),
    ),
    "a selection IRI is misspelt": Case(
        rename(SELECTION, SELECTION.replace("selection:", "selections:")),
        (violation(SELECTION.replace("selection:", "selections:"), "Selection", "Pattern",
           SELECTION.replace("selection:", "selections:")),
         violation(ANSWER, "Answer-selection", "Pattern", SELECTION.replace("selection:", "selections:"))),
    ),
    "an answer IRI is misspelt": Case(
        rename(ANSWER, ANSWER.replace("answer:", "answers:")),
        (violation(ANSWER.replace("answer:", "answers:"), "Answer", "Pattern", ANSWER.replace("answer:", "answers:")),),
    ),
    "an answer document IRI is misspelt": Case(
        rename(DOCUMENT, DOCUMENT.replace("answer:", "answers:")),
        (violation(ANSWER, "Answer-document", "Pattern", DOCUMENT.replace("answer:", "answers:")),),
    ),
    "the answer's SHA-256 is in upper case": Case(
        f"""DELETE {{ GRAPH ?g {{ <{DOCUMENT}> tg:contentSha256 ?h }} }}
            INSERT {{ GRAPH ?g {{ <{DOCUMENT}> tg:contentSha256 ?upper }} }}
            WHERE {{ GRAPH ?g {{ <{DOCUMENT}> tg:contentSha256 ?h }} BIND(UCASE(?h) AS ?upper) }}""",
        (violation(DOCUMENT, "LibraryDocument-sha256", "Pattern", ANY),
         violation(DOCUMENT, "LibraryDocument", "ContentMatchesItsSha256", ANY)),
    ),
    "the answer document is not in the librarian": Case(
        f"DELETE WHERE {{ GRAPH <urn:graph:library> {{ <{DOCUMENT}> ?p ?o }} }}",
        (violation(ANSWER, "Answer", "AnswerDocumentIsInTheLibrarian", DOCUMENT),),
        ("has no text in the librarian",),
    ),
    "the answer text is tampered with": Case(
        f"""DELETE {{ GRAPH <urn:graph:library> {{ <{DOCUMENT}> tg:content ?c }} }}
            INSERT {{ GRAPH <urn:graph:library> {{ <{DOCUMENT}> tg:content ?tampered }} }}
            WHERE {{ GRAPH <urn:graph:library> {{ <{DOCUMENT}> tg:content ?c }}
                     BIND(CONCAT(?c, " Not.") AS ?tampered) }}""",
        (violation(DOCUMENT, "LibraryDocument", "ContentMatchesItsSha256", ANY),),
        ("does not match its tg:contentSha256",),
    ),
}


@pytest.mark.parametrize("case", SESSION_CASES.values(), ids=SESSION_CASES.keys())
def test_a_corrupted_session_gives_exactly_its_results(
    recorded, validator, dialect, case: Case
) -> None:
    recorded.corrupt(case.update)
    expected = {
        Found(e.severity, recorded.iri(e.focus), e.shape, e.what,
              e.value if e.value is ANY or e.value is None
              else recorded.iri(str(value_in(e.value, dialect))))
        for e in case.expected
    }
    assert_results(validator.validate(recorded.store), expected, *map(recorded.iri, case.mentions))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases=st.lists(st.sampled_from(sorted(SESSION_CASES)), max_size=4, unique=True),
       validate_corrupted=st.booleans())
def test_a_session_validated_alone_gets_exactly_its_results_from_the_whole_store(
    dialect, tgsparql_demo_file, cases: list[str], validate_corrupted: bool
) -> None:
    """`validate --session` reads only what the session's focus nodes reach, by its own queries;
    whatever the corruptions, of this session or of another in the store, it reports exactly
    the results the whole store's validation gives for the session's entities."""
    store = open_store()
    store.dialect = dialect  # type: ignore[misc]
    load_demo(store, tgsparql_demo_file)
    rag = GraphRag(store, OfflineBackend())
    corrupted, other = record(rag), record(rag)
    for case in cases:
        corrupted.corrupt(SESSION_CASES[case].update)
    session = (corrupted if validate_corrupted else other).ids.session.value
    try:
        nodes = set(session_nodes(store, session))
    except SessionNotFound:  # a case renamed the session itself
        assume(False)
    whole = sessions.bundled_validator(dialect).validate(store).results  # the same shapes graph
    alone = sessions.validate_session(store, session).results
    whole = [result for result in whole if result.focus_node in nodes]
    assert sorted(map(repr, alone)) == sorted(map(repr, whole))


def test_the_fact_not_retrieved_is_a_fact_of_the_kg_and_was_not_retrieved(recorded) -> None:
    """The premise of the case above, checked on the real record."""
    asked, _ = in_dialect(recorded.iri(f"""ASK {{ {UNRETRIEVED_FACT} FILTER NOT EXISTS {{
        GRAPH ?g {{ <{RETRIEVAL}> tg:retrievedEdge <<( {UNRETRIEVED_FACT} )>> }} }} }}"""),
        recorded.store.dialect)
    assert recorded.store.ask(PREFIXES + asked)


def test_the_stored_sha256_is_named_when_the_text_is_tampered_with(recorded, validator) -> None:
    stored = recorded.store.select(PREFIXES + recorded.iri(
        f"SELECT ?h WHERE {{ GRAPH ?g {{ <{DOCUMENT}> tg:contentSha256 ?h }} }}"
    ))[0]["h"].value
    recorded.corrupt(SESSION_CASES["the answer text is tampered with"].update)
    [result] = validator.validate(recorded.store).results
    assert plain(result.value) == stored and stored in result.message


def test_a_session_that_selected_no_edge_only_warns(recorded, validator) -> None:
    recorded.corrupt("""
        DELETE WHERE { GRAPH ?g { ?answer tg:citation ?c . ?c ?cp ?co } } ;
        DELETE WHERE { GRAPH ?g { ?answer tg:cites ?edge } } ;
        DELETE { GRAPH ?g { ?selection tg:selectedEdge ?edge . ?edge ?p ?o } }
        WHERE { GRAPH ?g { ?selection tg:selectedEdge ?edge . ?edge ?p ?o } } ;
        DELETE { GRAPH ?g { ?selection tg:selectedEdgeCount ?n } }
        INSERT { GRAPH ?g { ?selection tg:selectedEdgeCount 0 } }
        WHERE { GRAPH ?g { ?selection tg:selectedEdgeCount ?n } } ;
        DELETE WHERE { GRAPH ?g { ?selection tg:sourceDocument ?document } } ;
        DELETE { GRAPH ?g { ?selection tg:sourceDocumentCount ?n } }
        INSERT { GRAPH ?g { ?selection tg:sourceDocumentCount 0 } }
        WHERE { GRAPH ?g { ?selection tg:sourceDocumentCount ?n } }""")
    report = validator.validate(recorded.store)
    assert_results(report, {Found("Warning", recorded.iri(SELECTION), "Selection-someEdge",
                                  "MinCount", None)}, "chose no edge")
    assert report.violations == []


def test_a_failed_session_without_an_error_is_reported(failed, validator) -> None:
    failed.corrupt(f"DELETE WHERE {{ GRAPH ?g {{ <{SESSION}> tg:error ?e }} }}")
    assert_results(
        validator.validate(failed.store),
        {violation(failed.iri(SESSION), "Session", "FailedSessionSaysWhy", failed.iri(SESSION))},
        "failed but records no tg:error",
    )


def test_an_unknown_edge_is_the_only_result_when_retrieved_edges_are_not_recorded(
    demo_store, validator, dialect
) -> None:
    session = record(GraphRag(demo_store, OfflineBackend(), record_retrieved_edges=False))
    session.corrupt(SESSION_CASES["a selected edge is neither a fact nor retrieved"].update)
    assert_results(
        validator.validate(demo_store),
        {violation(session.iri(EDGE0), "EdgeSelection", "SelectedEdgeIsAFact",
                   value_in(FAKE_EDGE, dialect)),
         *(Found(e.severity, session.iri(e.focus), e.shape, e.what, e.value)
           for e in EDGE0_DOCUMENTS_STALE)},
    )


def test_a_malformed_session_iri_is_reported_with_every_entity_that_no_longer_shares_it(
    recorded, validator
) -> None:
    entities = set(map(plain, session_nodes(recorded.store,
                                            recorded.ids.session.value)))
    entities.discard(recorded.ids.session.value)
    bad = "urn:trustgraph:session:not-a-uuid"
    recorded.corrupt(rename(SESSION, bad))
    expected = {violation(bad, "Session", "Pattern", bad),
                violation(recorded.iri(RETRIEVAL), "Retrieval-session", "Pattern", bad)}
    expected |= {violation(bad, "Session", "SessionEntitiesShareItsUuid", e) for e in entities}
    assert len(entities) >= 6  # retrieval, selection, answer, its document, edge selections
    assert_results(validator.validate(recorded.store), expected, "not-a-uuid")


# --- each corruption of the demo's extraction provenance gives exactly its results ------------

EXTRACTION_CASES = {
    "a chunk runs past the end of its document": Case(
        f"""DELETE {{ GRAPH ?g {{ <{CHUNK}> tg:charOffset ?o }} }}
            INSERT {{ GRAPH ?g {{ <{CHUNK}> tg:charOffset 2000 }} }}
            WHERE {{ GRAPH ?g {{ <{CHUNK}> tg:charOffset ?o }} }}""",
        (violation(CHUNK, "Chunk", "ChunkIsInsideItsDocument", CHUNK),),
        ("spans characters 2000 to 2287 of https://example.org/demo/doc/marie-curie, "
         "whose text has only 1174 characters",),
    ),
    "a chunk's offset is shifted inside its document": Case(
        f"""DELETE {{ GRAPH ?g {{ <{CHUNK}> tg:charOffset ?o }} }}
            INSERT {{ GRAPH ?g {{ <{CHUNK}> tg:charOffset 880 }} }}
            WHERE {{ GRAPH ?g {{ <{CHUNK}> tg:charOffset ?o }} }}""",
        (violation(CHUNK, "Chunk", "ChunkTextMatchesItsDocument", CHUNK),),
        ("differs from characters 880 to 1167",),
    ),
    "a contained fact is removed from the KG": Case(
        "DELETE DATA { ent:Warsaw rel:capitalOf ent:Poland }",
        (violation(SUBGRAPH, "Subgraph", "ContainedTripleIsAFact",
           "<https://example.org/demo/entity/Warsaw> <https://example.org/demo/rel/capitalOf> "
           "<https://example.org/demo/entity/Poland>"),),
    ),
    "a fact without provenance is added to the KG": Case(
        "INSERT DATA { ent:Marie_Curie rel:likes ent:Paris }",
        (Found("Warning", MARIE, "FactProvenance", "FactHasProvenance",
               f"<{MARIE}> <https://example.org/demo/rel/likes> "
               "<https://example.org/demo/entity/Paris>"),),
        ("has no extraction provenance",),
    ),
    "an evidence span is shifted by one": Case(
        f"""DELETE {{ GRAPH ?g {{ <{SUBGRAPH}> tg:sourceCharOffset ?o }} }}
            INSERT {{ GRAPH ?g {{ <{SUBGRAPH}> tg:sourceCharOffset 58 }} }}
            WHERE {{ GRAPH ?g {{ <{SUBGRAPH}> tg:sourceCharOffset ?o }} }}""",
        (violation(SUBGRAPH, "Subgraph", "EvidenceMatchesItsChunk", "Warsaw, the capital of Poland, was then "
           "under Russian rule, and women were not allowed to study at its university."),),
        (f"characters 58 to 172 of its chunk {FIRST_CHUNK}",),
    ),
    "a document's text is missing from the librarian": Case(
        f"DELETE WHERE {{ GRAPH <urn:graph:library> {{ <{PIERRE_DOC}> ?p ?o }} }}",
        (Found("Warning", PIERRE_DOC, "DocumentText", "DocumentTextIsInTheLibrarian", PIERRE_DOC),),
    ),
    "a page is numbered 0": Case(
        f"""DELETE {{ GRAPH ?g {{ <{PAGE}> tg:pageNumber ?n }} }}
            INSERT {{ GRAPH ?g {{ <{PAGE}> tg:pageNumber 0 }} }}
            WHERE {{ GRAPH ?g {{ <{PAGE}> tg:pageNumber ?n }} }}""",
        (violation(PAGE, "Page-number", "MinInclusive", "0"),),
    ),
    "a chunk IRI is not urn:chunk:UUID": Case(
        rename(FIRST_CHUNK, "urn:chunk:first"),
        (violation("urn:chunk:first", "Chunk", "Pattern", "urn:chunk:first"),),
    ),
    "a page IRI is not urn:page:UUID": Case(
        rename(PAGE, "urn:page:1"),
        (violation("urn:page:1", "Page", "Pattern", "urn:page:1"),),
    ),
    "a subgraph IRI is not https://trustgraph.ai/subgraph/UUID": Case(
        rename(SUBGRAPH, "https://trustgraph.ai/subgraphs/1"),
        (violation("https://trustgraph.ai/subgraphs/1", "Subgraph", "Pattern", "https://trustgraph.ai/subgraphs/1"),),
    ),
    "a chunk derives from an activity": Case(
        f"""DELETE {{ GRAPH ?g {{ <{CHUNK}> prov:wasDerivedFrom ?p }} }}
            INSERT {{ GRAPH ?g {{ <{CHUNK}> prov:wasDerivedFrom <{ACTIVITY}> }} }}
            WHERE {{ GRAPH ?g {{ <{CHUNK}> prov:wasDerivedFrom ?p }} }}""",
        (violation(CHUNK, "Chunk-source", "Or", ACTIVITY),),
    ),
    "a subgraph has no activity": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{SUBGRAPH}> prov:wasGeneratedBy ?a }} }}",
        (violation(SUBGRAPH, "Subgraph-activity", "MinCount"),),
    ),
    "a document has no title": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{RADIUM_DOC}> dc:title ?t }} }}",
        (violation(RADIUM_DOC, "Document-title", "MinCount"),),
    ),
    "an activity has no agent": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{ACTIVITY}> prov:wasAssociatedWith ?a }} }}",
        (violation(ACTIVITY, "ExtractionActivity-agent", "MinCount"),),
    ),
    "an activity's start time is a string": Case(
        f"""DELETE {{ GRAPH ?g {{ <{ACTIVITY}> prov:startedAtTime ?t }} }}
            INSERT {{ GRAPH ?g {{ <{ACTIVITY}> prov:startedAtTime "yesterday" }} }}
            WHERE {{ GRAPH ?g {{ <{ACTIVITY}> prov:startedAtTime ?t }} }}""",
        (violation(ACTIVITY, "ExtractionActivity-started", "Datatype", "yesterday"),),
    ),
    "the agent has no name": Case(
        f"DELETE WHERE {{ GRAPH ?g {{ <{AGENT}> rdfs:label ?l }} }}",
        (violation(AGENT, "Agent-label", "MinCount"),),
    ),
}


@pytest.mark.parametrize("case", EXTRACTION_CASES.values(), ids=EXTRACTION_CASES.keys())
def test_corrupted_extraction_provenance_gives_exactly_its_results(
    extraction, validator, dialect, case: Case
) -> None:
    extraction.corrupt(case.update)
    expected = {Found(e.severity, e.focus, e.shape, e.what, value_in(e.value, dialect))
                for e in case.expected}
    assert_results(validator.validate(extraction.store), expected, *case.mentions)


LINKED = "Vermeer painted The Milkmaid in Delft, said the catalogue."
LINKED_FACTS = [
    {"s": "Vermeer", "p": "painted", "o": "The Milkmaid", "evidence": "Vermeer painted"},
    {"s": "The Milkmaid", "p": "painted in", "o": "Delft", "evidence": "not in the text"},
]
TG = vocab.TG


@pytest.fixture
def linked(dialect: Dialect, tmp_path: Path) -> EmbeddedStore:
    """A KG with a document ingested into it: names linked, an unsupported fact kept."""
    from tgsparql.data.ingest import ingest_files
    from tgsparql.testing.fakes import ScriptedBackend

    store = open_store()
    store.dialect = dialect  # type: ignore[misc]
    load_files(store, [REPO / "tests" / "fixtures" / "linking" / "painters.ttl"])
    path = tmp_path / "milkmaid.txt"
    path.write_text(LINKED, encoding="utf-8")
    backend = ScriptedBackend({}, extractions={
        LINKED: "\n".join(json.dumps(fact) for fact in LINKED_FACTS)})
    report = ingest_files(store, backend, [path], keep_unsupported=True)
    assert (report.linked, report.minted) == (3, 0)
    return store


def violations(report: ValidationReport) -> set[Found]:
    return {found(r) for r in report.results if r.severity.value == SH + "Violation"}


def the(store: EmbeddedStore, pattern: str) -> str:
    """The one IRI ?x names in `pattern`, a pattern of the source graph."""
    (row,) = store.select(f"{PREFIXES} SELECT ?x WHERE {{ GRAPH <urn:graph:source> {{ {pattern} }} }}")
    return row["x"].value


def test_linked_mentions_and_kept_unsupported_facts_conform_and_corruptions_are_named(
    linked: EmbeddedStore, validator: Validator
) -> None:
    assert violations(validator.validate(linked)) == set()
    mention = the(linked, '?x tg:mentionText "Vermeer"')
    milkmaid = the(linked, '?x tg:mentionText "The Milkmaid"')
    unfound = the(linked, "?x tg:unsupported tg:EvidenceNotFound")
    linked.update(f"""{PREFIXES}
        DELETE {{ GRAPH <urn:graph:source> {{ <{mention}> tg:linkedBy ?how }} }}
        INSERT {{ GRAPH <urn:graph:source> {{ <{mention}> tg:linkedBy tg:Guessed }} }}
        WHERE {{ GRAPH <urn:graph:source> {{ <{mention}> tg:linkedBy ?how }} }} ;
        DELETE {{ GRAPH <urn:graph:source> {{ <{milkmaid}> tg:linkedBy ?how }} }}
        INSERT {{ GRAPH <urn:graph:source> {{ <{milkmaid}> tg:linkedBy tg:LinkedByContext }} }}
        WHERE {{ GRAPH <urn:graph:source> {{ <{milkmaid}> tg:linkedBy ?how }} }} ;
        INSERT DATA {{ GRAPH <urn:graph:source> {{ <{unfound}> tg:sourceText "Delft" }} }}""")
    assert violations(validator.validate(linked)) == {
        violation(mention, "Mention-linkedBy", "In", TG + "Guessed"),
        violation(milkmaid, "Mention", "LinkedMentionFitsAnEntity", "1"),
        violation(unfound, "Subgraph", "UnfoundEvidenceHasNoSpan", "Delft"),
    }


# --- the shapes are standard SHACL that other engines read ------------------------------------


EDGE_FILES = {"rdf12": "edges-triple-terms.ttl", "rdfstar": "edges-triple-terms.ttl",
              "reification": "edges-reification.ttl"}
EDGE_CONSTRAINTS = {
    "RetrievedEdgeIsAFact", "SelectedEdgeIsATriple", "SelectedEdgeIsAFact",
    "SelectedEdgeWasRetrieved", "ContainedTripleIsAFact", "FactHasProvenance",
    "SessionUsageMatchesItsCalls", "RollupUsageSumsTheRecord", "RollupFactRankFollowsItsCounts",
}
SPARQL_12 = re.compile(r"\b(isTRIPLE|SUBJECT|PREDICATE|OBJECT|TRIPLE)\s*\(", re.IGNORECASE)


def bundled_files(dialect: str) -> Iterator[str]:
    yield str(REPO / "shapes" / "explainability.ttl")
    yield str(REPO / "shapes" / "extraction.ttl")
    yield str(REPO / "shapes" / EDGE_FILES[dialect])


def junit_suites(report: ValidationReport) -> set[str]:
    junit = Judgement(report).to_junit()
    return {suite.get("name", "") for suite in ET.fromstring(junit).iter("testsuite")}


def test_the_bundled_shapes_are_the_common_files_and_the_dialect_file(recorded, dialect) -> None:
    recorded.corrupt(SESSION_CASES["the status is unknown"].update)
    bundled = Validator(Shapes.bundled(dialect), dialect).validate(recorded.store)
    files = Validator(Shapes.from_files(list(bundled_files(dialect))), dialect)
    assert bundled.results == files.validate(recorded.store).results
    assert junit_suites(bundled) == junit_suites(files.validate(recorded.store))
    assert {TGS + "Session", TGS + "Chunk", TGS + "FactProvenance"} <= junit_suites(bundled)


def test_the_rdfstar_shapes_are_the_rdf12_shapes() -> None:
    """Quoted triples are read with the same functions as triple terms."""
    def queries(dialect: Dialect) -> list[str]:
        return sorted(q.text for q in Validator(Shapes.bundled(dialect), "rdfstar").queries)

    assert queries("rdfstar") == queries("rdf12") != queries("reification")
    with pytest.raises(ShapesError, match="no bundled shapes for the dialect 'owl'"):
        Shapes.bundled("owl")  # type: ignore[arg-type]


def sparql_constraints(*paths: str) -> dict[str, tuple[str, str, str]]:
    """Each sh:sparql constraint by local name: the shape using it, its message, its query."""
    graph = ox.Store()
    for path in paths:
        graph.load(path=path, format=ox.RdfFormat.TURTLE)
    rows = graph.query("""PREFIX sh: <http://www.w3.org/ns/shacl#>
        SELECT ?shape ?c ?message ?select WHERE {
            ?shape sh:sparql ?c . ?c sh:message ?message ; sh:select ?select }""")
    return {row["c"].value.removeprefix(TGS): (row["shape"].value.removeprefix(TGS),
                                               row["message"].value, row["select"].value)
            for row in rows}


def test_the_dialect_files_hold_the_edge_constraints_alike_and_the_common_files_none() -> None:
    """Same constraints on the same shapes with the same messages, so reports compare; every
    SPARQL 1.2 function is in the triple-term file."""
    common = sparql_constraints(*list(bundled_files("rdf12"))[:2])
    terms = sparql_constraints(str(REPO / "shapes" / EDGE_FILES["rdf12"]))
    statements = sparql_constraints(str(REPO / "shapes" / EDGE_FILES["reification"]))
    assert set(terms) == set(statements) == EDGE_CONSTRAINTS and not EDGE_CONSTRAINTS & set(common)
    assert {k: v[:2] for k, v in terms.items()} == {k: v[:2] for k, v in statements.items()}
    assert all(SPARQL_12.search(select) for _, _, select in terms.values())
    others = [*common.values(), *statements.values()]
    assert not any(SPARQL_12.search(select) for *_, select in others)


@pytest.mark.parametrize("dialect", ["reification"])
def test_every_query_the_reification_validator_runs_is_sparql_11(validator) -> None:
    """rdflib's parser knows SPARQL 1.1 only (no triple terms, no SPARQL 1.2 functions): it is
    used here as a grammar, on query text alone."""
    rdflib_sparql = pytest.importorskip("rdflib.plugins.sparql")
    assert len(validator.queries) > 100
    for query in validator.queries:
        rdflib_sparql.prepareQuery(query.text)


@pytest.mark.parametrize("dialect", ["rdf12", "reification"])
def test_every_shape_and_constraint_is_named_and_says_what_is_wrong(dialect) -> None:
    """Named, so reports and JUnit test cases say which rule failed; a message on every shape
    and constraint, except shapes that only group sh:sparql constraints under a severity."""
    graph = ox.Store()
    for path in bundled_files(dialect):
        graph.load(path=path, format=ox.RdfFormat.TURTLE)

    def values(node: ox.NamedNode | ox.BlankNode, name: str) -> list[object]:
        return [q.object for q in graph.quads_for_pattern(node, ox.NamedNode(SH + name), None)]

    shapes = {
        q.subject for kind in ("NodeShape", "PropertyShape")
        for q in graph.quads_for_pattern(None, ox.NamedNode(vocab.RDF + "type"), ox.NamedNode(SH + kind))
    }
    constraints = {q.object for q in graph.quads_for_pattern(None, ox.NamedNode(SH + "sparql"), None)}
    assert len(shapes) >= 60 and len(constraints) >= 15
    for node in shapes | constraints:
        assert isinstance(node, ox.NamedNode), node
        grouping = node in shapes and values(node, "severity") and values(node, "sparql") and not values(node, "property")
        assert values(node, "message") or grouping, node


@pytest.mark.parametrize("dialect", ["rdf12"])
def test_pyshacl_reads_the_shapes_and_agrees_on_a_record_without_triple_terms(
    failed_at_start, validator, dialect
) -> None:
    """pyshacl (rdflib) cannot run the constraints that read triple terms (SPARQL 1.2
    functions); on the rest its results equal ours."""
    rdflib = pytest.importorskip("rdflib")
    pyshacl = pytest.importorskip("pyshacl")
    shapes = rdflib.Graph()
    for path in bundled_files(dialect):
        shapes.parse(path, format="turtle")
    sparql = rdflib.URIRef(SH + "sparql")
    select = rdflib.URIRef(SH + "select")
    needs_triple_terms = {
        (shape, c) for shape, c in shapes.subject_objects(sparql)
        if any(f in str(shapes.value(c, select)) for f in ("isTRIPLE", "SUBJECT(", "TRIPLE("))
    }
    assert {str(c).removeprefix(TGS) for _, c in needs_triple_terms} == EDGE_CONSTRAINTS
    for shape, c in needs_triple_terms:
        shapes.remove((shape, sparql, c))
    conforms, _, text = pyshacl.validate(rdflib.Graph(), shacl_graph=shapes, meta_shacl=True)
    assert conforms, text

    failed_at_start.corrupt(f"""
        DELETE WHERE {{ GRAPH ?g {{ <{SESSION}> tg:error ?e }} }} ;
        DELETE {{ GRAPH ?g {{ <{SESSION}> rdfs:label ?l }} }}
        INSERT {{ GRAPH ?g {{ <{SESSION}> rdfs:label "a session" }} }}
        WHERE {{ GRAPH ?g {{ <{SESSION}> rdfs:label ?l }} }}""")
    record = ox.serialize(
        failed_at_start.store.oxigraph.quads_for_pattern(None, None, None, ox.NamedNode("urn:graph:explainability")),
        format=ox.RdfFormat.N_QUADS,
    ).decode()
    data = rdflib.Graph()
    data.parse(data=record.replace(" <urn:graph:explainability> .", " ."), format="nt")
    _, report, _ = pyshacl.validate(data, shacl_graph=shapes)
    result = rdflib.URIRef(SH + "result")
    theirs = {
        (str(report.value(r, rdflib.URIRef(SH + "focusNode"))),
         str(report.value(r, rdflib.URIRef(SH + "sourceShape"))).removeprefix(TGS),
         str(report.value(r, rdflib.URIRef(SH + "sourceConstraintComponent"))).removeprefix(SH))
        for r in report.objects(None, result)
    }
    ours = {
        (plain(r.focus_node), found(r).shape,
         r.source_constraint_component.value.removeprefix(SH))
        for r in validator.validate(failed_at_start.store).results
    }
    assert ours == theirs == {
        (failed_at_start.iri(SESSION), "Session", "SPARQLConstraintComponent"),
        (failed_at_start.iri(SESSION), "Session-label", "HasValueConstraintComponent"),
    }

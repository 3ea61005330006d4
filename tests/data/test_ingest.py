"""Ingestion: text files to facts with docs/spec.md §8 provenance, via a scripted OpenAI-like server."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from conftest import cli

from tests.asking.llm.fake_openai import FakeOpenAI, Reply, fake_openai  # noqa: F401  (fixture)
from tgsparql.asking.librarian import StoreLibrarian
from tgsparql.asking.llm.base import ExtractionUnsupported
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.llm.openai_backend import OpenAIBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.asking.sources import facts_sources
from tgsparql.asking.retrieval import RetrievalLimits
from tgsparql.data.extraction import MAX_FACTS, MAX_NAME_CHARS, parse_facts
from tgsparql.data.ingest import (
    IngestFailure,
    IngestReport,
    Unsupported,
    ingest_files,
    locate,
    title_of,
)
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import ExtractionIds, entity_iri, relation_iri, sha256_hex
from tgsparql.stores.store import EmbeddedStore
from tgsparql.testing import assert_conforms
from tgsparql.testing.fakes import ScriptedBackend

TG = vocab.TG
PROV = vocab.PROV
SOURCE = vocab.GRAPH_SOURCE
LIBRARY = vocab.GRAPH_LIBRARY
RDF_TYPE = vocab.RDF_TYPE
LABEL = vocab.RDFS_LABEL
PASSAGE = re.compile(r"----- BEGIN PASSAGE -----\n(.*)\n----- END PASSAGE -----", re.DOTALL)

ADA = (
    "Ada Lovelace was born in London in 1815. She was the daughter of Lord Byron.\f"
    "Ada Lovelace wrote the first published algorithm. She died in London on 1852-11-27."
)
ADA_FACTS = {
    "born in London": {"s": "Ada Lovelace", "p": "born in", "o": "London",
                       "evidence": "Ada Lovelace was born in London in 1815."},
    "in 1815": {"s": "Ada Lovelace", "p": "birth year", "o": "1815", "evidence": "in 1815"},
    "daughter": {"s": "Ada Lovelace", "p": "daughter of", "o": "Lord Byron",
                 "evidence": "She was the daughter of   Lord Byron."},
    "algorithm": {"s": "Ada Lovelace", "p": "wrote", "o": "first published algorithm",
                  "evidence": "not a sentence of the passage"},
    "died": {"s": "Ada Lovelace", "p": "died on", "o": "1852-11-27",
             "evidence": "she died in london"},
}


def node(iri: str) -> ox.NamedNode:
    return ox.NamedNode(iri)


def tg(name: str) -> ox.NamedNode:
    return ox.NamedNode(TG + name)


def prov(name: str) -> ox.NamedNode:
    return ox.NamedNode(PROV + name)


def passage(body: dict[str, Any]) -> str:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    found = PASSAGE.search(user)
    assert found is not None, user
    return found.group(1)


def reading(facts: dict[str, dict[str, Any]]) -> Callable[[dict[str, Any]], Reply]:
    """A reply giving, as JSONL, every fact whose key occurs in the passage sent."""

    def reply(body: dict[str, Any]) -> Reply:
        text = passage(body)
        lines = [json.dumps(fact) for key, fact in facts.items() if key in text]
        return Reply("\n".join(lines))

    return reply


def backend(fake: FakeOpenAI) -> OpenAIBackend:
    return OpenAIBackend(base_url=fake.base_url, model="fake-model", max_retries=0)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def ingest(store: EmbeddedStore, fake: FakeOpenAI, *paths: Path, replies: int = 1,
           script: Callable[[dict[str, Any]], Reply] | Reply | None = None,
           size: int = 2000, overlap: int = 200, **options: Any) -> IngestReport:
    fake.script(*[script or reading(ADA_FACTS)] * replies)
    return ingest_files(store, backend(fake), list(paths), chunk_size=size, chunk_overlap=overlap,
                        **options)


def quads(
    store: EmbeddedStore, graph: ox.NamedNode | ox.DefaultGraph | None = None
) -> list[ox.Quad]:
    return list(store.oxigraph.quads_for_pattern(None, None, None, graph))


def objects(store: EmbeddedStore, subject: ox.NamedNode, predicate: ox.NamedNode,
            graph: ox.NamedNode | ox.DefaultGraph = SOURCE) -> list[Any]:
    return [q.object for q in store.oxigraph.quads_for_pattern(subject, predicate, None, graph)]


def subjects(store: EmbeddedStore, predicate: ox.NamedNode, obj: Any,
             graph: ox.NamedNode | ox.DefaultGraph = SOURCE) -> list[Any]:
    found = store.oxigraph.quads_for_pattern(None, predicate, obj, graph)
    return sorted((q.subject for q in found), key=str)


def integer(term: Any) -> int:
    assert isinstance(term, ox.Literal) and term.datatype == vocab.XSD_INTEGER, term
    return int(term.value)


def chunks_of(store: EmbeddedStore, document: ox.NamedNode) -> list[tuple[int, int, ox.NamedNode]]:
    """(page number, chunk index, chunk IRI) of every chunk under the document."""
    found = []
    for page in subjects(store, prov("wasDerivedFrom"), document):
        number = integer(objects(store, page, tg("pageNumber"))[0])
        for chunk in subjects(store, prov("wasDerivedFrom"), page):
            found.append((number, integer(objects(store, chunk, tg("chunkIndex"))[0]), chunk))
    return sorted(found, key=lambda row: row[:2])


# ---- facts, labels and provenance


def test_facts_and_labels_go_to_the_default_graph_with_minted_iris(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    report = ingest(tgsparql_store, fake_openai, write(tmp_path, "ada.txt", ADA), replies=2)
    assert not report.failed
    ada, london = entity_iri("Ada Lovelace"), entity_iri("London")
    default = ox.DefaultGraph()
    facts = {q.triple for q in quads(tgsparql_store, default) if q.predicate != LABEL}
    assert facts == {
        ox.Triple(ada, relation_iri("born in"), london),
        ox.Triple(ada, relation_iri("birth year"), ox.Literal("1815", datatype=vocab.XSD_INTEGER)),
        ox.Triple(ada, relation_iri("daughter of"), entity_iri("Lord Byron")),
        ox.Triple(ada, relation_iri("died on"),
                  ox.Literal("1852-11-27", datatype=ox.NamedNode(vocab.XSD + "date"))),
    }, "the fact whose evidence is not in the text is not written"
    labels = {(q.subject, q.object) for q in quads(tgsparql_store, default) if q.predicate == LABEL}
    assert (ada, ox.Literal("Ada Lovelace")) in labels
    assert (relation_iri("born in"), ox.Literal("born in")) in labels
    assert (london, ox.Literal("London")) in labels
    assert len(labels) == 7  # 3 entities, 4 predicates; literal objects get none
    assert report.labels_indexed == 7
    assert [(d.pages, d.chunks, d.stated, d.facts, d.evidence_found, d.linked, d.minted,
             d.dropped) for d in report.documents] == [
        (2, 2, 5, 4, 4, 0, 4, Counter({Unsupported.EVIDENCE_NOT_FOUND: 1}))
    ]  # minted: Ada Lovelace, London, Lord Byron in the first chunk, Ada Lovelace in the second


def test_the_source_graph_holds_document_activity_agent_pages_and_chunks(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    ingest(tgsparql_store, fake_openai, write(tmp_path, "ada.md", "# Ada, Countess\n\n" + ADA),
           replies=2)
    ids = ExtractionIds(sha256_hex("# Ada, Countess\n\n" + ADA))
    doc = ids.document
    assert doc.value == f"urn:trustgraph:doc:{ids.sha256}"
    assert set(objects(tgsparql_store, doc, RDF_TYPE)) == {prov("Entity"), vocab.TG_DOCUMENT_CLASS}
    assert objects(tgsparql_store, doc, ox.NamedNode(vocab.DC + "title")) == [
        ox.Literal("Ada, Countess")]
    assert objects(tgsparql_store, doc, tg("mimeType")) == [ox.Literal("text/markdown")]
    activity = ids.activity
    assert objects(tgsparql_store, activity, RDF_TYPE) == [prov("Activity")]
    assert objects(tgsparql_store, activity, prov("used")) == [doc]
    assert objects(tgsparql_store, activity, tg("llmModel")) == [ox.Literal("fake-model")]
    assert integer(objects(tgsparql_store, activity, tg("inToken"))[0]) == 22  # two calls of 11
    (started,) = objects(tgsparql_store, activity, prov("startedAtTime"))
    assert started.datatype == vocab.XSD_DATETIME
    (agent,) = objects(tgsparql_store, activity, prov("wasAssociatedWith"))
    assert objects(tgsparql_store, agent, RDF_TYPE) == [prov("Agent")]
    assert objects(tgsparql_store, agent, LABEL) == [ox.Literal("tgsparql ingest")]
    pages = subjects(tgsparql_store, prov("wasDerivedFrom"), doc)
    assert sorted(integer(objects(tgsparql_store, p, tg("pageNumber"))[0]) for p in pages) == [1, 2]
    for page in pages:
        assert set(objects(tgsparql_store, page, RDF_TYPE)) == {prov("Entity"), vocab.TG_PAGE_CLASS}
        assert objects(tgsparql_store, page, prov("wasGeneratedBy")) == [activity]
        assert page.value.startswith("urn:page:")
    for _, _, chunk in chunks_of(tgsparql_store, doc):
        assert set(objects(tgsparql_store, chunk, RDF_TYPE)) == {prov("Entity"),
                                                                 vocab.TG_CHUNK_CLASS}
        assert chunk.value.startswith("urn:chunk:")


def test_every_fact_is_contained_in_a_subgraph_of_the_chunk_it_came_from(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    ingest(tgsparql_store, fake_openai, write(tmp_path, "ada.txt", ADA), replies=2)
    contained = {q.object for q in quads(tgsparql_store, SOURCE) if q.predicate == tg("contains")}
    facts = {q.triple for q in quads(tgsparql_store, ox.DefaultGraph()) if q.predicate != LABEL}
    assert contained == facts
    for subgraph in {q.subject for q in quads(tgsparql_store, SOURCE)
                     if q.predicate == tg("contains")}:
        assert subgraph.value.startswith("https://trustgraph.ai/subgraph/")
        assert set(objects(tgsparql_store, subgraph, RDF_TYPE)) == {prov("Entity"),
                                                                    vocab.TG_SUBGRAPH_CLASS}
        (chunk,) = objects(tgsparql_store, subgraph, prov("wasDerivedFrom"))
        assert vocab.TG_CHUNK_CLASS in objects(tgsparql_store, chunk, RDF_TYPE)
        assert len(objects(tgsparql_store, subgraph, prov("wasGeneratedBy"))) == 1


# ---- offsets


def test_chunk_offsets_point_at_the_exact_text_and_evidence_lies_inside_the_chunk(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    text = "Préface — « Skłodowska ». " + ADA.replace("\f", "\n\n") + " 😀 The end."
    report = ingest(tgsparql_store, fake_openai, write(tmp_path, "ada.txt", text), replies=20,
                    size=60, overlap=15)
    assert report.documents[0].chunks > 3
    librarian = StoreLibrarian(tgsparql_store)
    doc = report.documents[0].document
    stored = librarian.get(doc)
    assert stored is not None and stored.content == text and stored.intact
    spans = 0
    for _, _, chunk in chunks_of(tgsparql_store, doc):
        offset = integer(objects(tgsparql_store, chunk, tg("charOffset"))[0])
        length = integer(objects(tgsparql_store, chunk, tg("charLength"))[0])
        chunk_text = librarian.get(chunk)
        assert chunk_text is not None
        assert text[offset : offset + length] == chunk_text.content
        assert 0 < length <= 60
        for subgraph in subjects(tgsparql_store, prov("wasDerivedFrom"), chunk):
            for evidence in objects(tgsparql_store, subgraph, tg("sourceText")):
                start = integer(objects(tgsparql_store, subgraph, tg("sourceCharOffset"))[0])
                size = integer(objects(tgsparql_store, subgraph, tg("sourceCharLength"))[0])
                assert chunk_text.content[start : start + size] == evidence.value
                spans += 1
    assert spans >= 3


def test_evidence_is_found_exactly_else_up_to_case_and_spacing_else_not_at_all() -> None:
    text = "Ada Lovelace was born\nin London. She died."
    assert locate("born\nin London", text) == (17, 14)
    assert locate("  BORN in   london ", text) == (17, 14)
    assert locate("born in Paris", text) is None
    assert locate("   ", text) is None


def test_facts_sharing_an_evidence_span_share_a_subgraph_and_the_span_is_recorded(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    ingest(tgsparql_store, fake_openai, write(tmp_path, "ada.txt", ADA), replies=2)
    ada = entity_iri("Ada Lovelace")
    born = ox.Triple(ada, relation_iri("born in"), entity_iri("London"))
    (subgraph,) = subjects(tgsparql_store, tg("contains"), born)
    assert objects(tgsparql_store, subgraph, tg("sourceText")) == [
        ox.Literal("Ada Lovelace was born in London in 1815.")
    ]
    assert integer(objects(tgsparql_store, subgraph, tg("sourceCharOffset"))[0]) == 0
    assert integer(objects(tgsparql_store, subgraph, tg("sourceCharLength"))[0]) == 40
    daughter = ox.Triple(ada, relation_iri("daughter of"), entity_iri("Lord Byron"))
    (subgraph,) = subjects(tgsparql_store, tg("contains"), daughter)
    assert objects(tgsparql_store, subgraph, tg("sourceText")) == [
        ox.Literal("She was the daughter of Lord Byron.")
    ]
    assert objects(tgsparql_store, subgraph, tg("unsupported")) == []


# ---- pages


def test_form_feeds_make_pages_and_chunks_are_numbered_within_them(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    text = "First page. It is short.\fSecond page, first part. Second page, second part.\fThird."
    report = ingest(tgsparql_store, fake_openai, write(tmp_path, "p.txt", text), replies=4,
                    script=Reply(""), size=30, overlap=0)
    rows = chunks_of(tgsparql_store, report.documents[0].document)
    assert [(page, index) for page, index, _ in rows] == [(1, 0), (2, 0), (2, 1), (3, 0)]
    offsets = [integer(objects(tgsparql_store, chunk, tg("charOffset"))[0]) for _, _, chunk in rows]
    assert offsets == [0, 25, 50, 76]


def test_a_text_without_form_feeds_is_one_page(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    report = ingest(tgsparql_store, fake_openai, write(tmp_path, "one.txt", "Just one page."),
                    script=Reply(""))
    assert report.documents[0].pages == 1
    chunks = chunks_of(tgsparql_store, report.documents[0].document)
    assert [(p, i) for p, i, _ in chunks] == [(1, 0)]


# ---- idempotence


def test_reingesting_the_same_text_adds_nothing_and_asks_the_llm_nothing(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path, "ada.txt", ADA)
    ingest(tgsparql_store, fake_openai, path, replies=2)
    before = sorted(map(str, tgsparql_store.oxigraph))
    calls = len(fake_openai.chat_requests)
    copy = write(tmp_path, "copy of ada.txt", ADA)
    report = ingest_files(tgsparql_store, backend(fake_openai), [path, copy])
    assert [d.already_present for d in report.documents] == [True, True]
    assert sorted(map(str, tgsparql_store.oxigraph)) == before
    assert len(fake_openai.chat_requests) == calls


def test_progress_is_told_the_chunks_of_each_file_and_each_chunk_read(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    told: list[tuple[str, int]] = []

    def progress(path: Path, chunks: int) -> Callable[[int], None]:
        told.append((path.name, chunks))
        return lambda step: told.append((path.name, step))

    fake_openai.script(*[Reply("")] * 3)
    ingest_files(tgsparql_store, backend(fake_openai),
                 [write(tmp_path, "a.txt", "One.\fTwo."), write(tmp_path, "b.txt", "Three.")],
                 progress=progress)
    assert told == [("a.txt", 2), ("a.txt", 1), ("a.txt", 1), ("b.txt", 1), ("b.txt", 1)]


# ---- broken and hostile LLM output


def test_broken_output_is_survived_and_counted() -> None:
    text = (
        "Here are the facts:\n"
        "```jsonl\n"
        '{"s": "Ada", "p": "born in", "o": "London"}\n'
        '{"s": "Ada", "p": "born in", "o": "London"}\n'
        '{"s": "Ada", "p": "knew", "o": "Babbage", "evidence": 7}\n'
        '{"s": "Ada", "p": "wrote",\n'
        '"o": "notes"}\n'
        'and also {"s": "Byron", "p": "father of", "o": "Ada"} in prose\n'
        '[{"s": "Ada", "p": "age", "o": 36}, {"s": 5, "p": "x", "o": "y"}]\n'
        '{"s": "Ada", "p": ["list"], "o": "y"}\n'
        '{"s": "Ada", "p": "liked", "o": true}\n'
        "```\n"
    )
    parsed = parse_facts(text)
    assert [(f.subject_name, f.predicate_name, f.object_name) for f in parsed.facts] == [
        ("Ada", "born in", "London"),
        ("Ada", "knew", "Babbage"),
        ("Byron", "father of", "Ada"),
        ("Ada", "age", None),
    ]
    assert parsed.facts[1].evidence is None
    assert parsed.facts[3].triple.object == ox.Literal("36", datatype=vocab.XSD_INTEGER)
    assert parsed.duplicates == 1
    assert parsed.skipped_lines == 3  # the prose line and the two halves of the broken object
    assert parsed.rejected == 3  # s not a string, p a list, o a boolean


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1867", ox.Literal("1867", datatype=vocab.XSD_INTEGER)),
        ("007", ox.Literal("7", datatype=vocab.XSD_INTEGER)),
        ("3.50", ox.Literal("3.5", datatype=ox.NamedNode(vocab.XSD + "decimal"))),
        (2.5e10, ox.Literal(2.5e10)),
        ("1867-11-07", ox.Literal("1867-11-07", datatype=ox.NamedNode(vocab.XSD + "date"))),
        ("1867-13-45", entity_iri("1867-13-45")),
        ("Warsaw", entity_iri("Warsaw")),
    ],
)
def test_numbers_and_dates_are_typed_literals_and_the_rest_are_entities(
    value: Any, expected: ox.NamedNode | ox.Literal
) -> None:
    (fact,) = parse_facts(json.dumps({"s": "x", "p": "y", "o": value})).facts
    assert fact.triple.object == expected


HOSTILE = [
    {"s": "<http://x> . DROP ALL", "p": "says", "o": "} ; DROP ALL ; INSERT DATA { <a> <b> <c> }",
     "evidence": "Ada Lovelace was born in London in 1815."},
    {"s": 'He said "hi" \\ then', "p": "quoted", "o": "'''x'''\"\"\"", "evidence": ""},
    {"s": "", "p": "born in", "o": "London"},
    {"s": "   ", "p": "born in", "o": "London"},
    {"s": "Ada", "p": "", "o": "London"},
    {"s": "Ada", "p": "born in", "o": ""},
    {"s": "Ada", "p": "x" * (MAX_NAME_CHARS + 1), "o": "London"},
    {"s": "http://example.org/evil", "p": "rdf:type", "o": "owl:Thing"},
]


def test_hostile_output_is_stored_literally_or_skipped_never_executed(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    flood = "\n".join(json.dumps({"s": f"n{i}", "p": "p", "o": "o"}) for i in range(MAX_FACTS + 50))
    reply = Reply("\n".join(json.dumps(fact) for fact in HOSTILE) + "\n" + "x" * 200_000
                  + "\n" + flood)
    report = ingest(tgsparql_store, fake_openai, write(tmp_path, "ada.txt", ADA.split("\f")[0]),
                    script=reply, keep_unsupported=True)  # none gives evidence
    assert not report.failed
    default = ox.DefaultGraph()
    labels = {q.object.value for q in quads(tgsparql_store, default) if q.predicate == LABEL}
    assert {"<http://x> . DROP ALL", "} ; DROP ALL ; INSERT DATA { <a> <b> <c> }",
            'He said "hi" \\ then', "'''x'''\"\"\"", "http://example.org/evil", "rdf:type",
            "owl:Thing"} <= labels
    iris = {t.value for q in quads(tgsparql_store) for t in (q.subject, q.predicate, q.object)
            if isinstance(t, ox.NamedNode)}
    assert "http://x" not in iris and "http://example.org/evil" not in iris
    assert "a" not in iris
    assert all(q.predicate != vocab.RDF_TYPE for q in quads(tgsparql_store, default))
    assert len(quads(tgsparql_store, SOURCE)) > 0 and len(quads(tgsparql_store, LIBRARY)) == 8
    document = report.documents[0]
    assert document.facts == MAX_FACTS
    assert document.rejected == 5 + 53  # five unusable objects; 3 + 550 facts over MAX_FACTS
    assert document.skipped_lines == 1


# ---- unsupported facts

NIGHT_WATCH = "Rembrandt van Rijn painted The Night Watch in 1642."
UNSUPPORTED = [
    {"s": "Rembrandt van Rijn", "p": "painted", "o": "The Night Watch",
     "evidence": "Rembrandt van Rijn painted The Night Watch"},
    {"s": "rembrandt van rijn", "p": "rembrandt van rijn", "o": "Rembrandt van Rijn",
     "evidence": "Rembrandt van Rijn"},
    {"s": "BEGIN PAGE", "p": "begin page", "o": "END PAGE", "evidence": "BEGIN PAGE"},
    {"s": "Page 2", "p": "mentions", "o": "Rembrandt van Rijn", "evidence": "Rembrandt van Rijn"},
    {"s": "The Night Watch", "p": "painted in", "o": "1642"},
    {"s": "The Night Watch", "p": "hangs in", "o": "Rijksmuseum",
     "evidence": "hangs in the Rijksmuseum"},
]
SUPPORTED = ox.Triple(entity_iri("Rembrandt van Rijn"), relation_iri("painted"),
                      entity_iri("The Night Watch"))
REASONS = Counter({Unsupported.MARKER: 2, Unsupported.SELF_LOOP: 1,
                   Unsupported.EVIDENCE_NOT_FOUND: 2})


def scripted(facts: list[dict[str, Any]]) -> ScriptedBackend:
    return ScriptedBackend({}, extractions={NIGHT_WATCH: "\n".join(map(json.dumps, facts))})


def test_unsupported_facts_are_not_written_and_are_counted_by_reason(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    path = write(tmp_path, "night.txt", NIGHT_WATCH)
    report = ingest_files(tgsparql_store, scripted(UNSUPPORTED), [path])
    (document,) = report.documents
    assert (document.facts, document.dropped, document.flagged) == (1, REASONS, Counter())
    assert report.dropped == REASONS
    kg = {q.triple for q in quads(tgsparql_store, ox.DefaultGraph()) if q.predicate != LABEL}
    assert kg == {SUPPORTED}
    labels = {q.object.value for q in quads(tgsparql_store, ox.DefaultGraph())
              if q.predicate == LABEL}
    assert labels == {"Rembrandt van Rijn", "painted", "The Night Watch"}
    assert not tgsparql_store.ask(
        "ASK { GRAPH ?g { ?s <https://trustgraph.ai/ns/unsupported> ?o } }")


def test_unsupported_facts_kept_are_flagged_by_reason_for_the_shapes_and_the_trace(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    path = write(tmp_path, "night.txt", NIGHT_WATCH)
    report = ingest_files(tgsparql_store, scripted(UNSUPPORTED), [path], keep_unsupported=True)
    (document,) = report.documents
    assert (document.facts, document.dropped, document.flagged) == (6, Counter(), REASONS)
    why = {fact: [source.unsupported for source in sources]
           for fact, sources in facts_sources(tgsparql_store,
                                              list(kg_facts(tgsparql_store))).items()}
    assert why[SUPPORTED] == [None]
    loop = ox.Triple(entity_iri("Rembrandt van Rijn"), relation_iri("Rembrandt van Rijn"),
                     entity_iri("Rembrandt van Rijn"))
    unfound = ox.Triple(entity_iri("The Night Watch"), relation_iri("hangs in"),
                        entity_iri("Rijksmuseum"))
    assert why[loop] == [Unsupported.SELF_LOOP.iri.value]
    assert why[unfound] == [Unsupported.EVIDENCE_NOT_FOUND.iri.value]
    assert sorted(reason for reasons in why.values() for reason in reasons if reason) == sorted(
        reason.iri.value for reason in REASONS.elements())
    assert_conforms(tgsparql_store)


def kg_facts(store: EmbeddedStore) -> set[ox.Triple]:
    return {q.triple for q in quads(store, ox.DefaultGraph()) if q.predicate != LABEL}


def test_cli_ingest_reports_and_logs_unsupported_facts_by_reason(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path, "night.txt", NIGHT_WATCH)
    log = tmp_path / "llm.jsonl"
    fake_openai.script(*[Reply("\n".join(map(json.dumps, UNSUPPORTED)))] * 2)
    result = cli("ingest", "--store", tmp_path / "kg", "--base-url", fake_openai.base_url,
                 "--log-llm", log, path)
    assert result.exit_code == 0, result.stderr
    reasons = "2 prompt or page marker, 1 self-loop, 2 evidence not found"
    assert f"names: 0 linked, 2 minted; not written: {reasons})" in result.stdout
    assert result.stdout.splitlines()[-1].endswith(f"unsupported facts not written: {reasons}")
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [entry["call"] for entry in entries] == ["extract", "extract-checks"]
    checks = entries[1]
    assert (checks["page"], checks["chunk"], checks["kept"]) == (1, 0, False)
    assert checks["unsupported"] == {"prompt or page marker": 2, "self-loop": 1,
                                     "evidence not found": 2}
    assert [fact["reason"] for fact in checks["facts"]] == [
        "self-loop", "prompt or page marker", "prompt or page marker", "evidence not found",
        "evidence not found"]

    kept = cli("ingest", "--store", tmp_path / "kept", "--base-url", fake_openai.base_url,
               "--keep-unsupported", path)
    assert kept.exit_code == 0, kept.stderr
    assert f"6 facts (3 with evidence located; names: 0 linked, 7 minted; kept flagged: " \
        f"{reasons})" in kept.stdout


# ---- failures


def test_a_failing_llm_writes_nothing_of_that_file_and_the_others_still_go_in(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    broken = write(tmp_path, "broken.txt", ADA)
    good = write(tmp_path, "good.txt", "Ada Lovelace was born in London in 1815.")
    fake_openai.script(reading(ADA_FACTS), Reply(status=500, error_message="boom"),
                       reading(ADA_FACTS))
    report = ingest_files(tgsparql_store, backend(fake_openai), [broken, good])
    assert list(report.failed) == [broken]
    assert report.failed[broken].startswith(f"{broken}: page 2, chunk 0: ")
    assert "boom" in report.failed[broken]
    documents = subjects(tgsparql_store, RDF_TYPE, vocab.TG_DOCUMENT_CLASS)
    assert documents == [ExtractionIds(sha256_hex(good.read_text())).document]


def test_the_offline_backend_refuses_to_invent_facts(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    with pytest.raises(ExtractionUnsupported, match="offline backend does not invent facts"):
        ingest_files(tgsparql_store, OfflineBackend(), [write(tmp_path, "ada.txt", ADA)])
    assert len(tgsparql_store.oxigraph) == 0


def test_unreadable_files_are_errors_naming_them(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    binary = tmp_path / "image.txt"
    binary.write_bytes(b"\xff\xd8\xff\xe0")
    blank = write(tmp_path, "blank.md", " \n\f\n ")
    report = ingest_files(tgsparql_store, OfflineBackend(),
                          [tmp_path / "x.pdf", tmp_path / "gone.txt", binary, blank])
    assert report.failed == {
        tmp_path / "x.pdf": f"{tmp_path / 'x.pdf'}: unsupported file type '.pdf' (plain text "
        "and Markdown: .markdown, .md, .text, .txt, or no suffix)",
        tmp_path / "gone.txt": f"{tmp_path / 'gone.txt'}: cannot read: No such file or directory",
        binary: f"{binary}: not UTF-8 text (byte 0)",
        blank: f"{blank}: no text to ingest",
    }
    assert len(tgsparql_store.oxigraph) == 0


# ---- querying what was ingested


def test_a_query_over_the_ingested_kg_answers_with_sources_in_the_document(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    report = ingest(tgsparql_store, fake_openai, write(tmp_path, "ada.txt", ADA), replies=2)
    doc = report.documents[0].document
    messages = list(GraphRag(tgsparql_store, OfflineBackend()).query(
        "Where was Ada Lovelace born?"))
    assert not [m for m in messages if m.error is not None]
    answer = "".join(m.response for m in messages if m.message_type == "chunk")
    assert answer.startswith("London.")
    sources = messages[-1].sources
    born = ox.Triple(entity_iri("Ada Lovelace"), relation_iri("born in"), entity_iri("London"))
    mine = [s for s in sources if s.edge == born]
    assert len(mine) == 1
    (source,) = mine
    assert (source.document, source.title, source.page_number, source.chunk_index) == (
        doc.value, "Ada Lovelace was born in London in 1815. She was the daughter of Lord Byron.",
        1, 0)
    assert source.text == "Ada Lovelace was born in London in 1815."
    assert ADA[source.char_offset : source.char_offset + source.char_length].startswith(
        source.text)


# ---- titles


@pytest.mark.parametrize(("text", "mime_type", "title"), [
    ("Some intro.\n\n## Polonium\ntext\n# Later", "text/markdown", "Polonium"),
    ("# The Curies #\nMarie and Pierre.", "text/markdown", "The Curies"),
    ("> **Radium**, a history\n\nbody", "text/markdown", "**Radium**, a history"),
    ("\n\n  Marie Curie   (1867-1934)\nborn in Warsaw", "text/plain", "Marie Curie (1867-1934)"),
    ("# not a heading in plain text\nbody", "text/plain", "# not a heading in plain text"),
    ("----\n\f\n", "text/plain", None),
    ("", "text/markdown", None),
])
def test_a_document_is_titled_by_its_first_heading_or_line(
    text: str, mime_type: str, title: str | None
) -> None:
    assert title_of(text, mime_type) == title


def test_a_long_first_line_is_cut_at_a_word_and_a_file_without_one_keeps_its_name(
    tmp_path: Path,
) -> None:
    long = title_of("word " * 100, "text/plain")
    assert long is not None and long.endswith("word…") and len(long) <= 201
    path = write(tmp_path, "empty-ish.txt", "   \n---\n")
    from tgsparql.data.ingest import read_source

    assert read_source(path).title == "empty-ish.txt"


# ---- extracting again


def graph_quads(store: EmbeddedStore) -> set[str]:
    return {str(quad) for quad in store.oxigraph}


def test_force_extracts_a_document_that_gave_no_fact_again_in_place_of_the_first_run(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path, "ada.txt", ADA)
    first = ingest(tgsparql_store, fake_openai, path, replies=2, script=Reply("I cannot help."))
    (empty,) = first.documents
    assert (empty.facts, empty.skipped_lines) == (0, 2)
    skipped = ingest_files(tgsparql_store, backend(fake_openai), [path])
    assert skipped.documents[0].already_present and skipped.documents[0].facts == 0

    fake_openai.script(reading(ADA_FACTS), reading(ADA_FACTS))
    again = ingest_files(tgsparql_store, backend(fake_openai), [path], force=True)
    (document,) = again.documents
    assert document.replaced and not document.already_present and document.facts == 4
    born = ox.Triple(entity_iri("Ada Lovelace"), relation_iri("born in"), entity_iri("London"))
    assert born in {quad.triple for quad in tgsparql_store.oxigraph.quads_for_pattern(
        None, None, None, ox.DefaultGraph())}
    # One document, one activity, its pages and chunks once: replaced, not added to.
    assert subjects(tgsparql_store, RDF_TYPE, vocab.TG_DOCUMENT_CLASS) == [document.document]
    assert len(subjects(tgsparql_store, prov("used"), document.document)) == 1
    assert len(chunks_of(tgsparql_store, document.document)) == 2
    assert len(objects(tgsparql_store, document.document, ox.NamedNode(vocab.DC + "title"),
                       LIBRARY)) == 1
    assert ingest_files(tgsparql_store, backend(fake_openai), [path]).documents[0].facts == 4
    from tgsparql.testing import assert_conforms

    assert_conforms(tgsparql_store)


def test_force_keeps_other_documents_their_shared_facts_and_the_facts_sessions_selected(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    ada = write(tmp_path, "ada.txt", ADA)
    other = write(tmp_path, "byron.txt", "She was the daughter of Lord Byron. He was the poet.")
    shared = ADA_FACTS["daughter"]
    own = {"s": "Lord Byron", "p": "profession", "o": "poet", "evidence": "the poet"}
    fake_openai.script(reading(ADA_FACTS), reading(ADA_FACTS),
                       Reply("\n".join(json.dumps(fact) for fact in (shared, own))))
    ingest_files(tgsparql_store, backend(fake_openai), [ada, other])
    other_doc = ExtractionIds(sha256_hex(other.read_text())).document
    other_before = {str(q) for q in tgsparql_store.oxigraph if other_doc.value in str(q)}
    one_hop = RetrievalLimits(max_path_length=1)
    # the offline selector takes an edge that tells more than the seed's name: "born" does
    rag = GraphRag(tgsparql_store, OfflineBackend(), limits=one_hop)
    messages = list(rag.query("Who was born in London?"))
    session_graph = vocab.DEFAULT_COLLECTION.graph
    recorded = {str(q) for q in tgsparql_store.oxigraph.quads_for_pattern(
        None, None, None, session_graph)}
    selected = [q.object for q in tgsparql_store.oxigraph.quads_for_pattern(
        None, tg("edge"), None, session_graph)]
    retrieved = {q.object for q in tgsparql_store.oxigraph.quads_for_pattern(
        None, tg("retrievedEdge"), None, session_graph)}
    assert messages[-1].error is None and selected

    fake_openai.script(Reply(""), Reply(""))  # the LLM now reads nothing out of Ada's text
    report = ingest_files(tgsparql_store, backend(fake_openai), [ada], force=True)
    assert report.documents[0].replaced and report.documents[0].facts == 0
    kg = {q.triple for q in tgsparql_store.oxigraph.quads_for_pattern(
        None, None, None, ox.DefaultGraph()) if q.predicate != LABEL}
    byron = ox.Triple(entity_iri("Ada Lovelace"), relation_iri("daughter of"),
                      entity_iri("Lord Byron"))
    wrote = ox.Triple(entity_iri("Ada Lovelace"), relation_iri("wrote"),
                      entity_iri("first published algorithm"))
    assert byron in kg, "another document's subgraph contains it"
    assert set(selected) | retrieved <= kg, "a recorded session retrieved or selected them"
    assert (wrote in kg) == (wrote in retrieved)
    born = ox.Triple(entity_iri("Ada Lovelace"), relation_iri("born in"), entity_iri("London"))
    year = ox.Triple(entity_iri("Ada Lovelace"), relation_iri("birth year"),
                     ox.Literal("1815", datatype=vocab.XSD_INTEGER))
    assert born in retrieved and born in kg
    assert year not in retrieved and year not in kg, "only this document stated it"
    assert {str(q) for q in tgsparql_store.oxigraph if other_doc.value in str(q)} == other_before
    assert {str(q) for q in tgsparql_store.oxigraph.quads_for_pattern(
        None, None, None, session_graph)} == recorded
    from tgsparql.testing import assert_conforms

    assert_conforms(tgsparql_store)


def test_a_failed_reextraction_leaves_the_document_as_it_was(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path, "ada.txt", ADA)
    ingest(tgsparql_store, fake_openai, path, replies=2)
    before = graph_quads(tgsparql_store)
    fake_openai.script(reading(ADA_FACTS), Reply(status=500, error_message="boom"))
    report = ingest_files(tgsparql_store, backend(fake_openai), [path], force=True)
    assert list(report.failed) == [path]
    assert graph_quads(tgsparql_store) == before


def test_each_file_is_reported_as_soon_as_it_is_done_with(
    tgsparql_store: EmbeddedStore, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    events: list[str] = []

    def reply(body: dict[str, Any]) -> Reply:
        events.append("read " + passage(body)[:3])
        return Reply("")

    fake_openai.script(reply, reply)
    paths = [write(tmp_path, "a.txt", "One."), tmp_path / "missing.txt",
             write(tmp_path, "b.txt", "Two.")]
    ingest_files(tgsparql_store, backend(fake_openai), paths,
                 finished=lambda outcome: events.append(
                     f"failed {outcome.path.name}" if isinstance(outcome, IngestFailure)
                     else f"done {outcome.path.name}"))
    assert events == ["read One", "done a.txt", "failed missing.txt", "read Two", "done b.txt"]


# ---- the command line


def test_cli_ingest_reports_per_file_and_skips_on_the_second_run(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path, "ada.txt", ADA)
    fake_openai.script(reading(ADA_FACTS), reading(ADA_FACTS))
    store_dir = tmp_path / "kg"
    first = cli("ingest", "--store", store_dir, "--base-url", fake_openai.base_url, path)
    assert first.exit_code == 0, first.stderr
    doc = ExtractionIds(sha256_hex(ADA)).document.value
    assert first.stdout.splitlines() == [
        f"ingested {path}: 2 pages, 2 chunks, 4 facts (4 with evidence located; names: 0 "
        f"linked, 4 minted; not written: 1 evidence not found) as {doc}",
        "indexed 7 labels for grounding",
        "ingest: 1 file: 1 ingested (4 facts), names: 0 linked, 4 minted, "
        "unsupported facts not written: 1 evidence not found",
    ]
    second = cli("ingest", "--store", store_dir, "--base-url", fake_openai.base_url, path)
    assert second.exit_code == 0, second.stderr
    assert second.stdout.splitlines() == [
        f"skipped {path}: already ingested as {doc}",
        "ingest: 1 file: 0 ingested (0 facts), 1 skipped as ingested before",
    ]
    query = cli("query", "--store", store_dir, "--llm", "offline", "Where was Ada Lovelace born?")
    assert query.exit_code == 0, query.stderr
    assert query.stdout.startswith("London.")


def test_cli_ingest_says_which_files_gave_no_fact_and_force_reads_them_again(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    empty = write(tmp_path, "empty.txt", "Nothing to see.")
    ada = write(tmp_path, "ada.txt", ADA)
    store_dir = tmp_path / "kg"
    fake_openai.script(Reply("Sorry, no facts."), reading(ADA_FACTS), reading(ADA_FACTS))
    first = cli("ingest", "--store", store_dir, "--base-url", fake_openai.base_url, empty, ada,
                tmp_path / "gone.txt")
    assert first.exit_code == 1
    lines = first.stdout.splitlines()
    empty_doc = ExtractionIds(sha256_hex("Nothing to see.")).document.value
    assert lines[0] == (
        f"ingested {empty}: 0 facts: the LLM stated none it could record (1 pages, 1 chunks, "
        f"1 unusable reply lines or objects dropped; --log-llm FILE shows its replies) as "
        f"{empty_doc}")
    assert lines[1].startswith(f"ingested {ada}: 2 pages, 2 chunks, 4 facts")
    assert lines[-1] == ("ingest: 3 files: 2 ingested (4 facts), 1 with 0 facts, 1 failed, "
                         "names: 0 linked, 4 minted, unsupported facts not written: 1 evidence "
                         "not found")
    assert first.stderr.splitlines()[-1].startswith(f"error: {tmp_path / 'gone.txt'}: ")

    second = cli("ingest", "--store", store_dir, "--base-url", fake_openai.base_url, empty)
    assert second.stdout.splitlines()[0] == (
        f"skipped {empty}: already ingested as {empty_doc} (it gave 0 facts; --force extracts "
        "it again)")
    fake_openai.script(Reply(json.dumps(
        {"s": "This", "p": "is", "o": "nothing", "evidence": "Nothing to see."})))
    third = cli("ingest", "--store", store_dir, "--base-url", fake_openai.base_url, "--force",
                empty)
    assert third.exit_code == 0, third.stderr
    assert third.stdout.splitlines()[0].startswith(
        f"re-extracted {empty}: 1 pages, 1 chunks, 1 facts (1 with evidence located; names: 0 "
        "linked, 2 minted)")


def test_cli_ingest_constrains_and_caps_replies_and_logs_every_call(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path, "ada.txt", ADA)
    log = tmp_path / "llm.jsonl"
    fake_openai.script(reading(ADA_FACTS), Reply("garbage"))
    result = cli("ingest", "--store", tmp_path / "kg", "--base-url", fake_openai.base_url,
                 "--constrain", "grammar", "--max-tokens", 300, "--log-llm", log, path)
    assert result.exit_code == 0, result.stderr
    bodies = [request.body for request in fake_openai.chat_requests]
    assert [body["max_tokens"] for body in bodies] == [300, 300]
    grammar = bodies[0]["grammar"]
    assert grammar.startswith("root ::= line{0,30}") and '\\"evidence\\": ' in grammar
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [entry["call"] for entry in entries] == ["extract", "extract"]
    assert entries[0]["messages"] == bodies[0]["messages"]
    assert entries[0]["grammar"] == grammar and entries[0]["max_tokens"] == 300
    assert entries[0]["reply"] == reading(ADA_FACTS)(bodies[0]).text
    assert entries[1]["reply"] == "garbage"
    assert entries[0]["usage"] == {"model": "fake-model", "in_tokens": 11, "out_tokens": 7}


def test_cli_ingest_names_an_llm_log_it_cannot_write(tmp_path: Path) -> None:
    result = cli("ingest", "--base-url", "http://127.0.0.1:9/v1", "--log-llm", tmp_path,
                 write(tmp_path, "a.txt", "x"))
    assert result.exit_code == 2 and "--log-llm" in result.stderr


def test_cli_ingest_without_an_llm_exits_non_zero_saying_one_is_needed(tmp_path: Path) -> None:
    result = cli("ingest", "--store", tmp_path / "kg", write(tmp_path, "ada.txt", ADA))
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: ingesting needs an LLM to read the text, and the offline backend does not "
        "invent facts: set OPENAI_BASE_URL (or pass --llm openai --base-url URL)"
    ]
    assert not (tmp_path / "kg").exists()  # refused before any store directory is made


def test_cli_ingest_refuses_an_overlap_not_below_the_size(tmp_path: Path) -> None:
    result = cli("ingest", "--store", tmp_path / "kg", "--chunk-size", 100, "--chunk-overlap", 100,
                 write(tmp_path, "a.txt", "x"))
    assert result.exit_code == 2
    assert "chunk overlap must be at least 0 and below the chunk size 100" in result.stderr


def test_cli_ingest_names_a_failed_file_and_exits_one(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    result = cli("ingest", "--store", tmp_path / "kg", "--base-url", fake_openai.base_url,
                 tmp_path / "notes.docx")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1].startswith(
        f"error: {tmp_path / 'notes.docx'}: unsupported file type '.docx'")


# ---- loading provenance built elsewhere


def test_load_of_a_trig_with_the_three_graphs_keeps_its_provenance(
    tmp_path: Path, tgsparql_demo_file: Path
) -> None:
    store_dir = tmp_path / "kg"
    assert cli("load", "--store", store_dir, tgsparql_demo_file).exit_code == 0
    expected = ox.Store()
    expected.load(path=str(tgsparql_demo_file), format=ox.RdfFormat.TRIG)
    with_graphs(store_dir, expected)


def test_load_of_nquads_with_the_three_graphs_keeps_its_provenance(
    tmp_path: Path, tgsparql_demo_file: Path
) -> None:
    expected = ox.Store()
    expected.load(path=str(tgsparql_demo_file), format=ox.RdfFormat.TRIG)
    nquads = tmp_path / "demo.nq"
    expected.dump(output=str(nquads), format=ox.RdfFormat.N_QUADS)
    store_dir = tmp_path / "kg"
    assert cli("load", "--store", store_dir, nquads).exit_code == 0
    with_graphs(store_dir, expected)


def with_graphs(store_dir: Path, expected: ox.Store) -> None:
    """The loaded store holds every quad of the file and each fact traces to a titled document."""
    from tgsparql.stores.store import open_store

    store = open_store(store_dir)
    try:
        graphs = {q.graph_name for q in expected}
        assert {SOURCE, LIBRARY, ox.DefaultGraph()} <= graphs
        for graph in graphs:
            in_file = set(expected.quads_for_pattern(None, None, None, graph))
            assert set(quads(store, graph)) == in_file
        facts = {q.triple for q in quads(store, ox.DefaultGraph())
                 if not q.predicate.value.startswith(vocab.RDFS)}
        rows = store.select(
            "PREFIX tg: <https://trustgraph.ai/ns/> PREFIX prov: <http://www.w3.org/ns/prov#> "
            "PREFIX dc: <http://purl.org/dc/elements/1.1/> "
            "SELECT ?fact ?title WHERE { GRAPH <urn:graph:source> { ?sg tg:contains ?fact ; "
            "prov:wasDerivedFrom ?chunk . ?chunk prov:wasDerivedFrom+ ?doc . "
            "?doc a tg:Document ; dc:title ?title } "
            "GRAPH <urn:graph:library> { ?chunk tg:content ?text } }"
        )
        traced = {row["fact"] for row in rows}
        assert traced == facts
        assert all(row["title"].value for row in rows)
    finally:
        store.close()


@pytest.mark.parametrize("dialect", ["rdf12", "reification"])
def test_force_replaces_a_document_on_an_endpoint_in_each_dialect(
    oxigraph: Any, tmp_path: Path, dialect: str
) -> None:
    from tgsparql.testing import assert_conforms
    from tgsparql.testing.fakes import ScriptedBackend

    oxigraph.clear()
    path = write(tmp_path, "ada.txt", "Ada Lovelace was born in London in 1815.")
    text = path.read_text(encoding="utf-8")
    born, year = ADA_FACTS["born in London"], ADA_FACTS["in 1815"]
    with oxigraph.store(dialect=dialect) as remote:
        first = ScriptedBackend({}, extractions={text: json.dumps(born) + "\n" + json.dumps(year)})
        assert ingest_files(remote, first, [path]).documents[0].facts == 2
        again = ScriptedBackend({}, extractions={text: json.dumps(born)})
        report = ingest_files(remote, again, [path], force=True)
        assert report.documents[0].replaced and report.documents[0].facts == 1
        kg = remote.select("SELECT ?s ?p ?o WHERE { ?s ?p ?o FILTER(!isLiteral(?o) || "
                           "datatype(?o) != <http://www.w3.org/2001/XMLSchema#string>) }")
        facts = {(row["s"].value, row["p"].value, str(row["o"])) for row in kg}
        assert (entity_iri("Ada Lovelace").value, relation_iri("born in").value,
                str(entity_iri("London"))) in facts
        assert not any(p == relation_iri("birth year").value for _, p, _ in facts)
        assert not remote.ask(
            f"ASK {{ GRAPH <{SOURCE.value}> {{ ?x ?p <{relation_iri('birth year').value}> }} }}"
        ), "no statement or provenance of the fact it no longer gives"
        assert_conforms(remote)

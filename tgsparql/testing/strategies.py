"""Hypothesis strategies for tgsparql data: RDF terms, KGs, extraction provenance, selector
output and whole recorded sessions.

Each drawn value knows what it should become, so a property test can compare: a
`SelectionText` carries the ids the parser must keep, a `SessionRecord` writes itself through
the real Recorder, a `ProvenancedGraph` conforms to the bundled extraction shapes.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal as TypingLiteral

import pyoxigraph as ox

try:
    from hypothesis import strategies as st
except ImportError as missing:
    raise ImportError("tgsparql.testing.strategies needs hypothesis: "
                      "pip install 'tgsparql[testing]'") from missing

from tgsparql.asking.grounding import Grounding, update_label_index
from tgsparql.asking.labels import LabeledEdge
from tgsparql.asking.librarian import StoreLibrarian
from tgsparql.asking.llm.usage import Usage
from tgsparql.asking.provenance import Recorder
from tgsparql.asking.selection import SelectedEdge
from tgsparql.asking.sources import facts_sources
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import ExtractionIds, SessionIds, sha256_hex
from tgsparql.rdf.templates import to_literal
from tgsparql.stores.store import Store

EX = "http://example.org/"
XSD = vocab.XSD
WORDS = (
    "marie pierre curie radium polonium warsaw paris prize physics chemistry institute "
    "element daughter born married discovered won worked located named founded city river "
    "mountain ada lovelace engine analytical byron london"
).split()

# Text that is hard to carry through SPARQL and JSON: quotes, escapes, line ends, markup,
# combining marks and astral characters (never lone surrogates, which no RDF literal can hold).
HOSTILE_FRAGMENTS = (
    '"', '"""', "'", "\\", "\\n", "\n", "\r\n", "\t", "{", "}", "<", ">", "<<(", ")>>", "#",
    " . ", ";", "\x00", "\x7f", "\u2028", "\u0085", "\ufeff", "é", "e\u0301", "😀",
    "👩‍🔬", '" . } ; DROP ALL ; INSERT DATA { <urn:evil> <urn:evil> <urn:evil> } #',
)


def texts(*, min_size: int = 0, max_size: int = 40) -> st.SearchStrategy[str]:
    """Unicode text mixed with fragments that break naive escaping."""
    plain = st.text(
        st.characters(exclude_categories=("Cs",)), min_size=0, max_size=max_size
    )
    hostile = st.lists(st.sampled_from(HOSTILE_FRAGMENTS) | plain, max_size=4).map("".join)
    either = plain | hostile
    return either.filter(lambda t: len(t) >= min_size) if min_size else either


def words(*, min_size: int = 1, max_size: int = 3) -> st.SearchStrategy[str]:
    """A name of a few plain words, the kind a question can mention and grounding can find."""
    return st.lists(st.sampled_from(WORDS), min_size=min_size, max_size=max_size).map(" ".join)


_LOCAL = st.text(
    st.characters(categories=("Ll", "Lu", "Nd"), include_characters="_-.~"),
    min_size=1, max_size=12,
)


def iris(namespace: str = EX) -> st.SearchStrategy[ox.NamedNode]:
    """Absolute IRIs under `namespace` with Unicode local names (valid IRIs, not only URIs)."""
    return _LOCAL.map(lambda name: ox.NamedNode(namespace + name))


def _decimal(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if text == "-0" else text


# Lexical forms as stores keep them (canonical: no trailing zeros, no leading "+"), so what is
# drawn is what reads back.
_DATATYPED: dict[str, st.SearchStrategy[ox.Literal]] = {
    "integer": st.integers(-(10**12), 10**12).map(to_literal),
    "decimal": st.decimals(allow_nan=False, allow_infinity=False, places=3).map(
        lambda d: ox.Literal(_decimal(d), datatype=ox.NamedNode(XSD + "decimal"))
    ),
    "double": st.floats(allow_nan=False, allow_infinity=False).map(ox.Literal),
    "boolean": st.booleans().map(ox.Literal),
    "date": st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)).map(
        lambda d: ox.Literal(d.isoformat(), datatype=ox.NamedNode(XSD + "date"))
    ),
    "dateTime": st.datetimes(
        dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1), timezones=st.just(dt.timezone.utc)
    ).map(to_literal),
}


def typed_literals() -> st.SearchStrategy[ox.Literal]:
    """Literals of xsd:string and of numeric, boolean and time datatypes, in canonical form."""
    return texts().map(ox.Literal) | st.one_of(*_DATATYPED.values())


LANGUAGES = ("en", "en-GB", "fr", "de-CH", "pl", "zh-Hant-TW")


def language_literals() -> st.SearchStrategy[ox.Literal]:
    return st.builds(lambda text, lang: ox.Literal(text, language=lang),
                     texts(), st.sampled_from(LANGUAGES))


def literals() -> st.SearchStrategy[ox.Literal]:
    return typed_literals() | language_literals()


def triple_terms(max_depth: int = 2) -> st.SearchStrategy[ox.Triple]:
    """RDF 1.2 triple terms, nested in the object position up to `max_depth`."""
    flat = st.builds(ox.Triple, iris(), iris(), iris() | literals())
    if max_depth <= 1:
        return flat
    return flat | st.builds(ox.Triple, iris(), iris(), triple_terms(max_depth - 1))


def terms() -> st.SearchStrategy[ox.NamedNode | ox.Literal | ox.Triple]:
    """Any term a fact's object may be: an IRI, a literal, a triple term."""
    return iris() | literals() | triple_terms()


# ---- knowledge graphs ---------------------------------------------------------------------


@dataclass(frozen=True)
class KnowledgeGraph:
    """Facts in the default graph and an rdfs:label for every entity and predicate."""

    facts: tuple[ox.Triple, ...]
    labels: dict[ox.NamedNode, ox.Literal]

    def quads(self) -> list[ox.Quad]:
        label = vocab.RDFS_LABEL
        return [ox.Quad(t.subject, t.predicate, t.object) for t in self.facts] + [
            ox.Quad(term, label, text) for term, text in self.labels.items()
        ]

    def load_into(self, store: Store) -> None:
        """Bulk-load the quads and index the labels, as `tgsparql load` would."""
        _load(store, self.quads())

    def label(self, term: ox.NamedNode) -> str:
        return self.labels[term].value


def _load(store: Store, quads: Sequence[ox.Quad]) -> None:
    data = ox.serialize(quads, format=ox.RdfFormat.N_QUADS) or b""
    store.bulk_load(io.BytesIO(data), ox.RdfFormat.N_QUADS)
    update_label_index(store)


@st.composite
def knowledge_graphs(
    draw: st.DrawFn,
    *,
    min_facts: int = 1,
    max_facts: int = 12,
    max_entities: int = 8,
    literal_objects: bool = True,
    language_labels: bool = True,
) -> KnowledgeGraph:
    """A small connected-ish KG: entities and predicates with word labels, IRI or literal
    objects. Labels may repeat (two entities called alike must both survive, docs/spec.md §4)."""
    entity_count = draw(st.integers(2, max(2, max_entities)))
    entities = [ox.NamedNode(f"{EX}entity/e{i}") for i in range(entity_count)]
    predicates = [ox.NamedNode(f"{EX}rel/p{i}") for i in range(draw(st.integers(1, 4)))]
    objects = st.sampled_from(entities)
    if literal_objects:
        objects = objects | typed_literals()
    facts = draw(
        st.lists(
            st.builds(ox.Triple, st.sampled_from(entities), st.sampled_from(predicates), objects),
            min_size=min_facts, max_size=max_facts, unique=True,
        )
    )
    label_text = (
        st.builds(lambda w, lang: ox.Literal(w, language=lang) if lang else ox.Literal(w),
                  words(), st.sampled_from([None, None, "en"]))
        if language_labels else words().map(ox.Literal)
    )
    used = {t.subject for t in facts} | {t.predicate for t in facts} | {
        t.object for t in facts if isinstance(t.object, ox.NamedNode)
    }
    labels = {term: draw(label_text) for term in sorted(used, key=str)}
    return KnowledgeGraph(tuple(facts), labels)


# ---- extraction provenance (docs/spec.md §8) --------------------------------------------------------


@dataclass(frozen=True)
class ProvenancedGraph:
    """A KG whose every fact was extracted from a sentence of a document, recorded per docs/spec.md §8
    in `urn:graph:source`, with document and chunk texts in the librarian."""

    kg: KnowledgeGraph
    source: tuple[ox.Quad, ...]
    library: tuple[ox.Quad, ...]
    documents: tuple[ox.NamedNode, ...]

    def quads(self) -> list[ox.Quad]:
        return self.kg.quads() + list(self.source) + list(self.library)

    def load_into(self, store: Store) -> None:
        _load(store, self.quads())


def _sentence(kg: KnowledgeGraph, fact: ox.Triple) -> str:
    o = fact.object
    said = kg.label(o) if isinstance(o, ox.NamedNode) else o.value
    return f"{kg.label(fact.subject)} {kg.label(fact.predicate)} {said}."


@st.composite
def provenanced_graphs(
    draw: st.DrawFn, *, max_documents: int = 3, paged: bool | None = None, **kg_options: object
) -> ProvenancedGraph:
    """A KG (see `knowledge_graphs`) with each fact's sentence in a document, chunked, pages
    optional, each chunk's facts in one subgraph with the evidence span of its first fact."""
    kg = draw(knowledge_graphs(**kg_options))  # type: ignore[arg-type]
    doc_count = draw(st.integers(1, min(max_documents, len(kg.facts))))
    owner = [draw(st.integers(0, doc_count - 1)) for _ in kg.facts]
    owner[: doc_count] = range(doc_count)  # every document states at least one fact
    record = _Provenance()
    agent = ox.NamedNode(f"{EX}agent/extractor")
    record.source += [
        ox.Quad(agent, vocab.RDF_TYPE, vocab.PROV_AGENT, vocab.GRAPH_SOURCE),
        ox.Quad(agent, vocab.RDFS_LABEL, ox.Literal("test extractor"), vocab.GRAPH_SOURCE),
    ]
    documents = []
    for d in range(doc_count):
        facts = [f for f, o in zip(kg.facts, owner) if o == d]
        documents.append(record.document(draw, d, facts, [_sentence(kg, f) for f in facts],
                                          agent, paged))
    return ProvenancedGraph(kg, tuple(record.source), tuple(record.library), tuple(documents))


@dataclass
class _Provenance:
    """The quads of `provenanced_graphs`, one document at a time."""

    source: list[ox.Quad] = field(default_factory=list)
    library: list[ox.Quad] = field(default_factory=list)

    def add(self, s: ox.NamedNode, p: ox.NamedNode, o: ox.NamedNode | ox.Literal | ox.Triple,
            ) -> None:
        self.source.append(ox.Quad(s, p, o, vocab.GRAPH_SOURCE))

    def typed(self, iri: ox.NamedNode, kind: ox.NamedNode) -> None:
        """A prov:Entity that is also of class `kind`."""
        for cls in (vocab.PROV_ENTITY, kind):
            self.add(iri, vocab.RDF_TYPE, cls)

    def put_text(self, iri: ox.NamedNode, text: str, title: str) -> None:
        for p, o in ((vocab.TG_CONTENT, ox.Literal(text)),
                     (vocab.TG_MIME_TYPE, ox.Literal("text/plain")),
                     (vocab.TG_CONTENT_SHA256, ox.Literal(sha256_hex(text))),
                     (vocab.DC_TITLE, ox.Literal(title))):
            self.library.append(ox.Quad(iri, p, o, vocab.GRAPH_LIBRARY))

    def document(self, draw: st.DrawFn, d: int, facts: list[ox.Triple], sentences: list[str],
                 agent: ox.NamedNode, paged: bool | None) -> ox.NamedNode:
        """Document `d` stating `facts`, one sentence each, extracted by `agent`."""
        text = " ".join(sentences)
        doc = ox.NamedNode(f"{EX}doc/d{d}")
        ids = ExtractionIds(sha256_hex(f"document {d}"))  # distinct per document, whatever its text
        activity = ids.activity
        self.typed(doc, vocab.TG_DOCUMENT_CLASS)
        self.add(doc, vocab.DC_TITLE, ox.Literal(f"Document {d}"))
        self.add(doc, vocab.TG_MIME_TYPE, ox.Literal("text/plain"))
        self.put_text(doc, text, f"Document {d}")
        self.add(activity, vocab.RDF_TYPE, vocab.PROV_ACTIVITY)
        self.add(activity, vocab.PROV_USED, doc)
        self.add(activity, vocab.PROV_WAS_ASSOCIATED_WITH, agent)
        self.add(activity, vocab.PROV_STARTED_AT_TIME,
                 ox.Literal("2024-01-01T00:00:00Z", datatype=vocab.XSD_DATETIME))
        self.add(activity, vocab.TG_LLM_MODEL, ox.Literal("test-model"))
        parent = doc
        if paged if paged is not None else draw(st.booleans()):
            parent = ids.page(1)
            self.typed(parent, vocab.TG_PAGE_CLASS)
            self.add(parent, vocab.PROV_WAS_DERIVED_FROM, doc)
            self.add(parent, vocab.TG_PAGE_NUMBER, _integer(1))
            self.add(parent, vocab.PROV_WAS_GENERATED_BY, activity)
        cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(facts) - 1)),
                                        max_size=len(facts) - 1))) - {len(facts)})
        offset = 0
        for index, (start, end) in enumerate(zip([0, *cuts], [*cuts, len(facts)])):
            chunk_text = " ".join(sentences[start:end])
            begin = text.index(chunk_text, offset)
            offset = begin + len(chunk_text)
            self.chunk(ids, d, index, parent, activity, begin, chunk_text, facts[start:end],
                       sentences[start])
        return doc

    def chunk(self, ids: ExtractionIds, d: int, index: int, parent: ox.NamedNode,
              activity: ox.NamedNode, begin: int, text: str, facts: list[ox.Triple],
              evidence: str) -> None:
        """Chunk `index` of document `d` and its one subgraph, whose evidence is `evidence`."""
        end = begin + len(text)
        chunk = ids.chunk(begin, end)
        self.typed(chunk, vocab.TG_CHUNK_CLASS)
        self.add(chunk, vocab.PROV_WAS_DERIVED_FROM, parent)
        self.add(chunk, vocab.TG_CHUNK_INDEX, _integer(index))
        self.add(chunk, vocab.TG_CHAR_OFFSET, _integer(begin))
        self.add(chunk, vocab.TG_CHAR_LENGTH, _integer(len(text)))
        self.put_text(chunk, text, f"Document {d}, chunk {index}")
        subgraph = ids.subgraph(begin, end, (0, len(evidence)))
        self.typed(subgraph, vocab.TG_SUBGRAPH_CLASS)
        self.add(subgraph, vocab.PROV_WAS_DERIVED_FROM, chunk)
        self.add(subgraph, vocab.PROV_WAS_GENERATED_BY, activity)
        for fact in facts:
            self.add(subgraph, vocab.TG_CONTAINS, fact)
        self.add(subgraph, vocab.TG_SOURCE_TEXT, ox.Literal(evidence))
        self.add(subgraph, vocab.TG_SOURCE_CHAR_OFFSET, _integer(0))
        self.add(subgraph, vocab.TG_SOURCE_CHAR_LENGTH, _integer(len(evidence)))


def _integer(value: int) -> ox.Literal:
    return ox.Literal(str(value), datatype=vocab.XSD_INTEGER)


# ---- selector output (docs/spec.md §5) --------------------------------------------------------------

SelectionKind = TypingLiteral["valid", "partial", "hostile"]


@dataclass(frozen=True)
class SelectionText:
    """JSONL as a selector might write it, and what tolerant, exact parsing must make of it."""

    kind: SelectionKind
    text: str
    expected_ids: tuple[str, ...]
    """Ids the parser keeps, first occurrence order, each once."""
    expected_invalid: tuple[str, ...]
    """Unknown ids, every occurrence, in order."""


_PROSE = ("Here are the edges I selected:", "Sure!", "These facts answer the question.",
          "Note: the rest are irrelevant.", "```jsonl", "```", "```json")
_NOT_OBJECTS = ('[1, 2, 3]', '"edge"', "42", "null", "true", '{"reasoning": "no id"}',
                '{"id": 5, "reasoning": "a number"}', '{"id": null}', '{"id": ["a"]}')


def _line(edge_id: str, reasoning: str) -> str:
    return json.dumps({"id": edge_id, "reasoning": reasoning}, ensure_ascii=False)


@st.composite
def selection_texts(
    draw: st.DrawFn, edges: Sequence[LabeledEdge], kind: SelectionKind | None = None
) -> SelectionText:
    """Selector output over the offered `edges`: `valid` JSONL; `partial` (cut off mid-line);
    `hostile` (fences, prose, non-objects, objects inside prose, arrays, trailing commas,
    padded, duplicate and unknown ids, hostile reasoning)."""
    kind = kind or draw(st.sampled_from(["valid", "partial", "hostile"]))
    offered = [edge.id for edge in edges]
    known = set(offered)
    chosen = draw(st.lists(st.sampled_from(offered), unique=True)) if offered else []
    reasons = texts(max_size=30)
    kept: list[str] = []
    invalid: list[str] = []
    lines: list[str] = []

    def select(edge_id: str) -> None:
        if edge_id.strip() not in known:
            invalid.append(edge_id.strip())
        elif edge_id.strip() not in kept:
            kept.append(edge_id.strip())

    if kind == "valid":
        for edge_id in chosen:
            lines.append(_line(edge_id, draw(reasons)))
            select(edge_id)
        return SelectionText(kind, "\n".join(lines) + ("\n" if lines else ""),
                             tuple(kept), tuple(invalid))
    if kind == "partial":
        for edge_id in chosen:
            lines.append(_line(edge_id, draw(words())))
            select(edge_id)
        cut_from = _line(draw(st.sampled_from(offered)) if offered else "00000000", "because")
        lines.append(cut_from[: draw(st.integers(1, len(cut_from) - 1))])
        return SelectionText(kind, "\n".join(lines), tuple(kept), tuple(invalid))
    _hostile_lines(draw, chosen, known, reasons, lines, select)
    return SelectionText(kind, "\r\n".join(lines) if draw(st.booleans()) else "\n".join(lines),
                         tuple(kept), tuple(invalid))


def _hostile_lines(draw: st.DrawFn, chosen: list[str], known: set[str],
                   reasons: st.SearchStrategy[str], lines: list[str],
                   select: Callable[[str], None]) -> None:
    """Each chosen id in one of the forms a parser must still read, with noise between."""
    unknown = st.text("0123456789abcdef", min_size=8, max_size=8).filter(lambda i: i not in known)
    for edge_id in chosen:
        form = draw(st.sampled_from(["plain", "prose", "array", "comma", "padded", "twice"]))
        reason = draw(reasons)
        if form == "prose":
            lines.append(f"I pick {_line(edge_id, reason)} for it")
        elif form == "array":
            other = draw(unknown)
            lines.append(json.dumps([{"id": edge_id, "reasoning": reason}, {"id": other}]))
            select(edge_id)
            edge_id = other
        elif form == "comma":
            lines.append(_line(edge_id, reason) + ",")
        elif form == "padded":
            lines.append(_line(f"  {edge_id} ", reason))
        elif form == "twice":
            lines.append(_line(edge_id, reason))
            lines.append(_line(edge_id, "again"))
        else:
            lines.append(_line(edge_id, reason))
        select(edge_id)
        for _ in range(draw(st.integers(0, 2))):
            noise = draw(st.sampled_from(["prose", "object", "unknown"]))
            if noise == "prose":
                lines.append(draw(st.sampled_from(_PROSE)))
            elif noise == "object":
                lines.append(draw(st.sampled_from(_NOT_OBJECTS)))
            else:
                other = draw(unknown)
                lines.append(_line(other, "made up"))
                select(other)


# ---- whole sessions (docs/spec.md §2) ---------------------------------------------------------------

Outcome = TypingLiteral["complete", "failed-retrieval", "failed-selection", "failed-answer",
                        "interrupted"]


@dataclass(frozen=True)
class SessionRecord:
    """One session as the pipeline would record it, written through the real Recorder."""

    ids: SessionIds
    question: str
    started: dt.datetime
    ended: dt.datetime
    outcome: Outcome
    concepts: tuple[str, ...]
    seeds: tuple[ox.NamedNode, ...]
    retrieved: tuple[ox.Triple, ...]
    selected: tuple[tuple[ox.Triple, str], ...]
    answer: str
    usage: Usage | None = None
    error: str = field(default="the test made this stage fail")

    def record(self, store: Store, collection: vocab.Collection = vocab.DEFAULT_COLLECTION) -> None:
        recorder = Recorder(store, collection)
        ids = self.ids
        recorder.write(recorder.session(ids, self.question, self.started))
        if self.outcome == "failed-retrieval":
            recorder.write(recorder.failure(ids, self.error, self.ended, started=self.started))
            return
        recorder.write(recorder.retrieval(ids, Grounding(list(self.concepts), list(self.seeds)),
                                          list(self.retrieved)))
        if self.outcome == "failed-selection":
            recorder.write(recorder.failure(ids, self.error, self.ended, started=self.started))
            return
        edges = [SelectedEdge(f"e{i}", t, why) for i, (t, why) in enumerate(self.selected)]
        found = facts_sources(store, [edge.triple for edge in edges])
        recorder.write(recorder.selection(ids, edges, 0, self.usage, found))
        if self.outcome == "failed-answer":
            recorder.write(recorder.failure(ids, self.error, self.ended, started=self.started))
            return
        StoreLibrarian(store).put(ids.answer_document, self.answer,
                                             title=f"GraphRAG answer {ids.uuid}")
        if self.outcome == "complete":
            recorder.write(recorder.answer(ids, self.usage, self.ended, started=self.started,
                                           selected=len(edges)))


COMPLETE_OR_FAILED: tuple[Outcome, ...] = (
    "complete", "failed-retrieval", "failed-selection", "failed-answer",
)


@st.composite
def session_records(
    draw: st.DrawFn,
    kg: KnowledgeGraph,
    *,
    outcomes: Sequence[Outcome] = COMPLETE_OR_FAILED,
    started: st.SearchStrategy[dt.datetime] | None = None,
) -> SessionRecord:
    """A session over `kg`: retrieved edges are facts of it, selected ones among them, the
    times typed and ordered. `interrupted` (left out by default) stops after the answer text
    reached the librarian but before the Answer was recorded, as a crash would."""
    starts = started or st.datetimes(
        dt.datetime(2020, 1, 1), dt.datetime(2030, 1, 1), timezones=st.just(dt.timezone.utc)
    )
    start = draw(starts)
    retrieved = draw(st.lists(st.sampled_from(kg.facts), min_size=1, unique=True))
    selected = draw(st.lists(st.sampled_from(retrieved), unique=True))
    seeds = sorted({t.subject for t in retrieved}, key=str)[:3]
    usage = draw(st.none() | st.builds(Usage, st.just("test-model"), st.integers(0, 10**5),
                                       st.integers(0, 10**4)))
    return SessionRecord(
        ids=SessionIds(str(draw(st.uuids(version=4)))),
        question=draw(texts(min_size=1).filter(str.strip)),
        started=start,
        ended=start + dt.timedelta(milliseconds=draw(st.integers(0, 60_000))),
        outcome=draw(st.sampled_from(list(outcomes))),
        concepts=tuple(draw(st.lists(words(), max_size=3))),
        seeds=tuple(seeds),
        retrieved=tuple(retrieved),
        selected=tuple((t, draw(texts())) for t in selected),
        answer=draw(texts(min_size=1)),
        usage=usage,
    )


def session_lists(
    kg: KnowledgeGraph, *, min_size: int = 1, max_size: int = 5, **options: object
) -> st.SearchStrategy[list[SessionRecord]]:
    """Several sessions over one KG, with distinct UUIDs (as uuid4 minting guarantees)."""
    sessions = session_records(kg, **options)  # type: ignore[arg-type]
    return st.lists(sessions, min_size=min_size, max_size=max_size, unique_by=lambda s: s.ids.uuid)

"""2WikiMultiHopQA: corpus paragraphs as documents, gold evidence triples as facts.

Every paragraph of the corpus is a document titled with its `title`; its sentences
(`split_sentences`) are its chunks. Every distinct evidence triple `[s, p, o]` of the questions
file becomes one fact: `entity_iri(s) relation_iri(p) entity_iri(o)`, each term labelled with
its name (objects such as dates are entities too, as the triple names them). The evidence names
a subject by its paragraph title ("Ray Taylor (director)") but the same entity as an object by
its plain name ("Ray Taylor"); a name that is no title but is the title of exactly one paragraph
without its trailing "(...)" is that paragraph's entity (`TitleResolver`, counted in the
report), so multi-hop gold paths connect. A fact is anchored
in the first sentence, in text order, of the paragraph titled `s` whose text contains `o`
(case-insensitive); its subgraph hangs under that sentence. A fact with no such paragraph or
sentence is loaded without provenance and counted by reason: nothing is guessed.

Run: python -m benchmarks.importers.twowiki [--corpus F] [--questions F] --out FILE.nq
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pyoxigraph as ox

from benchmarks.importers import (
    Anchor, DatasetError, QuadWriter, Sentence, importer_main, read_json,
)
from tgsparql.asking.provenance import now
from tgsparql.rdf.iris import ExtractionIds, entity_iri, relation_iri

CORPUS: Final = ("datasets", "2wiki", "corpus.json")
QUESTIONS: Final = ("datasets", "2wiki", "questions_dev.json")
"""Where the files are under `TGSPARQL_DATA` (`benchmarks.data`)."""
AGENT: Final = ox.NamedNode("https://trustgraph.ai/agent/benchmarks-importer-2wiki")
AGENT_LABEL: Final = "benchmarks.importers.twowiki"
MODEL: Final = "2WikiMultiHopQA gold evidence (no model)"
NO_PARAGRAPH: Final = "no corpus paragraph is titled with the subject"
NOT_IN_PARAGRAPH: Final = "the paragraph does not contain the object"
NOT_IN_SENTENCE: Final = "the paragraph contains the object only across a sentence boundary"

# A sentence ends at . ! or ? (with closing quotes or brackets) before whitespace and an
# upper-case letter, digit or opening quote — unless the word ending there is an initial
# ("J.") or one of these abbreviations.
_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s+[\"'“‘(\[]?[A-Z0-9])")
_ABBREVIATIONS: Final = frozenset(
    "St Mr Mrs Ms Dr Jr Sr Mt Ft Co Inc Ltd No Vol vs Gen Col Lt Sgt Capt Rev Prof Gov Sen "
    "Rep Jan Feb Mar Apr Aug Sep Sept Oct Nov Dec U.S U.K".split()
)
_LAST_WORD = re.compile(r"(\S+)$")


def split_sentences(text: str) -> list[Sentence]:
    """The sentences of a paragraph, stripped of surrounding whitespace, with exact offsets."""
    sentences, start = [], 0
    for match in _END.finditer(text):
        word = _LAST_WORD.search(text, 0, match.start())
        last = word.group(1).rstrip(".") if word else ""
        if text[match.start()] == "." and (len(last) == 1 and last.isalpha()
                                           or last in _ABBREVIATIONS):
            continue
        sentences.append(_span(text, start, match.end()))
        start = match.end()
    sentences.append(_span(text, start, len(text)))
    return [s for s in sentences if s.text]


def _span(text: str, start: int, end: int) -> Sentence:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Sentence(start, end, text[start:end])


@dataclass(frozen=True)
class Question:
    id: str
    question_type: str
    question: str
    answer: str
    evidence: tuple[ox.Triple, ...]
    """The distinct gold triples, in the file's order."""


@dataclass
class TwoWikiImport:
    path: Path
    questions: list[Question]
    documents: int = 0
    chunks: int = 0
    facts: int = 0
    anchors: dict[ox.Triple, Anchor] = field(default_factory=dict)
    unanchored: Counter[str] = field(default_factory=Counter)
    """Facts loaded without provenance, by reason."""
    names_resolved: int = 0
    """Distinct names that stood for a disambiguated paragraph title."""


def fact_triple(s: str, p: str, o: str) -> ox.Triple:
    return ox.Triple(entity_iri(s), relation_iri(p), entity_iri(o))


_DISAMBIGUATOR = re.compile(r"\s*\([^()]*\)$")


class TitleResolver:
    """Names to the paragraph titles they stand for, where exactly one title fits."""

    def __init__(self, titles: Iterable[str]) -> None:
        self.titles = set(titles)
        by_base: dict[str, list[str]] = {}
        for title in self.titles:
            base = _DISAMBIGUATOR.sub("", title)
            if base != title:
                by_base.setdefault(base, []).append(title)
        self.by_base = {base: found[0] for base, found in by_base.items() if len(found) == 1}
        self.resolved: set[str] = set()

    def __call__(self, name: str) -> str:
        if name in self.titles or name not in self.by_base:
            return name
        self.resolved.add(name)
        return self.by_base[name]

    def triple(self, s: str, p: str, o: str) -> ox.Triple:
        return fact_triple(self(s), p, self(o))


def read_corpus(path: str | Path) -> dict[str, str]:
    data = read_json(path)
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a list of {{title, text}} paragraphs")
    corpus: dict[str, str] = {}
    for i, item in enumerate(data):
        if not (isinstance(item, dict) and isinstance(item.get("title"), str)
                and isinstance(item.get("text"), str)):
            raise DatasetError(f"{path}: paragraph {i} is not {{title: text, text: text}}")
        if item["title"] in corpus:
            raise DatasetError(f"{path}: paragraph {i}: title {item['title']!r} repeats")
        corpus[item["title"]] = item["text"]
    return corpus


def read_questions(
    path: str | Path, resolve: TitleResolver | None = None
) -> tuple[list[Question], list[tuple[str, str, str]]]:
    """The questions and the distinct evidence triples as names, in the file's order."""
    triple_of = resolve.triple if resolve is not None else fact_triple
    data = read_json(path)
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a list of questions")
    questions, names = [], {}
    for i, item in enumerate(data):
        fields = ("id", "question_type", "question", "answer")
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in fields):
            raise DatasetError(f"{path}: question {i} lacks one of {', '.join(fields)} as text")
        evidence = item.get("evidence")
        if not isinstance(evidence, list) or not all(
            isinstance(e, list) and len(e) == 3 and all(isinstance(x, str) and x.strip() for x in e)
            for e in evidence
        ):
            raise DatasetError(f"{path}: question {i}: evidence must be [s, p, o] lists of text")
        triples = {}
        for s, p, o in evidence:
            triples[triple_of(s, p, o)] = None
            names.setdefault((s, p, o), None)
        questions.append(Question(item["id"], item["question_type"], item["question"],
                                  item["answer"], tuple(triples)))
    return questions, list(names)


@dataclass(frozen=True)
class _Paragraph:
    ids: ExtractionIds
    text: str
    chunks: list[tuple[Sentence, ox.NamedNode]]


def import_twowiki(corpus_path: str | Path, questions_path: str | Path, out: str | Path,
                   started: dt.datetime | None = None) -> TwoWikiImport:
    """Write the corpus and the questions' gold triples with provenance to `out` (N-Quads)."""
    corpus = read_corpus(corpus_path)
    resolve = TitleResolver(corpus)
    questions, names = read_questions(questions_path, resolve)
    writer = QuadWriter(AGENT, AGENT_LABEL, MODEL, started or now())
    report = TwoWikiImport(Path(out), questions)

    paragraphs: dict[str, _Paragraph] = {}
    for title, text in corpus.items():
        ids = writer.document(title, text)
        chunks = [(s, writer.chunk(ids, i, s, title)) for i, s in enumerate(split_sentences(text))]
        paragraphs[title] = _Paragraph(ids, text, chunks)
        report.chunks += len(chunks)
    report.documents = len(paragraphs)

    subgraphs: dict[ox.NamedNode, tuple[_Paragraph, Sentence, list[ox.Triple]]] = {}
    seen: set[ox.Triple] = set()
    for s, p, o in names:
        triple = resolve.triple(s, p, o)
        writer.fact(triple, ((triple.subject, s), (triple.predicate, p), (triple.object, o)))
        if triple in seen:
            continue
        seen.add(triple)
        found = _anchor(paragraphs.get(s), o)
        if isinstance(found, str):
            report.unanchored[found] += 1
            continue
        paragraph, sentence, chunk = found
        report.anchors[triple] = Anchor(paragraph.ids.document, chunk)
        subgraphs.setdefault(chunk, (paragraph, sentence, []))[2].append(triple)
    report.facts = len(seen)
    report.names_resolved = len(resolve.resolved)
    for chunk, (paragraph, sentence, facts) in subgraphs.items():
        writer.subgraph(paragraph.ids, chunk, sentence, facts)
    writer.write(out)
    return report


def _anchor(paragraph: _Paragraph | None, o: str
            ) -> tuple[_Paragraph, Sentence, ox.NamedNode] | str:
    """The first sentence of the subject's paragraph containing the object, else why not."""
    if paragraph is None:
        return NO_PARAGRAPH
    needle = o.lower()
    if needle not in paragraph.text.lower():
        return NOT_IN_PARAGRAPH
    for sentence, chunk in paragraph.chunks:
        if needle in sentence.text.lower():
            return paragraph, sentence, chunk
    return NOT_IN_SENTENCE


def main(argv: list[str] | None = None) -> int:
    return importer_main(
        argv, __doc__, {"corpus": CORPUS, "questions": QUESTIONS}, import_twowiki,
        lambda report: f"{report.documents} documents, {report.chunks} chunks, {report.facts} "
        f"facts, {len(report.anchors)} anchored, {sum(report.unanchored.values())} not anchored "
        f"({dict(report.unanchored)}) -> {report.path}")


if __name__ == "__main__":
    sys.exit(main())

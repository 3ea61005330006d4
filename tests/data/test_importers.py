"""The real-data importers on our fixtures and on small slices of 2WikiMultiHopQA and Re-DocRED."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.importers import DatasetError, load
from benchmarks.importers.redocred import import_redocred, join_sentences
from benchmarks.importers.twowiki import (
    NO_PARAGRAPH, TitleResolver, fact_triple, import_twowiki, read_corpus, split_sentences,
)
from tests.conftest import FIXTURES
from tgsparql.rdf import vocab
from tgsparql.stores.store import open_store

REL_INFO = FIXTURES / "datasets" / "redocred" / "rel_info.json"


@pytest.fixture(scope="module")
def twowiki_slice(datasets: Path, tmp_path_factory: pytest.TempPathFactory
                  ) -> tuple[Path, Path, list]:
    """The first 5 questions, and the paragraphs titled with their subjects plus 20 others."""
    root = tmp_path_factory.mktemp("twowiki")
    questions = json.loads((datasets / "2wiki" / "questions_dev.json").read_text())[:5]
    corpus = json.loads((datasets / "2wiki" / "corpus.json").read_text())
    subjects = {s for q in questions for s, _, _ in q["evidence"]}
    paragraphs = [p for i, p in enumerate(corpus) if p["title"] in subjects or i < 20]
    (root / "q.json").write_text(json.dumps(questions))
    (root / "c.json").write_text(json.dumps(paragraphs))
    return root / "c.json", root / "q.json", questions


def test_split_sentences_of_a_paragraph() -> None:
    text = ("Teutberga( died 11 November 875) was a queen. She was a daughter of J. R. Boso "
            "and sister of Hucbert, abbot of St. Maurice's Abbey.  He died in 1990.")
    assert [s.text for s in split_sentences(text)] == [
        "Teutberga( died 11 November 875) was a queen.",
        "She was a daughter of J. R. Boso and sister of Hucbert, abbot of St. Maurice's Abbey.",
        "He died in 1990.",
    ]


@given(st.text(alphabet="ab .!?\nXY1\"", max_size=80))
def test_sentences_are_exact_ordered_spans(text: str) -> None:
    end = 0
    for sentence in split_sentences(text):
        assert text[sentence.start:sentence.end] == sentence.text
        assert sentence.text == sentence.text.strip() and sentence.text
        assert sentence.start >= end
        assert not text[end:sentence.start].strip()
        end = sentence.end
    assert not text[end:].strip()


def test_twowiki_slice_imports_with_exact_provenance(twowiki_slice, tmp_path: Path) -> None:
    corpus_path, questions_path, questions = twowiki_slice
    report = import_twowiki(corpus_path, questions_path, tmp_path / "tw.nq")
    corpus = read_corpus(corpus_path)
    names = {tuple(e) for q in questions for e in q["evidence"]}
    assert report.facts == len(names)
    assert report.documents == len(corpus)
    assert len(report.anchors) + sum(report.unanchored.values()) == report.facts
    assert report.anchors
    for s, _, o in names:
        anchored = fact_triple(s, _, o) in report.anchors
        assert anchored == (s in corpus and any(
            o.lower() in x.text.lower() for x in split_sentences(corpus[s])))

    store = open_store()
    load(store, report.path)
    oxs = store.oxigraph
    for triple, anchor in report.anchors.items():
        assert ox.Quad(triple.subject, triple.predicate, triple.object) in oxs
        subgraphs = [q.subject for q in oxs.quads_for_pattern(None, vocab.TG_CONTAINS, triple,
                                                              vocab.GRAPH_SOURCE)]
        assert len(subgraphs) == 1
        offset, length = (int(next(oxs.quads_for_pattern(anchor.chunk, p, None)).object.value)
                          for p in (vocab.TG_CHAR_OFFSET, vocab.TG_CHAR_LENGTH))
        document = next(oxs.quads_for_pattern(anchor.document, vocab.TG_CONTENT, None)).object.value
        chunk = next(oxs.quads_for_pattern(anchor.chunk, vocab.TG_CONTENT, None)).object.value
        assert document[offset:offset + length] == chunk
        assert triple.object in {q.subject for q in oxs.quads_for_pattern(
            None, vocab.RDFS_LABEL, None, ox.DefaultGraph())}


def test_unanchored_triples_are_loaded_without_provenance(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps([{"title": "A", "text": "A was born in 1900."}]))
    (tmp_path / "q.json").write_text(json.dumps([{
        "id": "1", "question_type": "inference", "question": "?", "answer": "x",
        "evidence": [["A", "date of birth", "1900"], ["B", "father", "A"],
                     ["A", "date of death", "1 May 1990"]]}]))
    report = import_twowiki(tmp_path / "c.json", tmp_path / "q.json", tmp_path / "o.nq")
    assert set(report.anchors) == {fact_triple("A", "date of birth", "1900")}
    assert dict(report.unanchored) == {NO_PARAGRAPH: 1,
                                       "the paragraph does not contain the object": 1}
    store = open_store()
    load(store, report.path)
    unanchored = fact_triple("B", "father", "A")
    assert ox.Quad(unanchored.subject, unanchored.predicate, unanchored.object) in store.oxigraph
    assert not list(store.oxigraph.quads_for_pattern(None, vocab.TG_CONTAINS, unanchored, None))


@pytest.mark.parametrize("content, message", [
    ("{", "not JSON"),
    ("{}", "expected a list"),
    ('[{"id": "1"}]', "question 0 lacks"),
    ('[{"id": "1", "question_type": "t", "question": "q", "answer": "a", "evidence": [["x"]]}]',
     "evidence must be"),
])
def test_bad_questions_file_is_named(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "c.json").write_text("[]")
    (tmp_path / "q.json").write_text(content)
    with pytest.raises(DatasetError, match=message):
        import_twowiki(tmp_path / "c.json", tmp_path / "q.json", tmp_path / "o.nq")
    assert not (tmp_path / "o.nq").exists()


def test_join_sentences_offsets() -> None:
    text, spans = join_sentences([["He", "won", "."], ["Yes", "!"]])
    assert text == "He won .\nYes !"
    assert [(s.start, s.end) for s in spans] == [(0, 8), (9, 14)]


def test_redocred_slice(datasets: Path, tmp_path: Path) -> None:
    docs = json.loads((datasets / "redocred" / "dev_revised.json").read_text())[:3]
    (tmp_path / "d.json").write_text(json.dumps(docs))
    report = import_redocred(tmp_path / "d.json", datasets / "redocred" / "rel_info.json",
                             tmp_path / "r.nq")
    assert report.documents == 3
    assert report.chunks == sum(len(d["sents"]) for d in docs)
    assert report.labels == sum(len(d["labels"]) for d in docs)
    assert report.without_evidence == sum(not l["evidence"] for d in docs for l in d["labels"])
    store = open_store()
    load(store, report.path)
    oxs = store.oxigraph
    for fact, evidence in report.evidence.items():
        subgraphs = {q.subject for q in oxs.quads_for_pattern(None, vocab.TG_CONTAINS, fact, None)}
        chunks = {q.object for s in subgraphs for q in oxs.quads_for_pattern(
            s, ox.NamedNode(vocab.PROV + "wasDerivedFrom"), None)}
        assert chunks == {e.chunk for e in evidence}
        for e in evidence:
            content = next(oxs.quads_for_pattern(e.chunk, vocab.TG_CONTENT, None))
            assert content.object.value == e.text
    label = next(oxs.quads_for_pattern(
        ox.NamedNode("http://www.wikidata.org/prop/direct/P17"), vocab.RDFS_LABEL, None))
    assert label.object == ox.Literal("country")


def test_redocred_unknown_relation_is_named(tmp_path: Path) -> None:
    (tmp_path / "d.json").write_text(json.dumps([{
        "title": "T", "sents": [["a"]], "vertexSet": [[{"name": "a"}]],
        "labels": [{"h": 0, "t": 0, "r": "P999999", "evidence": []}]}]))
    with pytest.raises(DatasetError, match="relation 'P999999' is not in rel_info"):
        import_redocred(tmp_path / "d.json", REL_INFO, tmp_path / "r.nq")


def test_a_plain_name_stands_for_the_one_title_it_disambiguates() -> None:
    resolve = TitleResolver(["Ray Taylor (director)", "Endangered (film)", "Endangered (song)",
                             "Oxford", "Oxford (band)"])
    assert resolve("Ray Taylor") == "Ray Taylor (director)"
    assert resolve("Endangered") == "Endangered"  # two titles fit: nothing is guessed
    assert resolve("Oxford") == "Oxford"  # a title itself
    assert resolve("Henry Otto") == "Henry Otto"
    assert resolve.resolved == {"Ray Taylor"}
    assert resolve.triple("Clancy", "director", "Ray Taylor") == fact_triple(
        "Clancy", "director", "Ray Taylor (director)"
    )

"""Citations: markers of selected edge ids found in an answer, each with its sentence."""

from __future__ import annotations

import datetime as dt

import pyoxigraph as ox
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tgsparql.asking.citations import AnswerCheck, Citation, find_citations
from tgsparql.asking.provenance import Recorder
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.stores.store import open_store

SELECTED = ["1a2b3c4d", "5e6f7a8b", "5e6f7a8b-2"]


def test_a_marker_cites_the_sentence_it_ends_and_follows_it_when_written_after_the_stop() -> None:
    text = ("Marie Curie was born in Warsaw [1a2b3c4d]. She discovered polonium. [5e6f7a8b]\n"
            "Both facts [1a2b3c4d; 5e6f7a8b-2] hold")
    found = find_citations(text, SELECTED)
    assert [(c.edge, c.sentence) for c in found.citations] == [
        (0, "Marie Curie was born in Warsaw [1a2b3c4d]."),
        (1, "She discovered polonium. [5e6f7a8b]"),
        (0, "Both facts [1a2b3c4d; 5e6f7a8b-2] hold"),
        (2, "Both facts [1a2b3c4d; 5e6f7a8b-2] hold"),
    ]
    assert found.cited == [0, 1, 2] and found.invalid_ids == []


def test_ids_of_unselected_edges_are_invalid_and_brackets_of_prose_are_no_markers() -> None:
    text = "Warsaw [1a2b3c4d, deadbeef]. See [1] and [citation needed] and [ffffffff-3]."
    found = find_citations(text, SELECTED)
    assert [c.edge for c in found.citations] == [0]
    assert found.invalid_ids == ["deadbeef", "ffffffff-3"]


def test_sentences_that_say_more_than_the_citing_ones_but_cite_nothing_are_counted() -> None:
    text = ("Warsaw. Marie Curie was born in Warsaw [1a2b3c4d]. She was a physicist.\n\n"
            "That is all; [deadbeef] nothing else. . .")
    found = find_citations(text, SELECTED)
    assert found.cited == [0]
    # the physicist, "That is all; [deadbeef]", "nothing else."; not the lead, nor the dots
    assert found.uncited_sentences == 3


def test_a_verdict_or_a_list_of_what_the_citing_sentences_give_claims_nothing_uncited() -> None:
    cited = " From the knowledge graph: Curie discovered polonium [1a2b3c4d]; radium [1a2b3c4d]."
    for lead in ("No.", "Yes.", "Polonium and radium."):
        assert find_citations(lead + cited, SELECTED).uncited_sentences == 0
    assert find_citations("No, thorium." + cited, SELECTED).uncited_sentences == 1


def test_an_answer_check_warns_of_what_a_reader_should_know() -> None:
    assert AnswerCheck(selected=3, cited=3, invalid=0, uncited_sentences=0).warnings() == []
    assert AnswerCheck(selected=0, cited=0, invalid=0, uncited_sentences=1).warnings() == []
    assert AnswerCheck(selected=7, cited=0, invalid=1, uncited_sentences=2).warnings() == [
        "the answer cites none of its 7 selected edges",
        "the answer cites 1 id that names no selected edge",
    ]
    assert AnswerCheck(selected=2, cited=1, invalid=2, uncited_sentences=1, cut=True).warnings() \
        == ["1 sentence of the answer cites no edge",
            "the answer cites 2 ids that name no selected edge",
            "the answer is cut short: it reached the model's token limit (--max-tokens) or the "
            "kept characters (--max-answer-chars)"]


def test_a_sentence_citing_an_edge_twice_is_one_citation() -> None:
    found = find_citations("Warsaw [1a2b3c4d] [1a2b3c4d].", SELECTED)
    assert found.citations == [Citation(0, "Warsaw [1a2b3c4d] [1a2b3c4d].", 0, 29)]


marker = st.lists(st.sampled_from(SELECTED + ["deadbeef", "0000000g", "1"]), min_size=1,
                  max_size=3).map(lambda ids: "[" + ", ".join(ids) + "]")

answers = st.lists(st.one_of(st.text(max_size=30), marker, st.sampled_from([". ", "; ", "\n"])),
                   max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=answers)
def test_every_citation_is_the_answer_text_at_its_offsets(text: str) -> None:
    found = find_citations(text, SELECTED)
    for citation in found.citations:
        assert citation.length > 0
        assert text[citation.offset : citation.offset + citation.length] == citation.sentence
        assert SELECTED[citation.edge] in citation.sentence
    assert all(i not in SELECTED for i in found.invalid_ids)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_hostile_answer_text_is_recorded_literally(text: str) -> None:
    answer = f"{text} [1a2b3c4d]. \"}} ; DROP ALL ; {text} [5e6f7a8b]"
    found = find_citations(answer, SELECTED)
    store = open_store()
    try:
        recorder = Recorder(store)
        ids = SessionIds.new()
        now = dt.datetime.now(dt.timezone.utc)
        recorder.write(recorder.answer(ids, None, now, found, started=now,
                                       selected=len(SELECTED)))
        graph = vocab.DEFAULT_COLLECTION.graph
        stored = {q.object.value for q in store.oxigraph.quads_for_pattern(
            None, ox.NamedNode(vocab.TG + "sentence"), None, graph)}
        assert stored == {c.sentence for c in found.citations}
        [invalid] = store.oxigraph.quads_for_pattern(
            ids.answer, ox.NamedNode(vocab.TG + "invalidCitationCount"), None, graph)
        assert invalid.object.value == str(len(found.invalid_ids))
    finally:
        store.close()

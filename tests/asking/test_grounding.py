"""Grounding: normalised label keys, question phrases, and seed entities found by label."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tgsparql.asking import grounding
from tgsparql.asking.grounding import (
    MAX_PHRASE_WORDS, RANKED_EDGES, WORD_SCAN, IndexEntry, Phrase, candidate_phrases, ground, label_keys, name_fit, name_runs,
    rebuild_label_index, update_label_index,
)
from tgsparql.asking.retrieval import RetrievalLimits, retrieve_subgraph
from tgsparql.rdf import vocab
from tgsparql.rdf.text import normalize_label
from tgsparql.stores.store import EmbeddedStore, Solution, Store, WithTemplates

EX = "http://example.org/"
RDFS_LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")

PREFIXES = """
@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
"""


def ex(name: str) -> ox.NamedNode:
    return ox.NamedNode(EX + name)


def load(store: EmbeddedStore, turtle: str) -> None:
    store.oxigraph.load(PREFIXES + turtle, format=ox.RdfFormat.TURTLE)


def indexed(store: EmbeddedStore, turtle: str) -> EmbeddedStore:
    load(store, turtle)
    update_label_index(store)
    return store


# normalize_label


def test_normalize_label_folds_case() -> None:
    assert normalize_label("MARIE Curie") == "marie curie"
    assert normalize_label("Straße") == "strasse"


def test_normalize_label_drops_punctuation_between_words() -> None:
    assert normalize_label("Curie, Marie!") == "curie marie"
    assert normalize_label("Curie's") == "curie s"
    assert normalize_label("Skłodowska-Curie (1867–1934)") == "skłodowska curie 1867 1934"


def test_normalize_label_treats_composed_and_decomposed_accents_alike() -> None:
    composed = "Ecole sup\u00e9rieure"
    decomposed = "Ecole supe\u0301rieure"
    assert composed != decomposed
    assert normalize_label(composed) == normalize_label(decomposed) == "ecole sup\u00e9rieure"


def test_normalize_label_applies_compatibility_forms() -> None:
    assert normalize_label("\uff23\uff55\uff52\uff49\uff45") == "curie"  # fullwidth letters
    assert normalize_label("\ufb01eld") == "field"  # the fi ligature


def test_normalize_label_splits_on_underscores() -> None:
    assert normalize_label("marie_curie") == "marie curie"
    assert normalize_label("__Marie__Curie__") == "marie curie"


def test_normalize_label_collapses_whitespace_runs() -> None:
    assert normalize_label("  Marie \t\n  Curie\u00a0 ") == "marie curie"


def test_normalize_label_of_punctuation_only_is_empty() -> None:
    assert normalize_label("!!! -- ???") == ""
    assert normalize_label("") == ""


@settings(max_examples=200)
@given(st.text())
def test_normalize_label_is_idempotent(text: str) -> None:
    once = normalize_label(text)
    assert normalize_label(once) == once
    assert "  " not in once
    assert once == once.strip()


# candidate_phrases


def test_candidate_phrases_are_all_ngrams_in_order() -> None:
    phrases = candidate_phrases("Marie Curie won")
    assert phrases == [
        Phrase("marie", 0, 1),
        Phrase("marie curie", 0, 2),
        Phrase("marie curie won", 0, 3),
        Phrase("curie", 1, 2),
        Phrase("curie won", 1, 3),
        Phrase("won", 2, 3),
    ]


def test_candidate_phrases_stop_at_ten_words() -> None:
    question = "one two three four five six seven eight nine ten eleven twelve"
    phrases = candidate_phrases(question)
    assert MAX_PHRASE_WORDS == 10
    assert max(len(p.key.split()) for p in phrases) == 10
    assert "one two three four five six seven eight nine ten" in {p.key for p in phrases}
    assert "one two three four five six seven eight nine ten eleven" not in {p.key for p in phrases}
    # starts 0..11 contribute min(10, words left) phrases each
    assert len(phrases) == 10 * 3 + 9 + 8 + 7 + 6 + 5 + 4 + 3 + 2 + 1


def test_candidate_phrases_drop_stopword_only_phrases() -> None:
    keys = [p.key for p in candidate_phrases("Who was the Curie")]
    assert keys == ["who was the curie", "was the curie", "the curie", "curie"]


def test_candidate_phrases_of_stopwords_only_question_are_empty() -> None:
    assert candidate_phrases("Who is it and what was that?") == []
    assert candidate_phrases("") == []
    assert candidate_phrases("?!...") == []


def test_candidate_phrases_are_normalised() -> None:
    keys = {p.key for p in candidate_phrases("MARIE curie's")}
    assert keys == {"marie", "marie curie", "marie curie s", "curie", "curie s"}


# ground


CURIES = """
ex:marie rdfs:label "Marie Curie" .
ex:pierre rdfs:label "Pierre Curie" .
ex:curie rdfs:label "Curie" .
ex:polonium rdfs:label "Polonium" .
ex:discovered rdfs:label "discovered" .
ex:marie ex:discovered ex:polonium .
ex:marie ex:spouse ex:pierre .
"""


def test_ground_matches_case_and_punctuation_insensitively(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, CURIES)
    result = ground(tgsparql_store, "What did MARIE curie's lab find?", entity_limit=50)
    assert result.seeds == [ex("marie")]
    assert result.concepts == ["marie curie", "lab", "find"]


def test_ground_matches_labels_with_accents_in_either_composition(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, 'ex:ens rdfs:label "\u00c9cole normale" .')
    result = ground(tgsparql_store, "Where is the E\u0301COLE NORMALE?", entity_limit=50)
    assert result.seeds == [ex("ens")]
    assert result.concepts == ["\u00e9cole normale"]


def test_ground_prefers_the_longest_match(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, CURIES)
    result = ground(tgsparql_store, "Who was Pierre Curie?", entity_limit=50)
    assert result.seeds == [ex("pierre")]
    assert result.concepts == ["pierre curie"]


def test_ground_uses_a_shorter_match_where_no_longer_one_covers_it(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, CURIES)
    result = ground(tgsparql_store, "Did Pierre Curie know the Curie unit?", entity_limit=50)
    assert result.seeds == [ex("pierre"), ex("curie")]
    assert result.concepts == ["pierre curie", "curie", "know", "unit"]


def test_ground_seeds_follow_question_order(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, CURIES)
    result = ground(tgsparql_store, "polonium and marie curie", entity_limit=50)
    assert result.seeds == [ex("polonium"), ex("marie")]
    assert result.concepts == ["polonium", "marie curie"]


def test_ground_never_seeds_a_predicate(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, CURIES)
    result = ground(tgsparql_store, "What discovered polonium?", entity_limit=50)
    assert result.seeds == [ex("polonium")]
    assert ex("discovered") not in result.seeds
    # the predicate's word was looked for but found no entity, so it stays an uncovered concept
    assert result.concepts == ["polonium", "discovered"]


def test_ground_respects_entity_limit(tgsparql_store: EmbeddedStore) -> None:
    indexed(
        tgsparql_store,
        "".join(f'ex:curie{i} rdfs:label "Curie" .\n' for i in range(5)),
    )
    everything = ground(tgsparql_store, "Curie", entity_limit=50)
    assert everything.seeds == [ex(f"curie{i}") for i in range(5)]
    limited = ground(tgsparql_store, "Curie", entity_limit=2)
    assert limited.seeds == [ex("curie0"), ex("curie1")]
    assert limited.concepts == ["curie"]


def test_ground_entity_limit_counts_across_phrases(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, CURIES)
    result = ground(tgsparql_store, "polonium, Marie Curie, Pierre Curie", entity_limit=2)
    assert result.seeds == [ex("polonium"), ex("marie")]
    assert result.concepts == ["polonium", "marie curie", "pierre curie"]


def test_ground_without_matches_returns_content_words_as_concepts(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, CURIES)
    result = ground(tgsparql_store, "What is the boiling point of radon? Radon!", entity_limit=50)
    assert result.seeds == []
    assert result.concepts == ["boiling", "point", "radon"]


def test_ground_of_stopwords_only_question_is_empty(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, CURIES)
    result = ground(tgsparql_store, "who was it?", entity_limit=50)
    assert result.seeds == []
    assert result.concepts == []


def test_ground_needs_the_label_index(tgsparql_store: EmbeddedStore) -> None:
    load(tgsparql_store, CURIES)
    assert ground(tgsparql_store, "Marie Curie", entity_limit=50).seeds == []
    update_label_index(tgsparql_store)
    assert ground(tgsparql_store, "Marie Curie", entity_limit=50).seeds == [ex("marie")]


def test_ground_ignores_labels_in_named_graphs(tgsparql_store: EmbeddedStore) -> None:
    tgsparql_store.oxigraph.add(
        ox.Quad(ex("hidden"), RDFS_LABEL, ox.Literal("Hidden Thing"), ex("some-graph"))
    )
    assert update_label_index(tgsparql_store) == 0
    assert ground(tgsparql_store, "hidden thing", entity_limit=50).seeds == []


# label index


def test_update_label_index_is_incremental(tgsparql_store: EmbeddedStore) -> None:
    load(tgsparql_store, CURIES)
    assert update_label_index(tgsparql_store) == 5
    assert update_label_index(tgsparql_store) == 0
    tgsparql_store.oxigraph.add(ox.Quad(ex("radium"), RDFS_LABEL, ox.Literal("Radium")))
    assert update_label_index(tgsparql_store) == 1
    assert update_label_index(tgsparql_store) == 0
    assert ground(tgsparql_store, "radium", entity_limit=50).seeds == [ex("radium")]


def test_update_label_index_indexes_a_new_label_of_a_known_entity(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, CURIES)
    tgsparql_store.oxigraph.add(
        ox.Quad(ex("marie"), RDFS_LABEL, ox.Literal("Maria Skłodowska", language="pl"))
    )
    assert update_label_index(tgsparql_store) == 1
    assert ground(tgsparql_store, "maria skłodowska", entity_limit=50).seeds == [ex("marie")]
    assert ground(tgsparql_store, "marie curie", entity_limit=50).seeds == [ex("marie")]


def test_update_label_index_skips_labels_without_words(tgsparql_store: EmbeddedStore) -> None:
    load(tgsparql_store, 'ex:odd rdfs:label "?!" . ex:even rdfs:label "Even" .')
    assert update_label_index(tgsparql_store) == 1


def test_update_label_index_reports_progress_per_batch(tgsparql_store: EmbeddedStore) -> None:
    load(tgsparql_store, CURIES)
    seen: list[int] = []
    assert update_label_index(tgsparql_store, progress=seen.append) == 5
    assert seen == [5]


def test_update_label_index_writes_batch_by_batch(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tgsparql.asking.grounding.INDEX_BATCH", 2)
    load(tgsparql_store, CURIES)
    seen: list[int] = []
    assert update_label_index(tgsparql_store, progress=seen.append) == 5
    assert seen == [2, 2, 1]
    assert update_label_index(tgsparql_store) == 0
    assert ground(tgsparql_store, "marie curie", entity_limit=50).seeds == [ex("marie")]


def test_update_label_index_reads_every_pending_name_before_it_writes(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No read of the store is left open while the index is written: such a read holds what
    the writes replace, and its memory grows with the labels written."""
    load(tgsparql_store, CURIES)
    events: list[str] = []
    stream, write = tgsparql_store.stream, grounding.write_index_entries

    def streamed(name: str, /, **params: Any) -> Iterator[Solution]:
        for row in stream(name, **params):
            events.append(f"row of {name}")
            yield row
        events.append(f"{name} read")

    def written(store: Store, entries: Iterable[IndexEntry]) -> None:
        events.append("write")
        write(store, entries)

    monkeypatch.setattr(tgsparql_store, "stream", streamed)
    monkeypatch.setattr(tgsparql_store, "drop_caches", lambda: events.append("drop caches"))
    monkeypatch.setattr(grounding, "write_index_entries", written)
    monkeypatch.setattr(grounding, "INDEX_BATCH", 2)
    assert update_label_index(tgsparql_store) == 5
    pending = "label_index_pending"
    assert events[events.index(f"row of {pending}"):] == (
        [f"row of {pending}"] * 5 + [f"{pending} read"] + ["write"] * 3)


@pytest.mark.parametrize(("past", "dropped"), [(0, True), (grounding.DROP_CACHES_PAST, False)])
def test_update_label_index_lets_go_of_what_reading_cached_before_it_writes_many_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, past: int, dropped: bool
) -> None:
    """The read of every label fills caches that grow with the KG; many names to write would
    add their memory to those, a few would not be worth reopening the store for."""
    monkeypatch.setattr(grounding, "DROP_CACHES_PAST", past)
    with EmbeddedStore(tmp_path / "kg") as store:
        load(store, CURIES)
        drops: list[None] = []
        drop = store.drop_caches
        monkeypatch.setattr(store, "drop_caches", lambda: drops.append(drop()))
        assert update_label_index(store) == 5
        assert bool(drops) == dropped
        assert ground(store, "marie curie", entity_limit=50).seeds == [ex("marie")]


def test_rebuild_label_index_drops_stale_keys(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, CURIES)
    tgsparql_store.oxigraph.remove(ox.Quad(ex("polonium"), RDFS_LABEL, ox.Literal("Polonium")))
    # an incremental update does not notice a removed label
    assert update_label_index(tgsparql_store) == 0
    assert ground(tgsparql_store, "polonium", entity_limit=50).seeds == [ex("polonium")]
    assert rebuild_label_index(tgsparql_store) == 4
    assert ground(tgsparql_store, "polonium", entity_limit=50).seeds == []
    assert ground(tgsparql_store, "marie curie", entity_limit=50).seeds == [ex("marie")]
    assert update_label_index(tgsparql_store) == 0


def test_rebuild_removes_the_old_index_batch_by_batch_and_leaves_only_the_new_one(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed(tgsparql_store, CURIES)
    index_graph = vocab.GRAPH_LABEL_INDEX
    before = set(tgsparql_store.oxigraph.quads_for_pattern(None, None, None, index_graph))
    stale = ox.Quad(ex("gone"), ox.NamedNode(vocab.TG + "labelKey"), ox.Literal("gone"), index_graph)
    tgsparql_store.oxigraph.add(stale)
    monkeypatch.setattr("tgsparql.asking.grounding.REMOVE_BATCH", 3)
    assert rebuild_label_index(tgsparql_store) == 5
    assert set(tgsparql_store.oxigraph.quads_for_pattern(None, None, None, index_graph)) == before


def test_a_name_given_by_two_predicates_is_indexed_once(tgsparql_store: EmbeddedStore) -> None:
    load(tgsparql_store, '''
        ex:marie rdfs:label "Marie Curie" ;
            <http://www.w3.org/2004/02/skos/core#altLabel> "Marie Curie", "Madame Curie" ;
            <http://schema.org/alternateName> "Madame Curie" .
    ''')
    assert update_label_index(tgsparql_store) == 2


def test_rebuild_label_index_on_a_fresh_store_indexes_everything(
    tgsparql_store: EmbeddedStore
) -> None:
    load(tgsparql_store, CURIES)
    assert rebuild_label_index(tgsparql_store) == 5
    assert rebuild_label_index(tgsparql_store) == 5
    assert ground(tgsparql_store, "Pierre Curie", entity_limit=50).seeds == [ex("pierre")]


@pytest.mark.parametrize(
    "question",
    [
        "marie curie",
        "MARIE CURIE",
        "Marie-Curie",
        "marie_curie",
        "  marie   curie  ",
        "Marie Curie?!",
    ],
)
def test_ground_finds_the_entity_in_every_spelling(
    tgsparql_store: EmbeddedStore, question: str
) -> None:
    indexed(tgsparql_store, CURIES)
    assert ground(tgsparql_store, question, entity_limit=50).seeds == [ex("marie")]


# names written shorter than the KG writes them


def test_name_runs_are_capitalised_words_with_connectors_inside() -> None:
    runs = name_runs("Where was Maurice, Prince of Orange's father born, and Edsel Ford?")
    assert [(run.words, run.start, run.end) for run in runs] == [
        (("maurice", "prince", "of", "orange"), 2, 6),
        (("edsel", "ford"), 10, 12),
    ]


def test_name_runs_leave_out_the_first_word_and_the_rest_of_a_name_it_starts() -> None:
    assert name_runs("Edsel Ford was born where?") == []
    assert [run.words for run in name_runs("Who is the father of Sirikit?")] == [("sirikit",)]
    assert [run.words for run in name_runs("who is the father of the Duke")] == [("duke",)]
    assert [run.words for run in name_runs("who is the Duke of Kent")] == [("duke", "of", "kent")]


def test_ground_finds_a_name_written_without_its_middle_names(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, """
        ex:edsel rdfs:label "Edsel Bryant Ford" .
        ex:henry rdfs:label "Henry Ford" .
        ex:ford rdfs:label "Ford Edsel" .
    """)
    grounding = ground(tgsparql_store, "Where did Edsel Ford's father work?", 50)
    assert grounding.seeds == [ex("edsel")]


def test_a_name_match_needs_every_word_in_order_and_few_extra(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, """
        ex:long rdfs:label "Lady Helen Marina Lucy Rose Mary Taylor" .
        ex:near rdfs:label "Lady Helen Marina Lucy Taylor" .
        ex:other rdfs:label "Taylor Helen Lady" .
    """)
    grounding = ground(tgsparql_store, "Who is the grandfather of Lady Helen Taylor?", 50)
    assert grounding.seeds == [ex("near")]


def test_an_exact_label_match_wins_over_a_name_match(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, """
        ex:exact rdfs:label "Edsel Ford" .
        ex:longer rdfs:label "Edsel Bryant Ford" .
    """)
    assert ground(tgsparql_store, "Where did Edsel Ford work?", 50).seeds == [ex("exact")]


def test_name_matches_keep_the_closest_few(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, """
        ex:a rdfs:label "John Adam Smith" .
        ex:b rdfs:label "John Bede Smith" .
        ex:c rdfs:label "John Carl Dee Smith" .
    """)
    seeds = ground(tgsparql_store, "Where was John Smith born?", 50).seeds
    assert seeds == [ex("a"), ex("b")]


def test_an_index_of_an_older_version_is_rebuilt_on_update(tgsparql_store: EmbeddedStore) -> None:
    load(tgsparql_store, 'ex:edsel rdfs:label "Edsel Bryant Ford" .')
    tgsparql_store.update(
        "INSERT DATA { GRAPH <urn:graph:index> { <http://example.org/edsel> "
        "<https://trustgraph.ai/ns/labelKey> \"edsel bryant ford\" ; "
        "<https://trustgraph.ai/ns/indexedLabel> \"Edsel Bryant Ford\" } }"
    )
    assert update_label_index(tgsparql_store) == 1
    assert ground(tgsparql_store, "Where did Edsel Ford work?", 50).seeds == [ex("edsel")]
    assert update_label_index(tgsparql_store) == 0


def test_connectors_inside_a_name_need_not_agree(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, 'ex:marie rdfs:label "Marie of Namur" .')
    seeds = ground(tgsparql_store, "Who is the grandmother of Marie De Namur?", 50).seeds
    assert seeds == [ex("marie")]


class CountingStore(WithTemplates):
    """The store, counting the queries grounding sends."""

    def __init__(self, inner: EmbeddedStore) -> None:
        self.inner, self.queries = inner, 0
        self.texts: list[str] = []
        self.dialect = inner.dialect
        self.round_trips = inner.round_trips

    def select(self, query: str, **kwargs):  # type: ignore[no-untyped-def]
        self.queries += 1
        self.texts.append(query)
        return self.inner.select(query, **kwargs)


def test_grounding_asks_for_name_candidates_in_a_second_query_only_when_a_run_is_uncovered(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, """
        ex:edsel rdfs:label "Edsel Bryant Ford" .
        ex:radium rdfs:label "radium" ; rdfs:comment "an element" .
        ex:radium ex:discoveredBy ex:edsel .
        ex:river rdfs:label "Ledran River" .
    """)
    counting = CountingStore(tgsparql_store)
    grounding = ground(counting, "Did Edsel Ford find radium?", 50)  # type: ignore[arg-type]
    assert counting.queries == 2
    assert grounding.seeds == [ex("radium"), ex("edsel")]
    rdfs = "http://www.w3.org/2000/01/rdf-schema#"
    assert [p.value for p in grounding.schema_predicates or ()] == [rdfs + "comment", rdfs + "label"]

    covered = CountingStore(tgsparql_store)
    grounding = ground(covered, "What flows into the Ledran River?", 50)  # type: ignore[arg-type]
    assert (covered.queries, grounding.seeds) == (1, [ex("river")])


def test_a_name_probe_reads_its_rarest_word_first_and_no_more_of_a_common_one(
    tgsparql_store: EmbeddedStore
) -> None:
    """A word many thousand names hold ("John") is only looked up for the holders of the
    rarer one, and finds what a join of all holders found: a probe of the words reads at most
    WORD_SCAN holders of one. A shortened name beside it ("Gwen") is still found among them
    all."""
    many = 3 * WORD_SCAN
    indexed(tgsparql_store, "\n".join(
        f'ex:john{i} rdfs:label "John Doe{i}" .' for i in range(many)
    ) + '\nex:target rdfs:label "John Zebedee Smith" . ex:gwendolyn rdfs:label "Gwendolyn John" .')
    counting = CountingStore(tgsparql_store)
    grounding = ground(counting, "Where was John Zebedee born?", 50)  # type: ignore[arg-type]
    assert grounding.seeds == [ex("target")]
    assert ground(tgsparql_store, "Where was Gwen John born?", 50).seeds == [ex("gwendolyn")]
    probe_query = next(text for text in counting.texts if "labelWord" in text)
    scans = re.findall(r'\?entity tg:labelWord ("\w+") \}\s*\}\s*LIMIT (\d+)', probe_query)
    assert scans == [('"zebedee"', str(WORD_SCAN))]
    assert re.findall(r'FILTER EXISTS \{ GRAPH <urn:graph:index> \{ \?entity tg:labelWord ("\w+")',
                      probe_query) == ['"john"']


def test_a_hub_candidate_is_ranked_from_no_more_than_ranked_edges_of_its_edges(
    tgsparql_store: EmbeddedStore
) -> None:
    """Of two people a name fits alike, the one with more neighbours ranks first, as when every
    edge was counted; a hub's many thousand edges are read RANKED_EDGES + 1 at most."""
    hub_edges = 5 * RANKED_EDGES
    indexed(tgsparql_store, "\n".join(
        f"ex:ada ex:member ex:group{i} ." for i in range(hub_edges)
    ) + """
        ex:ada rdfs:label "Ada Quill" .
        ex:bob rdfs:label "Bob Quill" ; ex:member ex:group1, ex:group2 .
    """)
    counting = CountingStore(tgsparql_store)
    grounding = ground(counting, "Where did Quill live?", 50)  # type: ignore[arg-type]
    assert grounding.seeds[:1] == [ex("ada")]
    assert (grounding.names[0].rank, grounding.names[0].candidates) == (1, 2)
    ranking = next(text for text in counting.texts if "?edges" in text)
    hub = f"<{EX}ada>"
    reads = re.findall(
        rf"\{{ {hub} \?predicate \?neighbour \}} UNION \{{ \?neighbour \?predicate {hub} \}}"
        r" BIND\(\d+ AS \?i\) \}\s*LIMIT (\d+)", ranking)
    assert reads and set(reads) == {str(RANKED_EDGES + 1)}
    assert ranking.count(hub) == 2 * len(reads)


def test_a_question_without_phrases_asks_nothing(tgsparql_store: EmbeddedStore) -> None:
    counting = CountingStore(tgsparql_store)
    grounding = ground(counting, "who was it?", 50)  # type: ignore[arg-type]
    assert (grounding.seeds, grounding.schema_predicates, counting.queries) == ([], None, 0)


def test_ground_ignores_accents_the_question_leaves_out(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, 'ex:zola rdfs:label "Émile Zola" .')
    result = ground(tgsparql_store, "Where was Emile Zola born?", entity_limit=50)
    assert result.seeds == [ex("zola")]
    assert result.concepts[0] == "emile zola"


def test_ground_finds_a_title_by_its_name_without_the_disambiguating_suffix(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, 'ex:ray rdfs:label "Ray Taylor (director)" .')
    result = ground(tgsparql_store, "When was Ray Taylor born?", entity_limit=50)
    assert result.seeds == [ex("ray")]


@pytest.mark.parametrize(
    "alias",
    [
        "<http://www.w3.org/2004/02/skos/core#altLabel>",
        "<http://schema.org/alternateName>",
        "<https://schema.org/alternateName>",
        "rdfs:label",
    ],
)
def test_ground_finds_an_entity_by_any_name_the_kg_gives_it(
    tgsparql_store: EmbeddedStore, alias: str
) -> None:
    indexed(tgsparql_store, f'ex:bono rdfs:label "Paul David Hewson"@en ; {alias} "Bono"@fr .')
    result = ground(tgsparql_store, "Which band did Bono found?", entity_limit=50)
    assert result.seeds == [ex("bono")]


def test_a_name_in_another_word_order_matches_when_none_keeps_the_order(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, 'ex:edsel rdfs:label "Ford, Edsel Bryant" .')
    grounding = ground(tgsparql_store, "Where did Edsel Ford work?", 50)
    assert grounding.seeds == [ex("edsel")]


def test_the_index_records_the_stems_of_label_words_for_ranking(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, 'ex:born rdfs:label "place of birth" .')
    stems_ = {
        row["stem"].value
        for row in tgsparql_store.select(
            "SELECT ?stem WHERE { GRAPH <urn:graph:index> "
            "{ <http://example.org/born> <https://trustgraph.ai/ns/labelStem> ?stem } }"
        )
    }
    assert stems_ == {"place", "birth"}


def test_the_words_of_a_grounded_name_ask_for_no_relation(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, """
        ex:film rdfs:label "Dying God" . ex:death rdfs:label "date of death" .
        ex:release rdfs:label "publication date" . ex:film ex:release ex:year .
        ex:film ex:death ex:other .
    """)
    grounding = ground(tgsparql_store, "When did Dying God come out?", 50)
    assert grounding.seeds == [ex("film")]
    assert "death" in grounding.stems  # "Dying" still finds neighbours named with it
    assert "death" not in (grounding.relations or ())
    asked = ground(tgsparql_store, "When did the director of Dying God die?", 50)
    assert "death" in (asked.relations or ())  # "die" asks, though "Dying" names


def test_an_in_law_asks_for_the_spouse_so_a_hub_keeps_that_edge(
    tgsparql_store: EmbeddedStore
) -> None:
    """"Mugain's mother-in-law" is her spouse's mother: the spouse edge is what the question
    walks first, though no word of it says "spouse", and among a hub's edges it must be kept."""
    noise = " ".join(f"ex:mugain ex:r{i} ex:p{i} . ex:p{i} rdfs:label \"Person {i}\" . "
                     f"ex:r{i} rdfs:label \"relation {i}\" ." for i in range(150))
    indexed(tgsparql_store, noise + """
        ex:mugain rdfs:label "Mugain" ; ex:spouse ex:diarmait ; ex:mother ex:other .
        ex:diarmait rdfs:label "Diarmait" ; ex:mother ex:ness . ex:ness rdfs:label "Ness" .
        ex:other rdfs:label "Eithne" .
        ex:spouse rdfs:label "spouse" . ex:mother rdfs:label "mother" .
    """)
    grounding = ground(tgsparql_store, "Who is Mugain's mother-in-law?", 50)
    assert "spous" in (grounding.relations or ())
    edges = retrieve_subgraph(tgsparql_store, grounding.seeds,
                              RetrievalLimits(max_path_length=2, triple_limit=3),
                              grounding.schema_predicates, grounding.stems, grounding.relations)
    assert {ox.Triple(ex("mugain"), ex("spouse"), ex("diarmait")),
            ox.Triple(ex("diarmait"), ex("mother"), ex("ness"))} <= set(edges)


def test_an_aside_after_a_name_that_grounded_seeds_nothing_of_its_own(
    tgsparql_store: EmbeddedStore
) -> None:
    """"Camille (1926 Feature Film)": the aside tells which Camille, and neither the year nor
    the singer a song's aside names is a thing the question asks about."""
    indexed(tgsparql_store, """
        ex:camille rdfs:label "Camille (1926 feature film)" . ex:year rdfs:label "1926" .
        ex:song rdfs:label "Am I Wrong" . ex:singer rdfs:label "Etienne de Crecy" .
    """)
    film = ground(tgsparql_store, "Where did the composer of Camille (1926 Feature Film) die?",
                  50)
    assert film.seeds == [ex("camille")]
    song = ground(tgsparql_store, "Who sang Am I Wrong (Etienne De Crecy Song)?", 50)
    assert song.seeds == [ex("song")]
    # an aside after a name that grounded nothing, or one that stands alone, still seeds
    alone = ground(tgsparql_store, "Who sang Am I Right (Etienne De Crecy Song)?", 50)
    assert alone.seeds == [ex("singer")]
    assert ground(tgsparql_store, "What happened in (1926)?", 50).seeds == [ex("year")]


@pytest.mark.parametrize(("question", "seeds"), [
    ("What nationality is Lord Frederick Cavendish's father?", ["frederick"]),
    ("Who is Sir Frederick Cavendish?", ["frederick"]),
    ("Who is the Lord?", ["lord"]),  # a title that is all the question names still seeds
    ("Who did the Lord of Frederick Cavendish meet?", ["lord", "frederick"]),
])
def test_a_title_right_before_a_name_that_was_found_is_part_of_that_name(
    tgsparql_store: EmbeddedStore, question: str, seeds: list[str]
) -> None:
    """Real KGs label entities "Lord" or "Sir": "Lord Frederick Cavendish-Bentinck" names one
    person, not that entity beside him."""
    indexed(tgsparql_store, """
        ex:lord rdfs:label "Lord" . ex:sir rdfs:label "Sir" .
        ex:frederick rdfs:label "Frederick Cavendish" .
    """)
    assert ground(tgsparql_store, question, 50).seeds == [ex(seed) for seed in seeds]


@pytest.mark.parametrize(("question", "relations", "kinds"), [
    ("Where did Camille die?", {"death"}, ("place",)),
    ("When did Camille die?", {"death"}, ("date",)),
    ("What is the place of death of Camille?", {"death", "place"}, ()),
    ("Who is the mother of Camille?", {"mother"}, ()),
    ("Who is the mother of When Harry Met Sally?", {"mother"}, ()),  # a name's "When" asks not
])
def test_what_the_question_word_asks_for_is_told_apart_from_the_relations(
    tgsparql_store: EmbeddedStore, question: str, relations: set[str], kinds: tuple[str, ...]
) -> None:
    """"Where" asks for a place: retrieval ranks the predicates that say so first at the end
    of a path (`Grounding.kinds`), not at the seed, where the question's own words lead."""
    indexed(tgsparql_store, """
        ex:camille rdfs:label "Camille" . ex:pod rdfs:label "place of death" .
        ex:dod rdfs:label "date of death" . ex:mother rdfs:label "mother" .
        ex:camille ex:pod ex:x ; ex:dod ex:y ; ex:mother ex:z .
        ex:film rdfs:label "When Harry Met Sally" .
    """)
    grounding = ground(tgsparql_store, question, 50)
    assert set(grounding.relations or ()) == relations
    assert grounding.kinds == kinds


# tolerant name matching: initials, short forms, a missing or misspelt name, ordinals, asides,
# joined words, the name before a comma


def test_label_keys_leave_out_a_parenthetical_aside_anywhere() -> None:
    keys = label_keys("Eustace III (died c. 1125) was the count of Boulogne")
    assert "eustace iii was the count of boulogne" in keys


def test_label_keys_join_the_words_a_hyphen_or_apostrophe_joins() -> None:
    assert "ariiotare teriimaevarua iii" in label_keys("Ari'i-Otare Terii-maeva-rua III")
    assert label_keys("Marie Curie") == ["marie curie"]


def test_name_runs_keep_an_ordinal_inside_a_name() -> None:
    runs = name_runs("Who is the grandfather of Richard Beauchamp, 1St Earl Of Worcester?")
    assert runs[0].words == ("richard", "beauchamp", "1st", "earl", "of", "worcester")
    assert [run.words for run in name_runs("Was Anne Boleyn 2nd in line?")] == [("anne", "boleyn")]


def test_name_runs_give_the_part_before_a_comma_too() -> None:
    runs = name_runs("Who is Robert Petre, 8Th Baron Petre's grandmother?")
    assert [(run.words, run.part_of) for run in runs] == [
        (("robert", "petre", "8th", "baron", "petre"), None),
        (("robert", "petre"), 0),
    ]


def test_a_name_made_of_connector_words_is_still_a_name() -> None:
    runs = name_runs("Who is the father-in-law of Từ Dụ?")
    assert [run.names for run in runs] == [["tu", "du"]]


@settings(max_examples=200)
@given(st.lists(st.sampled_from("anna marie curie pierre ford edsel zola emile".split()),
                min_size=2, max_size=5, unique=True))
def test_a_label_fits_its_own_names_exactly(names: list[str]) -> None:
    assert name_fit(names, " ".join(names)) == (0, 0, False, 0)


def test_name_fit_ranks_missing_then_shortened_then_order_then_extra_words() -> None:
    assert name_fit(["edsel", "ford"], "edsel bryant ford") == (0, 0, False, 1)
    assert name_fit(["edsel", "ford"], "ford edsel") == (0, 0, True, 0)
    assert name_fit(["gwen", "graham"], "gwendolyn graham") == (0, 1, False, 0)
    assert name_fit(["thaddeus", "p", "mott"], "thaddeus phelps mott") == (0, 1, False, 0)
    assert name_fit(["joanna", "elisabeth", "gottorp"], "johanna elisabeth of gottorp") == (
        1, 0, False, 1)


@pytest.mark.parametrize("names, key", [
    (["gw", "graham"], "gwendolyn graham"),  # too short to stand for a longer word
    (["joanna", "elisabeth"], "johanna elisabeth"),  # two names cannot miss one
    (["joanna", "elisabeth", "gottorp"], "marie elisabeth of gottorp"),  # not spelt alike
    (["joanna", "elisabeth", "gottorp"], "johanna maria elisabeth gottorp"),  # two words more
    (["umbrella", "coup", "cow"], "the umbrella coup"),  # a left-out name at the edge
    (["anna", "marie", "curie", "ford"], "anna curie"),  # two missing
    (["lady", "helen", "taylor"], "lady helen marina lucy rose mary taylor"),  # four extra
])
def test_name_fit_refuses(names: list[str], key: str) -> None:
    assert name_fit(names, key) is None


@pytest.mark.parametrize("label, question", [
    ("Thaddeus Phelps Mott", "Where did Thaddeus P. Mott die?"),
    ("Gwendolyn Graham", "Where does Gwen Graham's father work?"),
    ("Johanna Elisabeth of Holstein-Gottorp", "Who married Joanna Elisabeth Of Holstein-Gottorp?"),
    ("William Louis of Anhalt-Harzgerode", "Where did William Louis, Prince Of Anhalt-Harzgerode die?"),
    ("Richard de Beauchamp, 1st Earl of Worcester", "Who was Richard Beauchamp, 1St Earl Of Worcester?"),
    ("Eustace III (died c. 1125) was the count of Boulogne", "Who is Eustace Iii, Count Of Boulogne's uncle?"),
    ("Ari'i-Otare Terii-maeva-rua III", "Who is Teriimaevarua Iii's grandmother?"),
    ("Empress Dowager Từ Dụ", "Who is the father-in-law of Từ Dụ?"),
    ("Robert James Petre", "Who is Robert Petre, 8Th Baron Petre's grandmother?"),
])
def test_ground_finds_a_name_written_another_way(
    tgsparql_store: EmbeddedStore, label: str, question: str
) -> None:
    indexed(tgsparql_store, f"""
        ex:it rdfs:label {ox.Literal(label)} .
        ex:other rdfs:label "Marie Curie" , "Graham Greene" , "Lady Anne Petre" .
    """)
    assert ground(tgsparql_store, question, 50).seeds == [ex("it")]


def test_a_name_written_in_full_wins_over_a_shortened_one(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, """
        ex:full rdfs:label "Gwen Rhys Graham" .
        ex:short rdfs:label "Gwendolyn Graham" .
    """)
    assert ground(tgsparql_store, "Where does Gwen Graham work?", 50).seeds == [ex("full")]


def test_the_whole_run_wins_over_its_part_before_a_comma(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, """
        ex:baron rdfs:label "Robert Petre, 8th Baron Petre" .
        ex:robert rdfs:label "Robert James Petre" .
    """)
    # the whole name equals a label: no name matching at all
    assert ground(tgsparql_store, "Who is Robert Petre, 8Th Baron Petre's mother?", 50).seeds == [
        ex("baron")]
    tgsparql_store.oxigraph.clear()
    indexed(tgsparql_store, """
        ex:baron rdfs:label "Robert Edward Petre, 8th Baron Petre" .
        ex:robert rdfs:label "Robert James Petre" .
    """)
    assert ground(tgsparql_store, "Who is Robert Petre, 8Th Baron Petre's mother?", 50).seeds == [
        ex("baron")]


def test_a_run_found_by_name_drops_the_single_words_it_holds(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, """
        ex:full rdfs:label "William Louis of Anhalt-Harzgerode" .
        ex:william rdfs:label "William" .
        ex:prince rdfs:label "Prince" .
        ex:delft rdfs:label "Delft" .
    """)
    seeds = ground(tgsparql_store, "Did William Louis, Prince Of Anhalt-Harzgerode's father "
                   "die in Delft?", 50).seeds
    assert seeds == [ex("delft"), ex("full")]


def test_two_names_joined_by_and_are_not_one_name_missing_a_word(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, """
        ex:coup rdfs:label "The Umbrella Coup" .
        ex:cow rdfs:label "The Cow and I" .
    """)
    seeds = ground(tgsparql_store, "Do The Umbrella Coup and The Cow And I share a director?", 50)
    assert seeds.seeds == [ex("coup"), ex("cow")]


def test_tolerant_grounding_asks_for_every_run_at_once(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, 'ex:g rdfs:label "Gwendolyn Graham" .')
    counting = CountingStore(tgsparql_store)
    question = "Did Gwen Graham meet Joanna Elisabeth Of Holstein-Gottorp or Thaddeus P. Mott?"
    assert ground(counting, question, 50).seeds == [ex("g")]  # type: ignore[arg-type]
    # the concepts, the candidates of every uncovered run by its words, then by a shortened
    # name for every run none of those fits
    assert counting.queries == 3


@settings(max_examples=100)
@given(st.lists(st.sampled_from("Anna Marie Curie Pierre Ford Edsel Zola Emile of".split()),
                min_size=0, max_size=30))
def test_a_run_asks_a_bounded_number_of_probes(names: list[str]) -> None:
    for run in name_runs("Was " + " ".join(names) + " here?"):
        assert len(run.probes) <= 1 + MAX_PHRASE_WORDS
        assert all(probe.words for probe in run.probes)


# names as people say them: one word, a title left out, names joined by "and", lower case


def test_a_single_capitalised_word_inside_the_sentence_is_a_name() -> None:
    assert [(run.said, run.words) for run in name_runs("Why did Murry's wife die?")] == [
        ("Murry", ("murry",))]
    assert name_runs("Vermeer was born where?") == []  # the first word starts the sentence
    assert name_runs("Was Li born here?") != []  # two letters make a name
    assert name_runs("Was J born here?") == []  # an initial alone does not


def test_a_surname_or_given_name_is_the_first_or_last_word_of_the_plain_label(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, """
        ex:murry rdfs:label "John Middleton Murry" .
        ex:pearl rdfs:label "Girl with a Murry Earring (Murry)" .
        ex:middle rdfs:label "Middleton Murry Society of Letters" .
    """)
    assert ground(tgsparql_store, "Why did Murry's wife die?", 50).seeds == [ex("murry")]
    assert ground(tgsparql_store, "Was John a writer?", 50).seeds == [ex("murry")]


def test_a_name_the_question_fits_better_wins_over_a_better_connected_one(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, """
        ex:spouse rdfs:label "spouse" . ex:member rdfs:label "member of" .
        ex:john rdfs:label "John Murry" ; ex:spouse ex:katherine .
        ex:joe rdfs:label "Joe Murry" ; ex:member ex:a , ex:b , ex:c .
        ex:katherine rdfs:label "Katherine Mansfield" .
    """)
    grounding = ground(tgsparql_store, "Why did Murry's wife die?", 50)
    assert [(m.entity, m.rank, m.candidates) for m in grounding.names] == [
        (ex("john"), 1, 2), (ex("joe"), 2, 2)]
    # nothing in the question fits either: the better connected one first
    grounding = ground(tgsparql_store, "What did Murry do?", 50)
    assert [m.entity for m in grounding.names] == [ex("joe"), ex("john")]


def test_a_label_that_is_the_single_name_wins(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, 'ex:louis rdfs:label "Louis" . ex:xiv rdfs:label "Louis Bonaparte" .')
    grounding = ground(tgsparql_store, "Who was Louis's father?", 50)
    assert (grounding.seeds, grounding.names) == ([ex("louis")], ())


def test_names_joined_by_and_are_looked_for_apart(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, """
        ex:aivar rdfs:label "Aivar Kuusmaa" .
        ex:andy rdfs:label "Andy Summers" .
    """)
    seeds = ground(tgsparql_store, "Who was born first out of Aivar and Andy Summers?", 50).seeds
    assert seeds == [ex("andy"), ex("aivar")]


def test_a_name_is_found_without_its_title(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, """
        ex:frederick rdfs:label "Frederick Cavendish-Bentinck" .
        ex:lord rdfs:label "Lord" .
    """)
    grounding = ground(tgsparql_store, "What nationality is Lord Frederick's father?", 50)
    assert grounding.seeds == [ex("frederick")]


def test_a_lower_case_question_offers_its_spans_as_names(tgsparql_store: EmbeddedStore) -> None:
    indexed(tgsparql_store, """
        ex:edsel rdfs:label "Edsel Bryant Ford" .
        ex:death rdfs:label "Death" .
    """)
    question = "where was the place of death of edsel ford's father?"
    assert "edsel ford" in [run.said for run in name_runs(question)]
    assert ground(tgsparql_store, question, 50).seeds == [ex("death"), ex("edsel")]
    # a single lower-case word that is a common word is no name
    assert ground(tgsparql_store, "where was ford born?", 50).seeds == []


def test_a_lower_case_question_takes_a_rare_word_alone_for_a_name(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, 'ex:brigham rdfs:label "Brigham Young" . '
                            'ex:curie rdfs:label "Marie Curie" .')
    assert [run.said for run in name_runs("curie was born in paris?")] == ["curie"]
    # a word in parentheses tells which of the name before it is meant
    assert "prokofiev" not in [run.said for run in name_runs("who wrote the opera (prokofiev)?")]
    assert ground(tgsparql_store, "where was curie born?", 50).seeds == [ex("curie")]
    assert ground(tgsparql_store, "where was young born?", 50).seeds == []
    assert ground(tgsparql_store, "Where was Young born?", 50).seeds == [ex("brigham")]


def test_a_lower_case_common_word_offered_as_the_other_option_of_a_name_is_a_name(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, 'ex:kandel rdfs:label "Denise Kandel" . '
                            'ex:bruce rdfs:label "Bruce Robinson" .')
    question = "who is younger, denise kandel or bruce?"
    assert "bruce" in [run.said for run in name_runs(question)]
    assert set(ground(tgsparql_store, question, 50).seeds) == {ex("kandel"), ex("bruce")}
    assert "bruce" in [run.said for run in name_runs("are bruce and kandel the same age?")]
    # a choice between two common words offers no name
    assert name_runs("was he older or younger?") == []
    assert ground(tgsparql_store, "was bruce older or younger?", 50).seeds == []


def test_a_lower_case_common_word_that_owns_what_follows_is_a_name(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, 'ex:adam rdfs:label "Robert Adam" . ex:film rdfs:label "Film" .')
    question = "where was the place of death of adam's father?"
    assert "adam" in [run.said for run in name_runs(question)]
    assert ground(tgsparql_store, question, 50).seeds == [ex("adam")]
    assert "adam" in [run.said for run in name_runs("who was adam\u2019s father?")]
    # a determiner makes it a noun: "film" is offered as no name
    assert name_runs("who is the film's director?") == []


def test_a_common_word_in_many_labels_does_not_flood_a_lower_case_question(
    tgsparql_store: EmbeddedStore
) -> None:
    films = "\n".join(f'ex:film{i} rdfs:label "Film {i}" .' for i in range(60))
    indexed(tgsparql_store, films + 'ex:kubrick rdfs:label "Stanley Kubrick" .')
    assert ground(tgsparql_store, "which film did kubrick direct?", 50).seeds == [ex("kubrick")]


def test_a_name_no_label_equals_is_looked_for_in_one_request_after_the_concepts(
    tgsparql_store: EmbeddedStore
) -> None:
    indexed(tgsparql_store, 'ex:vermeer rdfs:label "Johannes Vermeer" .')
    counting = CountingStore(tgsparql_store)
    grounding = ground(counting, "When was Vermeer born?", 50)  # type: ignore[arg-type]
    assert (grounding.seeds, counting.queries) == ([ex("vermeer")], 2)


def test_a_title_longer_than_any_concept_is_still_found_as_a_name(
    tgsparql_store: EmbeddedStore
) -> None:
    title = "Una Prostituta Al Servizio Del Pubblico E In Regola Con Le Leggi Dello Stato"
    indexed(tgsparql_store, f"ex:film rdfs:label {ox.Literal(title)} .")
    assert ground(tgsparql_store, f"When did {title} come out?", 50).seeds == [ex("film")]


@pytest.mark.parametrize(("question", "relations"), [
    ("Who is Tlilpotoncatzin's uncle?", {"father", "mother", "sibl"}),
    ("Who is the stepmother of Tlilpotoncatzin?", {"father", "spous"}),
    ("Who is the father of Tlilpotoncatzin?", {"father", "mother", "spous"}),
    # two hops cannot reach a parent's place of birth through the other parent
    ("Where was Tlilpotoncatzin's father born?", {"father", "birth"}),
    ("Which country is Tlilpotoncatzin's father from?", {"father", "countri"}),
])
def test_kin_reached_through_a_parent_asks_retrieval_for_each_step(
    tgsparql_store: EmbeddedStore, question: str, relations: set[str]
) -> None:
    """An uncle is a parent's sibling, a father no edge names the mother's spouse: where the
    kin is all the question asks for, retrieval ranks each step's predicates, or a seed's one
    "father" edge is cut among look-alikes; otherwise the steps ask for nothing."""
    indexed(tgsparql_store, """
        ex:t rdfs:label "Tlilpotoncatzin" . ex:father rdfs:label "father" .
        ex:mother rdfs:label "mother" . ex:sibling rdfs:label "sibling" .
        ex:spouse rdfs:label "spouse" . ex:birth rdfs:label "place of birth" .
        ex:country rdfs:label "country of citizenship" .
        ex:t ex:father ex:f ; ex:mother ex:m . ex:f ex:sibling ex:u ; ex:spouse ex:m ;
            ex:birth ex:p ; ex:country ex:c .
    """)
    grounding = ground(tgsparql_store, question, 50)
    assert grounding.seeds == [ex("t")]
    assert set(grounding.relations or ()) == relations
    kin = {"father", "mother", "sibl", "spous"}
    assert set(grounding.stems) & kin == relations & kin

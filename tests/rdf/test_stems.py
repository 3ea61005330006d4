"""Stems: a question's words meet the labels that say the same thing in another form."""

from __future__ import annotations

import pytest

from tgsparql.rdf.stems import kin_through, stands_in, stem, through_parents


@pytest.mark.parametrize(
    ("noun", "verb"),
    [
        ("discoverer", "discovered"),
        ("founder", "founded"),
        ("director", "directed"),
        ("creator", "created"),
        ("inventor", "invented"),
        ("writer", "wrote"),  # the verb's silent e comes back
        ("painter", "painting"),
        ("builder", "built"),
    ],
)
def test_an_agent_noun_meets_its_verb(noun: str, verb: str) -> None:
    assert stem(noun) == stem(verb)


@pytest.mark.parametrize(("word", "kin"), [("mother", "grandmother"), ("father", "paternal")])
def test_a_word_a_lemma_names_is_no_agent_noun(word: str, kin: str) -> None:
    assert stem(word) == stem(kin) == word


@pytest.mark.parametrize("word", ["owner", "water", "river"])
def test_a_short_stem_ending_in_er_is_left_as_it_is(word: str) -> None:
    assert stem(word) == word


def test_agent_nouns_of_other_verbs_stay_apart() -> None:
    assert stem("discoverer") != stem("director")
    assert stem("founder") != stem("finder")


@pytest.mark.parametrize("word", ["founded", "established", "founder"])
def test_founding_meets_the_inception_a_kg_states(word: str) -> None:
    assert stem(word) == stem("inception")


def test_kin_a_word_names_through_a_parent() -> None:
    assert kin_through("uncles") == kin_through("uncle") == (
        ("father", "sibling"), ("mother", "sibling"))
    assert kin_through("brother") == ()
    # "uncle" alone stems as "sibling", "stepmother" as "spouse": the step through the parent
    # must come first; "father" is a relation of its own
    assert [stands_in(word) for word in ("uncle", "aunt", "stepmother", "father")] == [
        True, True, True, False]
    assert through_parents("aunt") == ["father", "sibl", "mother"]
    assert through_parents("father") == ["mother", "spous"]
    assert through_parents("brother") == []

"""Parsing the IRIs people give the commands (tgsparql.rdf.iris): as written, or pasted from a
report, a Turtle file or a SPARQL query, in angle brackets."""

from __future__ import annotations

import pytest

from tgsparql.rdf.iris import SessionIds, pasted_iri

UUID = "f95e3c41-fbc3-4227-ba0e-dc74f98ceb63"
SESSION = f"urn:trustgraph:session:{UUID}"


@pytest.mark.parametrize("given", [
    SESSION, f"<{SESSION}>", f"  <{SESSION}>\n", f"< {SESSION} >", UUID, f" {UUID} ",
])
def test_a_session_is_named_by_its_iri_in_or_out_of_angle_brackets_or_by_its_uuid(
    given: str
) -> None:
    assert SessionIds.from_session_iri(given) == SessionIds(UUID)


@pytest.mark.parametrize("given", [f"<{SESSION}", f"{SESSION}>", f"<<{SESSION}>>", "<>", ""])
def test_anything_else_is_no_session(given: str) -> None:
    with pytest.raises(ValueError, match="not a session IRI"):
        SessionIds.from_session_iri(given)


@pytest.mark.parametrize(("given", "iri"), [
    ("https://trustgraph.ai/shapes/Session", "https://trustgraph.ai/shapes/Session"),
    ("<https://trustgraph.ai/shapes/Session>", "https://trustgraph.ai/shapes/Session"),
    (" <urn:x> ", "urn:x"),
    ("<", "<"),
])
def test_one_pair_of_angle_brackets_and_the_space_around_are_taken_off(given: str,
                                                                      iri: str) -> None:
    assert pasted_iri(given) == iri

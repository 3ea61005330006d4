"""The session page's reading of the answer: each cited sentence found where it stands."""

from __future__ import annotations

from tgsparql.record.readback import AnswerCitation
from tgsparql.record.session_view import passages


def test_citations_are_placed_by_offset_and_survive_a_changed_answer() -> None:
    cite = AnswerCitation
    text = "A b. C d. A b."
    placed = passages(text, [cite("urn:c:0", 0, "A b.", 10, 4),
                             cite("urn:c:1", 2, "A b.", 10, 4),
                             cite("urn:c:2", 1, "gone.", 0, 5)])
    assert [(p.text, [c.edge_index for c in p.citations]) for p in placed] == [
        ("A b. C d. ", []), ("A b.", [0, 2])]
    moved = passages(text, [cite("urn:c:0", 0, "C d.", 99, 4)])
    assert [p.text for p in moved] == ["A b. ", "C d.", " A b."]
    assert "".join(p.text for p in passages(text, [])) == text

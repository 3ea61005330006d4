"""The picture's labels: wrapped to its boxes, never cut short without a mark."""

from __future__ import annotations

from tgsparql.record.picture import LINE_CHARS, MAX_LINES, wrap


def test_wrapping_breaks_between_words_and_inside_a_word_only_where_it_must() -> None:
    assert wrap("a " * 10) == ("a a a a a a a a a a",)
    word = "x" * (LINE_CHARS * 2 + 3)
    lines = wrap(f"see {word} end")
    assert len(lines) == 3 and all(len(line) == LINE_CHARS for line in lines[:2])
    assert "".join(lines) == f"see {word} end".replace(" ", "", 1).replace(" ", "")  \
        or " ".join(lines).replace(" ", "") == f"see{word}end"
    cut = wrap("word " * 200)
    assert len(cut) == MAX_LINES and cut[-1].endswith("…")
    assert wrap("") == ("",)

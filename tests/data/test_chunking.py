"""Pages and chunks: exact spans of the document text, cut where a reader would cut."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tgsparql.data.chunking import Chunk, ChunkingError, Page, chunk_document, split_pages

TEXT = st.lists(
    st.sampled_from(list("ab .,!?\n\t\f\u00e9\u2028") + ["Sk\u0142o", "\U0001f600", ". "]),
    max_size=200,
).map("".join)


def test_a_text_without_form_feeds_is_one_page() -> None:
    assert split_pages("one page only") == [Page(1, 0, 13)]


def test_form_feeds_separate_pages_and_belong_to_none() -> None:
    text = "first\fsecond\f\fthird"
    pages = split_pages(text)
    assert pages == [Page(1, 0, 5), Page(2, 6, 12), Page(3, 13, 13), Page(4, 14, 19)]
    assert [text[p.start : p.end] for p in pages] == ["first", "second", "", "third"]


def test_a_short_page_is_one_chunk_without_its_surrounding_whitespace() -> None:
    pages, chunks = chunk_document("  Hello world.  \n", 100, 10)
    assert pages == [Page(1, 0, 17)]
    assert chunks == [Chunk(1, 0, 2, 14, "Hello world.")]


def test_chunks_are_cut_after_a_sentence_end_when_there_is_one() -> None:
    text = "Marie was born in Warsaw. She moved to Paris in 1891 to study."
    _, chunks = chunk_document(text, 40, 0)
    assert [c.text for c in chunks] == [
        "Marie was born in Warsaw.",
        "She moved to Paris in 1891 to study.",
    ]
    assert [(c.start, c.length) for c in chunks] == [(0, 25), (26, 36)]


def test_without_a_sentence_end_chunks_are_cut_at_whitespace() -> None:
    _, chunks = chunk_document("alpha beta gamma delta epsilon", 12, 0)
    assert [c.text for c in chunks] == ["alpha beta", "gamma delta", "epsilon"]


def test_a_word_longer_than_the_size_is_cut_at_the_size() -> None:
    _, chunks = chunk_document("abcdefghij", 4, 0)
    assert [c.text for c in chunks] == ["abcd", "efgh", "ij"]


def test_overlap_starts_the_next_chunk_at_a_word_inside_the_previous_one() -> None:
    text = "one two three four five six seven eight nine ten"
    _, chunks = chunk_document(text, 20, 8)
    assert [c.text for c in chunks] == [
        "one two three four",
        "four five six seven",
        "seven eight nine ten",
    ]


def test_chunks_are_indexed_per_page_and_never_cross_a_form_feed() -> None:
    text = "Page one text.\fPage two, first part. Page two, second part."
    _, chunks = chunk_document(text, 25, 0)
    assert [(c.page, c.index, c.text) for c in chunks] == [
        (1, 0, "Page one text."),
        (2, 0, "Page two, first part."),
        (2, 1, "Page two, second part."),
    ]
    assert all(text[c.start : c.end] == c.text for c in chunks)


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1), (5, 7)])
def test_settings_that_cannot_progress_are_refused(size: int, overlap: int) -> None:
    with pytest.raises(ChunkingError, match="chunk"):
        chunk_document("text", size, overlap)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(1, 60), st.data())
def test_chunks_are_exact_bounded_ordered_spans_covering_every_visible_character(
    text: str, size: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    pages, chunks = chunk_document(text, size, overlap)
    assert "".join(text[p.start : p.end] for p in pages) == text.replace("\f", "")
    covered: set[int] = set()
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert 0 < chunk.length <= size
        assert not chunk.text[0].isspace() and not chunk.text[-1].isspace()
        page = pages[chunk.page - 1]
        assert page.start <= chunk.start < chunk.end <= page.end
        covered.update(range(chunk.start, chunk.end))
    for page in pages:
        in_page = [c for c in chunks if c.page == page.number]
        assert [c.index for c in in_page] == list(range(len(in_page)))
        assert all(a.start < b.start and a.end < b.end for a, b in zip(in_page, in_page[1:]))
    visible = {i for i, ch in enumerate(text) if not ch.isspace()}
    assert visible <= covered
    if overlap == 0:
        assert all(a.end <= b.start for a, b in zip(chunks, chunks[1:]))

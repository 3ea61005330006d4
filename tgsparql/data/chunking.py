"""Pages and chunks of a document, as exact character spans of its text.

Offsets count Python characters (Unicode code points) from the start of the document, so
`text[chunk.start:chunk.end] == chunk.text` always holds and a trace can point at the very
words a fact came from. Pages are the form-feed-separated parts of a text (one page when it has
none); chunks never cross a page, never start or end with whitespace, and are cut, in order of
preference, after a sentence end, at whitespace, or (for a run of text with neither) at the size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

FORM_FEED: Final = "\f"
DEFAULT_CHUNK_SIZE: Final = 2000
DEFAULT_CHUNK_OVERLAP: Final = 200
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)")
_WHITESPACE = re.compile(r"\s+")


class ChunkingError(ValueError):
    """Chunk settings that cannot make progress."""


@dataclass(frozen=True)
class Page:
    number: int
    """1-based."""
    start: int
    end: int


@dataclass(frozen=True)
class Chunk:
    page: int
    """The number of the page it lies in."""
    index: int
    """0-based, within its page."""
    start: int
    end: int
    text: str

    @property
    def length(self) -> int:
        return self.end - self.start


def split_pages(text: str) -> list[Page]:
    """The spans between form feeds; the form feeds belong to no page."""
    pages, start = [], 0
    for number, part in enumerate(text.split(FORM_FEED), start=1):
        pages.append(Page(number, start, start + len(part)))
        start += len(part) + len(FORM_FEED)
    return pages


def check_settings(size: int, overlap: int) -> None:
    if size < 1:
        raise ChunkingError(f"chunk size must be at least 1, not {size}")
    if not 0 <= overlap < size:
        raise ChunkingError(f"chunk overlap must be at least 0 and below the chunk size {size}, "
                            f"not {overlap}")


def chunk_document(
    text: str, size: int = DEFAULT_CHUNK_SIZE, overlap: int = DEFAULT_CHUNK_OVERLAP
) -> tuple[list[Page], list[Chunk]]:
    """The pages of `text` and the chunks of every page, in document order."""
    check_settings(size, overlap)
    pages = split_pages(text)
    chunks = [chunk for page in pages for chunk in _chunk_page(text, page, size, overlap)]
    return pages, chunks


def _chunk_page(text: str, page: Page, size: int, overlap: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    covered = page.start  # where the last chunk ended; one reaching no further is not kept
    position = _skip_space(text, page.start, page.end)
    while position < page.end:
        limit = position + size
        cut = page.end if limit >= page.end else _cut(text, position, limit, covered)
        end = _trim_end(text, position, cut)
        if end > covered:
            chunks.append(Chunk(page.number, len(chunks), position, end, text[position:end]))
            covered = end
        if _skip_space(text, cut, page.end) >= page.end:
            break
        position = _next_start(text, position, cut, overlap, page.end)
    return chunks


def _cut(text: str, start: int, limit: int, covered: int) -> int:
    """Where a chunk from `start` of at most `limit - start` characters should end.

    The last sentence end of the window's second half, else its last whitespace, else the
    limit; a boundary at or before `covered` would only repeat the previous chunk.
    """
    floor = max(start + (limit - start) // 2, covered)
    sentence_ends = [
        floor + m.end() for m in _SENTENCE_END.finditer(text[floor : limit + 1])
        if floor + m.end() <= limit
    ]
    if sentence_ends and sentence_ends[-1] > covered:
        return sentence_ends[-1]
    spaces = [m.start() for m in _WHITESPACE.finditer(text, start + 1, limit + 1)]
    if spaces and spaces[-1] > covered:
        return spaces[-1]
    return limit


def _next_start(text: str, start: int, cut: int, overlap: int, page_end: int) -> int:
    """The start of the next chunk: `overlap` characters back from the cut, at a word start."""
    if overlap == 0:
        return _skip_space(text, cut, page_end)
    back = max(cut - overlap, start + 1)
    space = _WHITESPACE.search(text, back, cut)
    position = space.end() if space is not None else back
    if position >= cut:
        position = back
    return _skip_space(text, position, page_end)


def _skip_space(text: str, position: int, end: int) -> int:
    while position < end and text[position].isspace():
        position += 1
    return position


def _trim_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end

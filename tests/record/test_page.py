"""The session's HTML: text of the data's that holds bidi controls is an isolate on the page."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from tgsparql.asking.grounding import update_label_index
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.rdf.vocab import DEFAULT_COLLECTION
from tgsparql.record.page import FSI, PDI, isolated, render_session
from tgsparql.record.session_view import session_view
from tgsparql.stores.store import Store

OVERRIDE = "\u202e"
EMBEDDINGS = "\u202a\u202b\u202d\u202e"  # LRE, RLE, LRO, RLO
OPENERS = "\u2066\u2067\u2068"
BIDI = st.sampled_from([*EMBEDDINGS, "\u202c", *OPENERS, PDI, "\u200e", "\u200f", "\u061c"])


def unclosed_at_end(text: str) -> tuple[list[str], int]:
    """Per Unicode's rules X1–X6a: the embeddings left open at the end, and the isolate depth;
    a PDI closes its isolate and every embedding opened inside it."""
    stack: list[list[str]] = [[]]
    for char in text:
        if char in OPENERS:
            stack.append([])
        elif char == PDI and len(stack) > 1:
            stack.pop()
        elif char in EMBEDDINGS:
            stack[-1].append(char)
        elif char == "\u202c" and stack[-1]:
            stack[-1].pop()
    return stack[0], len(stack) - 1


@given(st.lists(st.one_of(BIDI, st.text(max_size=3)), max_size=12).map("".join))
def test_an_isolated_text_leaves_nothing_open_after_it(text: str) -> None:
    shown = isolated(text)
    assert unclosed_at_end(shown) == ([], 0)
    # nothing of the text's closes the isolate before its end
    if shown != text:
        assert shown.startswith(FSI) and unclosed_at_end(shown[:-1])[1] == 1
        assert shown.replace(FSI, "", 1)[:-1].replace(PDI, "") == text.replace(PDI, "")


def test_plain_text_is_printed_as_it_is() -> None:
    assert isolated("Marie Curie — born in — Warsaw") == "Marie Curie — born in — Warsaw"


def test_a_label_with_an_override_turns_no_text_of_the_page_around_it(
    tgsparql_store: Store
) -> None:
    tgsparql_store.update(
        'INSERT DATA { <urn:curie> <http://www.w3.org/2000/01/rdf-schema#label> "Marie Curie" . '
        '<urn:curie> <urn:bornIn> <urn:warsaw> . '
        '<urn:bornIn> <http://www.w3.org/2000/01/rdf-schema#label> "born in" . '
        f'<urn:warsaw> <http://www.w3.org/2000/01/rdf-schema#label> "{OVERRIDE}wasraW" }}')
    update_label_index(tgsparql_store)
    rag = GraphRag(tgsparql_store, OfflineBackend())
    session = list(rag.query("Where was Marie Curie born?", stream=True))[0].explain_id
    page = render_session(session_view(tgsparql_store, DEFAULT_COLLECTION, session))
    assert page.count(OVERRIDE) >= 2  # the edge list, the picture, the answer
    assert unclosed_at_end(page) == ([], 0)
    for found in re.finditer(OVERRIDE, page):
        assert unclosed_at_end(page[:found.start()])[1] >= 1, "an override outside an isolate"

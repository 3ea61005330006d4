"""Reading the selector's JSONL: tolerant of what LLMs write, exact about what it keeps."""

from __future__ import annotations

import json
import time

import pyoxigraph as ox
from hypothesis import given, settings
from hypothesis import strategies as st

from tgsparql.asking.grounding import ground, update_label_index
from tgsparql.asking.labels import edge_id, get_labelgraph
from tgsparql.asking.retrieval import RetrievalLimits, retrieve_subgraph
from tgsparql.asking.selection import SelectedEdge, parse_selection
from tgsparql.stores.store import EmbeddedStore

EX = "http://example.org/"


def ex(name: str) -> ox.NamedNode:
    return ox.NamedNode(EX + name)


def triple(n: int) -> ox.Triple:
    return ox.Triple(
        ex(f"s{n}"),
        ex("p"),
        ox.Literal(str(n), datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")),
    )


IDS = ["0a1b2c3d", "4e5f6a7b", "8c9d0e1f", "8c9d0e1f-2"]
URI_MAP = {edge: triple(n) for n, edge in enumerate(IDS)}
A, B, C, D = IDS


def line(edge: object, reasoning: object = None, **extra: object) -> str:
    obj: dict[str, object] = {"id": edge}
    if reasoning is not None:
        obj["reasoning"] = reasoning
    obj.update(extra)
    return json.dumps(obj, ensure_ascii=False)


def picked(text: str) -> list[tuple[str, str]]:
    return [(edge.id, edge.reasoning) for edge in parse_selection(text, URI_MAP).edges]


def test_plain_jsonl_is_parsed_in_order_with_the_original_triples() -> None:
    text = "\n".join([line(B, "second fact"), line(A, "first fact")])
    result = parse_selection(text, URI_MAP)
    assert result.edges == [
        SelectedEdge(B, URI_MAP[B], "second fact"),
        SelectedEdge(A, URI_MAP[A], "first fact"),
    ]
    assert result.invalid_ids == []
    assert result.skipped_lines == 0
    assert result.duplicates == 0


def test_code_fences_are_stripped() -> None:
    for fence in ("```json", "```", "```jsonl", "  ```JSON  "):
        text = f"{fence}\n{line(A, 'x')}\n{line(C, 'y')}\n```\n"
        result = parse_selection(text, URI_MAP)
        assert [(e.id, e.reasoning) for e in result.edges] == [(A, "x"), (C, "y")]
        assert result.skipped_lines == 0


def test_prose_lines_around_the_jsonl_are_skipped_and_counted() -> None:
    text = "\n".join(
        [
            "Sure! Here are the relevant edges:",
            "",
            line(A, "names the discoverer"),
            "and also this one, which gives the year:",
            line(B, "gives the year"),
            "Let me know if you need more.",
        ]
    )
    result = parse_selection(text, URI_MAP)
    assert [(e.id, e.reasoning) for e in result.edges] == [
        (A, "names the discoverer"),
        (B, "gives the year"),
    ]
    assert result.skipped_lines == 3


def test_prose_before_an_object_on_the_same_line_is_ignored() -> None:
    text = f"1. Edge: {line(A, 'first')}\n- {line(B, 'second')} <- this one"
    assert picked(text) == [(A, "first"), (B, "second")]


def test_a_fenced_block_wrapped_in_prose() -> None:
    text = f"Selected:\n```json\n{line(D, 'why')}\n```\nDone."
    result = parse_selection(text, URI_MAP)
    assert [(e.id, e.reasoning) for e in result.edges] == [(D, "why")]
    assert result.skipped_lines == 2


def test_trailing_commas_after_objects_are_tolerated() -> None:
    assert picked(f"{line(A, 'x')},\n{line(B, 'y')},") == [(A, "x"), (B, "y")]


def test_broken_lines_are_skipped_and_the_rest_is_kept() -> None:
    text = "\n".join(
        [
            line(A, "good"),
            '{"id": "' + B + '", "reasoning": "missing brace"',
            '{"id": ' + B + "}",
            "{not json at all}",
            line(C, "also good"),
        ]
    )
    result = parse_selection(text, URI_MAP)
    assert [(e.id, e.reasoning) for e in result.edges] == [(A, "good"), (C, "also good")]
    assert result.skipped_lines == 3


def test_truncated_output_keeps_the_complete_lines() -> None:
    full = "\n".join([line(A, "one"), line(B, "two"), line(C, "three")])
    for cut in range(len(full) + 1):
        text = full[:cut]
        result = parse_selection(text, URI_MAP)
        complete = [ln for ln in text.split("\n") if _is_json(ln)]
        assert len(result.edges) == len(complete)
        assert [e.id for e in result.edges] == [A, B, C][: len(complete)]


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_unknown_ids_are_dropped_and_listed_in_order() -> None:
    text = "\n".join(
        [line("ffffffff", "made up"), line(A, "real"), line("0a1b2c3d-9"), line("ffffffff")]
    )
    result = parse_selection(text, URI_MAP)
    assert [(e.id, e.reasoning) for e in result.edges] == [(A, "real")]
    assert result.invalid_ids == ["ffffffff", "0a1b2c3d-9", "ffffffff"]
    assert result.skipped_lines == 0


def test_ids_are_matched_exactly_not_by_prefix_or_case() -> None:
    text = "\n".join([line(A.upper()), line(A[:6]), line(B + "-2"), line(D)])
    result = parse_selection(text, URI_MAP)
    assert [e.id for e in result.edges] == [D]
    assert result.invalid_ids == [A.upper(), A[:6], B + "-2"]


def test_duplicate_ids_are_kept_once_with_the_first_reasoning() -> None:
    text = "\n".join([line(A, "first"), line(B, "b"), line(A, "second"), line(A, "third")])
    result = parse_selection(text, URI_MAP)
    assert [(e.id, e.reasoning) for e in result.edges] == [(A, "first"), (B, "b")]
    assert result.duplicates == 2
    assert result.invalid_ids == []


def test_empty_output_selects_nothing() -> None:
    for text in ("", "\n", "   \n\t\n", "```\n```"):
        result = parse_selection(text, URI_MAP)
        assert result.edges == []
        assert result.invalid_ids == []
        assert result.skipped_lines == 0
        assert result.duplicates == 0


def test_objects_without_a_string_id_are_skipped() -> None:
    text = "\n".join(
        [
            json.dumps({"id": 12345678, "reasoning": "number"}),
            json.dumps({"id": None}),
            json.dumps({"id": [A]}),
            json.dumps({"edge": A, "reasoning": "wrong key"}),
            json.dumps([A, B]),
            json.dumps(A),
            line(B, "ok"),
        ]
    )
    result = parse_selection(text, URI_MAP)
    assert [(e.id, e.reasoning) for e in result.edges] == [(B, "ok")]
    assert result.skipped_lines == 6
    assert result.invalid_ids == []


def test_non_string_reasoning_becomes_its_json_text() -> None:
    text = "\n".join(
        [
            line(A, {"score": 0.5, "why": "naïve"}),
            line(B, ["one", "two"]),
            line(C, 3),
            line(D, True),
        ]
    )
    assert picked(text) == [
        (A, '{"score": 0.5, "why": "naïve"}'),
        (B, '["one", "two"]'),
        (C, "3"),
        (D, "true"),
    ]


def test_missing_or_null_reasoning_is_empty() -> None:
    assert picked(line(A)) == [(A, "")]
    assert picked('{"id": "%s", "reasoning": null}' % B) == [(B, "")]


def test_several_objects_on_one_line_amid_prose_are_all_kept() -> None:
    text = f"I pick {line(A, 'first')} and also {line(B, 'second')}, then {{broken"
    assert picked(text) == [(A, "first"), (B, "second")]


def test_extra_keys_are_ignored() -> None:
    assert picked(line(A, "r", score=0.9, label="Marie")) == [(A, "r")]


def test_a_json_array_of_objects_on_one_line() -> None:
    text = json.dumps([{"id": A, "reasoning": "x"}, {"id": "nope"}, {"id": B}, {"id": 7}])
    result = parse_selection(text, URI_MAP)
    assert [(e.id, e.reasoning) for e in result.edges] == [(A, "x"), (B, "")]
    assert result.invalid_ids == ["nope"]


def test_a_json_array_after_prose_on_one_line() -> None:
    text = "Answer: " + json.dumps([{"id": C, "reasoning": "c"}])
    assert picked(text) == [(C, "c")]


def test_ids_with_surrounding_whitespace_are_trimmed() -> None:
    text = "\n".join([line(f"  {A}\t", "padded"), line(f"\n{B} ")])
    result = parse_selection(text, URI_MAP)
    assert [(e.id, e.reasoning) for e in result.edges] == [(A, "padded"), (B, "")]


def test_windows_line_ends() -> None:
    assert picked(f"{line(A, 'x')}\r\n{line(B, 'y')}\r\n") == [(A, "x"), (B, "y")]


def test_unicode_line_separators_inside_reasoning_do_not_split_the_line() -> None:
    reasoning = "first\u2028second\u2029third\x85fourth"
    result = parse_selection(line(A, reasoning) + "\n" + line(B, "next"), URI_MAP)
    assert [(e.id, e.reasoning) for e in result.edges] == [(A, reasoning), (B, "next")]
    assert result.skipped_lines == 0


def test_reasoning_is_kept_byte_exact() -> None:
    reasoning = 'quotes " and \\ backslash, braces } { and """ triple, tab\t, emoji \U0001f9ea'
    assert picked(line(A, reasoning)) == [(A, reasoning)]


def test_deeply_nested_junk_is_skipped() -> None:
    text = "[" * 100_000 + "]" * 100_000 + "\n" + "{" * 50_000 + "\n" + line(A, "ok")
    result = parse_selection(text, URI_MAP)
    assert [e.id for e in result.edges] == [A]
    assert result.skipped_lines == 2


def huge_output(lines_count: int) -> tuple[str, dict]:
    """LLM output of well-formed, prose, unknown-id and truncated lines in turn, over 5000 ids."""
    ids = [f"{n:08x}" for n in range(5000)]
    uri_map = {edge: triple(n) for n, edge in enumerate(ids)}
    lines = []
    for n in range(lines_count):
        kind = n % 4
        if kind == 0:
            lines.append(line(ids[n % 5000], f"reason {n}"))
        elif kind == 1:
            lines.append(f"prose line {n} without any object")
        elif kind == 2:
            lines.append(line(f"unknown-{n}", "nope"))
        else:
            lines.append('{"id": "' + ids[n % 5000] + '", "reasoning": "trunc')
    return "\n".join(lines), uri_map


def test_huge_output_is_counted_exactly_in_time_linear_in_its_size() -> None:
    text, uri_map = huge_output(200_000)
    assert len(text) > 5_000_000
    ids = list(uri_map)
    started = time.process_time()
    result = parse_selection(text, uri_map)
    large = time.process_time() - started
    # 50 000 well-formed lines over 5000 ids: n % 5000 for n = 0, 4, 8, ... hits 1250 ids
    assert len(result.edges) == 1250
    assert result.edges[0] == SelectedEdge(ids[0], uri_map[ids[0]], "reason 0")
    assert result.edges[1] == SelectedEdge(ids[4], uri_map[ids[4]], "reason 4")
    assert result.duplicates == 50_000 - 1250
    assert len(result.invalid_ids) == 50_000
    assert result.invalid_ids[0] == "unknown-2"
    assert result.skipped_lines == 100_000
    # ten times the output costs about ten times the CPU (a quadratic parse costs a hundred);
    # CPU time, not wall time, so that a loaded machine does not move the ratio
    small_text, small_map = huge_output(20_000)
    started = time.process_time()
    parse_selection(small_text, small_map)
    small = max(time.process_time() - started, 1e-3)
    assert large / small < 40, (large, small)


def test_one_huge_line_is_parsed() -> None:
    reasoning = "x" * 5_000_000
    assert picked("prefix " + line(A, reasoning) + " suffix") == [(A, reasoning)]


# property: any known ids mixed with junk

_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
junk_lines = st.text(
    alphabet=st.characters(blacklist_characters="{`" + _LINE_BREAKS, blacklist_categories=("Cs",)),
    min_size=1,
    max_size=40,
).filter(lambda s: s.strip() != "")
reasonings = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=200, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.sampled_from(IDS), reasonings), max_size=12),
    junk=st.lists(junk_lines, max_size=12),
    ascii_only=st.booleans(),
    data=st.data(),
)
def test_known_ids_survive_any_junk_in_first_seen_order(
    pairs: list[tuple[str, str]], junk: list[str], ascii_only: bool, data: st.DataObject
) -> None:
    lines = [json.dumps({"id": i, "reasoning": r}, ensure_ascii=ascii_only) for i, r in pairs]
    for text in junk:
        lines.insert(data.draw(st.integers(0, len(lines)), label="position"), text)
    result = parse_selection("\n".join(lines), URI_MAP)

    expected: dict[str, str] = {}
    for i, r in pairs:
        expected.setdefault(i, r)
    assert [(e.id, e.reasoning) for e in result.edges] == list(expected.items())
    assert [e.triple for e in result.edges] == [URI_MAP[i] for i in expected]
    assert result.duplicates == len(pairs) - len(expected)
    assert result.invalid_ids == []
    assert result.skipped_lines == len(junk)


# end to end: two facts with identical labels both survive selection

PARIS = """
@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:fr\\/Paris rdfs:label "Paris"@en ; ex:locatedIn ex:fr\\/Country .
ex:us\\/Paris rdfs:label "Paris" ; ex:locatedIn ex:us\\/Country .
ex:locatedIn rdfs:label "located in" .
ex:fr\\/Country rdfs:label "the country" .
ex:us\\/Country rdfs:label "the country" .
"""


def test_two_triples_with_identical_labels_both_survive_selection(
    tgsparql_store: EmbeddedStore
) -> None:
    tgsparql_store.oxigraph.load(PARIS, format=ox.RdfFormat.TURTLE)
    update_label_index(tgsparql_store)
    grounding = ground(tgsparql_store, "Where is Paris?", entity_limit=50)
    assert grounding.seeds == [ex("fr/Paris"), ex("us/Paris")]

    subgraph = retrieve_subgraph(
        tgsparql_store, grounding.seeds, RetrievalLimits(max_path_length=1)
    )
    france = ox.Triple(ex("fr/Paris"), ex("locatedIn"), ex("fr/Country"))
    texas = ox.Triple(ex("us/Paris"), ex("locatedIn"), ex("us/Country"))
    assert sorted(subgraph, key=str) == [france, texas]

    labelgraph = get_labelgraph(tgsparql_store, subgraph)
    h = edge_id(("Paris", "located in", "the country"))
    assert [e.labels for e in labelgraph.labeled_edges] == [
        ("Paris", "located in", "the country")
    ] * 2
    assert sorted(labelgraph.uri_map) == [h, f"{h}-2"]

    output = (
        "```json\n" + line(h, "the French one") + "\n" + line(f"{h}-2", "the Texan one") + "\n```"
    )
    result = parse_selection(output, labelgraph.uri_map)
    assert [(e.id, e.reasoning) for e in result.edges] == [
        (h, "the French one"),
        (f"{h}-2", "the Texan one"),
    ]
    assert {e.triple for e in result.edges} == {france, texas}
    assert [e.triple for e in result.edges] == [labelgraph.uri_map[h], labelgraph.uri_map[f"{h}-2"]]
    assert result.invalid_ids == [] and result.duplicates == 0


def test_a_reason_longer_than_the_limit_is_cut_to_it_and_flagged() -> None:
    text = "\n".join([line(A, "x" * 10), line(B, "y" * 11), line(C, "z" * 9)])
    parsed = parse_selection(text, URI_MAP, max_reason_chars=10)
    assert [(e.reasoning, e.reasoning_truncated) for e in parsed.edges] == [
        ("x" * 10, False), ("y" * 10, True), ("z" * 9, False),
    ]

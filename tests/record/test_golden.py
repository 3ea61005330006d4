"""The golden file: what an entry may say, how it is read back, and how a bad one is refused,
naming the file, the entry and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from tgsparql.record.golden import (
    AnswerRule, ExpectedEdge, GoldenError, GoldenFile, GoldenQuestion, SourceMark, load_golden,
    parse_golden,
)

EX = "https://example.org/demo/"
BORN = ox.Triple(ox.NamedNode(EX + "entity/Marie_Curie"), ox.NamedNode(EX + "rel/bornIn"),
                 ox.NamedNode(EX + "entity/Warsaw"))
FULL = f"""
version: 1
questions:
- question: Where was Marie Curie born?
  name: birthplace
  seeds: [{EX}entity/Marie_Curie]
  select:
  - subject: {EX}entity/Marie_Curie
    predicate: <{EX}rel/bornIn>
    object: {EX}entity/Warsaw
    sources:
    - {EX}doc/marie-curie
    - document: {EX}doc/marie-curie
      page: 1
      chunk: 0
      sentence: Marie Curie was born Maria Skłodowska in Warsaw in 1867.
    cited: true
  - <{EX}entity/Marie_Curie> <{EX}rel/born> "1867"^^<http://www.w3.org/2001/XMLSchema#gYear> .
  select_only: true
  not_select:
  - subject: _:b0
    predicate: {EX}rel/says
    object: <<( <{EX}a> <{EX}b> "x"@en )>>
  cite:
  - document: {EX}doc/marie-curie
    page: 1
  answer: {{pattern: "^Warsaw\\\\b"}}
  max_unselected_hops: 0
  validation: conforms
"""


def test_every_field_reads_into_what_it_checks() -> None:
    (entry,) = parse_golden(FULL, "golden.yaml").questions
    assert entry.question == "Where was Marie Curie born?"
    assert entry.name == "birthplace"
    assert entry.seeds == (EX + "entity/Marie_Curie",)
    born, year = entry.select
    assert born.edge == BORN
    assert born.sources == (SourceMark(EX + "doc/marie-curie"),
                            SourceMark(EX + "doc/marie-curie", 1, 0,
                                       "Marie Curie was born Maria Skłodowska in Warsaw in 1867."))
    assert born.cited is True
    assert year.edge.object == ox.Literal(
        "1867", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#gYear"))
    assert year.sources is None and year.cited is None
    assert entry.select_only
    (forbidden,) = entry.not_select
    assert isinstance(forbidden.subject, ox.BlankNode)
    assert forbidden.object == ox.Triple(ox.NamedNode(EX + "a"), ox.NamedNode(EX + "b"),
                                         ox.Literal("x", language="en"))
    assert entry.cite == (SourceMark(EX + "doc/marie-curie", page=1),)
    assert entry.answer == AnswerRule("pattern", "^Warsaw\\b")
    assert entry.max_unselected_hops == 0
    assert entry.validation == "conforms"


def test_a_bare_entry_checks_nothing_but_is_named_by_its_question() -> None:
    (entry,) = parse_golden("questions:\n- question: Who discovered radium?\n", "g").questions
    assert entry == GoldenQuestion("Who discovered radium?", "Who discovered radium?")


@pytest.mark.parametrize(("how", "text", "answer", "holds"), [
    ("exact", "Warsaw.", "Warsaw.", True),
    ("exact", "Warsaw.", "Warsaw. ", False),
    ("contains", "Warsaw", "Born in Warsaw, Poland.", True),
    ("contains", "warsaw", "Born in Warsaw, Poland.", False),
    ("pattern", r"\bWarsaw\b", "in Warsaw.", True),
    ("pattern", r"^Warsaw", "in Warsaw.", False),
])
def test_an_answer_rule_holds_exactly_contained_or_matched(
    how: str, text: str, answer: str, holds: bool,
) -> None:
    assert AnswerRule(how, text).holds(answer) is holds  # type: ignore[arg-type]


def test_a_file_written_reads_back_as_the_same_questions_in_yaml_and_json(tmp_path: Path) -> None:
    golden = parse_golden(FULL, "golden.yaml")
    for name, format in (("golden.yaml", "yaml"), ("golden.json", "json")):
        path = tmp_path / name
        path.write_text(golden.dump(format), encoding="utf-8")  # type: ignore[arg-type]
        assert load_golden(path).questions == golden.questions
    assert json.loads((tmp_path / "golden.json").read_text())["version"] == 1


def test_the_file_writes_iris_bare_and_other_terms_in_n_triples() -> None:
    entry = GoldenQuestion("q", "q", select=(ExpectedEdge(ox.Triple(
        BORN.subject, BORN.predicate, ox.Literal("Warszawa", language="pl"))),))
    written = GoldenFile((entry,)).to_json()["questions"][0]["select"][0]
    assert written == {"subject": EX + "entity/Marie_Curie", "predicate": EX + "rel/bornIn",
                       "object": '"Warszawa"@pl'}


BAD = [
    ("questions: [", "golden.yaml: not YAML: "),
    ("- question: q", "golden.yaml: expected a mapping with `questions`, found a list"),
    ("questions: []", "golden.yaml: `questions` must be a non-empty list of entries"),
    ("version: 2\nquestions: [{question: q}]", "golden.yaml: version 2; this tgsparql reads "
     "version 1"),
    ("questions: [{question: q}]\nquestoins: []", "golden.yaml: unknown key 'questoins'"),
    ("questions: [{question: ''}]", "golden.yaml: question 1: `question`: the question is empty"),
    ("questions: [{question: q}, {name: n}]", "golden.yaml: question 2: `question`: the "
     "question must be text, not NoneType"),
    ("questions: [{question: q, selct: []}]", "golden.yaml: question 1 (q): unknown key 'selct'; "
     "the keys are question, name"),
    ("questions: [{question: q}, {question: q}]", "golden.yaml: question 2 is named 'q' like "
     "question 1; give each a `name` of its own"),
    ("questions: [{question: q, select: [{subject: Marie, predicate: 'urn:p', object: 'urn:o'}]}]",
     "golden.yaml: question 1 (q): `select` item 1: `subject`: not an absolute IRI: 'Marie' "
     "(a literal is written in N-Triples syntax, in double quotes)"),
    ("questions: [{question: q, select: [{subject: 'urn:s', object: 'urn:o'}]}]",
     "golden.yaml: question 1 (q): `select` item 1: `predicate` is missing"),
    ("questions: [{question: q, select: [{subject: '\"s\"', predicate: 'urn:p', "
     "object: 'urn:o'}]}]", "golden.yaml: question 1 (q): `select` item 1: `subject` cannot be a "
     "literal"),
    ("questions: [{question: q, not_select: ['<urn:s> <urn:p> \"open']}]",
     "golden.yaml: question 1 (q): `not_select` item 1: not an N-Triples triple: "),
    ("questions: [{question: q, select: [{subject: 'urn:s', predicate: '\"p\"', "
     "object: 'urn:o'}]}]", "golden.yaml: question 1 (q): `select` item 1: `predicate` must be an "
     "IRI"),
    ("questions: [{question: q, select: [{subject: 'urn:s', predicate: 'urn:p', object: 'urn:o', "
     "sources: [{page: 1}]}]}]", "golden.yaml: question 1 (q): `select` item 1: `sources` item 1: "
     "`document` is missing"),
    ("questions: [{question: q, cite: [{document: 'urn:d', sentence: s}]}]",
     "golden.yaml: question 1 (q): `cite` item 1: a cited document takes `document`, `page` and "
     "`chunk`"),
    ("questions: [{question: q, cite: [{document: 'urn:d', page: one}]}]",
     "golden.yaml: question 1 (q): `cite` item 1: `page` must be a whole number, not 'one'"),
    ("questions: [{question: q, answer: Warsaw}]", "golden.yaml: question 1 (q): `answer`: "
     "expected one of `exact`, `contains` or `pattern` with a text"),
    ("questions: [{question: q, answer: {like: W}}]", "golden.yaml: question 1 (q): `answer`: "
     "unknown rule `like`"),
    ("questions: [{question: q, answer: {pattern: '(W'}}]", "golden.yaml: question 1 (q): "
     "`answer`: `pattern` is not a regular expression: "),
    ("questions: [{question: q, max_unselected_hops: -1}]", "golden.yaml: question 1 (q): "
     "`max_unselected_hops` must be a whole number, 0 or more, not -1"),
    ("questions: [{question: q, validation: ok}]", "golden.yaml: question 1 (q): `validation` "
     "must be one of conforms, violates, not 'ok'"),
    ("questions: [{question: q, select_only: yes please}]", "golden.yaml: question 1 (q): "
     "`select_only` must be true or false"),
    ("questions: [{question: q, select: {subject: 'urn:s'}}]", "golden.yaml: question 1 (q): "
     "`select` must be a list, not a mapping"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_file_is_refused_naming_the_entry_and_the_field(text: str, message: str) -> None:
    with pytest.raises(GoldenError) as raised:
        parse_golden(text, "golden.yaml")
    assert str(raised.value).startswith(message), str(raised.value)


def test_yaml_errors_give_the_line_and_json_files_are_read_as_json(tmp_path: Path) -> None:
    with pytest.raises(GoldenError, match=r"not YAML: .* at line 3, column \d+"):
        parse_golden("questions:\n- question: q\n  answer: {exact: [}\n", "g.yaml")
    path = tmp_path / "golden.json"
    path.write_text('{"questions": [{"question": "q",}]}', encoding="utf-8")
    with pytest.raises(GoldenError, match=r"golden.json: not JSON: .* at line 1, column 33"):
        load_golden(path)


def test_a_file_that_cannot_be_read_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(GoldenError, match="cannot read .*missing.yaml: No such file"):
        load_golden(tmp_path / "missing.yaml")
    (tmp_path / "latin1.yaml").write_bytes(b"questions: [{question: caf\xe9}]")
    with pytest.raises(GoldenError, match="latin1.yaml: not UTF-8 text"):
        load_golden(tmp_path / "latin1.yaml")


def test_the_documented_example_is_a_golden_file() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "golden.md").read_text(encoding="utf-8")
    (example,) = page.split("```yaml\n")[1:]
    (entry,) = parse_golden(example.split("```")[0], "docs/golden.md").questions
    assert entry.name == "polonium birthplace"
    assert [edge.edge for edge in entry.select][0] == BORN
    assert entry.answer == AnswerRule("contains", "Warsaw")

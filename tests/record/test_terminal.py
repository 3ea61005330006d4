"""Text output shows the control characters of questions, labels and answers as escapes, so
stored text cannot drive the terminal it is shown on; machine formats keep the text exact.

Real `tgsparql` processes, as a person's shell runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import tgsparql_process

from tgsparql.record.terminal import visible

PWN = "\x1b]0;PWNED\x07"
SHOWN = "\\x1b]0;PWNED\\x07"
KG = """@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix ex: <http://example.org/> .
ex:ada rdfs:label "Ada Lovelace" ; ex:bornIn ex:london .
ex:bornIn rdfs:label "born in" .
ex:london rdfs:label "London\\u001B]0;PWNED\\u0007" .
"""


def run(*args: object) -> str:
    process = tgsparql_process(*args)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "\x1b" not in err
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with one session whose question and selected edge's label carry an escape."""
    directory = tmp_path_factory.mktemp("terminal")
    kg = directory / "kg.ttl"
    kg.write_text(KG, encoding="utf-8")
    store = directory / "store"
    run("load", "--store", store, kg)
    answer = run("query", f"Where was Ada Lovelace born?{PWN}", "--store", store,
                 "--format", "jsonl")
    session = next(json.loads(line)["explain_id"] for line in answer.splitlines())
    return store, session


def test_visible_escapes_controls_and_bidi_overrides_and_keeps_the_rest() -> None:
    assert visible(f"a{PWN}b") == f"a{SHOWN}b"
    assert visible("\u202eevil\u202c \x9b2J") == "\\u202eevil\\u202c \\x9b2J"
    assert visible("line\nnext\ttab\r", keep="\n\t") == "line\nnext\ttab\\x0d"
    assert visible("Maria Skłodowska — 居里 ✓") == "Maria Skłodowska — 居里 ✓"


def test_query_text_shows_an_answer_s_escapes(recorded: tuple[Path, str]) -> None:
    store, _ = recorded
    out = run("query", "Where was Ada Lovelace born?", "--store", store)
    assert "\x1b" not in out and "\x07" not in out
    assert SHOWN in out


def test_sessions_table_shows_escapes_and_json_keeps_the_question(
    recorded: tuple[Path, str]
) -> None:
    store, session = recorded
    table = run("sessions", "--store", store)
    assert "\x1b" not in table and "\x07" not in table
    assert f"Where was Ada Lovelace born?{SHOWN}" in table
    listed = json.loads(run("sessions", "--store", store, "--format", "json"))
    [ours] = [item for item in listed if item["session"] == session]
    assert ours["question"] == f"Where was Ada Lovelace born?{PWN}"


@pytest.mark.parametrize(("command", "asked", "edges"), [
    ("explain", "asked      ", "selected"),
    ("trace", "asked: ", "edges"),
])
def test_explain_and_trace_text_show_escapes_and_json_keeps_them(
    recorded: tuple[Path, str], command: str, asked: str, edges: str
) -> None:
    store, session = recorded
    text = run(command, session, "--store", store)
    assert "\x1b" not in text and "\x07" not in text
    assert f"{asked}Where was Ada Lovelace born?{SHOWN}" in text
    assert f"Ada Lovelace — born in — London{SHOWN}" in text
    found = json.loads(run(command, session, "--store", store, "--format", "json"))
    assert found["question"] == f"Where was Ada Lovelace born?{PWN}"
    assert [edge["labels"][2] for edge in found[edges]] == [f"London{PWN}"]


def test_explain_turtle_keeps_the_question_exact(recorded: tuple[Path, str]) -> None:
    store, session = recorded
    turtle = run("explain", session, "--store", store, "--format", "turtle")
    literals = {quad.object.value for quad in ox.parse(turtle.encode(), ox.RdfFormat.TURTLE)
                if isinstance(quad.object, ox.Literal)}
    assert f"Where was Ada Lovelace born?{PWN}" in literals

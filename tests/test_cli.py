"""The `tgsparql` command line: every command, its output, its errors and its exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.asking.llm.fake_openai import (  # noqa: F401  (fixture)
    FakeOpenAI, Reply, fake_openai, prompt_facts,
)
from tests.conftest import CliRun, clean_env, cli, console_script
from tgsparql.asking.pipeline import GraphRag
from tgsparql.cli.ask import DEMO_QUESTION
from tgsparql.rdf import vocab
from tgsparql.record.explain import explain_session
from tgsparql.stores.store import open_store

TG = "https://trustgraph.ai/ns/"
PROV = "http://www.w3.org/ns/prov#"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
XSD_INTEGER = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
EX = "http://example.org/t/"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
SESSION_RE = re.compile(rf"urn:trustgraph:session:({UUID})")
DEMO_TITLES = {
    "Marie Curie: From Warsaw to Paris",
    "Pierre Curie, Physicist of Paris",
    "Irène and Frédéric Joliot-Curie",
    "The Radium Institute in Paris",
}
MESSAGE_KEYS = {
    "error", "response", "end_of_stream", "explain_id", "explain_collection",
    "message_type", "end_of_session", "explain_triples", "sources", "names", "warnings",
}
def ok(*args: object) -> CliRun:
    run = cli(*args)
    assert run.exit_code == 0, run.stderr
    return run


def flat(text: str) -> str:
    return " ".join(text.split())


def session_of(run: CliRun) -> str:
    """The session IRI a text `query` names on stderr."""
    lines = [line for line in run.stderr.splitlines() if line.startswith("explain: ")]
    assert len(lines) == 1, run.stderr
    match = SESSION_RE.search(lines[0])
    assert match is not None
    return match.group(0)


pytestmark = pytest.mark.usefixtures("no_settings")


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def demo_dir(store_dir: Path, tgsparql_demo_file: Path) -> Path:
    run = ok("load", "--store", store_dir, tgsparql_demo_file)
    assert run.stdout.splitlines()[0] == f"loaded {tgsparql_demo_file}: 463 quads"
    return store_dir


@pytest.fixture
def session(demo_dir: Path) -> str:
    return session_of(ok("query", "Where was Marie Curie born?", "--store", demo_dir))


def explain_json(store_dir: Path, session: str, *extra: object) -> dict:
    return json.loads(ok("explain", session, "--store", store_dir, "--format", "json", *extra).stdout)


def sessions_json(store_dir: Path, *extra: object) -> list[dict]:
    return json.loads(ok("sessions", "--store", store_dir, "--format", "json", *extra).stdout)


def jsonl(run: CliRun) -> list[dict]:
    return [json.loads(line) for line in run.stdout.splitlines()]


def quads(store_dir: Path) -> list[ox.Quad]:
    store = open_store(store_dir)
    try:
        return list(store.oxigraph.quads_for_pattern(None, None, None, None))
    finally:
        store.close()


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def assert_explanation_shown(stdout: str, explanation: dict) -> None:
    """The text explanation shows the retrieved count and every selected edge with why and from."""
    lines = stdout.splitlines()
    text = flat(stdout)
    assert f"  retrieved  {explanation['edge_count']} edges" in lines
    assert f"  selected   {len(explanation['selected'])} edges" in lines
    for edge in explanation["selected"]:
        assert f"    [{edge['index']}] " + " — ".join(edge["labels"]) in lines
        assert flat("why: " + edge["reasoning"]) in text
        assert edge["sources"], edge
        for source in edge["sources"]:
            assert any(
                line.strip().startswith(f'from: "{source["title"]}"') for line in lines
            ), source["title"]
    assert any(re.fullmatch(r"  answer     \(SHA-256 verified; cites (\d+) of \1 selected edges\)",
                            line) for line in lines), "the offline answer cites every edge"


# --- help -------------------------------------------------------------------------------------

HELP_OPTIONS = {
    "demo": ["--store", "--question", "--llm", "--model", "--base-url", "--api-key", "--constrain"],
    "load": ["--store", "FILE..."],
    "index": ["--store", "--rebuild"],
    "query": ["--store", "--collection", "--llm", "--model", "--base-url", "--api-key",
              "--no-stream", "--format", "text|jsonl", "--max-path-length", "--triple-limit",
              "--entity-limit", "--max-subgraph-size"],
    "sessions": ["--store", "--collection", "--limit", "--format", "table|json"],
    "explain": ["--store", "--collection", "--format", "text|json|turtle", "SESSION"],
}


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_group_help_lists_every_command(flag: str) -> None:
    run = ok(flag)
    assert run.stdout.startswith("Usage: ")
    commands = run.stdout.split("Commands:")[1].split()
    for name in HELP_OPTIONS:
        assert name in commands


@pytest.mark.parametrize("command", sorted(HELP_OPTIONS))
def test_command_help_exits_0_and_names_its_options(command: str) -> None:
    run = ok(command, "--help")
    assert run.stdout.startswith(f"Usage: main {command} [OPTIONS]")
    assert run.stderr == ""
    for option in HELP_OPTIONS[command]:
        assert option in run.stdout, option


# --- demo -------------------------------------------------------------------------------------


def test_demo_in_memory_streams_the_answer_then_explains_it(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    messages = list(tgsparql_demo_pipeline.query(DEMO_QUESTION, stream=True))
    expected_answer = "".join(m.response for m in messages if m.message_type == "chunk")
    expected = explain_session(
        tgsparql_demo_pipeline.store, vocab.DEFAULT_COLLECTION, messages[0].explain_id
    ).to_json()

    run = ok("demo")
    lines = run.stdout.splitlines()
    assert lines[0] == "Loaded the demo sample: 463 quads (facts, labels, sources and texts)."
    assert lines[1] == f"Question: {DEMO_QUESTION}"
    answer_at = lines.index(expected_answer)
    assert expected_answer.startswith("Warsaw")
    header = [i for i, line in enumerate(lines) if line.startswith("Explanation  ")]
    assert len(header) == 1 and header[0] > answer_at
    assert SESSION_RE.fullmatch(lines[header[0]].split()[1])
    assert f"  asked      {DEMO_QUESTION}" in lines
    assert_explanation_shown(run.stdout, expected)
    assert "    [0] Marie Curie — discovered — polonium" in lines
    assert '        from: "Marie Curie: From Warsaw to Paris", page 1, chunk 1 ' \
           "(characters 302–605)" in lines


def test_demo_with_store_records_the_session_it_explains(store_dir: Path) -> None:
    run = ok("demo", "--store", store_dir)
    lines = run.stdout.splitlines()
    assert lines[3].startswith("Warsaw")
    [found] = sessions_json(store_dir)
    assert found["question"] == DEMO_QUESTION
    assert found["status"] == "complete"
    assert f"Explanation  {found['session']}" in lines
    explanation = explain_json(store_dir, found["session"])
    assert explanation["answer"] in lines
    assert_explanation_shown(run.stdout, explanation)
    titles = {s["title"] for e in explanation["selected"] for s in e["sources"]}
    assert titles <= DEMO_TITLES and "Marie Curie: From Warsaw to Paris" in titles


def test_demo_question_option_asks_that_question(store_dir: Path) -> None:
    question = "Where was Pierre Curie born?"
    run = ok("demo", "--store", store_dir, "--question", question)
    lines = run.stdout.splitlines()
    assert lines[1] == f"Question: {question}"
    assert f"  asked      {question}" in lines
    [found] = sessions_json(store_dir)
    assert found["question"] == question
    explanation = explain_json(store_dir, found["session"])
    assert "Pierre Curie born in Paris" in explanation["answer"]
    assert explanation["answer"] in lines
    assert_explanation_shown(run.stdout, explanation)


# --- load -------------------------------------------------------------------------------------

TURTLE = f"""@prefix ex: <{EX}> .
ex:a ex:p ex:b .
ex:a ex:says <<( ex:b ex:q "c" )>> .
ex:a <http://www.w3.org/2000/01/rdf-schema#label> "Alpha" .
"""
TRIG = f"""@prefix ex: <{EX}> .
ex:g {{ ex:c ex:r ex:d . }}
ex:c ex:r ex:e .
"""
NTRIPLES = f'<{EX}n> <{EX}p> <<( <{EX}n> <{EX}p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> )>> .\n'
NQUADS = f'<{EX}q> <{EX}p> "x"@en <{EX}g2> .\n<{EX}q> <{EX}p> "y" .\n'


def test_load_reads_every_format_and_reports_quads_per_file(
    tmp_path: Path, store_dir: Path
) -> None:
    files = [
        write(tmp_path / "a.ttl", TURTLE),
        write(tmp_path / "b.trig", TRIG),
        write(tmp_path / "c.nt", NTRIPLES),
        write(tmp_path / "d.nq", NQUADS),
    ]
    run = ok("load", "--store", store_dir, *files)
    assert run.stdout.splitlines() == [
        f"loaded {files[0]}: 3 quads",
        f"loaded {files[1]}: 2 quads",
        f"loaded {files[2]}: 1 quads",
        f"loaded {files[3]}: 2 quads",
        "indexed 1 labels for grounding",
    ]
    assert run.error_lines == []
    stored = set(quads(store_dir))
    default = ox.DefaultGraph()
    assert ox.Quad(
        ox.NamedNode(EX + "a"), ox.NamedNode(EX + "says"),
        ox.Triple(ox.NamedNode(EX + "b"), ox.NamedNode(EX + "q"), ox.Literal("c")), default,
    ) in stored
    assert ox.Quad(
        ox.NamedNode(EX + "n"), ox.NamedNode(EX + "p"),
        ox.Triple(ox.NamedNode(EX + "n"), ox.NamedNode(EX + "p"),
                  ox.Literal("1", datatype=XSD_INTEGER)), default,
    ) in stored
    assert ox.Quad(ox.NamedNode(EX + "c"), ox.NamedNode(EX + "r"), ox.NamedNode(EX + "d"),
                   ox.NamedNode(EX + "g")) in stored
    assert ox.Quad(ox.NamedNode(EX + "q"), ox.NamedNode(EX + "p"), ox.Literal("x", language="en"),
                   ox.NamedNode(EX + "g2")) in stored
    kg = {q for q in stored if q.graph_name == default or q.graph_name.value.startswith(EX)}
    assert len(kg) == 8


def test_load_syntax_error_loads_nothing_of_that_file_but_loads_the_good_one(
    tmp_path: Path, store_dir: Path
) -> None:
    bad = write(tmp_path / "bad.ttl", f"@prefix ex: <{EX}> .\nex:x ex:p ex:y .\nex:x ex:p .\n")
    good = write(tmp_path / "good.ttl", TURTLE)
    run = cli("load", "--store", store_dir, bad, good)
    assert run.exit_code == 1
    assert run.stdout.splitlines()[0] == f"loaded {good}: 3 quads"
    assert str(bad) not in run.stdout
    [error] = run.error_lines
    assert error.startswith(f"error: {bad}:3: ")
    subjects = {q.subject for q in quads(store_dir)}
    assert ox.NamedNode(EX + "a") in subjects
    assert ox.NamedNode(EX + "x") not in subjects


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(valid_lines=st.integers(min_value=0, max_value=40))
def test_load_syntax_error_names_the_line(tmp_path: Path, valid_lines: int) -> None:
    body = "".join(f"ex:s{i} ex:p ex:o{i} .\n" for i in range(valid_lines))
    bad = write(tmp_path / "broken.ttl", f"@prefix ex: <{EX}> .\n{body}ex:s ex:p ex:o\n")
    run = cli("load", "--store", tmp_path / "kg", bad)
    assert run.exit_code == 1
    assert run.stdout == ""
    [error] = run.error_lines
    assert error.startswith(f"error: {bad}:{valid_lines + 3}: ")


def test_load_unknown_extension_fails_with_one_line(tmp_path: Path, store_dir: Path) -> None:
    path = write(tmp_path / "data.json", "{}")
    run = cli("load", "--store", store_dir, path)
    assert run.exit_code == 1
    assert run.stdout == ""
    assert run.error_lines == [
        f"error: {path}: unknown RDF format '.json' "
        "(known: .nq, .nquads, .nt, .ntriples, .trig, .ttl, .turtle)"
    ]
    assert quads(store_dir) == []


@pytest.mark.parametrize("args", [
    ("load", "FILE"), ("ingest", "FILE"), ("index",), ("migrate",),
    ("export", "--format", "nquads"), ("sessions",), ("sessions", "delete", "--older-than", "1d"),
    ("explain", "00000000-0000-0000-0000-000000000000"), ("trace", "urn:x"), ("validate",),
])
def test_a_command_that_keeps_or_reads_a_store_refuses_to_run_in_memory(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """Without --store or --endpoint, `load` once said "loaded … quads" and threw them away,
    and `sessions` said "no sessions": a store in memory keeps nothing and holds nothing."""
    file = write(tmp_path / "kg.ttl", f"<{EX}s> <{EX}p> <{EX}o> .\n")
    run = cli(*[str(file) if arg == "FILE" else arg for arg in args])
    assert run.exit_code == 2 and run.stdout == "", run
    [line] = run.error_lines
    assert line.startswith("error: ") and "needs --store PATH (or TGSPARQL_STORE) or --endpoint" \
        in line, line


def test_load_missing_file_fails_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "absent.ttl"
    run = cli("load", "--store", tmp_path / "kg", path)
    assert run.exit_code == 1
    assert run.stdout == ""
    assert run.error_lines == [f"error: {path}: cannot read: No such file or directory"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["load"], "Missing argument 'FILE...'"),
        (["query"], "Missing argument 'QUESTION'"),
        (["explain"], "Missing argument 'SESSION'"),
        (["query", "q", "--bogus"], "No such option '--bogus'"),
        (["query", "q", "--format", "xml"], "Invalid value for '--format'"),
        (["query", "q", "--llm", "gpt"], "Invalid value for '--llm'"),
        (["query", "q", "--max-path-length", "0"], "Invalid value for '--max-path-length'"),
        (["sessions", "--limit", "0"], "Invalid value for '--limit'"),
        (["no-such-command"], "No such command 'no-such-command'"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    run = cli(*args)
    assert run.exit_code == 2
    assert run.stdout == ""
    assert message in run.stderr


# --- index ------------------------------------------------------------------------------------


def test_index_adds_only_new_labels_and_rebuild_counts_all(tmp_path: Path, store_dir: Path) -> None:
    labels = "".join(f'ex:e{i} rdfs:label "Entity {i}" .\n' for i in range(5))
    path = write(
        tmp_path / "labels.ttl",
        f"@prefix ex: <{EX}> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n{labels}",
    )
    assert ok("load", "--store", store_dir, path).stdout.splitlines()[-1] == (
        "indexed 5 labels for grounding"
    )
    assert ok("index", "--store", store_dir).stdout == "indexed 0 labels\n"
    store = open_store(store_dir)
    store.oxigraph.add(ox.Quad(ox.NamedNode(EX + "late"),
                               ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label"),
                               ox.Literal("Late Entity")))
    store.close()
    assert ok("index", "--store", store_dir).stdout == "indexed 1 labels\n"
    assert ok("index", "--store", store_dir).stdout == "indexed 0 labels\n"
    assert ok("index", "--store", store_dir, "--rebuild").stdout == "indexed 6 labels\n"


def test_index_rebuild_on_demo_matches_the_count_load_reported(
    store_dir: Path, tgsparql_demo_file: Path
) -> None:
    loaded = ok("load", "--store", store_dir, tgsparql_demo_file).stdout.splitlines()
    match = re.fullmatch(r"indexed (\d+) labels for grounding", loaded[-1])
    assert match is not None and int(match.group(1)) > 0
    assert ok("index", "--store", store_dir, "--rebuild").stdout == f"indexed {match.group(1)} labels\n"


# --- query ------------------------------------------------------------------------------------


def test_query_text_prints_the_answer_and_names_the_session(demo_dir: Path) -> None:
    run = ok("query", "Where was Marie Curie born?", "--store", demo_dir)
    session = session_of(run)
    assert run.stderr.splitlines()[-1] == f"explain: tgsparql explain {session}"
    explanation = explain_json(demo_dir, session)
    assert run.stdout == explanation["answer"] + "\n"
    assert run.stdout.startswith("Warsaw")


def test_query_no_stream_prints_the_same_answer(demo_dir: Path) -> None:
    streamed = ok("query", "Where was Marie Curie born?", "--store", demo_dir)
    whole = ok("query", "Where was Marie Curie born?", "--store", demo_dir, "--no-stream")
    assert whole.stdout == streamed.stdout
    assert explain_json(demo_dir, session_of(whole))["answer"] + "\n" == whole.stdout


@pytest.mark.parametrize("stream", [True, False])
def test_query_jsonl_prints_every_message_in_spec_order(demo_dir: Path, stream: bool) -> None:
    args = ["query", "Where was Marie Curie born?", "--store", demo_dir, "--format", "jsonl"]
    run = ok(*args, *([] if stream else ["--no-stream"]))
    messages = jsonl(run)
    assert all(set(m) == MESSAGE_KEYS and m["error"] is None for m in messages)
    types = [m["message_type"] for m in messages]
    chunks = len(types) - 5
    assert types == ["explain"] * 3 + ["chunk"] * chunks + ["explain", "chunk"]
    assert chunks > 1 if stream else chunks == 1

    uuid = SESSION_RE.fullmatch(messages[0]["explain_id"]).group(1)
    explains = [m for m in messages if m["message_type"] == "explain"]
    assert [m["explain_id"] for m in explains] == [
        f"urn:trustgraph:session:{uuid}",
        f"urn:trustgraph:prov:retrieval:{uuid}",
        f"urn:trustgraph:prov:selection:{uuid}",
        f"urn:trustgraph:prov:answer:{uuid}",
    ]
    for m in explains:
        assert m["explain_collection"] == "explainability"
        assert m["explain_triples"], m["explain_id"]
        assert f"<{m['explain_id']}>" in {t["s"] for t in m["explain_triples"]}
        assert all(set(t) == {"s", "p", "o"} for t in m["explain_triples"])
        assert m["sources"] == [] and not m["end_of_stream"] and not m["end_of_session"]

    answer_chunks = messages[3 : 3 + chunks]
    assert [m["end_of_stream"] for m in answer_chunks] == [False] * (chunks - 1) + [True]
    assert not any(m["end_of_session"] or m["explain_triples"] for m in answer_chunks)
    final = messages[-1]
    assert final["end_of_session"] and final["response"] == "" and final["explain_triples"] == []
    assert [m["end_of_session"] for m in messages].count(True) == 1

    answer = "".join(m["response"] for m in answer_chunks)
    explanation = explain_json(demo_dir, messages[0]["explain_id"])
    assert answer == explanation["answer"]
    selected = {
        t["o"] for t in explains[2]["explain_triples"] if t["p"] == f"<{TG}selectedEdge>"
    }
    assert selected == {f"<{e['iri']}>" for e in explanation["selected"]}
    assert final["sources"]
    for source in final["sources"]:
        assert f"<{source['edge_selection']}>" in selected
        assert source["title"] in DEMO_TITLES
        assert source["document"].startswith("https://example.org/demo/doc/")
        assert source["edge"].startswith("<<( ") and source["edge"].endswith(" )>>")


def test_query_collection_records_into_its_own_graph(demo_dir: Path) -> None:
    run = ok("query", "Where was Marie Curie born?", "--store", demo_dir, "--collection", "other")
    session = session_of(run)
    assert run.stderr.splitlines()[-1] == f"explain: tgsparql explain {session} --collection other"
    assert [s["session"] for s in sessions_json(demo_dir, "--collection", "other")] == [session]
    assert sessions_json(demo_dir) == []
    graphs = {q.graph_name for q in quads(demo_dir) if q.subject == ox.NamedNode(session)}
    assert graphs == {ox.NamedNode("urn:graph:other")}
    assert explain_json(demo_dir, session, "--collection", "other")["collection"] == "other"
    elsewhere = cli("explain", session, "--store", demo_dir)
    assert elsewhere.exit_code == 1
    assert elsewhere.error_lines == [
        f"error: no session {session} in collection 'explainability'"
    ]


@pytest.mark.parametrize("name", ["bad name", "urn:graph:x", "-leading", "x" * 65, "a}b"])
def test_query_invalid_collection_fails_with_one_line(demo_dir: Path, name: str) -> None:
    run = cli("query", "Where was Marie Curie born?", "--store", demo_dir, "--collection", name)
    assert run.exit_code == 1
    assert run.stdout == ""
    assert [line for line in run.stderr.splitlines() if line] == [
        f"error: invalid collection name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
        "starting with a letter or digit"
    ]


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_query_openai_without_a_server_fails_before_recording(demo_dir: Path, fmt: str) -> None:
    run = cli("query", "Where was Marie Curie born?", "--store", demo_dir, "--llm", "openai",
              "--format", fmt)
    assert run.exit_code == 1
    assert run.stdout == ""
    assert run.stderr == (
        "error: the openai backend needs a server: set OPENAI_BASE_URL or --base-url "
        "(and OPENAI_API_KEY for hosted APIs)\n"
    )
    assert sessions_json(demo_dir) == []


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_query_empty_question_fails_and_records_nothing(demo_dir: Path, question: str) -> None:
    run = cli("query", question, "--store", demo_dir)
    assert run.exit_code == 1
    assert run.stdout.strip() == ""
    assert run.stderr == "error: the question is empty\n"
    as_jsonl = cli("query", question, "--store", demo_dir, "--format", "jsonl")
    assert as_jsonl.exit_code == 1
    [message] = jsonl(as_jsonl)
    assert message["error"] == {"type": "invalid-question", "message": "the question is empty"}
    assert message["end_of_session"] is True
    assert sessions_json(demo_dir) == []


def test_query_without_store_warns_that_the_store_is_empty_and_gone() -> None:
    run = ok("query", "Where was Marie Curie born?")
    first, last = run.stderr.splitlines()[0], run.stderr.splitlines()[-1]
    assert first == "warning: no --store given: querying an empty in-memory store"
    assert "tgsparql explain" not in run.stderr
    assert re.fullmatch(rf"session urn:trustgraph:session:{UUID} was recorded in memory and is "
                        "gone with this process: pass --store DIR to keep sessions", last)
    assert run.stdout == "The knowledge graph holds no facts that answer this question.\n"


def test_query_warns_when_the_llm_selected_nothing_and_asks_no_answer_of_it(
    demo_dir: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    log = tmp_path / "llm.jsonl"
    fake_openai.script(Reply("None of these edges answer the question."))
    run = ok("query", "--store", demo_dir, "--base-url", fake_openai.base_url, "--model", "m",
             "--log-llm", log, "--max-tokens", 64, "Where was Marie Curie born?")
    assert run.stdout == "The knowledge graph holds no facts that answer this question.\n"
    assert run.stderr.splitlines()[0] == (
        "warning: no edge of the KG was selected as answering the question; the answer says "
        "so (--log-llm FILE shows the selector's reply)")
    [request] = fake_openai.chat_requests
    assert request.body["max_tokens"] == 64
    [entry] = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert entry["call"] == "select"
    assert entry["reply"] == "None of these edges answer the question."


def selecting_the_first_two(body: dict) -> Reply:
    """A selection of the first two edges the prompt lists."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return Reply("".join(json.dumps({"id": fact["id"], "reasoning": "it helps"}) + "\n"
                         for fact in prompt_facts(user)[:2]))


@pytest.mark.parametrize("format_", ["text", "jsonl"])
def test_query_warns_of_an_answer_that_cites_nothing_and_was_cut_short(
    demo_dir: Path, fake_openai: FakeOpenAI, format_: str
) -> None:
    fake_openai.script(selecting_the_first_two,
                       Reply(["Somebody was born in ", "D"], finish_reason="length"))
    run = ok("query", "--store", demo_dir, "--base-url", fake_openai.base_url, "--model", "m",
             "--format", format_, "Where was Marie Curie born?")
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        "warning: the answer cites none of its 2 selected edges",
        "warning: the answer is cut short: it reached the model's token limit (--max-tokens) "
        "or the kept characters (--max-answer-chars)",
    ]
    if format_ == "jsonl":
        final = json.loads(run.stdout.splitlines()[-1])
        assert final["end_of_session"] and [f"warning: {w}" for w in final["warnings"]] == warnings


def test_query_with_a_selection_gives_no_warning(demo_dir: Path) -> None:
    run = ok("query", "--store", demo_dir, "--llm", "offline", "Where was Marie Curie born?")
    assert not [line for line in run.stderr.splitlines() if line.startswith("warning")]


def test_query_warns_that_grounding_found_no_entity_when_nothing_grounds(
    demo_dir: Path
) -> None:
    run = ok("query", "--store", demo_dir, "--llm", "offline", "When was Zyxwv born?")
    assert run.stdout == "The knowledge graph holds no facts that answer this question.\n"
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning")]
    assert warnings == [
        "warning: grounding found no entity of the KG in the question (no name or phrase of it "
        "is a label there, nor part of one); the answer says so"]


def test_explain_shows_each_citation_with_its_sentence(demo_dir: Path) -> None:
    run = ok("query", "--store", demo_dir, "--llm", "offline", DEMO_QUESTION)
    [session] = SESSION_RE.findall(run.stderr)
    explained = ok("explain", "--store", demo_dir, session).stdout
    assert "cited: “Marie Curie born in Warsaw [" in explained
    assert "; cites 2 of 2 selected edges)" in explained
    as_json = json.loads(ok("explain", "--store", demo_dir, session, "--format", "json").stdout)
    assert as_json["invalid_citations"] == 0
    for edge in as_json["selected"]:
        [sentence] = edge["citations"]
        assert " ".join(edge["labels"]) in sentence
        assert all(source["citations"] == [sentence] for source in edge["sources"])


# --- sessions ---------------------------------------------------------------------------------

QUESTIONS = ["Where was Marie Curie born?", "Who discovered polonium?", "Where did Pierre Curie die?"]


def test_sessions_are_listed_newest_first(demo_dir: Path) -> None:
    asked = [session_of(ok("query", q, "--store", demo_dir, "--no-stream")) for q in QUESTIONS]
    found = sessions_json(demo_dir)
    assert [s["session"] for s in found] == asked[::-1]
    assert [s["question"] for s in found] == QUESTIONS[::-1]
    assert all(s["status"] == "complete" and s["error"] is None for s in found)
    started = [datetime.fromisoformat(s["started"]) for s in found]
    assert started == sorted(started, reverse=True) and len(set(started)) == 3
    for s in found:
        assert datetime.fromisoformat(s["ended"]) >= datetime.fromisoformat(s["started"])

    table = ok("sessions", "--store", demo_dir).stdout.splitlines()
    assert table[0].split() == ["STARTED", "STATUS", "SESSION", "QUESTION"]
    assert len(table) == 4
    for line, s in zip(table[1:], found):
        assert line.split()[:3] == [s["started"], "complete", s["session"]]
        assert line.endswith("  " + s["question"])

    assert sessions_json(demo_dir, "--limit", "2") == found[:2]
    limited = ok("sessions", "--store", demo_dir, "--limit", "1").stdout.splitlines()
    assert len(limited) == 2 and limited[1].split()[2] == found[0]["session"]


def test_sessions_of_an_empty_store(store_dir: Path) -> None:
    assert sessions_json(store_dir) == []
    run = ok("sessions", "--store", store_dir)
    assert run.stdout == ""
    assert run.stderr == "no sessions in collection 'explainability'\n"


def test_sessions_invalid_collection_fails_with_one_line(store_dir: Path) -> None:
    run = cli("sessions", "--store", store_dir, "--collection", "bad name")
    assert run.exit_code == 1
    assert len(run.stderr.splitlines()) == 1 and run.error_lines[0].startswith(
        "error: invalid collection name 'bad name'"
    )


# --- explain ----------------------------------------------------------------------------------


def test_explain_text_shows_question_retrieval_edges_and_integrity(
    demo_dir: Path, session: str
) -> None:
    run = ok("explain", session, "--store", demo_dir)
    lines = run.stdout.splitlines()
    explanation = explain_json(demo_dir, session)
    assert lines[0] == f"Explanation  {session}"
    assert "  status     complete" in lines
    assert "  asked      Where was Marie Curie born?" in lines
    assert_explanation_shown(run.stdout, explanation)
    assert "    [0] Marie Curie — born in — Warsaw" in lines
    assert flat(explanation["answer"]) in flat(run.stdout)


def test_explain_json_has_every_field(demo_dir: Path, session: str) -> None:
    data = explain_json(demo_dir, session)
    uuid = SESSION_RE.fullmatch(session).group(1)
    assert data["session"] == session
    assert data["collection"] == "explainability"
    assert data["question"] == "Where was Marie Curie born?"
    assert data["status"] == "complete" and data["error"] is None
    assert datetime.fromisoformat(data["ended"]) >= datetime.fromisoformat(data["started"])
    assert isinstance(data["edge_count"], int) and data["edge_count"] > 0
    assert data["retrieved_edges_recorded"] == data["edge_count"]
    assert "marie curie" in data["concepts"]
    assert {"iri": "https://example.org/demo/entity/Marie_Curie", "label": "Marie Curie"} in (
        data["entities"]
    )
    assert data["invalid_ids"] == 0
    assert data["answer_intact"] is True and data["answer"].startswith("Warsaw")
    assert [e["index"] for e in data["selected"]] == list(range(len(data["selected"])))
    for edge in data["selected"]:
        assert edge["iri"] == f"urn:trustgraph:prov:edge:{uuid}:{edge['index']}"
        assert edge["edge"].startswith("<<( <https://example.org/demo/")
        assert len(edge["labels"]) == 3 and all(edge["labels"])
        assert edge["reasoning"].startswith("offline selector: ")
        assert {s["edge_selection"] for s in edge["sources"]} == {edge["iri"]}
        assert all(s["edge"] == edge["edge"] for s in edge["sources"])


def test_explain_accepts_the_bare_uuid(demo_dir: Path, session: str) -> None:
    uuid = SESSION_RE.fullmatch(session).group(1)
    assert explain_json(demo_dir, uuid) == explain_json(demo_dir, session)


def test_explain_and_trace_accept_the_iri_in_angle_brackets(demo_dir: Path, session: str) -> None:
    """As a report, a Turtle file or a SPARQL query writes it, and a user pastes it."""
    assert explain_json(demo_dir, f"<{session}>") == explain_json(demo_dir, session)
    traced = [ok("trace", iri, "--store", demo_dir, "--format", "json").stdout
              for iri in (session, f" <{session}> ")]
    assert traced[0] == traced[1]


def test_explain_turtle_parses_and_holds_the_record(demo_dir: Path, session: str) -> None:
    data = explain_json(demo_dir, session)
    run = ok("explain", session, "--store", demo_dir, "--format", "turtle")
    triples = {q.triple for q in ox.parse(run.stdout.encode("utf-8"), ox.RdfFormat.TURTLE)}
    uuid = SESSION_RE.fullmatch(session).group(1)
    node = ox.NamedNode(session)
    retrieval = ox.NamedNode(f"urn:trustgraph:prov:retrieval:{uuid}")
    assert ox.Triple(node, RDF_TYPE, ox.NamedNode(PROV + "Activity")) in triples
    assert ox.Triple(node, ox.NamedNode(TG + "query"), ox.Literal(data["question"])) in triples
    assert ox.Triple(node, ox.NamedNode(TG + "status"), ox.Literal("complete")) in triples
    assert ox.Triple(retrieval, ox.NamedNode(TG + "edgeCount"),
                     ox.Literal(str(data["edge_count"]), datatype=XSD_INTEGER)) in triples
    selections = {t.subject for t in triples
                  if t.predicate == RDF_TYPE and t.object == ox.NamedNode(TG + "EdgeSelection")}
    assert selections == {ox.NamedNode(e["iri"]) for e in data["selected"]}
    edges = {f"<<( {t.object} )>>" for t in triples if t.predicate == ox.NamedNode(TG + "edge")}
    assert edges == {e["edge"] for e in data["selected"]}
    retrieved = [t for t in triples if t.predicate == ox.NamedNode(TG + "retrievedEdge")]
    assert len(retrieved) == data["edge_count"]
    assert all(isinstance(t.object, ox.Triple) for t in retrieved)


def test_reading_commands_read_a_store_another_writer_holds(demo_dir: Path, session: str) -> None:
    """`serve --ask` or a running `query` holds the store as its one writer: the commands that
    only read open it read-only, as last committed, and take no writer's turn."""
    from tgsparql.stores.locking import exclusive_store

    with exclusive_store(demo_dir, timeout=0):
        for command in (["sessions"], ["explain", session], ["trace", session],
                        ["export", "--format", "nquads"]):
            run = cli(*command, "--store", demo_dir, "--lock-timeout", "0")
            assert run.exit_code == 0 and run.stdout, (command, run.stderr)
        assert cli("sessions", "delete", "--store", demo_dir, "--older-than", "1d",
                   "--lock-timeout", "0").exit_code == 1  # a write waits its turn


def test_explain_unknown_session_fails_with_one_line(demo_dir: Path) -> None:
    missing = "urn:trustgraph:session:00000000-0000-4000-8000-000000000000"
    run = cli("explain", missing, "--store", demo_dir)
    assert run.exit_code == 1
    assert run.stdout == ""
    assert run.stderr == f"error: no session {missing} in collection 'explainability'\n"


@pytest.mark.parametrize(
    "iri",
    [
        "not an iri>",
        "urn:trustgraph:session:zzz",
        "",
        "urn:trustgraph:prov:answer:00000000-0000-4000-8000-000000000000",
        "urn:trustgraph:session:00000000-0000-4000-8000-000000000000> . <x",
    ],
)
def test_explain_malformed_iri_fails_with_one_line(store_dir: Path, iri: str) -> None:
    run = cli("explain", iri, "--store", store_dir)
    assert run.exit_code == 1
    assert run.stdout == ""
    assert run.stderr == (
        f"error: not a session IRI: {iri!r} (expected urn:trustgraph:session:<uuid>)\n"
    )


# --- the installed command, as a CI runs it ---------------------------------------------------


def start_module(*args: object, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tgsparql.cli", *map(str, args)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=clean_env(),
    )


def test_console_script_runs_the_demo_with_exit_0(tmp_path: Path) -> None:
    done = subprocess.run(
        [console_script(), "demo", "--store", "store"],
        capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[3].startswith("Warsaw")
    assert any(re.fullmatch(r"  answer     \(SHA-256 verified; cites (\d+) of \1 selected edges\)",
                            line) for line in lines), "the offline answer cites every edge"
    assert "\x1b[" not in done.stdout


def test_process_exit_codes_success_failure_usage(tmp_path: Path, tgsparql_demo_file: Path) -> None:
    missing = "urn:trustgraph:session:00000000-0000-4000-8000-000000000000"
    runs = {
        "success": start_module("load", "--store", "loaded", tgsparql_demo_file, cwd=tmp_path),
        "failure": start_module("explain", missing, "--store", "empty", cwd=tmp_path),
        "usage": start_module("query", "q", "--bogus", cwd=tmp_path),
    }
    done = {name: (process, *process.communicate(timeout=120)) for name, process in runs.items()}
    assert {name: process.returncode for name, (process, _, _) in done.items()} == {
        "success": 0, "failure": 1, "usage": 2,
    }
    assert done["success"][1].splitlines()[0] == f"loaded {tgsparql_demo_file}: 463 quads"
    assert done["failure"][1] == ""
    assert done["failure"][2] == f"error: no session {missing} in collection 'explainability'\n"
    assert "No such option '--bogus'" in done["usage"][2]

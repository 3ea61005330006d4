"""`tgsparql validate` for CI, and `tgsparql query --validate`: verdicts, formats, exit codes."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pyoxigraph as ox
import pytest

from tests.conftest import CliRun, cli
from tgsparql.stores.store import open_store

SH = "http://www.w3.org/ns/shacl#"
TGS = "https://trustgraph.ai/shapes/"
QUESTION = "Who did Marie Curie marry?"
SESSION_RE = re.compile(r"urn:trustgraph:session:[0-9a-f-]{36}")
PREFIXES = "PREFIX tg: <https://trustgraph.ai/ns/>\nPREFIX ent: <https://example.org/demo/entity/>\n"
UNSOURCED_FACT = "INSERT DATA { ent:Marie_Curie <https://example.org/demo/rel/likes> ent:Paris }"
ZERO_SHA = "0" * 64
TAMPERED_CHUNK = f"""
    DELETE {{ GRAPH <urn:graph:library> {{ <urn:chunk:6e9a0e2c-72cd-408b-b488-7bb5b5e81ee2> tg:contentSha256 ?h }} }}
    INSERT {{ GRAPH <urn:graph:library> {{ <urn:chunk:6e9a0e2c-72cd-408b-b488-7bb5b5e81ee2> tg:contentSha256 "{ZERO_SHA}" }} }}
    WHERE {{ GRAPH <urn:graph:library> {{ <urn:chunk:6e9a0e2c-72cd-408b-b488-7bb5b5e81ee2> tg:contentSha256 ?h }} }}"""
def validate(store: Path, *args: object) -> CliRun:
    return cli("validate", "--store", store, *args)


def corrupt(store: Path, update: str, session: str = "") -> None:
    opened = open_store(store)
    try:
        opened.update(PREFIXES + update.replace("SESSION", session))
    finally:
        opened.close()


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


pytestmark = pytest.mark.usefixtures("no_settings")


@pytest.fixture
def store(tmp_path: Path, tgsparql_demo_file: Path) -> Path:
    """An on-disk store with the demo loaded."""
    path = tmp_path / "store"
    assert cli("load", "--store", path, tgsparql_demo_file).exit_code == 0
    return path


def ask(store: Path, question: str = QUESTION) -> str:
    """Record a session with the CLI; its IRI."""
    run = cli("query", question, "--store", store)
    assert run.exit_code == 0, run.stderr
    match = SESSION_RE.search(run.stderr)
    assert match is not None, run.stderr
    return match.group(0)


@pytest.fixture
def session(store: Path) -> str:
    return ask(store)


def junit(run: CliRun) -> dict[str, ET.Element]:
    """The test suites, one per shape, by the shape's IRI."""
    root = ET.fromstring(run.stdout)
    assert root.tag == "testsuites"
    return {suite.get("name", ""): suite for suite in root.iter("testsuite")}


def cases(suite: ET.Element) -> dict[str, ET.Element]:
    """A suite's test cases, one per focus node, by the focus node."""
    return {case.get("name", ""): case for case in suite.iter("testcase")}


# --- exit codes -------------------------------------------------------------------------------


def test_a_conforming_store_exits_0_and_says_so(store, session) -> None:
    run = validate(store)
    assert run.exit_code == 0, run.stdout
    assert re.fullmatch(r"Conforms: \d+ shapes checked, no results\.\n", run.stdout)
    assert run.stderr == ""


def test_violations_exit_1_and_each_is_listed(store, session) -> None:
    corrupt(store, 'DELETE WHERE { GRAPH ?g { <SESSION> tg:status ?s } }', session)
    corrupt(store, TAMPERED_CHUNK)
    run = validate(store)
    assert run.exit_code == 1
    results, table = run.stdout.split("\n\n")
    lines = results.splitlines()
    assert lines[0] == "Does not conform: 3 violations."
    assert len(lines) == 4
    assert any(session in line and "tg:status" in line for line in lines[1:])
    assert any(session in line and "tg:completeDay" in line for line in lines[1:])
    assert any("urn:chunk:6e9a0e2c" in line and "does not match its tg:contentSha256" in line
               for line in lines[1:])
    assert [row.split()[:3] for row in table.splitlines()] == [
        ["Shape", "Severity", "Count"],
        [TGS + "LibraryDocument", "Violation", "1"],
        [TGS + "Session", "Violation", "1"],
        [TGS + "Session-status", "Violation", "1"],
    ]


def test_warnings_alone_exit_0(store, session) -> None:
    corrupt(store, UNSOURCED_FACT)
    run = validate(store)
    assert run.exit_code == 0
    assert run.stdout.splitlines()[0] == "Conforms, with 1 warning."
    assert "has no extraction provenance" in run.stdout


def test_a_shapes_file_with_a_syntax_error_exits_2_naming_file_and_line(store, tmp_path) -> None:
    bad = write(tmp_path / "bad.ttl", "@prefix sh: <http://www.w3.org/ns/shacl#> .\n\n<a> sh:path .\n")
    run = validate(store, "--shapes", bad)
    assert run.exit_code == 2
    line = run.one_error_line
    assert str(bad) in line and "line 3" in line, line
    assert run.stdout == ""


def test_a_missing_shapes_file_exits_2(store, tmp_path) -> None:
    run = validate(store, "--shapes", tmp_path / "none.ttl")
    assert run.exit_code == 2
    assert "none.ttl" in run.one_error_line


def test_a_shapes_feature_the_validator_does_not_support_exits_2_naming_it(store, tmp_path) -> None:
    shapes = write(tmp_path / "af.ttl", """
        @prefix sh: <http://www.w3.org/ns/shacl#> .
        <https://example.org/Shape> a sh:NodeShape ;
            sh:target [ a sh:SPARQLTarget ; sh:select "SELECT ?this WHERE { ?this ?p ?o }" ] .
    """)
    run = validate(store, "--shapes", shapes)
    assert run.exit_code == 2
    line = run.one_error_line
    assert "https://example.org/Shape" in line and "target" in line, line


def test_a_store_that_cannot_be_opened_exits_2(tmp_path) -> None:
    blocker = write(tmp_path / "file", "")
    run = cli("validate", "--store", blocker / "store")
    assert run.exit_code == 2
    assert "store" in run.one_error_line


def test_a_store_that_does_not_exist_exits_2_and_is_not_created(tmp_path) -> None:
    run = validate(tmp_path / "typo")
    assert run.exit_code == 2
    assert run.one_error_line == f"error: no store at {tmp_path / 'typo'}"
    assert not (tmp_path / "typo").exists()


def test_an_empty_directory_is_not_a_store_and_gets_no_database_files(tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    run = validate(empty)
    assert run.exit_code == 2
    assert run.one_error_line == f"error: {empty} is an empty directory, not a store"
    assert list(empty.iterdir()) == []


def test_a_directory_of_other_files_is_not_a_store(tmp_path) -> None:
    write(tmp_path / "notes.txt", "hello")
    run = validate(tmp_path)
    assert run.exit_code == 2
    assert run.one_error_line == f"error: {tmp_path} is a directory, not a store"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_regular_file_as_store_is_a_one_line_error(tmp_path) -> None:
    regular = write(tmp_path / "store.ttl", "<a> <b> <c> .")
    run = validate(regular)
    assert run.exit_code == 2
    assert run.one_error_line == f"error: {regular} is a file, not a store directory"


def test_a_shapes_file_without_shapes_exits_2_and_is_not_replaced_by_the_bundled_shapes(
    store, session, tmp_path
) -> None:
    shapes = write(tmp_path / "none.ttl", "<https://example.org/a> <https://example.org/b> 1 .\n")
    run = validate(store, "--shapes", shapes)
    assert run.exit_code == 2
    assert run.one_error_line == f"error: {shapes}: no shapes (nothing to validate against)"
    assert run.stdout == ""


def test_a_graph_without_triples_exits_2_rather_than_conforming_vacuously(store, session) -> None:
    run = validate(store, "--graph", "urn:graph:typo")
    assert run.exit_code == 2
    assert run.one_error_line == "error: --graph <urn:graph:typo> holds no triples: nothing to validate"


def test_no_store_exits_2() -> None:
    run = cli("validate")
    assert run.exit_code == 2
    assert "--store" in run.one_error_line


def test_an_unknown_session_exits_2(store, session) -> None:
    other = "urn:trustgraph:session:00000000-0000-4000-8000-000000000000"
    run = validate(store, "--session", other)
    assert run.exit_code == 2
    assert run.one_error_line == f"error: no session {other} in the data graph"


def test_a_malformed_session_exits_2(store) -> None:
    run = validate(store, "--session", "not-a-session")
    assert run.exit_code == 2
    assert "not a session IRI: 'not-a-session'" in run.one_error_line


def test_a_graph_that_is_not_an_iri_exits_2(store) -> None:
    run = validate(store, "--graph", "no graph")
    assert run.exit_code == 2
    assert run.one_error_line == (
        "error: --graph 'no graph' is neither an IRI nor the word 'default'"
    )


# --- formats and --output ---------------------------------------------------------------------


def test_turtle_is_a_standard_validation_report(store, session) -> None:
    corrupt(store, TAMPERED_CHUNK)
    corrupt(store, UNSOURCED_FACT)
    run = validate(store, "--format", "turtle")
    assert run.exit_code == 1
    graph = ox.Store()
    graph.load(run.stdout, format=ox.RdfFormat.TURTLE)
    [report] = [q.subject for q in graph.quads_for_pattern(
        None, ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
        ox.NamedNode(SH + "ValidationReport"))]
    conforms = [q.object for q in graph.quads_for_pattern(report, ox.NamedNode(SH + "conforms"), None)]
    assert conforms == [ox.Literal(False)]
    results = [q.object for q in graph.quads_for_pattern(report, ox.NamedNode(SH + "result"), None)]
    severities = sorted(
        q.object.value.removeprefix(SH)
        for r in results for q in graph.quads_for_pattern(r, ox.NamedNode(SH + "resultSeverity"), None)
    )
    assert severities == ["Violation", "Warning"]


def test_json_has_the_verdict_and_every_result(store, session) -> None:
    corrupt(store, TAMPERED_CHUNK)
    run = validate(store, "--format", "json")
    assert run.exit_code == 1
    data = json.loads(run.stdout)
    assert data["conforms"] is False
    [result] = data["results"]
    assert result["focusNode"] == {"type": "iri", "value": "urn:chunk:6e9a0e2c-72cd-408b-b488-7bb5b5e81ee2"}
    assert result["sourceShape"]["value"] == TGS + "LibraryDocument"
    assert result["sourceConstraint"]["value"] == TGS + "ContentMatchesItsSha256"
    assert result["severity"] == "Violation"


def test_json_of_a_conforming_store(store, session) -> None:
    data = json.loads(validate(store, "--format", "json").stdout)
    assert data["conforms"] is True and data["results"] == []


def test_junit_has_a_suite_per_shape_and_a_case_per_focus_node_failing_where_violated(
    store, session
) -> None:
    corrupt(store, TAMPERED_CHUNK)
    corrupt(store, UNSOURCED_FACT)
    run = validate(store, "--format", "junit")
    assert run.exit_code == 1
    suites = junit(run)
    assert {TGS + name for name in ("Session", "Retrieval", "Selection", "EdgeSelection", "Answer",
                                    "LibraryDocument", "Document", "Page", "Chunk", "Subgraph",
                                    "ExtractionActivity", "Agent", "FactProvenance")} <= set(suites)
    failing = {name for name, suite in suites.items() if suite.find("testcase/failure") is not None}
    assert failing == {TGS + "LibraryDocument"}
    [chunk] = cases(suites[TGS + "LibraryDocument"]).values()
    assert chunk.get("name") == "<urn:chunk:6e9a0e2c-72cd-408b-b488-7bb5b5e81ee2>"
    assert chunk.get("classname") == TGS + "LibraryDocument"
    assert "does not match its tg:contentSha256" in (chunk.findtext("failure") or "")
    [marie] = cases(suites[TGS + "FactProvenance"]).values()
    assert marie.get("name") == "<https://example.org/demo/entity/Marie_Curie>"
    assert marie.find("failure") is None
    assert "has no extraction provenance" in (marie.findtext("system-out") or "")
    root = ET.fromstring(run.stdout)
    assert root.get("tests") == str(len(list(root.iter("testcase"))))
    assert root.get("failures") == "1" and suites[TGS + "LibraryDocument"].get("failures") == "1"


def test_junit_of_a_conforming_store_has_no_failure(store, session) -> None:
    suites = junit(validate(store, "--format", "junit"))
    assert len(suites) > 20
    assert all(suite.find("testcase/failure") is None for suite in suites.values())
    assert all(len(cases(suite)) == 1 for suite in suites.values())


def test_output_writes_the_report_to_the_file_and_a_verdict_to_stderr(
    store, session, tmp_path
) -> None:
    corrupt(store, TAMPERED_CHUNK)
    target = tmp_path / "report.xml"
    run = validate(store, "--format", "junit", "--output", target)
    assert run.exit_code == 1
    assert run.stdout == ""
    assert re.fullmatch(
        rf"does not conform: 1 violations and 0 warnings from \d+ shapes; report written to "
        rf"{re.escape(str(target))}\n", run.stderr)
    assert ET.parse(target).getroot().get("failures") == "1"


def test_output_to_a_place_that_cannot_be_written_exits_2(store, tmp_path) -> None:
    run = validate(store, "--output", tmp_path / "missing" / "report.txt")
    assert run.exit_code == 2
    assert "cannot write" in run.one_error_line


# --- --fail-on, --ignore-shape, --all-results: a KG without extraction provenance -----------


FACT_PROVENANCE = TGS + "FactProvenance"
SUMMARISED = re.compile(
    rf"^WARNING: (\d+) facts carry no extraction provenance \({FACT_PROVENANCE}, warning\); "
    r"--all-results lists them$", re.M)


@pytest.fixture
def plain_kg(tmp_path: Path, tgsparql_demo_file: Path) -> Path:
    """A store loaded from a Turtle file of facts alone: the demo's KG, without its sources."""
    facts = [ox.Triple(q.subject, q.predicate, q.object)
             for q in ox.parse(path=tgsparql_demo_file, format=ox.RdfFormat.TRIG)
             if q.graph_name == ox.DefaultGraph()]
    turtle = tmp_path / "kg.ttl"
    turtle.write_bytes(ox.serialize(facts, format=ox.RdfFormat.TURTLE))
    path = tmp_path / "plain"
    assert cli("load", "--store", path, turtle).exit_code == 0
    return path


def unsourced(store: Path) -> list[dict[str, object]]:
    """Every fact without extraction provenance, as JSON lists them."""
    results = json.loads(validate(store, "--format", "json").stdout)["results"]
    assert {result["sourceShape"]["value"] for result in results} == {FACT_PROVENANCE}
    return results


def test_a_plain_kg_is_one_summarised_warning_and_exits_0(plain_kg) -> None:
    facts = len(unsourced(plain_kg))
    run = validate(plain_kg)
    assert run.exit_code == 0
    results, table = run.stdout.split("\n\n")
    assert results.splitlines()[0] == f"Conforms, with {facts} warnings."
    [finding] = results.splitlines()[1:]
    match = SUMMARISED.fullmatch(finding)
    assert match is not None and int(match.group(1)) == facts
    header, row = table.splitlines()
    assert header.split() == ["Shape", "Severity", "Count", "First", "focus", "nodes"]
    assert row.split(maxsplit=3)[:3] == [FACT_PROVENANCE, "Warning", str(facts)]
    assert row.split(maxsplit=3)[3].count("<https://example.org/demo/entity/") == 3


@pytest.mark.parametrize(("fail_on", "exit_code", "headline"), [
    ("violation", 0, "Conforms, with"), ("warning", 1, "Does not conform:"),
    ("info", 1, "Does not conform:"),
])
def test_fail_on_chooses_the_severity_that_fails_the_build(
    plain_kg, fail_on, exit_code, headline
) -> None:
    run = validate(plain_kg, "--fail-on", fail_on)
    assert run.exit_code == exit_code
    assert run.stdout.startswith(headline)
    assert len(SUMMARISED.findall(run.stdout)) == 1


def test_ignore_shape_leaves_its_results_out_of_the_verdict_and_the_report(plain_kg) -> None:
    run = validate(plain_kg, "--ignore-shape", FACT_PROVENANCE, "--fail-on", "warning")
    assert run.exit_code == 0
    assert re.fullmatch(r"Conforms: \d+ shapes checked, no results\.\n", run.stdout)
    suites = junit(validate(plain_kg, "--ignore-shape", FACT_PROVENANCE, "--format", "junit"))
    assert FACT_PROVENANCE not in suites and TGS + "Session" in suites


def test_ignore_shape_accepts_the_iri_in_angle_brackets(plain_kg) -> None:
    run = validate(plain_kg, "--ignore-shape", f"<{FACT_PROVENANCE}>", "--fail-on", "warning")
    assert run.exit_code == 0


def test_an_ignore_shape_that_is_not_an_iri_exits_2(plain_kg) -> None:
    run = validate(plain_kg, "--ignore-shape", "no shape")
    assert run.exit_code == 2
    assert run.one_error_line == "error: --ignore-shape 'no shape' is not an IRI"


def test_all_results_lists_each_fact_without_provenance(plain_kg) -> None:
    facts = unsourced(plain_kg)
    run = validate(plain_kg, "--all-results")
    assert run.exit_code == 0
    listed = [line for line in run.stdout.splitlines() if "has no extraction provenance" in line]
    assert len(listed) == len(facts) and not SUMMARISED.search(run.stdout)


def test_junit_of_a_plain_kg_summarises_the_facts_in_one_case(plain_kg) -> None:
    run = validate(plain_kg, "--format", "junit")
    assert run.exit_code == 0
    suites = junit(run)
    [summary] = cases(suites[FACT_PROVENANCE]).values()
    assert summary.find("failure") is None
    assert SUMMARISED.fullmatch(f"WARNING: {summary.findtext('system-out')}")
    failing = validate(plain_kg, "--format", "junit", "--fail-on", "warning")
    assert failing.exit_code == 1
    [summary] = cases(junit(failing)[FACT_PROVENANCE]).values()
    assert summary.find("failure") is not None


def test_junit_with_all_results_has_a_case_per_focus_node(plain_kg) -> None:
    subjects = {f"<{fact['focusNode']['value']}>" for fact in unsourced(plain_kg)}  # type: ignore
    run = validate(plain_kg, "--format", "junit", "--all-results", "--fail-on", "warning")
    assert run.exit_code == 1
    suite = junit(run)[FACT_PROVENANCE]
    assert set(cases(suite)) == subjects
    assert suite.get("tests") == suite.get("failures") == str(len(subjects))


def test_facts_without_provenance_beside_facts_with_it_are_listed_up_to_ten(store) -> None:
    extra = " . ".join(f"ent:Marie_Curie <https://example.org/demo/rel/likes> ent:Place{n}"
                       for n in range(12))
    corrupt(store, f"INSERT DATA {{ {extra} }}")
    run = validate(store)
    assert run.exit_code == 0
    results = run.stdout.split("\n\n")[0].splitlines()
    assert results[0] == "Conforms, with 12 warnings."
    assert len(results) == 12 and all("has no extraction provenance" in r for r in results[1:11])
    assert results[11] == (
        "WARNING: and 2 more facts without extraction provenance; --all-results lists them")
    assert len(validate(store, "--all-results").stdout.split("\n\n")[0].splitlines()) == 13


def test_json_has_the_summary_per_shape(plain_kg) -> None:
    facts = unsourced(plain_kg)
    data = json.loads(validate(plain_kg, "--format", "json", "--fail-on", "warning").stdout)
    assert data["failOn"] == "warning" and data["failing"] == len(facts)
    [row] = data["summary"]
    assert row["shape"] == FACT_PROVENANCE and row["severity"] == "Warning"
    assert row["count"] == len(facts) and len(row["focusNodes"]) == 3
    assert SUMMARISED.fullmatch(f"WARNING: {row['note']}")


# --- --session and --graph --------------------------------------------------------------------


def test_session_restricts_the_focus_to_that_session(store, session) -> None:
    other = ask(store, "Where was Marie Curie born?")
    corrupt(store, 'DELETE WHERE { GRAPH ?g { <SESSION> tg:status ?s } }', session)
    corrupt(store, TAMPERED_CHUNK)
    assert validate(store, "--session", other).exit_code == 0
    run = validate(store, "--session", session, "--format", "json")
    assert run.exit_code == 1
    results = json.loads(run.stdout)["results"]
    assert {result["focusNode"]["value"] for result in results} == {session}
    assert {result["sourceShape"]["value"] for result in results} == {
        TGS + "Session-status", TGS + "Session"}  # no status, and a tg:completeDay without one


def test_session_accepts_the_bare_uuid(store, session) -> None:
    corrupt(store, 'DELETE WHERE { GRAPH ?g { <SESSION> tg:status ?s } }', session)
    assert validate(store, "--session", session.rsplit(":", 1)[1]).exit_code == 1


def test_session_accepts_its_iri_in_angle_brackets_as_the_report_writes_it(store,
                                                                          session) -> None:
    corrupt(store, 'DELETE WHERE { GRAPH ?g { <SESSION> tg:status ?s } }', session)
    run = validate(store, "--session", session)
    assert f"<{session}>" in run.stdout  # pasted from here
    again = validate(store, "--session", f"<{session}>")
    assert (again.exit_code, again.stdout) == (1, run.stdout)


def test_session_covers_every_entity_of_the_session(store, session) -> None:
    """A corrupt edge selection, answer document and retrieval are all in the session's focus."""
    uuid = session.rsplit(":", 1)[1]
    corrupt(store, f"""
        DELETE WHERE {{ GRAPH ?g {{ <urn:trustgraph:prov:edge:{uuid}:0> tg:reasoning ?r }} }} ;
        DELETE WHERE {{ GRAPH ?g {{ <urn:trustgraph:answer:{uuid}> tg:mimeType ?m }} }} ;
        INSERT DATA {{ GRAPH <urn:graph:explainability> {{
            <urn:trustgraph:prov:retrieval:{uuid}> tg:entity "Marie" }} }}""")
    run = validate(store, "--session", session, "--format", "json")
    focus = {r["focusNode"]["value"] for r in json.loads(run.stdout)["results"]}
    assert focus == {f"urn:trustgraph:prov:edge:{uuid}:0", f"urn:trustgraph:answer:{uuid}",
                     f"urn:trustgraph:prov:retrieval:{uuid}"}


def test_graph_restricts_the_data_graph(store, session) -> None:
    corrupt(store, TAMPERED_CHUNK)
    assert validate(store, "--graph", "default").exit_code == 0
    run = validate(store, "--graph", "urn:graph:library", "--format", "json")
    assert run.exit_code == 1
    assert [r["focusNode"]["value"] for r in json.loads(run.stdout)["results"]] == [
        "urn:chunk:6e9a0e2c-72cd-408b-b488-7bb5b5e81ee2"
    ]


def test_the_word_default_names_the_default_graph(store, session) -> None:
    corrupt(store, UNSOURCED_FACT)
    run = validate(store, "--graph", "default", "--format", "json")
    assert run.exit_code == 0
    [result] = json.loads(run.stdout)["results"]
    assert result["sourceConstraint"]["value"] == TGS + "FactHasProvenance"


def test_every_graph_named_gives_the_union(store, session) -> None:
    corrupt(store, TAMPERED_CHUNK)
    corrupt(store, UNSOURCED_FACT)
    every = ["--graph", "default", "--graph", "urn:graph:source", "--graph", "urn:graph:library",
             "--graph", "urn:graph:explainability"]
    named = validate(store, *every, "--format", "json")
    union = validate(store, "--format", "json")
    assert named.exit_code == union.exit_code == 1
    assert json.loads(named.stdout)["results"] == json.loads(union.stdout)["results"]


# --- query --validate -------------------------------------------------------------------------


def test_query_validate_prints_the_verdict_and_exits_0(store) -> None:
    run = cli("query", QUESTION, "--store", store, "--validate")
    assert run.exit_code == 0, run.stderr
    assert "Pierre Curie" in run.stdout
    assert re.search(r"^validate: conforms: \d+ shapes checked, 0 warnings$", run.stderr, re.M)


def test_query_validate_in_jsonl_ends_with_the_verdict_object(store) -> None:
    run = cli("query", QUESTION, "--store", store, "--validate", "--format", "jsonl")
    assert run.exit_code == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    verdict = lines[-1]["validation"]
    assert set(lines[-1]) == {"validation"}
    assert verdict["session"] == lines[0]["explain_id"]
    assert verdict["conforms"] is True and verdict["results"] == []
    assert lines[-2]["end_of_session"] is True


@pytest.fixture
def broken_librarian(monkeypatch: pytest.MonkeyPatch) -> None:
    """A librarian that records a wrong SHA-256 for every text it stores."""
    monkeypatch.setattr("tgsparql.asking.librarian.sha256_hex", lambda text: ZERO_SHA)


def test_query_validate_exits_1_when_the_new_session_does_not_conform(
    store, broken_librarian
) -> None:
    run = cli("query", QUESTION, "--store", store, "--validate", "--format", "jsonl")
    assert run.exit_code == 1
    verdict = json.loads(run.stdout.splitlines()[-1])["validation"]
    assert verdict["conforms"] is False
    [result] = verdict["results"]
    assert result["focusNode"]["value"] == verdict["session"].replace("session", "answer")
    assert result["sourceConstraint"]["value"] == TGS + "ContentMatchesItsSha256"


def test_query_validate_in_text_lists_what_is_wrong(store, broken_librarian) -> None:
    run = cli("query", QUESTION, "--store", store, "--validate")
    assert run.exit_code == 1
    assert re.search(r"^validate: does not conform: 1 violations and 0 warnings", run.stderr, re.M)
    assert "does not match its tg:contentSha256" in run.stderr


def test_query_validate_checks_only_the_new_session(store, session) -> None:
    corrupt(store, 'DELETE WHERE { GRAPH ?g { <SESSION> tg:status ?s } }', session)
    corrupt(store, TAMPERED_CHUNK)
    assert cli("query", QUESTION, "--store", store, "--validate").exit_code == 0


def test_literals_loaded_into_an_on_disk_store_are_judged_and_reported_as_written(tmp_path) -> None:
    """pyoxigraph keeps "3"^^xsd:byte as "3"^^xsd:integer; `load` records what the file wrote."""
    xsd = "<http://www.w3.org/2001/XMLSchema#byte>"
    shapes = write(tmp_path / "shapes.ttl", """
        @prefix sh: <http://www.w3.org/ns/shacl#> .
        @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
        <urn:S> sh:targetNode <urn:a> ; sh:path <urn:p> ; sh:datatype xsd:byte .""")
    valid = write(tmp_path / "valid.nt", f'<urn:a> <urn:p> "3"^^{xsd} .\n')
    store = tmp_path / "store"
    assert cli("load", "--store", store, valid).exit_code == 0
    assert validate(store, "--shapes", shapes).exit_code == 0
    ill_typed = write(tmp_path / "ill-typed.nt", f'<urn:a> <urn:p> "300"^^{xsd} .\n')
    assert cli("load", "--store", store, ill_typed).exit_code == 0
    run = validate(store, "--shapes", shapes, "--format", "json")
    assert run.exit_code == 1
    assert [r["value"] for r in json.loads(run.stdout)["results"]] == [
        {"type": "literal", "value": "300", "datatype": xsd[1:-1]}
    ]

"""`tgsparql golden` and `tgsparql check`: freeze recorded answers, change the KG, check, and see
the diff; exit 0, 1 or 2 like `validate`."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import click
import pytest
import yaml

from tests.conftest import CliRun, cli, tgsparql_process
from tgsparql.cli import main
from tgsparql.cli.ask import DEMO_QUESTION
from tgsparql.stores.store import open_store

EX = "https://example.org/demo/"
BORN = f"<{EX}entity/Marie_Curie> <{EX}rel/bornIn> <{EX}entity/Warsaw>"
CURIE_DOC = f"{EX}doc/marie-curie"
UNKNOWN = "urn:trustgraph:session:0d8bb1cc-8d0b-4c5e-8a83-d52a0d8c3d30"

pytestmark = pytest.mark.usefixtures("no_settings")


def ok(*args: object) -> CliRun:
    run = cli(*args)
    assert run.exit_code == 0, run.stderr
    return run


@pytest.fixture
def asked(tgsparql_demo_store_dir: Path) -> Path:
    """The demo store with the demo question and one more asked and recorded."""
    for question in (DEMO_QUESTION, "Who discovered radium?"):
        ok("query", "--store", tgsparql_demo_store_dir, question)
    return tgsparql_demo_store_dir


@pytest.fixture
def frozen(asked: Path, tmp_path: Path) -> Path:
    path = tmp_path / "golden.yaml"
    run = ok("golden", "--store", asked, "--from-sessions", "--output", path)
    assert run.stderr == f"2 questions frozen; golden file written to {path}\n"
    return path


def delete_born(store_dir: Path) -> None:
    with open_store(store_dir) as store:
        store.update(f"DELETE DATA {{ {BORN} }}")


def test_the_loop_freeze_change_the_kg_check_names_the_edge_and_its_document(
    asked: Path, frozen: Path,
) -> None:
    run = ok("check", "--store", asked, frozen)
    assert run.stdout.splitlines() == [
        f"check {frozen}: all 2 questions hold (offline backend; recorded in a throwaway "
        "collection, deleted)",
        f"ok    {DEMO_QUESTION}",
        "ok    Who discovered radium?",
    ]
    delete_born(asked)
    code, out, err = cli("check", "--store", asked, frozen)
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0] == (f"check {frozen}: 1 of 2 questions changed (offline backend; recorded in "
                        "a throwaway collection, deleted)")
    assert lines[1] == f"FAIL  {DEMO_QUESTION}"
    assert lines[2] == (
        f"      no longer selected: {BORN} (Marie Curie — born in — Warsaw); no longer a fact of "
        f"the KG; stated in {CURIE_DOC}, page 1, chunk 0: \"Marie Curie was born Maria "
        "Skłodowska in Warsaw in 1867.\"")
    assert "ok    Who discovered radium?" in lines
    drifted = cli("drift", "--store", asked)
    assert drifted.exit_code == 1, drifted.stderr
    [session] = [line.split()[0] for line in drifted.stdout.splitlines()
                 if line.endswith(DEMO_QUESTION)]
    assert f": no longer a KG fact  <<( {BORN} )>>" in drifted.stdout
    assert drifted.stdout.splitlines()[-1].startswith("1 session drifted")


def test_the_record_is_untouched_unless_a_collection_is_named(asked: Path, frozen: Path) -> None:
    sessions = ok("sessions", "--store", asked, "--format", "json").stdout
    ok("check", "--store", asked, frozen)
    assert ok("sessions", "--store", asked, "--format", "json").stdout == sessions
    run = ok("check", "--store", asked, frozen, "--collection", "ci-1")
    kept = json.loads(ok("sessions", "--store", asked, "--collection", "ci-1", "--format",
                         "json").stdout)
    assert len(kept) == 2
    for session in kept:
        assert f"      session {session['session']}" in run.stdout.splitlines()
    delete_born(asked)
    code, out, _ = cli("check", "--store", asked, frozen, "--against", "ci-1")
    assert code == 1
    assert f"      against ci-1: no longer selected: {BORN}" in out


def test_the_golden_file_freezes_what_the_sessions_show(asked: Path, frozen: Path) -> None:
    data = yaml.safe_load(frozen.read_text(encoding="utf-8"))
    assert data["version"] == 1
    demo, radium = data["questions"]
    assert (demo["question"], radium["question"]) == (DEMO_QUESTION, "Who discovered radium?")
    assert demo["seeds"] == [f"{EX}entity/Polonium"]
    assert {"subject": f"{EX}entity/Marie_Curie", "predicate": f"{EX}rel/bornIn",
            "object": f"{EX}entity/Warsaw", "cited": True,
            "sources": [{"document": CURIE_DOC, "page": 1, "chunk": 0,
                         "sentence": "Marie Curie was born Maria Skłodowska in Warsaw in 1867."}],
            } in demo["select"]
    assert demo["select_only"] is True
    assert demo["cite"] == [{"document": CURIE_DOC}]
    assert demo["answer"]["exact"].startswith("Warsaw.")
    assert (demo["max_unselected_hops"], demo["validation"]) == (0, "conforms")


def test_golden_writes_yaml_to_stdout_json_by_name_and_chosen_sessions(
    asked: Path, tmp_path: Path,
) -> None:
    everything = yaml.safe_load(ok("golden", "--store", asked, "--from-sessions").stdout)
    (session,) = [s["session"] for s in json.loads(ok(
        "sessions", "--store", asked, "--format", "json").stdout)
        if s["question"] == DEMO_QUESTION]
    path = tmp_path / "one.json"
    ok("golden", "--store", asked, "--from-sessions", "--session", session, "--no-validate",
       "--output", path)
    (one,) = json.loads(path.read_text(encoding="utf-8"))["questions"]
    assert "validation" not in one
    assert one == {k: v for k, v in everything["questions"][0].items() if k != "validation"}
    run = ok("golden", "--store", asked, "--from-sessions", "--format", "json")
    assert json.loads(run.stdout) == everything


@pytest.mark.parametrize(("args", "code", "message"), [
    ([], 2, "say what to freeze: --from-sessions"),
    (["--from-sessions", "--collection", "empty"], 1,
     "error: no complete session in collection 'empty' to freeze"),
    (["--from-sessions", "--session", UNKNOWN], 1,
     f"error: no session {UNKNOWN} in collection 'explainability'"),
    (["--from-sessions", "--session", "not-a-session"], 1, "error: not a session IRI"),
])
def test_golden_refuses_what_it_cannot_freeze(
    asked: Path, args: list[str], code: int, message: str,
) -> None:
    run = cli("golden", "--store", asked, *args)
    assert run.exit_code == code
    assert message in run.stderr


def test_golden_and_check_never_create_a_store(tmp_path: Path, frozen: Path) -> None:
    for args in (["golden", "--from-sessions"], ["check", frozen]):
        run = cli(*args, "--store", tmp_path / "none")
        assert (run.exit_code, run.one_error_line) == (2, f"error: no store at {tmp_path / 'none'}")
    assert not (tmp_path / "none").exists()


def test_a_bad_golden_file_is_exit_2_naming_the_entry_and_field(
    asked: Path, tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("questions:\n- question: Who discovered radium?\n  answer: {like: x}\n",
                   encoding="utf-8")
    run = cli("check", "--store", asked, bad)
    assert run.exit_code == 2
    assert run.one_error_line == (f"error: {bad}: question 1 (Who discovered radium?): `answer`: "
                                  "unknown rule `like`; use exact, contains or pattern")
    missing = cli("check", "--store", asked, tmp_path / "missing.yaml")
    assert missing.exit_code == 2 and "cannot read" in missing.one_error_line


def test_against_a_collection_without_sessions_is_exit_2(asked: Path, frozen: Path) -> None:
    run = cli("check", "--store", asked, frozen, "--against", "never")
    assert (run.exit_code, run.one_error_line) == (
        2, "error: collection 'never' holds no session to compare with")


def test_check_reports_as_json_and_junit_to_a_file(asked: Path, frozen: Path,
                                                   tmp_path: Path) -> None:
    delete_born(asked)
    report = tmp_path / "golden.xml"
    run = cli("check", "--store", asked, frozen, "--format", "junit", "--output", report,
              "--jobs", "2")
    assert run.exit_code == 1
    assert run.stderr == (f"check {frozen}: 1 of 2 questions changed (offline backend; recorded "
                          f"in a throwaway collection, deleted); report written to {report}\n")
    cases = ElementTree.parse(report).getroot().findall("testsuite/testcase")
    assert [case.find("failure") is not None for case in cases] == [True, False]
    data = json.loads(cli("check", "--store", asked, frozen, "--format", "json").stdout)
    assert [r["passed"] for r in data["results"]] == [False, True]


def test_tolerated_checks_report_without_failing(asked: Path, frozen: Path) -> None:
    delete_born(asked)
    run = ok("check", "--store", asked, frozen, "--tolerate", "edges", "--tolerate", "answer",
             "--tolerate", "citations")
    assert f"      (tolerated) no longer selected: {BORN}" in run.stdout


def test_check_takes_every_flag_of_query_that_shapes_an_answer() -> None:
    def flags(name: str) -> set[str]:
        command = main.get_command(click.Context(main), name)
        assert command is not None
        return {opt for param in command.params for opt in param.opts if opt.startswith("--")}

    asking = flags("query") - {"--no-stream", "--format", "--validate"}
    assert asking <= flags("check")


def test_a_session_that_no_longer_conforms_is_frozen_so_with_a_warning(asked: Path) -> None:
    """The demo session selected the deleted fact; the radium one had retrieved it."""
    delete_born(asked)
    run = ok("golden", "--store", asked, "--from-sessions")
    warnings = run.stderr.splitlines()
    assert len(warnings) == 2
    assert all(w.startswith("warning: session urn:trustgraph:session:") for w in warnings)
    for warning, count in zip(warnings, (2, 1)):
        assert re.search(rf" does not conform now \(does not conform: {count} violations and 0 "
                         r"warnings from \d+ shapes\); frozen as `validation: violates`$", warning)
    verdicts = [q.get("validation") for q in yaml.safe_load(run.stdout)["questions"]]
    assert verdicts == ["violates", "violates"]


def test_a_started_check_keeps_the_sessions_it_records_and_ends_with_its_code(
    asked: Path, frozen: Path
) -> None:
    """`check` started as CI starts it: its process ends without Python's teardown once its
    output is flushed, so what it wrote must be on disk by then; the sessions kept in the
    named collection are there for the next process to read, and a throwaway run leaves the
    store as it found it."""
    process = tgsparql_process("check", "--store", asked, frozen, "--collection", "ci-1")
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert "all 2 questions hold" in stdout
    kept = json.loads(ok("sessions", "--store", asked, "--collection", "ci-1", "--format",
                         "json").stdout)
    assert len(kept) == 2
    with open_store(asked) as store:
        before = set(store.oxigraph)
    process = tgsparql_process("check", "--store", asked, frozen)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    with open_store(asked) as store:
        assert set(store.oxigraph) == before

"""`tgsparql drift`: the recorded sessions whose explanation no longer holds, for CI; exit 0
when nothing drifted, 1 when a session did, 2 when the record could not be read."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.test_cli_golden import BORN, CURIE_DOC, asked, ok  # noqa: F401  (fixture)
from tgsparql.cli.ask import DEMO_QUESTION
from tgsparql.stores.store import open_store

pytestmark = pytest.mark.usefixtures("no_settings")


def change(store_dir: Path, update: str) -> None:
    with open_store(store_dir) as store:
        store.update(update)


def demo_session(store_dir: Path) -> str:
    sessions = json.loads(ok("sessions", "--store", store_dir, "--format", "json").stdout)
    return next(s["session"] for s in sessions if s["question"] == DEMO_QUESTION)


def test_nothing_drifted_exits_0_and_says_so(asked: Path) -> None:
    run = ok("drift", "--store", asked)
    assert run.stdout == "no drift: every recorded explanation of 'explainability' still holds\n"
    assert json.loads(ok("drift", "--store", asked, "--format", "json").stdout)["drifted"] is False


def test_the_fact_the_demo_answer_stands_on_deleted_exits_1_naming_the_session_and_edge(
    asked: Path,
) -> None:
    session = demo_session(asked)
    change(asked, f"DELETE DATA {{ {BORN} }}")
    code, out, err = cli("drift", "--store", asked)
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0].startswith(f"{session}  ") and lines[0].endswith(
        f"1 stale edge, 0 stale sources  {DEMO_QUESTION}")
    assert lines[1].endswith(f"] Marie Curie — born in — Warsaw: no longer a KG fact  <<( {BORN} )>>")
    assert lines[-1] == ("1 session drifted in 'explainability': 1 selected edge no longer a KG "
                         "fact, 0 sources whose document drifted (0 documents)")
    explained = ok("explain", session, "--store", asked).stdout
    assert "Marie Curie — born in — Warsaw  [no longer a KG fact]" in explained


def test_a_removed_document_is_counted_per_session_and_per_document_in_json_and_csv(
    asked: Path, tmp_path: Path,
) -> None:
    change(asked, f"DELETE WHERE {{ GRAPH <urn:graph:source> {{ <{CURIE_DOC}> ?p ?o }} }}")
    code, out, _ = cli("drift", "--store", asked, "--format", "json")
    assert code == 1
    data = json.loads(out)
    [document] = data["documents"]
    assert (document["document"], document["reason"]) == (CURIE_DOC, "removed")
    assert document["sessions"] == len(data["sessions"]) >= 1
    assert document["edge_selections"] == data["stale_sources"] == sum(
        s["stale_sources"] for s in data["sessions"])
    assert {source["document"] for s in data["sessions"] for source in s["sources"]} == {CURIE_DOC}
    report = tmp_path / "drift.csv"
    code, out, err = cli("drift", "--store", asked, "--format", "csv", "--output", report)
    assert code == 1 and out == ""
    assert err.startswith(f"{len(data['sessions'])} session")
    assert err.endswith(f"; report written to {report}\n")
    rows = list(csv.DictReader(io.StringIO(report.read_text(encoding="utf-8"))))
    assert len(rows) == data["stale_sources"]
    assert {(row["kind"], row["document"], row["reason"]) for row in rows} == \
        {("source", CURIE_DOC, "removed")}


def test_another_collection_is_checked_apart(asked: Path) -> None:
    change(asked, f"DELETE DATA {{ {BORN} }}")
    run = ok("drift", "--store", asked, "--collection", "other")
    assert run.stdout == "no drift: every recorded explanation of 'other' still holds\n"


def test_no_store_is_exit_2(tmp_path: Path) -> None:
    missing = cli("drift", "--store", tmp_path / "missing")
    assert missing.exit_code == 2
    assert missing.one_error_line == f"error: no store at {tmp_path / 'missing'}"
    assert not (tmp_path / "missing").exists()
    assert cli("drift").exit_code == 2

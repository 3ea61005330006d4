"""The pytest plugin users get: fixtures, the conformance assertion, the remote option, and the
documented example, run as a user would run it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO

from tests.servers import oxigraph_server
from tgsparql.asking.provenance import Recorder, now
from tgsparql.rdf.iris import SessionIds
from tgsparql.stores.store import EmbeddedStore, Store
from tgsparql.testing import NonConformance, assert_conforms
from tgsparql.testing.fakes import Script

pytest_plugins = ["pytester"]

EXAMPLE = REPO / "docs" / "example_test_provenance.py"
QUESTION = "Where was Marie Curie born?"


def without_hypothesis(code: str) -> subprocess.CompletedProcess[str]:
    """`code` run in a fresh interpreter where hypothesis cannot be imported."""
    probe = "import sys; sys.modules['hypothesis'] = None\n" + code
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60)


def test_the_plugin_loads_without_hypothesis_and_imports_no_validator() -> None:
    """Users without hypothesis must not break; the validator loads only when asked for."""
    done = without_hypothesis(
        "import tgsparql.testing.plugin; "
        "print(sorted(m for m in ('tgsparql.testing.strategies', 'tgsparql.validation', "
        "'tgsparql.testing.fakes') if m in sys.modules))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_strategies_without_hypothesis_name_the_extra_to_install() -> None:
    done = without_hypothesis("try:\n    import tgsparql.testing.strategies\n"
                              "except ImportError as error:\n    print(error)")
    assert done.stdout.strip() == ("tgsparql.testing.strategies needs hypothesis: "
                                   "pip install 'tgsparql[testing]'")


def test_the_plugin_is_registered_through_its_entry_point() -> None:
    from importlib.metadata import entry_points

    (plugin,) = [e for e in entry_points(group="pytest11") if e.name == "tgsparql"]
    assert plugin.value == "tgsparql.testing.plugin"


def test_store_fixtures_are_fresh_embedded_stores(
    tgsparql_store: Store, tgsparql_disk_store: EmbeddedStore, tmp_path: Path
) -> None:
    assert isinstance(tgsparql_store, EmbeddedStore) and tgsparql_store.path is None
    assert tgsparql_disk_store.path == tmp_path / "tgsparql-store"
    assert len(tgsparql_store.oxigraph) == 0 and len(tgsparql_disk_store.oxigraph) == 0


def test_loaded_store_fails_the_test_naming_a_file_that_does_not_load(
    tgsparql_loaded_store, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.ttl"
    bad.write_text("<urn:a> <urn:b> .\n", encoding="utf-8")
    with pytest.raises(pytest.fail.Exception, match=r"tgsparql could not load: .*bad\.ttl:1"):
        tgsparql_loaded_store(bad)


def test_pipeline_fixture_takes_a_script_mapping(
    tgsparql_loaded_store, tgsparql_demo_file: Path, tgsparql_pipeline
) -> None:
    store = tgsparql_loaded_store(tgsparql_demo_file)
    born = (("Marie Curie", "born in", "Warsaw"), "the birthplace")
    rag = tgsparql_pipeline({QUESTION: Script(select=[born], answer="Warsaw, as scripted.")})
    answer, messages = rag.ask(QUESTION)
    assert answer == "Warsaw, as scripted."
    assert rag.backend.calls == [("select", QUESTION), ("answer", QUESTION)]
    assert_conforms(store, session=messages[0].explain_id)


def test_assert_conforms_lists_every_violation_readably(tgsparql_store: Store) -> None:
    recorder = Recorder(tgsparql_store)
    ids = SessionIds("00000000-0000-4000-8000-00000000000a")
    recorder.write(recorder.session(ids, "Who discovered radium?", now()))
    with pytest.raises(NonConformance) as raised:
        assert_conforms(tgsparql_store)
    text = str(raised.value)
    assert text.startswith("the store does not conform: 2 failing results (2 in all)\n")
    assert "  1. [Violation] A session is never left open" in text
    assert "  2. [Violation] A session ends with exactly one tg:status" in text
    assert f"focus <{ids.session.value}>; shape <https://trustgraph.ai/shapes/Session-" in text
    assert "path <http://www.w3.org/ns/prov#endedAtTime>; value -" in text
    assert len(raised.value.report.violations) == 2


def test_assert_conforms_can_refuse_warnings_and_take_shape_files(
    tgsparql_store: Store, tmp_path: Path
) -> None:
    shapes = tmp_path / "mine.ttl"
    shapes.write_text(
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n"
        "<urn:shape> a sh:NodeShape ; sh:targetNode <urn:x> ;\n"
        "  sh:property [ sh:path <urn:p> ; sh:minCount 1 ; sh:severity sh:Warning ] .\n",
        encoding="utf-8",
    )
    assert assert_conforms(tgsparql_store, shapes=shapes).results  # a warning passes
    with pytest.raises(NonConformance, match=r"\[Warning\]"):
        assert_conforms(tgsparql_store, shapes=[shapes], warnings=False)


def test_the_documented_example_passes_through_pytester(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_example=EXAMPLE.read_text(encoding="utf-8"))
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


USER_TESTS = """
import pytest

from tgsparql.stores.store import StoreError, open_store

opened = []


def test_the_demo_fixtures(tgsparql_demo_store, tgsparql_demo_pipeline, tgsparql_demo_store_dir,
                           tgsparql_disk_store):
    opened.extend([tgsparql_demo_store, tgsparql_disk_store])
    assert tgsparql_demo_pipeline.store is tgsparql_demo_store
    answer, messages = tgsparql_demo_pipeline.ask("Where was Marie Curie born?")
    assert "Warsaw" in answer and messages[-1].error is None
    with open_store(tgsparql_demo_store_dir) as on_disk:  # closed, so free to open
        assert on_disk.ask("ASK { ?s ?p 'Warsaw' }")


def test_the_stores_were_closed_when_the_test_ended():
    assert len(opened) == 2
    for store in opened:
        with pytest.raises(StoreError, match="is closed"):
            store.oxigraph
"""


def test_a_users_tests_get_the_demo_fixtures_and_their_stores_closed(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_without_remote_support_the_marked_tests_skip_saying_why(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        "import sys\nsys.modules['tgsparql.stores.remote'] = None  # as if it were not installed\n"
    )
    pytester.makepyfile(test_example=EXAMPLE.read_text(encoding="utf-8"))
    result = pytester.runpytest_subprocess(
        "-q", "-rs", "-p", "no:cacheprovider", "--tgsparql-endpoint", "http://127.0.0.1:9/query"
    )
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines(
        ["*--tgsparql-endpoint given, but tgsparql.stores.remote cannot be used*"])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with oxigraph_server(tmp_path / "oxigraph") as base:
        yield base


def test_the_marked_example_runs_against_a_real_endpoint(
    pytester: pytest.Pytester, server: str
) -> None:
    from tgsparql.stores.endpoint import Endpoint
    from tgsparql.stores.remote import RemoteStore

    pytester.makepyfile(test_example=EXAMPLE.read_text(encoding="utf-8"))
    result = pytester.runpytest_subprocess(
        "-q", "-p", "no:cacheprovider", "-k", "offline_pipeline",
        "--tgsparql-endpoint", server + "/query",
        "--tgsparql-update-endpoint", server + "/update",
    )
    result.assert_outcomes(passed=1, deselected=3)
    with RemoteStore(Endpoint(server + "/query", update_url=server + "/update")) as store:
        sessions = store.run("list_sessions", graph="urn:graph:explainability", limit=5,
                             question="").rows
    assert [row["question"].value for row in sessions] == [QUESTION]

"""`tgsparql drift` on an endpoint: the same findings as on the embedded store, in every dialect
(Oxigraph 0.5 writes RDF 1.2 triple terms, Virtuoso 7 reified statements with the KG in a named
graph)."""

from __future__ import annotations

import json
from importlib.resources import as_file, files
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.remote.test_golden_endpoint import BORN, endpoint_flags
from tests.servers import Server
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.cli.ask import DEMO_QUESTION
from tgsparql.data.loader import load_files

pytestmark = pytest.mark.usefixtures("no_settings")


@pytest.mark.parametrize("name", ["oxigraph", "virtuoso"])
def test_drift_on_an_endpoint_lists_the_session_whose_fact_was_deleted(
    name: str, request: pytest.FixtureRequest,
) -> None:
    server: Server = request.getfixturevalue(name)
    server.clear()
    store = server.store()
    with as_file(files("tgsparql.data.demo").joinpath("curie.trig")) as demo:
        assert not load_files(store, [Path(demo)]).failed
    session = GraphRag(store, OfflineBackend()).ask(DEMO_QUESTION)[1][0].explain_id
    flags = endpoint_flags(server)
    held = cli("drift", *flags)
    assert held.exit_code == 0, held.stdout + held.stderr
    kg = f"GRAPH <{server.kg_graph}> {{ {BORN} }}" if server.kg_graph else BORN
    store.update(f"DELETE DATA {{ {kg} }}")
    drifted = cli("drift", *flags, "--format", "json")
    assert drifted.exit_code == 1, drifted.stderr
    [found] = json.loads(drifted.stdout)["sessions"]
    assert found["session"] == session
    assert [edge["edge"] for edge in found["edges"]] == [f"<<( {BORN} )>>"]
    assert [edge["labels"] for edge in found["edges"]] == [["Marie Curie", "born in", "Warsaw"]]

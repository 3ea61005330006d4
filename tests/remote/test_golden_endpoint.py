"""`tgsparql golden` and `tgsparql check` on an endpoint: the same loop as on the embedded store,
in every dialect (Oxigraph 0.5 writes RDF 1.2 triple terms, Virtuoso 7 reified statements with
the KG in a named graph)."""

from __future__ import annotations

from importlib.resources import as_file, files
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.servers import Server
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.cli.ask import DEMO_QUESTION
from tgsparql.data.loader import load_files
from tgsparql.record.explain import list_sessions
from tgsparql.rdf import vocab

EX = "https://example.org/demo/"
BORN = f"<{EX}entity/Marie_Curie> <{EX}rel/bornIn> <{EX}entity/Warsaw>"

pytestmark = pytest.mark.usefixtures("no_settings")


def endpoint_flags(server: Server) -> list[str]:
    flags = ["--endpoint", server.base + server.query_path,
             "--update-endpoint", server.base + server.update_path, "--dialect", server.dialect]
    return flags + (["--kg-graph", server.kg_graph] if server.kg_graph else [])


@pytest.mark.parametrize("name", ["oxigraph", "virtuoso"])
def test_freeze_change_and_check_on_an_endpoint(name: str, request: pytest.FixtureRequest,
                                                tmp_path: Path) -> None:
    server: Server = request.getfixturevalue(name)
    server.clear()
    store = server.store()
    with as_file(files("tgsparql.data.demo").joinpath("curie.trig")) as demo:
        assert not load_files(store, [Path(demo)]).failed
    GraphRag(store, OfflineBackend()).ask(DEMO_QUESTION)
    golden = tmp_path / "golden.yaml"
    flags = endpoint_flags(server)
    frozen = cli("golden", *flags, "--from-sessions", "--output", golden)
    assert frozen.exit_code == 0, frozen.stderr
    held = cli("check", *flags, golden, "--jobs", "2")
    assert held.exit_code == 0, held.stdout + held.stderr
    assert len(list_sessions(store, vocab.DEFAULT_COLLECTION, 10)) == 1, "the record untouched"
    kg = f"GRAPH <{server.kg_graph}> {{ {BORN} }}" if server.kg_graph else BORN
    store.update(f"DELETE DATA {{ {kg} }}")
    changed = cli("check", *flags, golden)
    assert changed.exit_code == 1, changed.stderr
    assert (f"no longer selected: {BORN} (Marie Curie — born in — Warsaw); no longer a fact of "
            f"the KG; stated in {EX}doc/marie-curie, page 1, chunk 0") in changed.stdout

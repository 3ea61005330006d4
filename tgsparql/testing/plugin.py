"""The tgsparql pytest plugin: stores, loaded stores, pipelines, the bundled sample in a store
and under a pipeline, a conformance assertion, and golden questions (a test marked
`tgsparql_golden("golden.yaml")` becomes one item per question). Every store a fixture opens is
closed when its test ends.

Registered through the `pytest11` entry point, so installing tgsparql is enough. It imports
nothing of tgsparql, pyoxigraph or hypothesis until a fixture is used: test suites that never
ask for one pay nothing and need none of them.

`--tgsparql-endpoint URL` runs the tests marked `tgsparql_remote` against that SPARQL endpoint
instead of an embedded store. The endpoint is emptied (DROP ALL) before each such test: point
it at a scratch store only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

if TYPE_CHECKING:
    from tgsparql.asking.pipeline import GraphRag
    from tgsparql.stores.store import Store
    from tgsparql.testing.golden import GoldenCheck

MARKER = "tgsparql_remote"
GOLDEN_MARKER = "tgsparql_golden"
GOLDEN_FIXTURE = "tgsparql_golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tgsparql")
    group.addoption(
        "--tgsparql-endpoint", metavar="URL", default=os.environ.get("TGSPARQL_TEST_ENDPOINT"),
        help=f"SPARQL query endpoint for tests marked {MARKER} (emptied before each test). "
        "Env: TGSPARQL_TEST_ENDPOINT.",
    )
    group.addoption(
        "--tgsparql-update-endpoint", metavar="URL", default=None,
        help="Its update endpoint; default: the query endpoint.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: the tgsparql_store fixture is the --tgsparql-endpoint store when one is "
        "given (else an embedded store)",
    )
    config.addinivalue_line(
        "markers",
        f"{GOLDEN_MARKER}(path, tolerate=()): one test item per question of the golden file "
        "(relative to the test file), each given to the tgsparql_golden fixture",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked tgsparql_golden that asks for the tgsparql_golden fixture becomes one item
    per question of the golden file."""
    if GOLDEN_FIXTURE not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker(GOLDEN_MARKER)
    if marker is None:
        return  # the fixture says what is missing
    from tgsparql.testing.golden import golden_checks, ids

    checks = golden_checks(marker, Path(metafunc.definition.path))
    metafunc.parametrize(GOLDEN_FIXTURE, checks, ids=ids(checks), indirect=True)


@pytest.fixture
def tgsparql_store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """A fresh, empty store: embedded in memory, or the remote endpoint for marked tests."""
    endpoint = request.config.getoption("--tgsparql-endpoint")
    if endpoint and request.node.get_closest_marker(MARKER) is not None:
        store = _remote(endpoint, request.config.getoption("--tgsparql-update-endpoint"))
    else:
        from tgsparql.stores.store import open_store

        store = open_store()
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def tgsparql_disk_store(tmp_path: Path) -> Iterator[Store]:
    """A fresh embedded store on disk, in the test's temporary directory."""
    from tgsparql.stores.store import open_store

    store = open_store(tmp_path / "tgsparql-store")
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def tgsparql_demo_file() -> Iterator[Path]:
    """The bundled sample (the Curies: KG, extraction provenance, texts) as a TriG file."""
    from importlib.resources import as_file, files

    with as_file(files("tgsparql.data.demo").joinpath("curie.trig")) as path:
        yield path


@pytest.fixture
def tgsparql_loaded_store(tgsparql_store: Store) -> Callable[..., Store]:
    """`tgsparql_loaded_store(*files, store=None)`: the store (default: `tgsparql_store`) with
    the RDF files loaded as `tgsparql load` does; a file that does not load fails the test."""

    def load(*paths: str | os.PathLike[str], store: Store | None = None) -> Store:
        target = store if store is not None else tgsparql_store
        _load(target, paths)
        return target

    return load


@pytest.fixture
def tgsparql_demo_store(tgsparql_loaded_store: Callable[..., Store],
                        tgsparql_demo_file: Path) -> Store:
    """`tgsparql_store` holding the bundled sample."""
    return tgsparql_loaded_store(tgsparql_demo_file)


@pytest.fixture
def tgsparql_demo_store_dir(tmp_path: Path, tgsparql_demo_file: Path) -> Path:
    """The directory of a store on disk holding the bundled sample, closed, so a command (or
    another process) can open it: `tgsparql query --store DIR QUESTION`."""
    from tgsparql.stores.store import open_store

    path = tmp_path / "tgsparql-demo-store"
    with open_store(path) as store:
        _load(store, [tgsparql_demo_file])
    return path


@pytest.fixture
def tgsparql_pipeline(tgsparql_store: Store) -> Callable[..., GraphRag]:
    """`tgsparql_pipeline(backend="offline", *, store=None, **options)`: a GraphRag over the
    store (default: `tgsparql_store`). `backend` is "offline", any Backend, or a mapping of
    question → `tgsparql.testing.fakes.Script` for a ScriptedBackend."""

    def build(backend: Any = "offline", *, store: Store | None = None, **options: Any) -> GraphRag:
        from tgsparql.asking.pipeline import GraphRag
        from tgsparql.testing.fakes import backend_of

        return GraphRag(store if store is not None else tgsparql_store, backend_of(backend),
                        **options)

    return build


@pytest.fixture
def tgsparql_demo_pipeline(tgsparql_demo_store: Store,
                           tgsparql_pipeline: Callable[..., GraphRag]) -> GraphRag:
    """A GraphRag with the offline backend over `tgsparql_demo_store`: questions about the
    Curies answered and recorded, with no LLM."""
    return tgsparql_pipeline(store=tgsparql_demo_store)


@pytest.fixture
def tgsparql_golden(request: pytest.FixtureRequest) -> GoldenCheck:
    """One question of the golden file the test's `tgsparql_golden` marker names:
    `tgsparql_golden.check(store, backend="offline")` asks it and fails with what changed."""
    check = getattr(request, "param", None)
    if check is None:
        pytest.fail(f"the {GOLDEN_FIXTURE} fixture needs its test marked "
                    f"@pytest.mark.{GOLDEN_MARKER}(\"golden.yaml\")", pytrace=False)
    return cast("GoldenCheck", check)


@pytest.fixture
def tgsparql_assert_conforms() -> Callable[..., Any]:
    """`tgsparql.testing.assert_conforms`, for tests that prefer fixtures to imports."""
    from tgsparql.testing.assertions import assert_conforms

    return assert_conforms


def _load(store: Store, paths: Iterable[str | os.PathLike[str]]) -> None:
    """The files loaded as `tgsparql load` does; a file that does not load fails the test."""
    from tgsparql.data.loader import load_files

    report = load_files(store, list(paths))
    if report.failed:
        pytest.fail("tgsparql could not load: " + "; ".join(report.failed.values()),
                    pytrace=False)


def _remote(endpoint: str, update_endpoint: str | None) -> Store:
    try:
        from tgsparql.stores.endpoint import Endpoint
        from tgsparql.stores.remote import RemoteStore
    except ImportError as error:
        pytest.skip("--tgsparql-endpoint given, but tgsparql.stores.remote cannot be used: "
                    f"{error}")

    store = RemoteStore(Endpoint(endpoint, update_url=update_endpoint))
    store.run("testing_clear")
    return store

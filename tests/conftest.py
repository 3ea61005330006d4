"""Shared fixtures: fresh stores, the demo sample, and a pipeline over it."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.resources import as_file, files
from pathlib import Path

import pytest

from tgsparql.llm.offline import OfflineBackend
from tgsparql.loader import load_files
from tgsparql.pipeline import GraphRag
from tgsparql.store import EmbeddedStore, open_store
from tgsparql.templates import Templates

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def demo_path() -> Iterator[Path]:
    with as_file(files("tgsparql.demo").joinpath("curie.trig")) as path:
        yield path


@pytest.fixture
def store() -> EmbeddedStore:
    return open_store()


@pytest.fixture
def templates() -> Templates:
    return Templates("rdf12")


@pytest.fixture
def demo_store(store: EmbeddedStore, demo_path: Path) -> EmbeddedStore:
    report = load_files(store, [demo_path])
    assert not report.failed
    return store


@pytest.fixture
def rag(demo_store: EmbeddedStore) -> GraphRag:
    return GraphRag(demo_store, OfflineBackend())

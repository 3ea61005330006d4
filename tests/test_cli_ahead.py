"""A reading command's store is opened while the command loads (`tgsparql.cli.ahead`): the
command then reads that store, and nothing else is ever opened or created on a guess."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from tests.conftest import cli
from tgsparql.cli import options
from tgsparql.cli.ahead import open_ahead, opened_ahead

QUAD = ox.Quad(ox.NamedNode("http://example.org/s"), ox.NamedNode("http://example.org/p"),
               ox.Literal("o"), ox.NamedNode("urn:graph:source"))


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    store = ox.Store(str(tmp_path / "store"))
    store.add(QUAD)
    store.flush()
    del store
    return tmp_path / "store"


@pytest.mark.parametrize("flags", [["--store", "{}"], ["--store={}"]])
@pytest.mark.parametrize("command", ["validate", "drift", "check"])
def test_a_reading_command_gets_its_store_opened_read_only_once(
    store_dir: Path, command: str, flags: list[str]
) -> None:
    open_ahead([command, "--format", "json", *(f.format(store_dir) for f in flags)])
    opened = opened_ahead(store_dir)
    assert opened is not None and list(opened) == [QUAD]
    with pytest.raises(RuntimeError, match="read-write"):
        opened.add(QUAD)  # read-only: it takes no writer's turn
    assert opened_ahead(store_dir) is None  # the next open is the command's own


def test_the_environment_names_the_store_when_the_command_line_does_not(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TGSPARQL_STORE", str(store_dir))
    open_ahead(["validate", "--session", "x"])
    assert opened_ahead(store_dir) is not None
    open_ahead(["validate", "--endpoint", "http://127.0.0.1:1/sparql"])
    assert opened_ahead(store_dir) is None


@pytest.mark.parametrize("args", [
    ["query", "--store", "{}", "a question"],  # writes: takes the writer's turn itself
    ["validate", "--help", "--store", "{}"],
    ["validate", "--", "--store", "{}"],
    [],
])
def test_nothing_is_opened_for_a_command_that_does_not_only_read(
    store_dir: Path, args: list[str]
) -> None:
    open_ahead([arg.format(store_dir) for arg in args])
    assert opened_ahead(store_dir) is None


def test_a_store_opened_for_another_path_is_not_used(store_dir: Path, tmp_path: Path) -> None:
    open_ahead(["validate", "--store", str(store_dir)])
    assert opened_ahead(tmp_path / "elsewhere") is None


def test_a_later_command_never_takes_an_earlier_commands_store(store_dir: Path) -> None:
    open_ahead(["validate", "--store", str(store_dir)])  # a command that failed before reading
    open_ahead(["drift"])
    assert opened_ahead(store_dir) is None


def test_a_path_holding_no_store_is_neither_opened_nor_created(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "missing", tmp_path / "empty"):
        open_ahead(["validate", "--store", str(path)])
        assert opened_ahead(path) is None
    assert not (tmp_path / "missing").exists() and not any((tmp_path / "empty").iterdir())
    done = cli("validate", "--store", str(tmp_path / "missing"))
    assert done.exit_code == 2 and "no store at" in done.stderr
    assert not (tmp_path / "missing").exists()


def test_validate_reads_the_store_opened_ahead(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken: list[ox.Store | None] = []

    def taking(path: Path) -> ox.Store | None:
        taken.append(opened_ahead(path))
        return taken[-1]

    monkeypatch.setattr(options, "opened_ahead", taking)
    done = cli("validate", "--store", str(store_dir), "--format", "json")
    assert done.exit_code in (0, 1), done.stderr
    assert json.loads(done.stdout)["conforms"] in (True, False)
    assert len(taken) == 1 and taken[0] is not None

"""A reading command's store is opened while the command loads (`tgsparql.cli.ahead`): the
command then reads that store, and nothing else is ever opened or created on a guess. Its
process ends once its output is flushed, with its exit code."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import click
import pyoxigraph as ox
import pytest

from tests.conftest import clean_env, cli, console_script, tgsparql_process
from tgsparql.cli import main, options
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


def test_validate_reads_its_validator_while_the_store_is_still_opening(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The validator (a file read back) is read before the command waits for the store opened
    ahead, so the two overlap: the wait for the store comes last."""
    from tgsparql.record import conformance

    order: list[str] = []
    taking, building = options.opened_ahead, conformance.bundled_validator
    monkeypatch.setattr(options, "opened_ahead",
                        lambda path: order.append("store") or taking(path))
    monkeypatch.setattr(conformance, "bundled_validator",
                        lambda dialect: order.append("validator") or building(dialect))
    done = cli("validate", "--store", str(store_dir), "--format", "json")
    assert done.exit_code in (0, 1), done.stderr
    assert order == ["validator", "store"]


@pytest.fixture
def kg_store(tmp_path: Path) -> Path:
    """A KG of many facts without extraction provenance: one warning per fact, when all asked."""
    store = ox.Store(str(tmp_path / "kg"))
    ex = "http://example.org/"
    label = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
    store.extend(quad for n in range(600) for quad in (
        ox.Quad(ox.NamedNode(f"{ex}person/{n}"), label, ox.Literal(f"Person {n}"), ox.DefaultGraph()),
        ox.Quad(ox.NamedNode(f"{ex}person/{n}"), ox.NamedNode(f"{ex}knows"),
                ox.NamedNode(f"{ex}person/{n + 1}"), ox.DefaultGraph()),
    ))
    store.flush()
    del store
    return tmp_path / "kg"


@pytest.mark.parametrize(("args", "exit_code"), [
    (["--format", "json", "--all-results"], 0),
    (["--format", "json", "--all-results", "--fail-on", "warning"], 1),
    (["--format", "junit", "--all-results", "--output", "{}/report.xml"], 0),
    (["--session", "urn:trustgraph:session:0b0c8d53-5c4a-4bd4-9a65-8a3f35a7e0a1"], 2),
])
def test_a_reading_commands_process_ends_with_its_exit_code_and_all_its_output(
    kg_store: Path, tmp_path: Path, args: list[str], exit_code: int
) -> None:
    """A reading command's process ends without Python's teardown: what it wrote is flushed
    first, to a pipe as to a file, and the exit code is the command's."""
    (tmp_path / "in").mkdir()
    (tmp_path / "started").mkdir()
    within = cli("validate", "--store", kg_store, *(a.format(tmp_path / "in") for a in args))
    process = tgsparql_process("validate", "--store", kg_store,
                               *(a.format(tmp_path / "started") for a in args))
    stdout, stderr = process.communicate(timeout=120)
    assert (process.returncode, stdout) == (exit_code, within.stdout)
    assert stderr == within.stderr.replace(str(tmp_path / "in"), str(tmp_path / "started"))
    assert within.exit_code == exit_code
    if "--output" in args:
        written = (tmp_path / "started" / "report.xml").read_text(encoding="utf-8")
        assert written == (tmp_path / "in" / "report.xml").read_text(encoding="utf-8")
        assert written.count("<testcase") > 600
    elif exit_code != 2:
        assert len(json.loads(stdout)["results"]) == 600


@pytest.mark.parametrize("enabled", [True, False])
def test_loading_a_command_leaves_the_cyclic_collector_as_it_was(enabled: bool) -> None:
    """Commands load without the collector (it frees nothing meanwhile), and it runs again
    after: a long command, or a test process that loads commands, collects as before."""
    try:
        (gc.enable if enabled else gc.disable)()
        for name in main.list_commands(click.Context(main)):
            assert main.get_command(click.Context(main), name) is not None
            assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_a_command_in_its_own_process_keeps_what_it_loaded_out_of_the_collectors_passes() -> None:
    """Run as the process's own command line, the objects loaded with the command live as long
    as the process: they are frozen out of the collector's passes (gc.freeze). A caller in
    Python that hands the command its arguments keeps its own objects collectable."""
    script = ("import gc, sys\nfrom tgsparql.cli import main\nsys.argv = ['tgsparql', 'sessions', "
              "'--help']\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
              "print(gc.get_freeze_count(), gc.isenabled())")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=clean_env(), timeout=120, check=True)
    frozen, enabled = done.stdout.split()[-2:]
    assert int(frozen) > 10_000 and enabled == "True"
    before = gc.get_freeze_count()
    assert cli("sessions", "--help").exit_code == 0
    assert gc.get_freeze_count() == before


def test_a_reading_command_started_without_stdout_still_exits_with_its_code(
    kg_store: Path
) -> None:
    """A CI runner that closes the command's stdout: nothing to flush it to, and the exit code
    is still the command's."""
    done = subprocess.run([console_script(), "validate", "--store", str(kg_store), "--fail-on",
                           "warning", "--all-results"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, env=clean_env(), timeout=120)
    assert (done.returncode, done.stderr) == (1, "")
    closed = subprocess.run([sys.executable, "-c", "import os, sys; os.close(1); sys.stdout = None; "
                             "from tgsparql.cli import main; main()", "validate", "--store",
                             str(kg_store)], stderr=subprocess.PIPE, text=True, env=clean_env(),
                            timeout=120)
    assert closed.returncode == 0 and "Traceback" not in closed.stderr

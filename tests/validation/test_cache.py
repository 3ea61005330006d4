"""Validators kept on disk between processes (tgsparql.validation.cache): read back, they give
the report a validator built afresh gives; an entry that is torn, altered, stale or in a
directory others can write is never trusted, and is built again."""

from __future__ import annotations

import gc
import os
import pickle
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyoxigraph as ox
import pytest

from tests.conftest import REPO, cli, tgsparql_process
from tests.validation.test_validate_cli import QUESTION, SESSION_RE, corrupt
from tgsparql.record.conformance import bundled_validator, session_nodes
from tgsparql.stores.store import EmbeddedStore, open_store
from tgsparql.validation import Shapes, Validator, prebinding
from tgsparql.validation import cache as validator_cache
from tgsparql.validation import validator as validator_module
from tgsparql.validation.cache import CACHE_ENVIRONMENT, kept_validator
from tgsparql.validation.shapes import bundled_sources

pytestmark = pytest.mark.usefixtures("no_settings")

SHAPES = """@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ex: <http://example.org/> .
ex:PersonShape a sh:NodeShape ; sh:targetClass ex:Person ;
    sh:property [ sh:path ex:name ; sh:minCount {count} ] .
"""
DATA = """@prefix ex: <http://example.org/> .
ex:alice a ex:Person ; ex:name "Alice" .
ex:bob a ex:Person .
"""


@pytest.fixture
def directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache of this test's own, and no validator left in this process's memory."""
    kept = tmp_path / "validators"
    monkeypatch.setenv(CACHE_ENVIRONMENT, str(kept))
    bundled_validator.cache_clear()
    yield kept
    bundled_validator.cache_clear()


@pytest.fixture
def session_store(tmp_path: Path, tgsparql_demo_file: Path) -> tuple[Path, str]:
    """An on-disk store with the demo and one recorded session that breaks a shape (its day
    removed)."""
    path = tmp_path / "store"
    assert cli("load", "--store", path, tgsparql_demo_file).exit_code == 0
    run = cli("query", QUESTION, "--store", path)
    session = SESSION_RE.search(run.stderr)
    assert run.exit_code == 0 and session is not None, run.stderr
    corrupt(path, "DELETE WHERE { GRAPH ?g { <SESSION> tg:day ?day } }", session.group(0))
    return path, session.group(0)


def bundled(dialect: str = "rdf12") -> tuple[list[tuple[str, bytes]], Callable[[], Validator]]:
    """The bundled shapes as kept_validator takes them, and their builder, counting builds."""
    sources = [(f"bundled:{name}", text) for name, text in bundled_sources(dialect)]
    return sources, lambda: Validator(Shapes.bundled(dialect), dialect)


def counting(build: Callable[[], Validator]) -> tuple[Callable[[], Validator], list[None]]:
    built: list[None] = []

    def counted() -> Validator:
        built.append(None)
        return build()
    return counted, built


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.pickle"))


def replace_payload(entry: Path, payload: bytes) -> None:
    """The entry made to hold `payload` instead, whole and for the same key."""
    opened = validator_cache._opened(entry.read_bytes())
    assert opened is not None
    entry.write_bytes(validator_cache._whole(opened[0], payload))


def session_report(validator: Validator, store: EmbeddedStore, session: str) -> dict[str, object]:
    return validator.validate(store, focus=session_nodes(store, session)).to_json()


def test_a_validator_read_back_gives_the_report_of_one_built_afresh(
    directory: Path, session_store: tuple[Path, str]
) -> None:
    path, session = session_store
    sources, build = bundled()
    build, built = counting(build)
    store = EmbeddedStore(path, read_only=True)
    try:
        first = kept_validator(sources, "rdf12", build)
        assert len(built) == 1 and len(entries(directory)) == 1  # a miss builds and keeps
        again = kept_validator(sources, "rdf12", build)
        assert len(built) == 1 and again is not first  # a hit builds nothing
        fresh = session_report(build(), store, session)
        assert session_report(first, store, session) == fresh
        assert session_report(again, store, session) == fresh
        assert fresh["conforms"] is False  # the session's missing day is found either way
        full = again.validate(store).to_json()
        assert full == Validator(Shapes.bundled("rdf12"), "rdf12").validate(store).to_json()
    finally:
        store.close()


def test_a_validator_read_back_lexes_no_query_to_validate_a_session(
    directory: Path, session_store: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its queries run once per focus node were lexed for pre-binding before it was kept."""
    path, session = session_store
    sources, build = bundled()
    kept_validator(sources, "rdf12", build)
    prebinding._lexer.cache_clear()
    prebinding.group_starts.cache_clear()
    bound: list[str] = []

    def binding(text: str, *args: object) -> str:
        bound.append(text)
        return prebinding.insert_values(text, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(validator_module, "insert_values", binding)
    store = EmbeddedStore(path, read_only=True)
    try:
        report = kept_validator(sources, "rdf12", build).validate(
            store, focus=session_nodes(store, session))
    finally:
        store.close()
    assert bound and not report.conforms  # SHACL-SPARQL ran once per focus node
    assert prebinding._lexer.cache_info().currsize == 0
    assert prebinding.group_starts.cache_info().currsize == 0


def test_the_command_reads_back_what_an_earlier_command_kept(
    directory: Path, session_store: tuple[Path, str]
) -> None:
    path, session = session_store
    runs = []
    for cache in (str(directory), str(directory), "off"):
        process = tgsparql_process("validate", "--store", path, "--session", session,
                                   "--format", "json", **{CACHE_ENVIRONMENT: cache})
        out, err = process.communicate(timeout=120)
        runs.append((process.returncode, out))
        if not runs[1:]:
            assert len(entries(directory)) == 2, err  # the validator and the session's query
    assert runs[0][0] == 1 and '"conforms": false' in runs[0][1]
    assert runs[0] == runs[1] == runs[2]


@pytest.mark.parametrize("damage", ["truncated", "a byte flipped", "emptied"])
def test_a_torn_or_altered_entry_is_built_again_and_kept_whole(directory: Path, damage: str) -> None:
    sources, build = bundled()
    kept_validator(sources, "rdf12", build)
    [entry] = entries(directory)
    data = bytearray(entry.read_bytes())
    if damage == "truncated":
        del data[len(data) // 2:]
    elif damage == "a byte flipped":
        data[len(data) // 2] ^= 0xFF
    else:
        data.clear()
    entry.write_bytes(bytes(data))
    build, built = counting(build)
    assert len(kept_validator(sources, "rdf12", build).shapes) > 0
    assert built == [None]
    kept_validator(sources, "rdf12", build)
    assert built == [None]  # the entry was written whole again


def test_an_entry_kept_for_other_shapes_under_the_same_name_is_never_read_back(
    directory: Path, tmp_path: Path
) -> None:
    """An entry's file is named by a checksum, which two keys may share: what is read back
    must have been kept for exactly the caller's shapes, else it is built again."""
    shapes = tmp_path / "shapes.ttl"
    store = open_store()
    store.oxigraph.load(DATA.encode(), format=ox.RdfFormat.TURTLE)

    def kept(count: int) -> Validator:
        text = SHAPES.format(count=count).encode()
        return kept_validator([(shapes.as_uri(), text)], "rdf12",
                              lambda: Validator(Shapes.from_text(text.decode()), "rdf12"))

    assert len(kept(1).validate(store).results) == 1
    [one] = entries(directory)
    assert len(kept(0).validate(store).results) == 0
    other = next(entry for entry in entries(directory) if entry != one)
    other.write_bytes(one.read_bytes())  # the names collide: count 1's entry under count 0's
    assert len(kept(0).validate(store).results) == 0


@pytest.mark.parametrize("payload", [
    pickle.dumps(("not a validator", [])),
    b"cno_such_module\nThing\n.",  # a class this code does not have
])
def test_a_whole_entry_this_code_cannot_use_is_built_again(directory: Path, payload: bytes) -> None:
    sources, build = bundled()
    kept_validator(sources, "rdf12", build)
    [entry] = entries(directory)
    replace_payload(entry, payload)
    build, built = counting(build)
    assert isinstance(kept_validator(sources, "rdf12", build), Validator)
    assert built == [None]


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("payload", [None, b"cno_such_module\nThing\n."])
def test_reading_an_entry_back_leaves_the_cyclic_collector_as_it_was(
    directory: Path, enabled: bool, payload: bytes | None
) -> None:
    """The collector pauses while an entry is read back (its objects all live on), whether it
    reads whole or not, and runs again after as it did before."""
    sources, build = bundled()
    kept_validator(sources, "rdf12", build)
    if payload is not None:
        [entry] = entries(directory)
        replace_payload(entry, payload)
    try:
        (gc.enable if enabled else gc.disable)()
        assert isinstance(kept_validator(sources, "rdf12", build), Validator)
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_shapes_changed_since_are_read_again(directory: Path, tmp_path: Path) -> None:
    shapes = tmp_path / "shapes.ttl"
    store = open_store()
    store.oxigraph.load(DATA.encode(), format=ox.RdfFormat.TURTLE)

    def results() -> int:
        validator = kept_validator([(shapes.as_uri(), shapes.read_bytes())], "rdf12",
                                   lambda: Validator(Shapes.from_files([shapes]), "rdf12"))
        return len(validator.validate(store).results)

    shapes.write_text(SHAPES.format(count=1))
    assert results() == 1  # bob has no name
    shapes.write_text(SHAPES.format(count=0))
    assert results() == 0
    assert len(entries(directory)) == 2


def test_an_imported_file_changed_since_is_read_again(directory: Path, tmp_path: Path) -> None:
    imported = tmp_path / "person.ttl"
    main = tmp_path / "main.ttl"
    main.write_text(f"<{main.as_uri()}> <http://www.w3.org/2002/07/owl#imports> "
                    f"<{imported.as_uri()}> .\n")
    data = tmp_path / "data.ttl"
    data.write_text(DATA)
    store = tmp_path / "store"
    assert cli("load", "--store", store, data).exit_code == 0

    def results() -> int:
        run = cli("validate", "--store", store, "--shapes", main, "--format", "json")
        return run.stdout.count('"focusNode"')

    imported.write_text(SHAPES.format(count=1))
    assert results() == 1
    imported.write_text(SHAPES.format(count=0))
    assert results() == 0  # the same entry's key, but the import it names has changed
    assert len(entries(directory)) == 1


def test_another_code_version_is_another_entry(
    directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources, build = bundled()
    build, built = counting(build)
    kept_validator(sources, "rdf12", build)
    monkeypatch.setattr(validator_cache, "_code_version", lambda: b"another version")
    kept_validator(sources, "rdf12", build)
    assert len(built) == 2 and len(entries(directory)) == 2


@pytest.mark.parametrize("changed", ["queries/validation/batch.rq", "queries/session_nodes.rq",
                                     "tgsparql/validation/validator.py", "tgsparql/rdf/templates.py"])
def test_a_template_or_module_changed_since_is_another_entry(
    directory: Path, changed: str
) -> None:
    """A file of the code is changed (its modification time moved, as an edit or a new version
    moves it): the entries kept before are not read."""
    path = REPO / changed
    sources, build = bundled()
    build, built = counting(build)
    kept_validator(sources, "rdf12", build)
    status = path.stat()
    try:
        os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
        validator_cache._code_version.cache_clear()
        kept_validator(sources, "rdf12", build)
    finally:
        os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
        validator_cache._code_version.cache_clear()
    assert len(built) == 2 and len(entries(directory)) == 2


@pytest.mark.parametrize("setting", ["off", "open to others"])
def test_no_cache_when_turned_off_or_others_can_write_it(
    setting: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(CACHE_ENVIRONMENT, "off" if setting == "off" else str(shared))
    sources, build = bundled()
    build, built = counting(build)
    kept_validator(sources, "rdf12", build)
    kept_validator(sources, "rdf12", build)
    assert len(built) == 2 and not entries(shared)


def test_processes_keeping_one_at_once_leave_one_whole_entry(directory: Path) -> None:
    sources, build = bundled("reification")
    with ThreadPoolExecutor(4) as pool:
        validators = list(pool.map(lambda _: kept_validator(sources, "reification", build),
                                   range(4)))
    assert {len(v.shapes) for v in validators} == {len(Shapes.bundled("reification"))}
    assert len(entries(directory)) == 1 and not list(directory.glob("*.partial"))
    build, built = counting(build)
    kept_validator(sources, "reification", build)
    assert built == []
    assert os.stat(entries(directory)[0]).st_mode & 0o077 == 0  # the user's alone

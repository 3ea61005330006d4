"""A load is all of a file or none of it, its labels indexed and its literals' records written
with it: on a disk too small for the file, the store ends as it began."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from tests.conftest import cli
from tgsparql.asking import grounding
from tgsparql.data.loader import load_files
from tgsparql.rdf.lexical import GRAPH_LEXICAL
from tgsparql.stores import checkpoint
from tgsparql.stores.store import EmbeddedStore, StoreError, open_store

LABEL = "<http://www.w3.org/2000/01/rdf-schema#label>"
INTEGER = "<http://www.w3.org/2001/XMLSchema#integer>"
SHARED = f'<urn:ex:e0> {LABEL} "entity 0, a label long enough to take some room" .\n'
"""In the store before the big file, and in it: undoing the file must keep it."""
BIG_ENTITIES = 40_000
"""Enough for the big file's quads, records and index not to fit in 8 MiB."""


def entities(path: Path, count: int, prefix: str = "e") -> Path:
    """An N-Triples file of `count` labelled entities, each with a number the store rewrites
    (so each has a lexical record), SHARED among them."""
    with path.open("w", encoding="utf-8") as out:
        out.write(SHARED)
        for i in range(1, count):
            out.write(f'<urn:ex:{prefix}{i}> {LABEL} "entity {prefix}{i}, a label long enough '
                      f'to take some room" .\n<urn:ex:{prefix}{i}> <urn:ex:n> "0{i}"^^{INTEGER} .\n')
    return path


def everything(store: EmbeddedStore) -> set[ox.Quad]:
    return set(store.oxigraph)


def test_a_file_bigger_than_the_disk_loads_nothing_and_one_that_fits_loads(
    small_disk: Path, tmp_path: Path
) -> None:
    store = EmbeddedStore(small_disk / "kg")
    before = load_files(store, [entities(tmp_path / "small.nt", 50, prefix="s")])
    assert not before.failed and before.labels_indexed == 50
    held = everything(store)
    assert any(quad.graph_name == GRAPH_LEXICAL for quad in held)

    big = entities(tmp_path / "big.nt", BIG_ENTITIES)
    report = load_files(store, [big])
    assert list(report.failed) == [big] and not report.loaded and report.labels_indexed == 0
    assert "No space left on device" in report.failed[big]
    assert report.failed[big].endswith("nothing of it was kept: the store is as it was before")
    assert everything(store) == held  # the shared quad, the label index, the records
    assert not (small_disk / "kg" / checkpoint.CHECKPOINT).exists()

    fits = load_files(store, [entities(tmp_path / "fits.nt", 50, prefix="f")])
    assert not fits.failed and fits.labels_indexed == 49  # e0 was indexed before
    store.close()


def test_the_command_says_in_one_line_that_nothing_was_kept(
    small_disk: Path, tmp_path: Path
) -> None:
    big = entities(tmp_path / "big.nt", BIG_ENTITIES)
    run = cli("load", "--store", small_disk / "kg", big)
    assert run.exit_code == 1
    assert run.stdout == ""
    [error] = run.error_lines
    assert error.startswith(f"error: {big}: ") and "No space left on device" in error
    assert error.endswith("nothing of it was kept: the store is as it was before")
    with EmbeddedStore(small_disk / "kg") as store:
        assert everything(store) == set()


def test_writes_that_fail_are_undone_updates_included(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "kg")
    store.update("INSERT DATA { <urn:a> <urn:p> 1 }")
    held = everything(store)
    with pytest.raises(StoreError, match="^boom; nothing of it was kept"):
        with store.all_or_nothing():
            store.extend([ox.Quad(ox.NamedNode("urn:a"), ox.NamedNode("urn:p"), ox.Literal(1)),
                          ox.Quad(ox.NamedNode("urn:b"), ox.NamedNode("urn:p"), ox.Literal(2))])
            store.update("INSERT DATA { GRAPH <urn:g> { <urn:c> <urn:p> 3 } }")
            raise StoreError("boom")
    assert everything(store) == held
    with store.all_or_nothing():
        store.update("INSERT DATA { <urn:d> <urn:p> 4 }")
    assert len(everything(store)) == len(held) + 1
    assert not (tmp_path / "kg" / checkpoint.CHECKPOINT).exists()
    store.close()


def test_an_undo_with_a_query_still_open_is_left_to_the_next_open(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "kg")
    store.update("INSERT DATA { <urn:a> <urn:p> 1 }")
    held = everything(store)
    rows = store.select_iter("SELECT * WHERE { ?s ?p ?o }")
    next(rows)  # the store stays open while its rows are read
    with pytest.raises(StoreError, match="still open in this process.*holds part of it until "
                                         "its next open"):
        with store.all_or_nothing():
            store.update("INSERT DATA { <urn:b> <urn:p> 2 }")
            raise StoreError("boom")
    with pytest.raises(StoreError, match="is closed"):
        store.select("SELECT * WHERE { ?s ?p ?o }")
    del rows
    with EmbeddedStore(tmp_path / "kg") as reopened:
        assert everything(reopened) == held


def test_writes_a_crash_left_half_done_are_undone_on_opening(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "kg")
    store.update("INSERT DATA { <urn:a> <urn:p> 1 }")
    held = everything(store)
    checkpoint.take(store.oxigraph, tmp_path / "kg")
    store.update("INSERT DATA { <urn:b> <urn:p> 2 }")
    store.close()  # as a crash would leave it: the checkpoint neither restored nor discarded
    with EmbeddedStore(tmp_path / "kg") as reopened:
        assert everything(reopened) == held
    assert not (tmp_path / "kg" / checkpoint.CHECKPOINT).exists()


def test_in_memory_the_quads_added_are_removed_and_those_there_before_kept() -> None:
    store = open_store()
    there = ox.Quad(ox.NamedNode("urn:a"), ox.NamedNode("urn:p"), ox.Literal(1))
    store.extend([there])
    with pytest.raises(StoreError, match="^boom; nothing of it was kept"):
        with store.all_or_nothing():
            store.extend([there, ox.Quad(ox.NamedNode("urn:b"), ox.NamedNode("urn:p"),
                                         ox.Literal("04", datatype=ox.NamedNode(
                                             "http://www.w3.org/2001/XMLSchema#integer")))])
            raise StoreError("boom")
    assert everything(store) == {there}
    with pytest.raises(StoreError, match="but not what its updates wrote"):
        with store.all_or_nothing():
            store.update("INSERT DATA { <urn:c> <urn:p> 3 }")
            raise StoreError("boom")


def test_an_index_write_that_fails_after_the_store_reopened_is_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The label index reopens the store between reading the names and writing them; a write
    that fails after that is undone from the checkpoint taken before the file, as any other."""
    store = EmbeddedStore(tmp_path / "kg")
    load_files(store, [entities(tmp_path / "small.nt", 50, prefix="s")])
    held = everything(store)
    drops: list[None] = []
    drop = store.drop_caches
    monkeypatch.setattr(store, "drop_caches", lambda: drops.append(drop()))
    monkeypatch.setattr(grounding, "DROP_CACHES_PAST", 0)

    def failing(*_: object) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(grounding, "write_index_entries", failing)
    more = entities(tmp_path / "more.nt", 20, prefix="m")
    report = load_files(store, [more])
    assert drops and list(report.failed) == [more]
    assert report.failed[more].endswith("nothing of it was kept: the store is as it was before")
    assert everything(store) == held
    monkeypatch.undo()
    assert load_files(store, [more]).labels_indexed == 19  # e0 was indexed before
    store.close()

"""Writes within `all_or_nothing` are kept whole or undone: on disk from a checkpoint, in memory
by removing the quads they added."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from tgsparql.stores import checkpoint
from tgsparql.stores.store import EmbeddedStore, StoreError, open_store


def everything(store: EmbeddedStore) -> set[ox.Quad]:
    return set(store.oxigraph)


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

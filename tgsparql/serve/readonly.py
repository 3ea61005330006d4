"""The store a query worker answers from: the on-disk store read-only, or a remote endpoint.

Sharing the store with a writer. pyoxigraph's on-disk store takes an exclusive lock, so a
second `ox.Store(path)` fails while `tgsparql query` records sessions. `ox.Store.read_only`
takes no lock and, on opening, replays the writer's write-ahead log, so it sees every committed
write up to that moment, and nothing after. Each worker therefore keeps one read-only handle
and reopens it when the store's WAL, MANIFEST or CURRENT files have changed since (a directory
scan, well under a millisecond; a reopen costs tens of milliseconds and happens only after a
write). A request sees every session committed before it started. Should a compaction remove a
file the old handle still needed, the query is retried once on a fresh handle.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from tgsparql.serve.config import ServerConfig
from tgsparql.serve.sparql import READ_ONLY, DefaultGraph, Result
from tgsparql.stores.remote import RemoteStore
from tgsparql.stores.store import EmbeddedStore, StoreError


class ReadOnlyStore(EmbeddedStore):
    """The store as the Store protocol, read-only, on a handle refreshed after each write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: ox.Store | None = None
        self._signature: tuple[Any, ...] = ()

    @property
    def _store(self) -> ox.Store:
        signature = _signature(self.path)
        if self._handle is None or signature != self._signature:
            try:
                self._handle = ox.Store.read_only(str(self.path))
                self._signature = signature
            except OSError as error:
                if self._handle is None:
                    raise StoreError(f"cannot open the store at {self.path}: {error}") from None
        return self._handle

    def refresh(self) -> None:
        """Drop the handle, so the next read reopens the store."""
        self._handle = None

    def query(
        self,
        query: str,
        *,
        default_graph: DefaultGraph = None,
        named_graphs: Sequence[ox.NamedNode] = (),
    ) -> Result:
        """pyoxigraph's own result, for the protocol endpoint to serialize."""
        options: dict[str, Any] = {}
        if default_graph == "union":
            options["use_default_graph_as_union"] = True
        elif default_graph:
            options["default_graph"] = list(default_graph)
        if named_graphs:
            options["named_graphs"] = list(named_graphs)
        return self.oxigraph.query(query, **options)

    def update(self, update: str) -> None:
        raise StoreError(READ_ONLY)

    def bulk_load(self, *_: Any, **__: Any) -> None:
        raise StoreError(READ_ONLY)

    def close(self) -> None:
        self._handle = None


def _signature(path: Path) -> tuple[Any, ...]:
    """What changes when a writer commits: the WAL files, the MANIFEST and CURRENT."""
    try:
        entries = [
            (entry.name, (stat := entry.stat()).st_size, stat.st_mtime_ns)
            for entry in os.scandir(path)
            if entry.name.endswith(".log") or entry.name.startswith("MANIFEST-")
            or entry.name == "CURRENT"
        ]
    except OSError:
        return ()
    return tuple(sorted(entries))


Served = ReadOnlyStore | RemoteStore
"""What a worker answers from: both run every form of query, as pyoxigraph answers it."""


def open_served(config: ServerConfig) -> Served:
    """The store a worker answers from: the on-disk store read-only, or the endpoint."""
    if config.endpoint is not None:
        return RemoteStore(config.endpoint)
    assert config.store is not None
    return ReadOnlyStore(config.store)

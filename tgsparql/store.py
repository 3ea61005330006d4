"""The store interface the pipeline talks to, and its embedded pyoxigraph implementation.

The interface is four verbs over SPARQL text plus a bulk load, so a remote SPARQL 1.1 Protocol
endpoint can implement it without the pipeline noticing.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import BinaryIO, Literal, Protocol, runtime_checkable

import pyoxigraph as ox

from tgsparql.templates import Dialect, Term

Solution = dict[str, Term]

DataGraph = Literal["union"] | Sequence[ox.NamedNode | ox.DefaultGraph] | None
"""What a read sees as its default graph: None, the store's own default graph; "union", the merge
of every graph (how validation reads provenance spread over named graphs); or the merge of the
listed graphs, `ox.DefaultGraph()` naming the store's default graph."""


FLUSH_EVERY = 1000
"""Updates between flushes of an on-disk store. RocksDB keeps unflushed writes in memory, so
without this a long-running writer grows by about 80 KB per session (the soak benchmark)."""


class StoreError(RuntimeError):
    """The store could not answer: unreachable, unreadable, or it refused the request."""


@runtime_checkable
class Store(Protocol):
    dialect: Dialect
    round_trips: bool
    """Whether each call crosses the network, so that fewer calls beat overlapped ones."""

    def select(self, query: str, *, default_graph: DataGraph = None) -> list[Solution]:
        """Rows of a SELECT, each a dict of the bound variables."""
        ...

    def ask(self, query: str, *, default_graph: DataGraph = None) -> bool: ...

    def construct(self, query: str) -> list[ox.Triple]: ...

    def update(self, update: str) -> None: ...

    def bulk_load(
        self,
        source: BinaryIO,
        format: ox.RdfFormat,
        *,
        graph: ox.NamedNode | None = None,
    ) -> None:
        """Load an already validated RDF stream fast."""
        ...

    def close(self) -> None: ...


class EmbeddedStore:
    """pyoxigraph in this process: in memory, or on disk at `path`."""

    dialect: Dialect = "rdf12"
    round_trips = False

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._updates = itertools.count(1)
        try:
            self._open: ox.Store | None = (
                ox.Store(str(self.path)) if self.path is not None else ox.Store()
            )
        except OSError as error:
            if "lock" in str(error).lower():
                raise StoreError(
                    f"cannot open store at {self.path}: another process has it open for writing "
                    "(one writer process at a time; open it read-only, or take turns with "
                    f"tgsparql.locking.exclusive_store): {error}"
                ) from None
            raise StoreError(f"cannot open store at {self.path}: {error}") from None

    @property
    def oxigraph(self) -> ox.Store:
        """The underlying pyoxigraph store, for tests and tools that need its own API."""
        return self._store

    @property
    def _store(self) -> ox.Store:
        if self._open is None:
            raise StoreError(f"the store {self.path or '(in memory)'} is closed")
        return self._open

    def select(
        self,
        query: str,
        *,
        default_graph: DataGraph = None,
        substitutions: Mapping[str, Term] | None = None,
    ) -> list[Solution]:
        """The query's rows; `substitutions` pre-binds variables (blank nodes included)."""
        result = self._run(query, default_graph, substitutions)
        if not isinstance(result, ox.QuerySolutions):
            raise StoreError("expected a SELECT query")
        names = [variable.value for variable in result.variables]
        rows: list[Solution] = []
        for solution in result:
            row = {}
            for name in names:
                value = solution[name]
                if value is not None:
                    row[name] = value
            rows.append(row)
        return rows

    def ask(self, query: str, *, default_graph: DataGraph = None) -> bool:
        result = self._run(query, default_graph)
        if not isinstance(result, ox.QueryBoolean):
            raise StoreError("expected an ASK query")
        return bool(result)

    def construct(self, query: str) -> list[ox.Triple]:
        result = self._run(query)
        if not isinstance(result, ox.QueryTriples):
            raise StoreError("expected a CONSTRUCT query")
        return list(result)

    def update(self, update: str) -> None:
        try:
            self._store.update(update)
            if self.path is not None and next(self._updates) % FLUSH_EVERY == 0:
                self._store.flush()
        except SyntaxError as error:
            raise StoreError(f"the store rejected an update: {error}") from None
        except OSError as error:
            raise StoreError(f"the store failed to write: {error}") from None

    def bulk_load(
        self,
        source: BinaryIO,
        format: ox.RdfFormat,
        *,
        graph: ox.NamedNode | None = None,
    ) -> None:
        try:
            self._store.bulk_load(source, format, to_graph=graph)
        except (OSError, SyntaxError, ValueError) as error:
            raise StoreError(f"bulk load failed: {error}") from None

    def close(self) -> None:
        """Flush and release the store (and its on-disk lock); closing twice is harmless."""
        if self._open is not None:
            if self.path is not None:
                self._open.flush()
            self._open = None

    def __enter__(self) -> EmbeddedStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _run(
        self,
        query: str,
        default_graph: DataGraph = None,
        substitutions: Mapping[str, Term] | None = None,
    ) -> ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples:
        bound = {ox.Variable(name): term for name, term in (substitutions or {}).items()}
        try:
            if default_graph is None:
                return self._store.query(query, substitutions=bound)
            if default_graph == "union":
                return self._store.query(query, use_default_graph_as_union=True, substitutions=bound)
            return self._store.query(query, default_graph=list(default_graph), substitutions=bound)
        except SyntaxError as error:
            raise StoreError(f"the store rejected a query: {error}") from None
        except OSError as error:
            raise StoreError(f"the store failed to read: {error}") from None


def open_store(path: str | os.PathLike[str] | None = None) -> EmbeddedStore:
    """The embedded store: in memory when `path` is None, else on disk (created if missing)."""
    return EmbeddedStore(path)

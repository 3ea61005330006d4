"""The store interface the pipeline talks to, and its embedded pyoxigraph implementation.

The interface is four verbs over SPARQL text plus a bulk load, so a remote SPARQL 1.1 Protocol
endpoint can implement it without the pipeline noticing. A store carries the query templates
rendered for its dialect (`store.templates`), so whatever runs a step is given the store alone,
and runs one by name (`store.run`) through those verbs, as the form its header declares asks.
"""

from __future__ import annotations

import gc
import itertools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import (
    Any, BinaryIO, Literal, NamedTuple, Protocol, TypeVar, cast, runtime_checkable,
)

import pyoxigraph as ox

from tgsparql.rdf.lexical import with_records
from tgsparql.rdf.templates import TemplateError, Templates, templates_for
from tgsparql.rdf.terms import DEFAULT_DIALECT, Dialect, Term

Solution = dict[str, Term]

QueryForm = Literal["select", "ask", "graph"]
"""What a query answers: solutions, a boolean, or triples (CONSTRUCT and DESCRIBE)."""


def query_form(query: str) -> QueryForm:
    """The query's form, learnt from pyoxigraph's parser on an empty store: nothing is read
    (SELECT and CONSTRUCT results are lazy, an ASK has nothing to match). SyntaxError for text
    that is not a query, an update included."""
    return result_form(ox.Store().query(query))


def result_form(result: object) -> QueryForm:
    """The form of the query whose result this is."""
    if isinstance(result, ox.QueryBoolean):
        return "ask"
    if isinstance(result, ox.QuerySolutions):
        return "select"
    return "graph"


RunForm = Literal["select", "ask", "construct", "update"]
"""What running a template does, as its header declares: a query of one of three forms, or an
update."""

_READS = {
    "select": "a SELECT, which answers rows",
    "ask": "an ASK, which answers a boolean",
    "construct": "a CONSTRUCT, which answers triples",
    "update": "an update, which answers nothing",
}


class Answer(NamedTuple):
    """What running a template answered, by the form its header declares: rows for a SELECT, a
    boolean for an ASK, triples for a CONSTRUCT, nothing for an update. Reading it as another
    form is a mistake in the caller, and fails naming the template and its form."""

    template: str
    form: RunForm
    value: list[Solution] | bool | list[ox.Triple] | None

    @property
    def rows(self) -> list[Solution]:
        return cast(list[Solution], self._as("select", "rows"))

    @property
    def boolean(self) -> bool:
        return cast(bool, self._as("ask", "a boolean"))

    @property
    def triples(self) -> list[ox.Triple]:
        return cast(list[ox.Triple], self._as("construct", "triples"))

    def _as(self, form: RunForm, wanted: str) -> object:
        if self.form != form:
            raise TypeError(f"the template {self.template!r} is {_READS[self.form]}, not {wanted}")
        return self.value


DataGraph = Literal["union"] | Sequence[ox.NamedNode | ox.DefaultGraph] | None
"""What a read sees as its default graph: None, the store's own default graph; "union", the merge
of every graph (how validation reads provenance spread over named graphs); or the merge of the
listed graphs, `ox.DefaultGraph()` naming the store's default graph."""


BULK_BATCH = 50_000
"""Quads per write of a bulk load. pyoxigraph's own bulk loader keeps up to a million quads per
thread in memory (a 200 MB N-Triples file took 1.3 GB); batches of this size keep a load of any
size near 100 MB, and load as fast (benchmarks/load_bench.py)."""

READ_ATTEMPTS = 3
"""Fresh snapshots a read-only store takes for one read before it gives up (EmbeddedStore._read)."""
_Read = TypeVar("_Read")
_COMPACTED_AWAY = re.compile(r"No such file or directory.*\.sst\b", re.DOTALL)
"""What RocksDB says when a snapshot names a table file a writer has since removed (a store
that is missing altogether names its CURRENT file instead, and is no such case)."""
FLUSH_EVERY = 1000
"""Updates between flushes of an on-disk store. RocksDB keeps unflushed writes in memory, so
without this a long-running writer grows by about 80 KB per session (the soak benchmark)."""
FLUSH_BYTES = 4 * 1024 * 1024
"""Update text between flushes, for writers of big updates: without it the label index of a
large load grew RocksDB's memtables by some 450 MB for 80,000 labels."""


class StoreError(RuntimeError):
    """The store could not answer: unreachable, unreadable, or it refused the request."""


@runtime_checkable
class Store(Protocol):
    dialect: Dialect
    round_trips: bool
    """Whether each call crosses the network, so that fewer calls beat overlapped ones."""

    @property
    def templates(self) -> Templates:
        """The query templates, rendered for this store's dialect."""
        ...

    def run(self, name: str, /, default_graph: DataGraph = None, **params: Any) -> Answer:
        """Template `name` rendered with `params` and run as the form its header declares asks;
        a query reads `default_graph` as its data graph."""
        ...

    def stream(self, name: str, /, default_graph: DataGraph = None,
               **params: Any) -> Iterator[Solution]:
        """The rows of SELECT template `name`, one at a time where the store can stream them."""
        ...

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

    def drop_caches(self) -> None:
        """Let go of what reads cached in this process, before a step that needs the memory."""
        ...


class WithTemplates:
    """A store's templates follow its dialect: every store and wrapper of one shares them. A
    store runs one by name, through its own four verbs, so a wrapper that changes a verb changes
    how templates run too."""

    dialect: Dialect

    @property
    def templates(self) -> Templates:
        return templates_for(self.dialect)

    def run(self, name: str, /, default_graph: DataGraph = None, **params: Any) -> Answer:
        """Template `name` rendered with `params` (checked against its header) and run through
        the verb of the form its header declares: one call where a caller would render, then
        pick the verb. A SELECT or an ASK reads `default_graph` as its data graph."""
        store = cast(Store, self)
        form = _runnable(name, default_graph)
        text = self.templates.render(name, **params)
        if form == "select":
            return Answer(name, form, store.select(text, default_graph=default_graph))
        if form == "ask":
            return Answer(name, form, store.ask(text, default_graph=default_graph))
        if form == "construct":
            return Answer(name, form, store.construct(text))
        store.update(text)
        return Answer(name, form, None)

    def stream(self, name: str, /, default_graph: DataGraph = None,
               **params: Any) -> Iterator[Solution]:
        """The rows of SELECT template `name` one at a time where the store can stream them (the
        embedded store, from a snapshot, so writing meanwhile is safe), else all at once: for
        results too big to hold."""
        if _runnable(name, default_graph) != "select":
            raise TemplateError(f"{name} is no SELECT: it answers no rows to stream")
        text = self.templates.render(name, **params)
        select = getattr(self, "select_iter", cast(Store, self).select)
        return iter(select(text, default_graph=default_graph))

    def drop_caches(self) -> None:
        """A store that caches nothing in this process has nothing to let go."""


class InDialect(WithTemplates):
    """A store's verbs, its templates rendered for another dialect: how the doctor writes an
    edge reference in each dialect, to learn which ones the endpoint reads back."""

    def __init__(self, store: Store, dialect: Dialect) -> None:
        self.store = store
        self.dialect = dialect
        self.round_trips = store.round_trips

    def select(self, query: str, *, default_graph: DataGraph = None) -> list[Solution]:
        return self.store.select(query, default_graph=default_graph)

    def ask(self, query: str, *, default_graph: DataGraph = None) -> bool:
        return self.store.ask(query, default_graph=default_graph)

    def construct(self, query: str) -> list[ox.Triple]:
        return self.store.construct(query)

    def update(self, update: str) -> None:
        self.store.update(update)


def _runnable(name: str, default_graph: DataGraph) -> RunForm:
    """The form template `name` runs as; TemplateError for a partial, or a data graph given to
    what the store runs on its own (an update, a CONSTRUCT)."""
    from tgsparql.rdf.headers import header  # read where a template runs by its name

    form = header(name).form
    if form == "partial":
        raise TemplateError(f"{name} is a partial, which other templates include: it is not run")
    if default_graph is not None and form in ("update", "construct"):
        raise TemplateError(f"{name} is {_READS[form].split(',')[0]}: it takes no data graph")
    return form


class EmbeddedStore(WithTemplates):
    """pyoxigraph in this process: in memory, or on disk at `path`."""

    dialect: Dialect = DEFAULT_DIALECT
    round_trips = False

    def __init__(self, path: str | os.PathLike[str] | None = None, *,
                 read_only: bool = False, snapshot: ox.Store | None = None) -> None:
        """`read_only`: the on-disk store at `path` as last committed, for a reader that needs no
        writer's turn (it takes no lock, so opens beside a writer process) and writes nothing;
        `snapshot`: that store, already opened read-only from `path`."""
        self.path = Path(path) if path is not None else None
        self.read_only = read_only
        self._updates = itertools.count(1)
        self._unflushed_bytes = 0
        self._added: list[ox.Quad] | None = None
        """While writes in memory are to be undone if they fail: the quads they added."""
        self._updated = False
        """Whether an update ran since `_added` began."""
        try:
            if read_only:
                self._open: ox.Store | None = (
                    snapshot if snapshot is not None else self._read(self._snapshot))
            else:
                if self.path is not None:
                    from tgsparql.stores import checkpoint  # only for a store to write

                    checkpoint.recover(self.path)  # undoes writes that a crash left half done
                self._open = ox.Store(str(self.path)) if self.path is not None else ox.Store()
        except OSError as error:
            if "lock" in str(error).lower():
                raise StoreError(
                    f"cannot open store at {self.path}: another process has it open for writing "
                    "(one writer process at a time; open it read-only, or take turns with "
                    f"tgsparql.stores.locking.exclusive_store): {error}"
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
        return self._read(lambda: list(self.select_iter(
            query, default_graph=default_graph, substitutions=substitutions)))

    def _read(self, read: Callable[[], _Read]) -> _Read:
        """A read-only store's snapshot names the files of its open: a writer beside it may
        compact them away, so a read that finds one gone is taken again from a fresh snapshot."""
        for attempt in range(1, READ_ATTEMPTS + 1):
            try:
                return read()
            except (RuntimeError, OSError, StoreError) as error:
                if not (self.read_only and _COMPACTED_AWAY.search(str(error))):
                    raise
                if attempt == READ_ATTEMPTS:
                    raise StoreError(f"the store failed to read {READ_ATTEMPTS} times, its "
                                     f"files compacted away by a writer each time: {error}") from None
                if read != self._snapshot:
                    self._open = self._read(self._snapshot)
        raise AssertionError("unreachable")

    def _snapshot(self) -> ox.Store:
        return ox.Store.read_only(str(self.path))

    def select_iter(
        self,
        query: str,
        *,
        default_graph: DataGraph = None,
        substitutions: Mapping[str, Term] | None = None,
    ) -> Iterator[Solution]:
        """The rows of a SELECT one at a time, from a snapshot of the store: for results too
        big to hold, and safe to write to the store between rows."""
        result = self._run(query, default_graph, substitutions)
        if not isinstance(result, ox.QuerySolutions):
            raise StoreError("expected a SELECT query")
        names = [variable.value for variable in result.variables]
        try:
            for solution in result:
                # A solution iterates its values in the order of the variables: zipped, a row
                # costs a third of what a lookup by name per variable costs.
                yield {name: value for name, value in zip(names, solution) if value is not None}
        except OSError as error:
            raise StoreError(f"the store failed to read: {error}") from None

    def ask(self, query: str, *, default_graph: DataGraph = None) -> bool:
        return self._read(lambda: self._ask(query, default_graph))

    def _ask(self, query: str, default_graph: DataGraph) -> bool:
        result = self._run(query, default_graph)
        if not isinstance(result, ox.QueryBoolean):
            raise StoreError("expected an ASK query")
        return bool(result)

    def construct(self, query: str) -> list[ox.Triple]:
        return self._read(lambda: self._construct(query))

    def _construct(self, query: str) -> list[ox.Triple]:
        result = self._run(query)
        if not isinstance(result, ox.QueryTriples):
            raise StoreError("expected a CONSTRUCT query")
        return list(result)

    def update(self, update: str) -> None:
        try:
            self._store.update(update)
            self._updated = True
            if self.path is not None:
                self._unflushed_bytes += len(update)
                if (next(self._updates) % FLUSH_EVERY == 0
                        or self._unflushed_bytes >= FLUSH_BYTES):
                    self._store.flush()
                    self._unflushed_bytes = 0
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
        """Streams `source` into the store in batches of BULK_BATCH quads, each written by
        pyoxigraph's bulk path (no transaction): for all or nothing, check a file first and load
        it within `all_or_nothing`, as `load` does."""
        try:
            quads: Iterator[ox.Quad] = iter(ox.parse(source, format))
            if graph is not None:
                quads = (_into_graph(quad, graph) for quad in quads)
            self.extend(quads)
        except (OSError, SyntaxError, ValueError) as error:
            raise StoreError(f"bulk load failed: {error}") from None

    def extend(self, quads: Iterable[ox.Quad]) -> None:
        """Add quads in batches of BULK_BATCH, each written by pyoxigraph's bulk path (no
        transaction), with the records of the literals the store would not keep as written
        (tgsparql.rdf.lexical)."""
        for batch in with_records(quads, BULK_BATCH):
            if self._added is not None:
                self._added += [quad for quad in batch if quad not in self._store]
            self._store.bulk_extend(batch)

    @contextmanager
    def all_or_nothing(self) -> Iterator[None]:
        """What is written within is kept only if all of it is: when anything within fails, the
        store is put back as it was, and the StoreError raised says so (or, should that fail,
        exactly what is left and what puts it right). Other exceptions are re-raised as they
        are, after the same undo.

        On disk, by a checkpoint taken first (tgsparql.stores.checkpoint), which needs no room
        to put back and costs some 15 ms; no query of the store may be left unread within. In
        memory, by the quads `extend` adds (those not there before: 0.7 µs a quad to tell),
        removed again; an update within cannot be undone there, so the error names it."""
        from tgsparql.stores import checkpoint  # only for writes: a reading command never loads it

        path = self.path
        if path is None:
            self._added, self._updated = [], False
        else:
            try:
                checkpoint.take(self._store, path)
            except OSError as error:
                raise StoreError(f"{error}; nothing was written") from None
        try:
            yield
        except BaseException as error:
            left = self._removed() if path is None else self._restored(path, error)
            if isinstance(error, (StoreError, OSError)):
                raise StoreError(f"{error}; {left}") from None
            raise
        else:
            if path is not None:
                checkpoint.discard(path)
        finally:
            self._added = None

    def _removed(self) -> str:
        """The quads added in memory removed again; what that left, in words."""
        for quad in self._added or ():
            self._store.remove(quad)
        if self._updated:
            return "its quads were removed, but not what its updates wrote"
        return "nothing of it was kept: the store is as it was before"

    def _restored(self, path: Path, error: BaseException) -> str:
        """The store put back from its checkpoint after `error`, and reopened; what that left,
        in words. Should putting it back fail, the store stays closed: a later write would be
        lost when the next open puts it back."""
        import traceback  # only here: 2 ms a reading command need not pay

        from tgsparql.stores import checkpoint

        # The failed writes' frames may hold a query's rows, which keep the store open.
        traceback.clear_frames(error.__traceback__)
        self._open = None
        gc.collect()
        try:
            checkpoint.recover(path)
        except OSError as undo_error:
            return (f"it could not be undone now ({undo_error}), so the store holds part of it "
                    f"until its next open, which undoes it from the copy of the store as it was, "
                    f"kept in {path / checkpoint.CHECKPOINT}")
        try:
            self._open = ox.Store(str(path))
        except OSError as open_error:
            return f"nothing of it was kept, but the store could not be reopened: {open_error}"
        return "nothing of it was kept: the store is as it was before"

    def close(self) -> None:
        """Flush and release the store (and its on-disk lock); closing twice is harmless.

        A flush that fails (a full disk) still releases the store, and says so as a StoreError:
        what the last writes left unflushed is lost, as the message tells."""
        store, self._open = self._open, None
        if store is not None and self.path is not None and not self.read_only:
            try:
                store.flush()
            except OSError as error:
                raise StoreError(f"the store at {self.path} failed to write as it closed, so its "
                                 f"last writes may be lost: {error}") from None

    def drop_caches(self) -> None:
        """Close the on-disk store and open it again: the block and table caches its reads
        filled go with it (some 100 MB once every label of 10 M facts was read), so the writes
        that follow do not add their memory to theirs. No query's rows may be left unread."""
        if self.path is None or self._open is None:
            return
        if self.read_only:
            self._open = self._read(self._snapshot)
            return
        self.close()
        gc.collect()  # rows no longer read may still hold the store open
        try:
            self._open = ox.Store(str(self.path))
        except OSError as error:
            raise StoreError(f"cannot open the store at {self.path} again: {error}") from None

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


def _into_graph(quad: ox.Quad, graph: ox.NamedNode) -> ox.Quad:
    """A triple of the default graph moved into `graph`; a quad of a named graph as it is."""
    if isinstance(quad.graph_name, ox.DefaultGraph):
        return ox.Quad(quad.subject, quad.predicate, quad.object, graph)
    return quad


def open_store(path: str | os.PathLike[str] | None = None) -> EmbeddedStore:
    """The embedded store: in memory when `path` is None, else on disk (created if missing)."""
    return EmbeddedStore(path)

"""Several processes recording into one on-disk store, taking turns.

pyoxigraph (RocksDB) lets one process at a time open an on-disk store for writing: a second
`open_store(path)` fails at once. Threads of one process share one open store freely. For
several processes, `exclusive_store` waits its turn on a writer lock file in the store
directory (an advisory `flock`, released by the kernel when its holder exits, even when
killed), opens the store, and closes it again (flushed) before the next process may open it.

Opening costs about 0.1 s, so hold the store for a batch of sessions, not one write. Readers
need no lock: `ox.Store.read_only` (what `tgsparql serve` uses) opens beside a writer. For many
writers at once, run an Oxigraph server and point every process at it (`--endpoint`).

A process that spends most of its time waiting for an LLM should not keep the others out
meanwhile: `TurnTakingStore` holds the store only while it is used, and gives it up while its
user waits (`stepping_aside`) for longer than a moment.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

import pyoxigraph as ox

from tgsparql.stores.store import (
    DataGraph, EmbeddedStore, Solution, Store, StoreError, WithTemplates,
)

LOCK_NAME = "tgsparql-writer.lock"
_FIRST_PAUSE = 0.002
_LONGEST_PAUSE = 0.05
STEP_ASIDE_AFTER = 0.5
"""Seconds a wait lasts before the store is given up for it: reopening costs about 0.1 s, so
quick waits (an offline backend, a fast LLM) keep it."""
T = TypeVar("T")


class StoreBusy(StoreError):
    """Another process kept the store for longer than we were willing to wait."""


@contextmanager
def exclusive_store(
    path: str | os.PathLike[str], *, timeout: float = 60.0
) -> Iterator[EmbeddedStore]:
    """The on-disk store at `path` (created if missing), opened once no other process has it.

    Raises StoreBusy after `timeout` seconds, naming the process that holds the lock. A process
    that opened the store without this lock is waited for too.
    """
    directory = Path(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise StoreError(f"cannot open store at {directory}: {error.strerror or error}") from None
    deadline = time.monotonic() + timeout
    pause = _FIRST_PAUSE
    try:
        while True:
            if _try_lock(fd):
                try:
                    store = EmbeddedStore(directory)
                    break
                except StoreError as error:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    if not is_locked_error(error):
                        raise
                    holder = "a process that does not use the writer lock"
            else:
                holder = _holder(fd)
            if time.monotonic() >= deadline:
                raise StoreBusy(
                    f"the store at {directory} stayed busy for {timeout:g} s: {holder} has it "
                    "open for writing"
                )
            import random  # only for a store that is busy: opening a free one never loads it

            time.sleep(pause * (0.5 + random.random()))  # jitter: waiters do not move in step
            pause = min(pause * 2, _LONGEST_PAUSE)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        try:
            yield store
        finally:
            try:
                store.close()
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def is_locked_error(error: BaseException) -> bool:
    """Whether opening failed because another process has the store open."""
    return "lock" in str(error).lower()


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(fd: int) -> str:
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return f"process {text}" if text.isdigit() else "another process"  # the last to write it


class TurnTakingStore(WithTemplates):
    """The on-disk store at `path`, opened (its writer lock taken) when an operation needs it
    and closed (the lock released) while its user waits on something slow, so other writer
    processes get their turns during an LLM call rather than after the whole session.

    Each operation is atomic as before; between the operations of one session another process
    may write, which sessions and ingests allow: each writes its own records whole.
    """

    dialect = EmbeddedStore.dialect
    round_trips = EmbeddedStore.round_trips

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 60.0,
                 step_aside_after: float = STEP_ASIDE_AFTER) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.step_aside_after = step_aside_after
        self._guard = threading.Condition()
        self._held: ExitStack | None = None
        self._store: EmbeddedStore | None = None
        self._busy = 0
        self._aside = 0
        self._aside_due = False
        self._timer: threading.Timer | None = None
        self._held_since = 0.0
        self.held_seconds = 0.0
        """How long the writer lock was held so far, all turns together."""
        self.turns = 0
        """How many times the store was opened."""

    def select(self, query: str, *, default_graph: DataGraph = None) -> list[Solution]:
        return self._use(lambda store: store.select(query, default_graph=default_graph))

    def ask(self, query: str, *, default_graph: DataGraph = None) -> bool:
        return self._use(lambda store: store.ask(query, default_graph=default_graph))

    def construct(self, query: str) -> list[ox.Triple]:
        return self._use(lambda store: store.construct(query))

    def update(self, update: str) -> None:
        self._use(lambda store: store.update(update))

    def bulk_load(self, source: Any, format: ox.RdfFormat, *,
                  graph: ox.NamedNode | None = None) -> None:
        self._use(lambda store: store.bulk_load(source, format, graph=graph))

    @contextmanager
    def stepping_aside(self) -> Iterator[None]:
        """While the caller waits on something else, give the store up to other processes once
        the wait has lasted `step_aside_after` seconds and no operation of ours is under way.
        The next operation takes its turn again."""
        with self._guard:
            self._aside += 1
            if self._timer is None:
                self._timer = threading.Timer(self.step_aside_after, self._aside_is_due)
                self._timer.daemon = True
                self._timer.start()
        try:
            yield
        finally:
            with self._guard:
                self._aside -= 1
                if not self._aside:
                    self._aside_due = False
                    if self._timer is not None:
                        self._timer.cancel()
                        self._timer = None

    def close(self) -> None:
        """Flush and release the store; closing twice is harmless."""
        with self._guard:
            while self._busy:
                self._guard.wait()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._release()

    def drop_caches(self) -> None:
        """Give up the turn once no operation is under way: the next one opens the store
        afresh, without what earlier reads cached."""
        with self._guard:
            while self._busy:
                self._guard.wait()
            self._release()

    def _use(self, operation: Callable[[EmbeddedStore], T]) -> T:
        with self._guard:
            if self._store is None:
                self._acquire()
            store = self._store
            self._busy += 1
        assert store is not None
        try:
            return operation(store)
        finally:
            with self._guard:
                self._busy -= 1
                if not self._busy:
                    self._guard.notify_all()
                    if self._aside_due:
                        self._release()

    def _aside_is_due(self) -> None:
        with self._guard:
            if not self._aside:
                return
            self._aside_due = True
            if not self._busy:
                self._release()

    def _acquire(self) -> None:
        held = ExitStack()
        self._store = held.enter_context(exclusive_store(self.path, timeout=self.timeout))
        self._held = held
        self._held_since = time.monotonic()
        self.turns += 1

    def _release(self) -> None:
        held, self._held, self._store = self._held, None, None
        if held is not None:
            self.held_seconds += time.monotonic() - self._held_since
            held.close()


def stepping_aside(store: Store) -> AbstractContextManager[Any]:
    """`store.stepping_aside()` for a store that takes turns with other processes; for any
    other store, nothing to give up."""
    return store.stepping_aside() if isinstance(store, TurnTakingStore) else nullcontext()

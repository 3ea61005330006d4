"""Several processes recording into one on-disk store, taking turns.

pyoxigraph (RocksDB) lets one process at a time open an on-disk store for writing: a second
`open_store(path)` fails at once. Threads of one process share one open store freely. For
several processes, `exclusive_store` waits its turn on a writer lock file in the store
directory (an advisory `flock`, released by the kernel when its holder exits, even when
killed), opens the store, and closes it again (flushed) before the next process may open it.

Opening costs about 0.1 s, so hold the store for a batch of sessions, not one write. Readers
need no lock: `ox.Store.read_only` (what `tgsparql serve` uses) opens beside a writer. For many
writers at once, run an Oxigraph server and point every process at it (`--endpoint`).
"""

from __future__ import annotations

import fcntl
import os
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tgsparql.store import EmbeddedStore, StoreError

LOCK_NAME = "tgsparql-writer.lock"
_FIRST_PAUSE = 0.002
_LONGEST_PAUSE = 0.05


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
            time.sleep(pause * (0.5 + random.random()))  # jitter: waiters do not move in step
            pause = min(pause * 2, _LONGEST_PAUSE)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        try:
            yield store
        finally:
            store.close()
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

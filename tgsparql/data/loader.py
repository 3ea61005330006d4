"""Loading RDF files: all of a file, its labels indexed, or none of it."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pyoxigraph as ox

from tgsparql.asking.grounding import update_label_index
from tgsparql.stores.store import Store, StoreError

FORMATS: dict[str, ox.RdfFormat] = {
    ".ttl": ox.RdfFormat.TURTLE,
    ".turtle": ox.RdfFormat.TURTLE,
    ".trig": ox.RdfFormat.TRIG,
    ".nt": ox.RdfFormat.N_TRIPLES,
    ".ntriples": ox.RdfFormat.N_TRIPLES,
    ".nq": ox.RdfFormat.N_QUADS,
    ".nquads": ox.RdfFormat.N_QUADS,
}

Progress = Callable[[int], None]
"""Told how many more bytes were read."""


class LoadError(ValueError):
    """A file that could not be loaded; the message says that nothing of it was kept, or, where
    that could not be made so, what was and what puts it right."""


@dataclass
class LoadReport:
    loaded: dict[Path, int] = field(default_factory=dict)
    """Quads loaded per file."""
    failed: dict[Path, str] = field(default_factory=dict)
    """The error per file that was not loaded."""
    labels_indexed: int = 0


class _Counting(io.RawIOBase):
    """A read-only byte stream that reports progress as it is read."""

    def __init__(self, raw: BinaryIO, progress: Progress | None) -> None:
        self.raw = raw
        self.progress = progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        if self.progress is not None and data:
            self.progress(len(data))
        return len(data)


def format_of(path: Path) -> ox.RdfFormat:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(sorted(FORMATS))
        raise LoadError(f"{path}: unknown RDF format {path.suffix!r} (known: {known})")
    return fmt


def check_file(path: Path, progress: Progress | None = None) -> int:
    """Parse the whole file without storing it; the number of quads, or a LoadError at the line."""
    fmt = format_of(path)
    try:
        with path.open("rb") as raw:
            return sum(1 for _ in ox.parse(_Counting(raw, progress), fmt))
    except SyntaxError as error:
        message = str(error.args[0] if error.args else error)
        raise LoadError(f"{path}:{error.lineno}: {message}") from None
    except OSError as error:
        raise LoadError(f"{path}: cannot read: {error.strerror or error}") from None


def load_file(store: Store, path: Path, progress: Progress | None = None) -> int:
    """Check, then bulk-load one file; a parse error leaves the store untouched, a failure
    while writing may not (`load_files` undoes it)."""
    count = check_file(path, progress)
    try:
        _stream(store, path, progress)
    except (StoreError, OSError) as error:
        raise LoadError(f"{path}: {error}") from None
    return count


def _stream(store: Store, path: Path, progress: Progress | None) -> None:
    with path.open("rb") as raw:
        store.bulk_load(_Counting(raw, progress), format_of(path))  # type: ignore[arg-type]


def load_files(
    store: Store,
    paths: Sequence[str | os.PathLike[str]],
    *,
    progress: Callable[[Path], Progress | None] | None = None,
) -> LoadReport:
    """Load each file whole, its new labels indexed, or not at all; the others load regardless.

    A file that fails while it is written (a full disk, in the store or in its label index) is
    undone where the store can (`all_or_nothing`); its error says what stays.
    `progress(path)` may return a callback told of bytes read (twice the file size in all: one
    pass checks the file, one loads it).
    """
    report = LoadReport()
    for name in paths:
        path = Path(name)
        told = progress(path) if progress else None
        try:
            quads = check_file(path, told)
            with all_or_nothing(store):
                _stream(store, path, told)
                labels = update_label_index(store)
        except LoadError as error:
            report.failed[path] = str(error)
            continue
        except (StoreError, OSError) as error:
            report.failed[path] = f"{path}: {error}"
            continue
        report.loaded[path] = quads
        report.labels_indexed += labels
    return report


def all_or_nothing(store: Store) -> AbstractContextManager[None]:
    """The store's own undo of writes that fail (the embedded store's), or, for a store
    without one (an endpoint), a failure that says what stays."""
    undo: Callable[[], AbstractContextManager[None]] | None = getattr(
        store, "all_or_nothing", None)
    return undo() if undo is not None else _kept_in_part()


@contextmanager
def _kept_in_part() -> Iterator[None]:
    """An endpoint takes a load a batch at a time, each whole or not at all, and cannot take
    back the batches before a failure (a checkpoint of a server is not ours to take): loading the
    file again completes it, since a quad already there is not added twice, nor a label indexed
    twice."""
    try:
        yield
    except (StoreError, OSError) as error:
        raise StoreError(f"{error}; what was written before the failure stays: once its cause "
                         "is put right, loading the file again completes it") from None

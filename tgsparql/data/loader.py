"""Loading RDF files: all of a file or none of it, then the label index brought up to date."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
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
    """A file that could not be loaded; nothing of it was."""


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
    """Check, then bulk-load one file; a parse error leaves the store untouched."""
    count = check_file(path, progress)
    try:
        with path.open("rb") as raw:
            store.bulk_load(_Counting(raw, progress), format_of(path))  # type: ignore[arg-type]
    except (StoreError, OSError) as error:
        raise LoadError(f"{path}: {error}") from None
    return count


def load_files(
    store: Store,
    paths: Sequence[str | os.PathLike[str]],
    *,
    progress: Callable[[Path], Progress | None] | None = None,
) -> LoadReport:
    """Load each file whole or not at all; the others load regardless. Then index new labels.

    `progress(path)` may return a callback told of bytes read (twice the file size in all: one
    pass checks the file, one loads it).
    """
    report = LoadReport()
    for name in paths:
        path = Path(name)
        try:
            report.loaded[path] = load_file(store, path, progress(path) if progress else None)
        except LoadError as error:
            report.failed[path] = str(error)
    if report.loaded:
        report.labels_indexed = update_label_index(store)
    return report

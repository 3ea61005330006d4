"""Shapes graphs loaded (files and their local imports, text, the bundled shapes) and read once
into typed shapes (reader.py), refusing whatever the validator cannot check."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path as FilePath
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import pyoxigraph as ox

from tgsparql.rdf.templates import package_folder
from tgsparql.rdf.terms import DEFAULT_DIALECT, Dialect, Term
from tgsparql.validation.errors import ShapesError
from tgsparql.validation.model import Path, Shape
from tgsparql.validation.sparql import OWL_IMPORTS

if TYPE_CHECKING:
    from tgsparql.validation.reader import ShapesGraph

EDGE_FILES: dict[Dialect, str] = {
    "rdf12": "edges-triple-terms.ttl",
    "rdfstar": "edges-triple-terms.ttl",
    "reification": "edges-reification.ttl",
}
"""The bundled file of each dialect's constraints on edge references (docs/spec.md §3); the other
bundled files hold what every dialect shares."""


class Shapes:
    """Every shape of a shapes graph, parsed and checked once."""

    def __init__(self, graph: Iterable[ox.Triple | ox.Quad], origin: str = "shapes graph") -> None:
        # the reader only where shapes are read: a copy read back from disk is not built anew
        from tgsparql.validation.reader import ShapesGraph, read_shapes

        self._graph: ShapesGraph | None = ShapesGraph(graph)
        self._graph_text: tuple[str, bytes] | None = None
        self.origin = origin
        self.shapes: list[Shape] = read_shapes(self._graph, origin)
        self.files: list[FilePath] = []
        """The files read (those named and those they import), for a copy kept on disk to
        check that none has changed."""

    @property
    def graph(self) -> ShapesGraph:
        """The shapes graph. A copy read back from disk holds it as N-Triples text, indexed on
        first use: only a run that reads $shapesGraph needs it, and indexing it costs more than
        reading back everything else."""
        if self._graph is None:
            from tgsparql.validation.reader import ShapesGraph

            assert self._graph_text is not None
            name, text = self._graph_text
            self._graph = ShapesGraph(ox.parse(text, format=ox.RdfFormat.N_TRIPLES))
            self._graph.name = ox.NamedNode(name)
        return self._graph

    def __getstate__(self) -> dict[str, object]:
        graph = self.graph
        text = ox.serialize(graph.triples, format=ox.RdfFormat.N_TRIPLES)
        return {**self.__dict__, "_graph": None, "_graph_text": (graph.name.value, text)}

    @classmethod
    def from_files(cls, paths: Iterable[str | FilePath]) -> Shapes:
        """The shapes of the files and of the local files they owl:import, transitively; an
        import of anything but a file: IRI is not fetched (validation makes no request)."""
        dataset: list[ox.Triple | ox.Quad] = []
        names = []
        pending = [(path, str(path)) for path in map(FilePath, paths)]
        read: set[FilePath] = set()
        while pending:
            path, shown = pending.pop(0)
            if path.resolve() in read:
                continue
            read.add(path.resolve())
            names.append(shown)
            fmt = ox.RdfFormat.from_extension(path.suffix.lstrip(".")) or ox.RdfFormat.TURTLE
            text = shapes_file(path, shown)
            try:
                found = list(ox.parse(text, format=fmt, base_iri=path.resolve().as_uri()))
            except SyntaxError as error:
                raise ShapesError(f"{shown}: {_syntax_message(error)}") from None
            dataset.extend(found)
            for quad in found:
                if quad.predicate == OWL_IMPORTS and isinstance(quad.object, ox.NamedNode):
                    if quad.object.value.startswith("file:"):
                        imported = FilePath(unquote(urlsplit(quad.object.value).path))
                        pending.append((imported, f"{imported} (imported by {shown})"))
        shapes = cls(dataset, ", ".join(names) or "no files")
        shapes.files = sorted(read)
        return shapes

    @classmethod
    def from_text(
        cls,
        text: str,
        format: ox.RdfFormat = ox.RdfFormat.TURTLE,
        base_iri: str | None = None,
    ) -> Shapes:
        dataset: list[ox.Triple | ox.Quad] = []
        try:
            dataset.extend(ox.parse(text, format=format, base_iri=base_iri))
        except SyntaxError as error:
            raise ShapesError(f"shapes text: {_syntax_message(error)}") from None
        return cls(dataset, "shapes text")

    @classmethod
    def bundled(cls, dialect: Dialect = DEFAULT_DIALECT) -> Shapes:
        """The shapes shipped in the `tgsparql.shapes` package for a store of `dialect`: the
        common files, and the one file whose constraints read edge references in that form."""
        dataset: list[ox.Triple | ox.Quad] = []
        for name, text in bundled_sources(dialect):
            try:
                dataset.extend(ox.parse(text, format=ox.RdfFormat.TURTLE))
            except SyntaxError as error:
                raise ShapesError(f"{name}: {_syntax_message(error)}") from None
        return cls(dataset, f"bundled shapes ({dialect})")

    def paths(self) -> dict[Term, Path]:
        """Every blank-node path by its node, so a report can copy it into sh:resultPath."""
        return {
            shape.path.node: shape.path
            for shape in self.shapes
            if shape.path is not None and isinstance(shape.path.node, ox.BlankNode)
        }

    def __iter__(self) -> Iterator[Shape]:
        return iter(self.shapes)

    def __len__(self) -> int:
        return len(self.shapes)


def shapes_file(path: FilePath, shown: str | None = None) -> bytes:
    """A shapes file's content; ShapesError says which file cannot be read, and why."""
    try:
        return path.read_bytes()
    except OSError as error:
        raise ShapesError(
            f"{shown or path}: cannot read shapes: {error.strerror or error}") from None


def bundled_sources(dialect: Dialect) -> list[tuple[str, bytes]]:
    """The bundled files of `dialect`'s shapes, by name, as read: the common ones and the one
    whose constraints read edge references in that form."""
    if dialect not in EDGE_FILES:
        raise ShapesError(f"no bundled shapes for the dialect {dialect!r}")
    other_dialects = set(EDGE_FILES.values()) - {EDGE_FILES[dialect]}
    return [
        (entry.name, entry.read_bytes())
        for entry in sorted(package_folder("tgsparql.shapes").iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".ttl") and entry.name not in other_dialects
    ]


def _syntax_message(error: SyntaxError) -> str:
    """pyoxigraph's parse error with its position as `line N` (1-based)."""
    text = str(error).splitlines()[0] if str(error) else "syntax error"
    match = re.search(r"at line (\d+)", text) or re.search(r"^(\d+):", text)
    if match:
        return f"line {match.group(1)}: {text}"
    lineno = getattr(error, "lineno", None)
    return f"line {lineno}: {text}" if lineno else text

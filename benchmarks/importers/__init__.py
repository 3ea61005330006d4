"""Importers of real datasets: facts plus the extraction provenance of docs/spec.md §8, as N-Quads.

Benchmark code, not the product. An importer writes RDF 1.2 N-Quads with pyoxigraph's
serializer and loads them with `tgsparql.data.loader.load_files`, exactly as a user's own files
would be loaded (the label index included). Shared shape of every import:

- a document per source text (`ExtractionIds` of its SHA-256), typed `tg:Document`, with its
  `dc:title`, one activity (`prov:used` the document, the importer as agent, the dataset named
  in `tg:llmModel`, since no model read the text);
- its sentences as chunks directly under the document (no pages), with exact `tg:charOffset`
  and `tg:charLength` into the document text;
- one subgraph per sentence that states facts, `tg:contains` per fact, with the sentence as
  `tg:sourceText` and its offsets;
- document and chunk texts in the librarian graph, with SHA-256, as `tgsparql.asking.librarian`
  keeps them; facts and `rdfs:label`s in the default graph.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from benchmarks.data import data_path
from tgsparql.asking.librarian import sha256_hex
from tgsparql.data.loader import load_files
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import ExtractionIds
from tgsparql.stores.store import Store

A = vocab.RDF_TYPE
MIME = "text/plain"


class DatasetError(ValueError):
    """A dataset file that cannot be imported; the message names the file and the problem."""


@dataclass(frozen=True)
class Sentence:
    """A sentence as an exact span of its document: `text[start:end] == sentence.text`."""

    start: int
    end: int
    text: str

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Anchor:
    """Where a fact's subgraph hangs: the document and the sentence chunk."""

    document: ox.NamedNode
    chunk: ox.NamedNode


def read_json(path: str | os.PathLike[str]) -> Any:
    try:
        with Path(path).open(encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as error:
        raise DatasetError(f"{path}: cannot read: {error.strerror or error}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise DatasetError(f"{path}: not JSON: {error}") from None


def integer(value: int) -> ox.Literal:
    return ox.Literal(str(value), datatype=vocab.XSD_INTEGER)


class QuadWriter:
    """Collects the quads of one import, then writes them as one N-Quads file."""

    def __init__(self, agent: ox.NamedNode, agent_label: str, model: str,
                 started: dt.datetime) -> None:
        self.quads: list[ox.Quad] = []
        self.model = model
        self.started = ox.Literal(started.isoformat(), datatype=vocab.XSD_DATETIME)
        self.agent = agent
        self._source(agent, A, vocab.PROV_AGENT)
        self._source(agent, vocab.RDFS_LABEL, ox.Literal(agent_label))

    def _source(self, s: ox.NamedNode, p: ox.NamedNode, o: ox.NamedNode | ox.Literal | ox.Triple
                ) -> None:
        self.quads.append(ox.Quad(s, p, o, vocab.GRAPH_SOURCE))

    def _library(self, iri: ox.NamedNode, text: str, title: str) -> None:
        for p, o in ((vocab.TG_CONTENT, text), (vocab.TG_MIME_TYPE, MIME),
                     (vocab.TG_CONTENT_SHA256, sha256_hex(text)), (vocab.DC_TITLE, title)):
            self.quads.append(ox.Quad(iri, p, ox.Literal(o), vocab.GRAPH_LIBRARY))

    def document(self, title: str, text: str) -> ExtractionIds:
        ids = ExtractionIds(sha256_hex(text))
        doc, activity = ids.document, ids.activity
        for p, o in ((A, vocab.PROV_ENTITY), (A, vocab.TG_DOCUMENT_CLASS),
                     (vocab.DC_TITLE, ox.Literal(title)), (vocab.TG_MIME_TYPE, ox.Literal(MIME))):
            self._source(doc, p, o)
        for p, o in ((A, vocab.PROV_ACTIVITY), (vocab.PROV_USED, doc),
                     (vocab.PROV_WAS_ASSOCIATED_WITH, self.agent),
                     (vocab.PROV_STARTED_AT_TIME, self.started),
                     (vocab.TG_LLM_MODEL, ox.Literal(self.model))):
            self._source(activity, p, o)
        self._library(doc, text, title)
        return ids

    def chunk(self, ids: ExtractionIds, index: int, sentence: Sentence, title: str
              ) -> ox.NamedNode:
        iri = ids.chunk(sentence.start, sentence.end)
        for p, o in ((A, vocab.PROV_ENTITY), (A, vocab.TG_CHUNK_CLASS),
                     (vocab.PROV_WAS_DERIVED_FROM, ids.document),
                     (vocab.PROV_WAS_GENERATED_BY, ids.activity),
                     (vocab.TG_CHUNK_INDEX, integer(index)),
                     (vocab.TG_CHAR_OFFSET, integer(sentence.start)),
                     (vocab.TG_CHAR_LENGTH, integer(sentence.length))):
            self._source(iri, p, o)
        self._library(iri, sentence.text, title)
        return iri

    def subgraph(self, ids: ExtractionIds, chunk: ox.NamedNode, sentence: Sentence,
                 facts: Iterable[ox.Triple]) -> None:
        span = (sentence.start, sentence.length)
        iri = ids.subgraph(sentence.start, sentence.end, span)
        for p, o in ((A, vocab.PROV_ENTITY), (A, vocab.TG_SUBGRAPH_CLASS),
                     (vocab.PROV_WAS_DERIVED_FROM, chunk),
                     (vocab.PROV_WAS_GENERATED_BY, ids.activity),
                     (vocab.TG_SOURCE_TEXT, ox.Literal(sentence.text)),
                     (vocab.TG_SOURCE_CHAR_OFFSET, integer(sentence.start)),
                     (vocab.TG_SOURCE_CHAR_LENGTH, integer(sentence.length))):
            self._source(iri, p, o)
        for fact in facts:
            self._source(iri, vocab.TG_CONTAINS, fact)

    def fact(self, triple: ox.Triple, labels: Iterable[tuple[ox.NamedNode, str]]) -> None:
        """A KG fact and the labels of its terms, in the default graph."""
        self.quads.append(ox.Quad(triple.subject, triple.predicate, triple.object))
        for iri, label in labels:
            self.quads.append(ox.Quad(iri, vocab.RDFS_LABEL, ox.Literal(label)))

    def write(self, path: str | os.PathLike[str]) -> Path:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        ox.serialize(list(dict.fromkeys(self.quads)), str(out), ox.RdfFormat.N_QUADS)
        return out


def load(store: Store, path: Path) -> None:
    """Load one written file with the product's loader; DatasetError if it refuses it."""
    report = load_files(store, [path])
    if report.failed:
        raise DatasetError(next(iter(report.failed.values())))


def importer_main(argv: list[str] | None, description: str,
                  inputs: dict[str, tuple[str, ...]],
                  run: Callable[..., Any], summary: Callable[[Any], str]) -> int:
    """An importer's command line: one flag per input file (by default its place under
    $TGSPARQL_DATA), `--out`; `run(*inputs, out)` imports, `summary(report)` is its line."""
    parser = argparse.ArgumentParser(description=description.split("\n\n")[0])
    for flag, parts in inputs.items():
        parser.add_argument(f"--{flag}", help="default: $TGSPARQL_DATA/" + "/".join(parts))
    parser.add_argument("--out", required=True, help="the N-Quads file to write")
    args = parser.parse_args(argv)
    try:
        report = run(*(getattr(args, flag.replace("-", "_")) or data_path(*parts)
                       for flag, parts in inputs.items()), args.out)
    except (DatasetError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(summary(report))
    return 0

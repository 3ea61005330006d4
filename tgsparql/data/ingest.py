"""Ingestion: plain text and Markdown files into facts, with the provenance of docs/spec.md §8.

Each file is one document, its form-feed-separated parts its pages, and each page is cut into
chunks with exact offsets (`tgsparql.data.chunking`). Every chunk goes to the LLM, whose JSONL facts
(`tgsparql.data.extraction`) go to the default graph with their labels. The source graph gets the
document, pages, chunks, activity and agent, and per chunk one subgraph for each evidence span
found in it (facts whose evidence is not found in the chunk share one subgraph without a span),
so every recorded `tg:sourceText` belongs to exactly the facts it states. Texts go to the
librarian. All IRIs derive from the text's SHA-256, so a document already ingested is
recognised and skipped: ingesting twice adds nothing, and its activity keeps the first time.
Re-extracting (`force`) replaces one document's facts and provenance in the update that writes
its new ones, keeping the facts another document or a recorded session also stands on.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pyoxigraph as ox

from tgsparql.asking.grounding import update_label_index
from tgsparql.asking.librarian import StoreLibrarian, sha256_hex
from tgsparql.asking.llm.base import Backend, ExtractionRequest, ExtractionUnsupported, LLMError
from tgsparql.asking.llm.usage import Usage
from tgsparql.asking.provenance import now
from tgsparql.data.chunking import (
    DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, Chunk, check_settings, chunk_document,
)
from tgsparql.data.extraction import Fact, parse_facts
from tgsparql.rdf.iris import INGEST_AGENT, ExtractionIds
from tgsparql.rdf.templates import TemplateError
from tgsparql.stores.locking import stepping_aside
from tgsparql.stores.store import Store, StoreError

MIME_TYPES: Final[dict[str, str]] = {
    ".txt": "text/plain",
    ".text": "text/plain",
    "": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
}
AGENT_LABEL: Final = "tgsparql ingest"
MAX_TITLE_CHARS: Final = 200
_BLOCK_MARKERS = re.compile(r"^\s*(?:[>#]+\s*|[-+*]\s+)*")
"""Quote, heading and list markers that open a Markdown line."""
_MARKDOWN_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)

Progress = Callable[[int], None]
"""Told how many more chunks were read by the LLM."""
Finished = Callable[["DocumentReport | IngestFailure"], None]
"""Told of each file as soon as it is done with, ingested, skipped or failed."""


class IngestError(ValueError):
    """A file that could not be ingested; nothing of its provenance or facts was written."""


@dataclass(frozen=True)
class SourceText:
    text: str
    title: str
    mime_type: str


@dataclass
class DocumentReport:
    path: Path
    document: ox.NamedNode
    title: str
    already_present: bool = False
    replaced: bool = False
    """Ingested before, and extracted again in place of what it gave then."""
    pages: int = 0
    chunks: int = 0
    facts: int = 0
    """Distinct facts written to the default graph."""
    evidence_found: int = 0
    """Facts whose evidence span was found in their chunk."""
    skipped_lines: int = 0
    """Lines of the LLM's replies that held no JSON object."""
    rejected: int = 0
    """Objects of the LLM's replies that were not usable facts, or beyond the per-reply cap."""


@dataclass(frozen=True)
class IngestFailure:
    path: Path
    message: str


@dataclass
class IngestReport:
    documents: list[DocumentReport] = field(default_factory=list)
    failed: dict[Path, str] = field(default_factory=dict)
    labels_indexed: int = 0


@dataclass(frozen=True)
class PageRow:
    """A page as the `ingest_document` template takes it."""

    iri: ox.NamedNode
    number: int


@dataclass(frozen=True)
class ChunkRow:
    """A chunk as the `ingest_document` template takes it."""

    iri: ox.NamedNode
    page: ox.NamedNode
    index: int
    offset: int
    length: int


@dataclass(frozen=True)
class EvidenceSpan:
    text: str
    offset: int
    """Within the chunk."""
    length: int


@dataclass
class SubgraphRow:
    """The facts of a chunk that share an evidence span, as the `ingest_document` template
    takes them; facts whose evidence is not located share one without a span."""

    iri: ox.NamedNode
    chunk: ox.NamedNode
    span: EvidenceSpan | None
    triples: list[ox.Triple] = field(default_factory=list)


@dataclass(frozen=True)
class LabelRow:
    term: ox.NamedNode
    label: str


@dataclass
class _Extraction:
    """What the LLM made of a document's chunks, gathered before anything is written."""

    chunks: list[ChunkRow] = field(default_factory=list)
    subgraphs: dict[tuple[ox.NamedNode, tuple[int, int] | None], SubgraphRow] = field(
        default_factory=dict)
    facts: dict[ox.Triple, None] = field(default_factory=dict)
    labels: dict[LabelRow, None] = field(default_factory=dict)
    model: str | None = None
    in_tokens: int | None = None
    out_tokens: int | None = None

    def add_usage(self, usage: Usage | None) -> None:
        if usage is not None:
            self.model = self.model or usage.model
            self.in_tokens = _add(self.in_tokens, usage.in_tokens)
            self.out_tokens = _add(self.out_tokens, usage.out_tokens)


def read_source(path: Path) -> SourceText:
    """The text of a plain text or Markdown file, its title and media type."""
    mime_type = MIME_TYPES.get(path.suffix.lower())
    if mime_type is None:
        known = ", ".join(sorted(suffix for suffix in MIME_TYPES if suffix))
        raise IngestError(f"{path}: unsupported file type {path.suffix!r} (plain text and "
                          f"Markdown: {known}, or no suffix)")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise IngestError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise IngestError(f"{path}: not UTF-8 text (byte {error.start})") from None
    if "\x00" in text:
        raise IngestError(f"{path}: not a text file (it holds NUL characters)")
    return SourceText(text, title_of(text, mime_type) or path.name, mime_type)


def title_of(text: str, mime_type: str) -> str | None:
    """A document's title as a reader sees it: its first Markdown heading, else its first
    line with words on it (cut at a word near MAX_TITLE_CHARS); None for a text without one."""
    heading = _MARKDOWN_HEADING.search(text) if mime_type == "text/markdown" else None
    if heading is not None:
        line = heading.group(1)
    else:
        line = next((line for line in text.splitlines() if any(c.isalnum() for c in line)), "")
        if mime_type == "text/markdown":
            line = _BLOCK_MARKERS.sub("", line)
    title = " ".join(line.split())
    if len(title) > MAX_TITLE_CHARS:
        cut = title.rfind(" ", 0, MAX_TITLE_CHARS)
        title = title[: cut if cut > MAX_TITLE_CHARS // 2 else MAX_TITLE_CHARS].rstrip() + "…"
    return title or None


def locate(evidence: str, text: str) -> tuple[int, int] | None:
    """Offset and length of the evidence in the text: exactly, else up to case and spacing."""
    evidence = evidence.strip()
    if not evidence:
        return None
    position = text.find(evidence)
    if position >= 0:
        return position, len(evidence)
    pattern = r"\s+".join(re.escape(word) for word in evidence.split())
    found = re.search(pattern, text, re.IGNORECASE)
    return (found.start(), found.end() - found.start()) if found else None


def ingest_document(
    store: Store,
    backend: Backend,
    path: Path,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    progress: Callable[[Path, int], Progress | None] | None = None,
    force: bool = False,
) -> DocumentReport:
    """Ingest one file, or skip it when its text was ingested before (unless `force`: then
    extract it again and replace what it gave before); IngestError when it fails.

    The LLM reads every chunk before anything is written, and the document's facts and
    provenance go in one update, written last: a failure leaves no half-ingested document,
    and a failed re-extraction leaves the old one as it was.
    """
    source = read_source(path)
    ids = ExtractionIds(sha256_hex(source.text))
    report = DocumentReport(path, ids.document, source.title)
    if store.run("ingest_document_exists", document=ids.document).boolean:
        if not force:
            report.already_present = True
            report.facts = _facts_recorded(store, ids.document)
            return report
        report.replaced = True
    pages, chunks = chunk_document(source.text, chunk_size, chunk_overlap)
    if not chunks:
        raise IngestError(f"{path}: no text to ingest")
    report.pages, report.chunks = len(pages), len(chunks)
    started = now()
    tick = progress(path, len(chunks)) if progress is not None else None
    page_iris = {page.number: ids.page(page.number) for page in pages}
    extraction = _Extraction()
    for chunk in chunks:
        _extract_chunk(store, backend, path, source, ids, chunk, page_iris[chunk.page],
                       extraction, report)
        if tick is not None:
            tick(1)
    report.facts = len(extraction.facts)
    page_rows = [PageRow(iri, number) for number, iri in page_iris.items()]
    texts = [(ids.document, source.text)]
    texts += [(row.iri, chunk.text) for chunk, row in zip(chunks, extraction.chunks)]
    try:
        _write_document(store, ids, source, started, page_rows, texts, extraction,
                        replaced=report.replaced)
    except (StoreError, TemplateError) as error:
        raise IngestError(f"{path}: {error}") from None
    return report


def _extract_chunk(store: Store, backend: Backend, path: Path, source: SourceText,
                   ids: ExtractionIds, chunk: Chunk, page: ox.NamedNode,
                   extraction: _Extraction, report: DocumentReport) -> None:
    """One chunk read by the LLM, its facts grouped by evidence span into subgraphs."""
    chunk_iri = ids.chunk(chunk.start, chunk.end)
    extraction.chunks.append(ChunkRow(chunk_iri, page, chunk.index, chunk.start, chunk.length))
    try:
        with stepping_aside(store):  # other writer processes may write meanwhile
            output = backend.extract(ExtractionRequest(chunk.text, source.title))
    except ExtractionUnsupported:
        raise
    except LLMError as error:
        raise IngestError(f"{path}: page {chunk.page}, chunk {chunk.index}: {error}") from None
    extraction.add_usage(output.usage)
    parsed = parse_facts(output.text)
    report.skipped_lines += parsed.skipped_lines
    report.rejected += parsed.rejected + parsed.truncated
    for fact in parsed.facts:
        span = _span(fact, chunk)
        report.evidence_found += span is not None
        key = None if span is None else (span.offset, span.length)
        subgraph = extraction.subgraphs.get((chunk_iri, key))
        if subgraph is None:  # mint each subgraph's IRI once, not once per fact
            iri = ids.subgraph(chunk.start, chunk.end, key)
            subgraph = extraction.subgraphs[chunk_iri, key] = SubgraphRow(iri, chunk_iri, span)
        subgraph.triples.append(fact.triple)
        extraction.facts[fact.triple] = None
        for label in _labels(fact):
            extraction.labels[label] = None


def _write_document(store: Store, ids: ExtractionIds, source: SourceText,
                    started: dt.datetime, pages: list[PageRow],
                    texts: list[tuple[ox.NamedNode, str]], extraction: _Extraction, *,
                    replaced: bool) -> None:
    """The texts first and the document's record last, in one update, so a document is never
    recorded without its texts; the whole file lands in one transaction, with the removal of
    what it gave before when it is extracted again."""
    params = dict(
        document=ids.document,
        activity=ids.activity,
        agent=INGEST_AGENT,
        agent_label=AGENT_LABEL,
        title=source.title,
        mime_type=source.mime_type,
        started=started,
        model=extraction.model,
        in_tokens=extraction.in_tokens,
        out_tokens=extraction.out_tokens,
        pages=pages,
        chunks=extraction.chunks,
        subgraphs=list(extraction.subgraphs.values()),
        facts=list(extraction.facts),
        labels=list(extraction.labels),
    )
    librarian = StoreLibrarian(store)
    store.update(store.templates.insert_update(
        [
            *(librarian.record(iri, text, title=source.title, mime_type=source.mime_type)
              for iri, text in texts),
            store.templates.insert_data("ingest_document", **params),
        ],
        before="ingest_document_remove" if replaced else None,
        document=ids.document,
    ))


def ingest_files(
    store: Store,
    backend: Backend,
    paths: Sequence[str | os.PathLike[str]],
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    progress: Callable[[Path, int], Progress | None] | None = None,
    finished: Finished | None = None,
    force: bool = False,
) -> IngestReport:
    """Ingest each file whole or not at all; the others go on regardless. Then index labels.

    ChunkingError (bad settings) and ExtractionUnsupported (a backend that cannot read text)
    stop the run before any write. `progress(path, chunks)` may return a callback told of each
    chunk the LLM has read; `finished` is told of each file once it is done. `force` extracts
    documents ingested before again, replacing what they gave.
    """
    check_settings(chunk_size, chunk_overlap)
    report = IngestReport()
    for name in paths:
        path = Path(name)
        outcome: DocumentReport | IngestFailure
        try:
            outcome = ingest_document(store, backend, path, chunk_size=chunk_size,
                                      chunk_overlap=chunk_overlap, progress=progress,
                                      force=force)
            report.documents.append(outcome)
        except IngestError as error:
            outcome = IngestFailure(path, str(error))
            report.failed[path] = outcome.message
        if finished is not None:
            finished(outcome)
    if any(not document.already_present for document in report.documents):
        report.labels_indexed = update_label_index(store)
    return report


def _facts_recorded(store: Store, document: ox.NamedNode) -> int:
    rows = store.run("ingest_document_facts", document=document).rows
    value = rows[0].get("facts") if rows else None
    return int(value.value) if isinstance(value, ox.Literal) else 0


def _span(fact: Fact, chunk: Chunk) -> EvidenceSpan | None:
    if fact.evidence is None:
        return None
    found = locate(fact.evidence, chunk.text)
    if found is None:
        return None
    offset, length = found
    return EvidenceSpan(chunk.text[offset : offset + length], offset, length)


def _labels(fact: Fact) -> list[LabelRow]:
    triple = fact.triple
    found = [
        LabelRow(triple.subject, fact.subject_name),  # type: ignore[arg-type]
        LabelRow(triple.predicate, fact.predicate_name),
    ]
    if fact.object_name is not None:
        found.append(LabelRow(triple.object, fact.object_name))  # type: ignore[arg-type]
    return found


def _add(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    return value if total is None else total + value

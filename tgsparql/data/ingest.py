"""Ingestion: plain text and Markdown files into facts, with the provenance of docs/spec.md §8.

Each file is one document, its form-feed-separated parts its pages, and each page is cut into
chunks with exact offsets (`tgsparql.data.chunking`). Every chunk goes to the LLM, whose JSONL facts
(`tgsparql.data.extraction`) go to the default graph. Their subjects and objects are linked to
the entities the store already holds (`tgsparql.data.linking`); only names that fit none get
IRIs and labels of their own. A fact whose evidence is not found in its chunk, that links an
entity to itself, or that names a prompt or page marker is not written, unless kept
(`keep_unsupported`), flagged with why. The source graph gets the document, pages, chunks,
activity and agent, each name's linking decision per chunk, and per chunk one subgraph for each
evidence span found in it (and for each reason facts kept unsupported fail), so every recorded
`tg:sourceText` belongs to exactly the facts it states. Texts go to the librarian. All IRIs
derive from the text's SHA-256, so a document already ingested is recognised and skipped: ingesting twice adds nothing, and its activity keeps the first time.
Re-extracting (`force`) replaces one document's facts and provenance in the update that writes
its new ones, keeping the facts another document or a recorded session also stands on.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pyoxigraph as ox

from tgsparql.asking.grounding import update_label_index
from tgsparql.asking.librarian import StoreLibrarian
from tgsparql.asking.llm.base import Backend, ExtractionRequest, ExtractionUnsupported, LLMError
from tgsparql.asking.llm.log import LLMLog
from tgsparql.asking.llm.usage import Usage
from tgsparql.asking.provenance import now
from tgsparql.data.chunking import (
    DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, Chunk, check_settings, chunk_document,
)
from tgsparql.data.extraction import Fact, is_marker, parse_facts
from tgsparql.data.linking import DEFAULT_LINK_MODE, Link, LinkMethod, LinkMode, link_names
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import INGEST_AGENT, ExtractionIds, entity_iri, sha256_hex
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


class Unsupported(vocab.TgTerms):
    """Why a fact the LLM stated is not written by default: the first that holds, in this order."""

    MARKER = "MarkerTerm"
    """One of its names is a prompt or page marker ("BEGIN PASSAGE", "page 3")."""
    SELF_LOOP = "SelfLoop"
    """Its subject and object are one entity once linked."""
    EVIDENCE_NOT_FOUND = "EvidenceNotFound"
    """It gave no evidence, or its evidence is not in the chunk."""

    @property
    def text(self) -> str:
        return _REASON_TEXTS[self]


_REASON_TEXTS: Final = {
    Unsupported.MARKER: "prompt or page marker",
    Unsupported.SELF_LOOP: "self-loop",
    Unsupported.EVIDENCE_NOT_FOUND: "evidence not found",
}


def reasons_text(counts: Counter[Unsupported]) -> str:
    """Counts by reason, as ingest reports them: "2 evidence not found, 1 self-loop"."""
    return ", ".join(f"{counts[reason]} {reason.text}" for reason in Unsupported
                     if counts[reason])


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
    stated: int = 0
    """Facts the LLM's replies stated, before the checks and de-duplication."""
    facts: int = 0
    """Distinct facts written to the default graph."""
    evidence_found: int = 0
    """Facts whose evidence span was found in their chunk."""
    skipped_lines: int = 0
    """Lines of the LLM's replies that held no JSON object."""
    rejected: int = 0
    """Objects of the LLM's replies that were not usable facts, or beyond the per-reply cap."""
    linked: int = 0
    """Mentions (a name in a chunk) linked to an entity the store held."""
    minted: int = 0
    """Mentions that got an IRI of their own."""
    dropped: Counter[Unsupported] = field(default_factory=Counter)
    """Facts not written, by why they are unsupported."""
    flagged: Counter[Unsupported] = field(default_factory=Counter)
    """Unsupported facts written all the same (`keep_unsupported`), flagged, by why."""


@dataclass(frozen=True)
class IngestFailure:
    path: Path
    message: str


@dataclass
class IngestReport:
    documents: list[DocumentReport] = field(default_factory=list)
    failed: dict[Path, str] = field(default_factory=dict)
    labels_indexed: int = 0

    @property
    def linked(self) -> int:
        return sum(document.linked for document in self.documents)

    @property
    def minted(self) -> int:
        return sum(document.minted for document in self.documents)

    @property
    def dropped(self) -> Counter[Unsupported]:
        return sum((document.dropped for document in self.documents), Counter())

    @property
    def flagged(self) -> Counter[Unsupported]:
        return sum((document.flagged for document in self.documents), Counter())


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
    takes them; facts whose evidence is not located share one without a span. Unsupported
    facts kept share one per reason (`unsupported`, its IRI)."""

    iri: ox.NamedNode
    chunk: ox.NamedNode
    span: EvidenceSpan | None
    triples: list[ox.Triple] = field(default_factory=list)
    unsupported: ox.NamedNode | None = None


@dataclass(frozen=True)
class LabelRow:
    term: ox.NamedNode
    label: str


@dataclass(frozen=True)
class MentionRow:
    """A name of a chunk's written facts and what it was linked to, as `ingest_document` takes
    it: `method` a `LinkMethod` IRI, `candidates` the entities that fitted it best."""

    iri: ox.NamedNode
    chunk: ox.NamedNode
    name: str
    entity: ox.NamedNode
    method: ox.NamedNode
    candidates: int


@dataclass(frozen=True)
class _Stated:
    """A fact as one chunk stated it, before its names are linked and it is checked."""

    fact: Fact
    chunk: Chunk
    chunk_iri: ox.NamedNode
    span: EvidenceSpan | None


SubgraphKey = tuple[ox.NamedNode, tuple[int, int] | None, Unsupported | None]
"""A subgraph's chunk, evidence span (offset, length) and, for facts kept unsupported, why."""


@dataclass
class _Extraction:
    """What the LLM made of a document's chunks, gathered before anything is written."""

    chunks: list[ChunkRow] = field(default_factory=list)
    stated: list[_Stated] = field(default_factory=list)
    subgraphs: dict[SubgraphKey, SubgraphRow] = field(default_factory=dict)
    facts: dict[ox.Triple, None] = field(default_factory=dict)
    labels: dict[LabelRow, None] = field(default_factory=dict)
    mentions: dict[tuple[ox.NamedNode, str], MentionRow] = field(default_factory=dict)
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
    link: LinkMode = DEFAULT_LINK_MODE,
    keep_unsupported: bool = False,
    log: LLMLog | None = None,
) -> DocumentReport:
    """Ingest one file, or skip it when its text was ingested before (unless `force`: then
    extract it again and replace what it gave before); IngestError when it fails.

    The LLM reads every chunk before anything is written; then the document's names are linked
    (`link`, with the whole document as their context) and its facts checked, unsupported ones
    dropped unless `keep_unsupported` (either way counted, and told to `log` per chunk). The
    document's facts and provenance go in one update, written last: a failure leaves no
    half-ingested document, and a failed re-extraction leaves the old one as it was.
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
    try:
        links = link_names(store, _entity_names(extraction.stated), link)
        _settle(ids, extraction, links, report, keep_unsupported=keep_unsupported, log=log)
        report.facts = len(extraction.facts)
        page_rows = [PageRow(iri, number) for number, iri in page_iris.items()]
        texts = [(ids.document, source.text)]
        texts += [(row.iri, chunk.text) for chunk, row in zip(chunks, extraction.chunks)]
        _write_document(store, ids, source, started, page_rows, texts, extraction,
                        replaced=report.replaced, link=link)
    except (StoreError, TemplateError) as error:
        raise IngestError(f"{path}: {error}") from None
    return report


def _extract_chunk(store: Store, backend: Backend, path: Path, source: SourceText,
                   ids: ExtractionIds, chunk: Chunk, page: ox.NamedNode,
                   extraction: _Extraction, report: DocumentReport) -> None:
    """One chunk read by the LLM, its facts kept with their evidence span for linking."""
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
    report.stated += len(parsed.facts)
    extraction.stated += [_Stated(fact, chunk, chunk_iri, _span(fact, chunk))
                          for fact in parsed.facts]


def _entity_names(stated: list[_Stated]) -> list[str]:
    """The names of the subjects and objects the document's facts state, markers left out."""
    return [name for item in stated for name in _names(item.fact) if not is_marker(name)]


def _names(fact: Fact) -> list[str]:
    return [fact.subject_name] + ([fact.object_name] if fact.object_name is not None else [])


def _settle(ids: ExtractionIds, extraction: _Extraction, links: dict[str, Link],
            report: DocumentReport, *, keep_unsupported: bool, log: LLMLog | None) -> None:
    """Each stated fact with its names linked, checked, and grouped by evidence span (and, when
    kept unsupported, by why) into the subgraphs of its chunk, with its mentions and labels."""
    checked: dict[ox.NamedNode, list[tuple[_Stated, Unsupported]]] = {}
    for item in extraction.stated:
        fact, chunk = item.fact, item.chunk
        triple = _linked(fact, links)
        reason = _unsupported(fact, triple, item.span)
        if reason is not None:
            checked.setdefault(item.chunk_iri, []).append((item, reason))
            (report.flagged if keep_unsupported else report.dropped)[reason] += 1
            if not keep_unsupported:
                continue
        report.evidence_found += item.span is not None
        span = None if item.span is None else (item.span.offset, item.span.length)
        key = (item.chunk_iri, span, reason)
        subgraph = extraction.subgraphs.get(key)
        if subgraph is None:  # mint each subgraph's IRI once, not once per fact
            iri = ids.subgraph(chunk.start, chunk.end, span,
                               None if reason is None else reason.value)
            subgraph = extraction.subgraphs[key] = SubgraphRow(
                iri, item.chunk_iri, item.span,
                unsupported=None if reason is None else reason.iri)
        if triple not in subgraph.triples:
            subgraph.triples.append(triple)
        extraction.facts[triple] = None
        extraction.labels[LabelRow(triple.predicate, fact.predicate_name)] = None
        for name in _names(fact):
            _mention(ids, extraction, item, name, links.get(name), report)
    if log is not None:
        for items in checked.values():
            _log_checks(log, ids, items, kept=keep_unsupported)


def _linked(fact: Fact, links: dict[str, Link]) -> ox.Triple:
    """The fact with its subject and object the entities their names denote."""
    triple = fact.triple
    subject = links.get(fact.subject_name)
    target = links.get(fact.object_name) if fact.object_name is not None else None
    return ox.Triple(triple.subject if subject is None else subject.entity, triple.predicate,
                     triple.object if target is None else target.entity)


def _unsupported(fact: Fact, triple: ox.Triple, span: EvidenceSpan | None) -> Unsupported | None:
    if any(is_marker(name) for name in [*_names(fact), fact.predicate_name]):
        return Unsupported.MARKER
    if triple.subject == triple.object:
        return Unsupported.SELF_LOOP
    if span is None:
        return Unsupported.EVIDENCE_NOT_FOUND
    return None


def _mention(ids: ExtractionIds, extraction: _Extraction, item: _Stated, name: str,
             link: Link | None, report: DocumentReport) -> None:
    """The name's linking decision in the chunk, recorded once; a minted entity's label.

    A marker kept unsupported was never looked up: it stands for the IRI minted for it."""
    key = (item.chunk_iri, name)
    if key in extraction.mentions:
        return
    link = link or Link(entity_iri(name), LinkMethod.MINTED, 0)
    extraction.mentions[key] = MentionRow(
        ids.mention(item.chunk.start, item.chunk.end, name), item.chunk_iri, name, link.entity,
        link.method.iri, link.candidates)
    if link.linked:
        report.linked += 1
    else:
        report.minted += 1
        extraction.labels[LabelRow(link.entity, name)] = None


def _log_checks(log: LLMLog, ids: ExtractionIds, items: list[tuple[_Stated, Unsupported]], *,
                kept: bool) -> None:
    """One chunk's unsupported facts, by reason, after its reply in the LLM log."""
    chunk = items[0][0].chunk
    log.note(
        "extract-checks",
        document=ids.document.value,
        page=chunk.page,
        chunk=chunk.index,
        kept=kept,
        unsupported=dict(Counter(reason.text for _, reason in items)),
        facts=[{"s": item.fact.subject_name, "p": item.fact.predicate_name,
                "o": item.fact.object_name if item.fact.object_name is not None
                else item.fact.triple.object.value,
                "evidence": item.fact.evidence, "reason": reason.text}
               for item, reason in items],
    )


def _write_document(store: Store, ids: ExtractionIds, source: SourceText,
                    started: dt.datetime, pages: list[PageRow],
                    texts: list[tuple[ox.NamedNode, str]], extraction: _Extraction, *,
                    replaced: bool, link: LinkMode) -> None:
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
        mentions=list(extraction.mentions.values()),
        link_mode=link,
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
    link: LinkMode = DEFAULT_LINK_MODE,
    keep_unsupported: bool = False,
    log: LLMLog | None = None,
) -> IngestReport:
    """Ingest each file whole or not at all; the others go on regardless. Then index labels.

    ChunkingError (bad settings) and ExtractionUnsupported (a backend that cannot read text)
    stop the run before any write. `progress(path, chunks)` may return a callback told of each
    chunk the LLM has read; `finished` is told of each file once it is done. `force` extracts
    documents ingested before again, replacing what they gave. `link`, `keep_unsupported` and
    `log`: as `ingest_document` takes them.
    """
    check_settings(chunk_size, chunk_overlap)
    report = IngestReport()
    for name in paths:
        path = Path(name)
        outcome: DocumentReport | IngestFailure
        try:
            outcome = ingest_document(store, backend, path, chunk_size=chunk_size,
                                      chunk_overlap=chunk_overlap, progress=progress,
                                      force=force, link=link,
                                      keep_unsupported=keep_unsupported, log=log)
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


def _add(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    return value if total is None else total + value

"""Putting data in and getting it out: `load`, `ingest`, `index`, `migrate`, `rollup`,
`export`."""

from __future__ import annotations

import datetime as dt
import functools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tgsparql.asking.grounding import rebuild_label_index, update_label_index
from tgsparql.cli.options import (
    Failure, StoreTarget, backend_from, collection_option, constrain_option, llm_log, llm_options,
    opened, progress_bars, reply_options, store_option,
)
from tgsparql.data.linking import DEFAULT_LINK_MODE, LINK_MODES, LinkMode
from tgsparql.data.loader import load_files
from tgsparql.rdf.terms import Dialect
from tgsparql.rdf.vocab import Collection
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.store import StoreError

if TYPE_CHECKING:
    from collections import Counter

    from tgsparql.data.export import ExportDialect, ExportFormat
    from tgsparql.data.ingest import DocumentReport, IngestReport, Unsupported


@click.command()
@store_option
@click.argument("files_", metavar="FILE...", nargs=-1, required=True,
                type=click.Path(path_type=Path))
def load(target: StoreTarget, files_: tuple[Path, ...]) -> None:
    """Load RDF files: Turtle, TriG, N-Triples, N-Quads (RDF 1.2 included).

    Each file is checked in full first: a file with a syntax error loads nothing and the error
    names its line. Labels loaded are added to the grounding index. A file that fails while it
    is written (a full disk) is undone: all of a file is kept, or none of it.
    """
    with opened(target) as store, progress_bars() as bar:
        report = load_files(
            store,
            list(files_),
            progress=lambda path: bar(str(path), path.stat().st_size * 2 if path.is_file() else 0),
        )
        for path, count in report.loaded.items():
            click.echo(f"loaded {path}: {count} quads")
        _finish(report.labels_indexed, list(report.failed.values()))


@click.command()
@functools.partial(store_option, dialect_as_given=True)
@click.option("--graph", "graphs", multiple=True, metavar="IRI",
              help="Export only this graph; repeatable; 'default' names the default graph. "
              "Default: every graph.")
@click.option("--format", "format_", type=click.Choice(["nquads", "trig"]), required=True,
              help="N-Quads or TriG, RDF 1.2: triple terms and graph names kept.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write to FILE instead of standard output.")
def export(target: StoreTarget, dialect: Dialect | None, graphs: tuple[str, ...],
           format_: ExportFormat, output: Path | None) -> None:
    """Export the store (or some graphs) as RDF 1.2 that `load` reads back identically.

    With --dialect reification (no --endpoint needed), edge references are written as
    rdf:Statement IRIs with rdf:subject, rdf:predicate and rdf:object, for SPARQL 1.1 tools and
    rdflib-based validators such as pyshacl; over an endpoint, --dialect says how it stores them.
    """
    from tgsparql.data.export import export as export_store
    from tgsparql.record.conformance import GraphNameError, named_graphs

    try:
        chosen = named_graphs(graphs) if graphs else None
    except GraphNameError as error:
        raise click.BadParameter(str(error), param_hint="--graph") from None
    if isinstance(target, Endpoint):
        dialect = None  # --dialect is how the endpoint stores edges; its reads give rdf12
    if dialect == "rdfstar":
        raise click.BadParameter("an export writes rdf12 or reification (rdfstar only as an "
                                 "endpoint stores it)", param_hint="--dialect")
    written: ExportDialect = "reification" if dialect == "reification" else "rdf12"
    with opened(target, read_only=True) as store:
        try:
            if output is None:
                export_store(store, sys.stdout.buffer, format_, chosen, written)
                sys.stdout.buffer.flush()
            else:
                with output.open("wb") as file:
                    export_store(store, file, format_, chosen, written)
        except BrokenPipeError:
            # The reader stopped reading (`| head`): nothing to say, and nothing more to write.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except OSError as error:
            raise Failure(f"cannot write {output or 'standard output'}: "
                          f"{error.strerror or error}") from None
        except StoreError as error:
            raise Failure(str(error)) from None


@click.command()
@store_option
@click.argument("paths", metavar="PATH...", nargs=-1, required=True,
                type=click.Path(path_type=Path))
@click.option("--chunk-size", type=click.IntRange(1), default=2000, show_default=True,
              help="Characters per chunk at most.")
@click.option("--chunk-overlap", type=click.IntRange(0), default=200, show_default=True,
              help="Characters a chunk shares with the one before it.")
@click.option("--force", "--reextract", "force", is_flag=True,
              help="Extract files ingested before again, replacing the facts and provenance "
              "each gave (facts another document or a recorded session stands on stay).")
@click.option("--link", type=click.Choice(LINK_MODES), default=DEFAULT_LINK_MODE,
              show_default=True,
              help="How extracted names are linked to the entities the store holds: names "
              "matches them as grounding does (labels, surnames, shortened names, the "
              "document's other names choosing among several), exact only equal labels, none "
              "mints every name an IRI of its own.")
@click.option("--keep-unsupported", is_flag=True,
              help="Write facts whose evidence is not in the text, self-loops and facts naming "
              "prompt or page markers too, flagged as such in their provenance (by default "
              "they are counted and not written).")
@llm_options
@functools.partial(constrain_option, what="extraction")
@reply_options
def ingest(target: StoreTarget, paths: tuple[Path, ...], chunk_size: int,
           chunk_overlap: int, force: bool, link: LinkMode, keep_unsupported: bool,
           llm: str | None, model: str | None,
           base_url: str | None, api_key: str | None, constrain: str, max_tokens: int | None,
           log_llm: Path | None) -> None:
    """Extract facts from plain text and Markdown files, with where each came from.

    One document per file, titled by its first heading or line, pages split on form feeds,
    chunks read by the LLM. Facts go to the KG, their subjects and objects linked to the
    entities it holds (--link), their provenance to urn:graph:source, the texts to
    urn:graph:library. Unsupported facts are counted, not written (--keep-unsupported). A file
    whose text was ingested before is skipped (--force reads it again). One line per file as it
    finishes, then a summary. Needs an LLM: the offline backend does not invent facts.
    """
    from tgsparql.asking.llm.base import ExtractionUnsupported
    from tgsparql.asking.llm.offline import EXTRACTION_REFUSED, OfflineBackend
    from tgsparql.data.chunking import ChunkingError, check_settings
    from tgsparql.data.ingest import IngestFailure, ingest_files

    try:
        check_settings(chunk_size, chunk_overlap)
    except ChunkingError as error:
        raise click.BadParameter(str(error), param_hint="--chunk-overlap") from None
    with llm_log(log_llm) as log:
        backend = backend_from(llm, model, base_url, api_key, constrain, max_tokens=max_tokens,
                               log=log)
        if isinstance(backend, OfflineBackend):  # refused before a store directory is made
            raise Failure(EXTRACTION_REFUSED)
        with opened(target, waits_for_llm=True) as store:
            if target is None:
                click.echo("warning: no --store given: the facts go to an in-memory store and "
                           "are lost on exit", err=True)
            try:
                with progress_bars() as bars:

                    def finished(outcome: DocumentReport | IngestFailure) -> None:
                        bars.close()
                        if isinstance(outcome, IngestFailure):
                            click.echo(f"error: {outcome.message}", err=True)
                        else:
                            click.echo(_ingested_line(outcome))

                    report = ingest_files(store, backend, list(paths), chunk_size=chunk_size,
                                          chunk_overlap=chunk_overlap, force=force,
                                          link=link, keep_unsupported=keep_unsupported,
                                          log=log,
                                          progress=lambda path, chunks: bars(str(path), chunks),
                                          finished=finished)
            except (ExtractionUnsupported, StoreError) as error:
                raise Failure(str(error)) from None
            if report.labels_indexed:
                click.echo(f"indexed {report.labels_indexed} labels for grounding")
            click.echo(_ingest_summary(report))
            if report.failed:
                sys.exit(1)


def _ingested_line(doc: DocumentReport) -> str:
    """One file's outcome, as soon as it is known; a document that gave no fact says so."""
    if doc.already_present:
        line = f"skipped {doc.path}: already ingested as {doc.document.value}"
        if not doc.facts:
            line += " (it gave 0 facts; --force extracts it again)"
        return line
    verb = "re-extracted" if doc.replaced else "ingested"
    dropped = doc.skipped_lines + doc.rejected
    drops = f"{dropped} unusable reply lines or objects dropped" if dropped else ""
    checks = "".join(f"; {part}" for part in _check_parts(doc.dropped, doc.flagged))
    if not doc.facts:
        return (f"{verb} {doc.path}: 0 facts: the LLM stated none it could record "
                f"({doc.pages} pages, {doc.chunks} chunks" + (f", {drops}" if drops else "")
                + f"{checks}; --log-llm FILE shows its replies) as {doc.document.value}")
    return (f"{verb} {doc.path}: {doc.pages} pages, {doc.chunks} chunks, {doc.facts} facts "
            f"({doc.evidence_found} with evidence located" + (f", {drops}" if drops else "")
            + f"; names: {doc.linked} linked, {doc.minted} minted{checks}) as "
            f"{doc.document.value}")


def _check_parts(dropped: Counter[Unsupported], flagged: Counter[Unsupported]) -> list[str]:
    """The unsupported facts, by reason: those not written, those kept flagged."""
    from tgsparql.data.ingest import reasons_text

    return [f"{what}: {reasons_text(counts)}"
            for what, counts in (("not written", dropped), ("kept flagged", flagged)) if counts]


def _ingest_summary(report: IngestReport) -> str:
    docs = report.documents
    done = [doc for doc in docs if not doc.already_present]
    parts = [f"{len(done)} ingested ({sum(doc.facts for doc in done)} facts)"]
    empty = sum(1 for doc in docs if not doc.facts)
    if empty:
        parts.append(f"{empty} with 0 facts")
    skipped = len(docs) - len(done)
    if skipped:
        parts.append(f"{skipped} skipped as ingested before")
    if report.failed:
        parts.append(f"{len(report.failed)} failed")
    if report.linked or report.minted:
        parts.append(f"names: {report.linked} linked, {report.minted} minted")
    parts += [f"unsupported facts {part}" for part in _check_parts(report.dropped, report.flagged)]
    files_ = len(docs) + len(report.failed)
    return f"ingest: {files_} file{'s' if files_ != 1 else ''}: " + ", ".join(parts)


@click.command()
@store_option
@click.option("--rebuild", is_flag=True, help="Drop the index and build it anew.")
def index(target: StoreTarget, rebuild: bool) -> None:
    """Bring the label index used by grounding up to date (after loading by other means)."""
    with opened(target) as store:
        try:
            count = (rebuild_label_index if rebuild else update_label_index)(store)
        except StoreError as error:
            raise Failure(str(error)) from None
        click.echo(f"indexed {count} labels")


@click.command()
@store_option
@click.option("--dry-run", is_flag=True, help="Count what would be added; change nothing.")
@click.option("--batch", type=click.IntRange(1), default=2000, show_default=True,
              help="Records per update (each update is all or nothing).")
def migrate(target: StoreTarget, dry_run: bool, batch: int) -> None:
    """Add to sessions recorded by older versions the fields BI reads (tg:day, tg:completeDay,
    tg:failedDay, tg:selectedEdgeCount, tg:selectionUsage, tg:answerUsage, the documents of
    the selected facts: tg:factDocument, tg:sourceDocument, tg:sourceDocumentCount, each day's
    tg:date, the answer checks: tg:citedEdgeCount, tg:uncitedSentenceCount, and tg:uncitedDay on
    the session of an answer citing none of its selected edges). Safe to interrupt and to run
    again."""
    from tgsparql.record.migrate import migrate as run_migration
    from tgsparql.record.migrate import pending

    with opened(target) as store, progress_bars() as bar:
        try:
            todo = pending(store)
            summary = (f"{len(todo.sessions)} sessions, {len(todo.selections)} selections, "
                       f"{len(todo.calls)} LLM calls, the documents of "
                       f"{len(todo.sourced)} selections, {len(todo.days)} days, "
                       f"{len(todo.uncited)} sessions whose answer cites nothing and the checks "
                       f"of {len(todo.answers)} answers")
            if todo.answers_without_text:
                summary += (f" ({todo.answers_without_text} without their text in the "
                            "librarian: their uncited sentences are not counted)")
            if dry_run:
                click.echo(f"dry run: {summary} would be migrated")
                return
            updates = run_migration(store, todo, batch=batch,
                                    progress=bar("migrating", len(todo)))
        except StoreError as error:
            raise Failure(str(error)) from None
    click.echo(f"migrated {summary} in {updates} updates")


@click.command()
@store_option
@collection_option
@click.option("--through", metavar="YYYY-MM-DD",
              help="The last day to roll up (default: the last UTC day over for an hour).")
def rollup(target: StoreTarget, collection: Collection, through: str | None) -> None:
    """Write the collection's rollup: the BI figures of the days that are over (sessions per
    day, tokens by model, citations per document, selections per fact), computed from the record
    and put in place of the last rollup in one update, so that the saved BI queries read only
    the later days' sessions. Run it daily; running it again repairs one that no longer sums the
    record."""
    from tgsparql.asking.provenance import now
    from tgsparql.record.rollup import RollupError, roll_up

    try:
        last = dt.date.fromisoformat(through) if through is not None else None
    except ValueError:
        raise click.BadParameter(f"{through!r} is not a date (YYYY-MM-DD)",
                                 param_hint="--through") from None
    with opened(target) as store:
        try:
            rolled = roll_up(store, collection, at=now(), through=last)
        except RollupError as error:
            raise click.BadParameter(str(error), param_hint="--through") from None
        except StoreError as error:
            raise Failure(str(error)) from None
    click.echo(rolled.summary())


def _finish(labels_indexed: int, errors: list[str]) -> None:
    """The end of load: labels indexed, one line per failed file, exit 1."""
    if labels_indexed:
        click.echo(f"indexed {labels_indexed} labels for grounding")
    for message in errors:
        click.echo(f"error: {message}", err=True)
    if errors:
        sys.exit(1)

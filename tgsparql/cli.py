"""The `tgsparql` command line. Exit codes: 0 success, 1 failure, 2 bad usage."""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from tgsparql import vocab
from tgsparql.explain import Explanation, SessionNotFound, explain_session, list_sessions
from tgsparql.grounding import rebuild_label_index, update_label_index
from tgsparql.llm import LLMError, make_backend
from tgsparql.llm.base import DEFAULT_LLM_RETRIES, DEFAULT_LLM_TIMEOUT, Backend
from tgsparql.loader import load_files
from tgsparql.locking import TurnTakingStore, exclusive_store
from tgsparql.messages import GraphRagResponse
from tgsparql.pipeline import GraphRag, OutputLimits
from tgsparql.retrieval import RetrievalLimits
from tgsparql.remote import RemoteStore
from tgsparql.store import Store, StoreError, open_store
from tgsparql.templates import DIALECTS, Templates
from tgsparql.terminal import visible

if TYPE_CHECKING:
    from tgsparql.ingest import DocumentReport, IngestReport
    from tgsparql.llm.log import LLMLog

DEMO_QUESTION = "Where was the scientist who discovered polonium born?"
F = TypeVar("F", bound=Callable[..., Any])


class Failure(click.ClickException):
    """A one-line error and exit code 1."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


@dataclass(frozen=True)
class Remote:
    """A SPARQL endpoint to open, as the flags and the environment gave it."""

    endpoint: str
    options: dict[str, Any]

    def open(self) -> RemoteStore:
        return RemoteStore(self.endpoint, **self.options)


StoreTarget = Path | Remote | None
LOCK_TIMEOUT = "tgsparql.lock_timeout"
"""Where --lock-timeout is kept in the click context, for `store_for`."""
DEFAULT_LOCK_TIMEOUT = 30.0
STORE_MARKER = "CURRENT"
"""The file the embedded store's database keeps in every store directory it has created."""
"""What `opened` opens: an on-disk store, an endpoint, or (None) a store in memory."""
LLM_WAIT = "tgsparql.llm_wait"
"""Where --llm-timeout and --llm-retries are kept in the click context, for `backend_from`."""

_REMOTE_OPTIONS = [
    click.option("--endpoint", metavar="URL", envvar="TGSPARQL_ENDPOINT",
                 help="SPARQL 1.1 Protocol query endpoint of a remote store, instead of "
                 "--store. Env: TGSPARQL_ENDPOINT."),
    click.option("--update-endpoint", metavar="URL", envvar="TGSPARQL_UPDATE_ENDPOINT",
                 help="Its update endpoint; default: the query endpoint. "
                 "Env: TGSPARQL_UPDATE_ENDPOINT."),
    click.option("--graph-store", metavar="URL", envvar="TGSPARQL_GRAPH_STORE",
                 help="Graph Store Protocol endpoint taking N-Quads, for bulk loads; default: "
                 "batched INSERT DATA. Env: TGSPARQL_GRAPH_STORE."),
    click.option("--dialect", type=click.Choice(DIALECTS), envvar="TGSPARQL_DIALECT",
                 help="How the endpoint writes edge references (default rdf12; "
                 "`tgsparql doctor` recommends one). Env: TGSPARQL_DIALECT."),
    click.option("--kg-graph", metavar="IRI", envvar="TGSPARQL_KG_GRAPH",
                 help="Named graph that holds the KG on a server whose default graph is the "
                 "union of all graphs (Virtuoso): writes to the default graph go there and reads "
                 "of it name it as default-graph-uri. Env: TGSPARQL_KG_GRAPH."),
    click.option("--user", envvar="TGSPARQL_USER", help="Basic auth user. Env: TGSPARQL_USER."),
    click.option("--password", envvar="TGSPARQL_PASSWORD",
                 help="Basic auth password. Env: TGSPARQL_PASSWORD (preferred: keeps it out "
                 "of ps)."),
    click.option("--token", envvar="TGSPARQL_TOKEN",
                 help="Bearer token for the endpoint. Env: TGSPARQL_TOKEN (preferred)."),
    click.option("--connect-timeout", type=click.FloatRange(min=0, min_open=True), default=10.0,
                 show_default=True, envvar="TGSPARQL_CONNECT_TIMEOUT",
                 help="Seconds to wait for a connection to the endpoint."),
    click.option("--read-timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
                 show_default=True, envvar="TGSPARQL_READ_TIMEOUT",
                 help="Seconds to wait for the endpoint to send more of a response."),
]
_DIALECT_OF_OUTPUT = {"export"}
"""Commands whose --dialect, without --endpoint, says how they write edge references."""
_REMOTE_KEYS = ("endpoint", "update_endpoint", "graph_store", "dialect", "kg_graph", "user",
                "password", "token", "connect_timeout", "read_timeout")


def remote_options(function: F) -> F:
    """The endpoint flags, handed to the command as one `remote` argument (None without one)."""

    @functools.wraps(function)
    def packed(*args: Any, **kwargs: Any) -> Any:
        values = {key: kwargs.pop(key) for key in _REMOTE_KEYS}
        kwargs["remote"] = _remote(values)
        return function(*args, **kwargs)

    for option in reversed(_REMOTE_OPTIONS):
        packed = option(packed)
    return packed  # type: ignore[return-value]


def _remote(values: dict[str, Any]) -> Remote | None:
    endpoint = values.pop("endpoint")
    if endpoint is None:
        context = click.get_current_context()
        source = context.get_parameter_source
        given = [key for key in values if source(key) == ParameterSource.COMMANDLINE
                 and not (key == "dialect" and context.command.name in _DIALECT_OF_OUTPUT)]
        if given:
            flag = "--" + given[0].replace("_", "-")
            raise click.UsageError(f"{flag} needs --endpoint URL (or TGSPARQL_ENDPOINT)")
        return None
    options = {key: value for key, value in values.items() if value is not None}
    return Remote(endpoint, options)


def store_option(function: F) -> F:
    """--store PATH or --endpoint URL (with its flags), handed to the command as `store_path`.

    The two exclude each other; when one comes from the command line and the other only from
    the environment, the command line wins."""

    @functools.wraps(function)
    def chosen(*args: Any, store_path: Path | None, remote: Remote | None, **kwargs: Any) -> Any:
        return function(*args, store_path=chosen_target(store_path, remote), **kwargs)

    chosen = click.option(
        "--lock-timeout",
        type=click.FloatRange(min=0),
        default=DEFAULT_LOCK_TIMEOUT,
        show_default=True,
        envvar="TGSPARQL_LOCK_TIMEOUT",
        expose_value=False,
        callback=lambda context, _, value: context.meta.__setitem__(LOCK_TIMEOUT, value),
        help="Seconds to wait while another process writes to the --store directory "
        "(processes take turns on it); 0 fails at once. Env: TGSPARQL_LOCK_TIMEOUT.",
    )(chosen)
    chosen = click.option(
        "--store",
        "store_path",
        type=click.Path(path_type=Path),
        envvar="TGSPARQL_STORE",
        help="On-disk store directory (created if missing); in memory when omitted. "
        "Env: TGSPARQL_STORE.",
    )(chosen)
    return remote_options(chosen)


def chosen_target(store_path: Path | None, remote: Remote | None) -> StoreTarget:
    """The one of --store and --endpoint that was given; the command line wins over the
    environment, and both on the same footing are a usage error."""
    if remote is None or store_path is None:
        return remote if remote is not None else store_path
    source = click.get_current_context().get_parameter_source
    from_env = ParameterSource.ENVIRONMENT
    store_env, remote_env = source("store_path") == from_env, source("endpoint") == from_env
    if store_env == remote_env:
        raise click.UsageError("--store and --endpoint are mutually exclusive (so are "
                               "TGSPARQL_STORE and TGSPARQL_ENDPOINT)")
    return remote if store_env else store_path


def collection_option(function: F) -> F:
    return click.option(
        "--collection",
        default=vocab.DEFAULT_COLLECTION,
        show_default=True,
        help="Explainability collection: sessions go to the graph urn:graph:COLLECTION.",
    )(function)


def _keep_llm_wait(context: click.Context, parameter: click.Parameter, value: Any) -> None:
    context.meta.setdefault(LLM_WAIT, {})[parameter.name] = value


def llm_options(function: F) -> F:
    """The LLM flags of every command that calls one; the waits reach `backend_from` through
    the click context, so no command has to pass them along."""
    options = [
        click.option(
            "--llm",
            type=click.Choice(["offline", "openai"]),
            help="Backend; default: openai when an LLM is configured, else offline.",
        ),
        click.option("--model", help="Model name. Env: TGSPARQL_MODEL."),
        click.option("--base-url", help="OpenAI-compatible server URL. Env: OPENAI_BASE_URL."),
        click.option(
            "--api-key", help="API key. Env: OPENAI_API_KEY (preferred: keeps it out of ps)."
        ),
        click.option(
            "--llm-timeout", "timeout", type=click.FloatRange(min=0, min_open=True),
            default=DEFAULT_LLM_TIMEOUT, show_default=True, envvar="TGSPARQL_LLM_TIMEOUT",
            expose_value=False, callback=_keep_llm_wait,
            help="Seconds to wait for the LLM server to connect or to send more of a reply "
            "before the try fails. Env: TGSPARQL_LLM_TIMEOUT.",
        ),
        click.option(
            "--llm-retries", "max_retries", type=click.IntRange(min=0),
            default=DEFAULT_LLM_RETRIES, show_default=True, envvar="TGSPARQL_LLM_RETRIES",
            expose_value=False, callback=_keep_llm_wait,
            help="Tries after the first on a timeout, a lost connection, 429 or 5xx; a dead "
            "LLM fails after (retries + 1) x timeout plus a few seconds of backoff. "
            "Env: TGSPARQL_LLM_RETRIES.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def constrain_option(function: F, what: str = "selection") -> F:
    return click.option(
        "--constrain",
        type=click.Choice(["none", "grammar"]),
        default="none",
        show_default=True,
        help=f"grammar: constrain the {what} output to lines that parse: a GBNF grammar on "
        "llama.cpp-compatible servers, a JSON schema (response_format) on the OpenAI API.",
    )(function)


@contextmanager
def opened(target: StoreTarget, *, waits_for_llm: bool = False) -> Iterator[Store]:
    try:
        with store_for(target, waits_for_llm=waits_for_llm) as store:
            yield store
    except StoreError as error:
        raise Failure(str(error)) from None


@contextmanager
def store_for(target: StoreTarget, *, waits_for_llm: bool = False) -> Iterator[Store]:
    """The store a command was pointed at: an endpoint, memory, or a directory, which it
    takes its turn on (`--lock-timeout`) when another tgsparql process is writing to it.

    `waits_for_llm`: a directory is held only while it is used, not while the LLM is awaited,
    so other writer processes are not kept out by a slow or dead LLM."""
    if isinstance(target, Path):
        context = click.get_current_context(silent=True)
        timeout = context.meta.get(LOCK_TIMEOUT, DEFAULT_LOCK_TIMEOUT) if context else 0.0
        if waits_for_llm:
            shared = TurnTakingStore(target, timeout=timeout)
            try:
                yield shared
            finally:
                shared.close()
            return
        with exclusive_store(target, timeout=timeout) as store:
            yield store
        return
    store = target.open() if isinstance(target, Remote) else open_store()
    try:
        yield store
    finally:
        store.close()


class ProgressBars:
    """A bar per item of long work, on a terminal only; each closes when the next starts."""

    def __init__(self) -> None:
        self.open_bars: list[Any] = []

    def __call__(self, label: str, length: int) -> Callable[[int], None] | None:
        if not sys.stderr.isatty():
            return None  # a bar is for people; logs get the one-line results
        self.close()
        bar = click.progressbar(length=length, label=label, file=sys.stderr)
        bar.__enter__()
        self.open_bars.append(bar)
        return bar.update

    def close(self) -> None:
        """Close the open bar, e.g. before a line is printed under it."""
        while self.open_bars:
            self.open_bars.pop().__exit__(None, None, None)


@contextmanager
def progress_bars() -> Iterator[ProgressBars]:
    bars = ProgressBars()
    try:
        yield bars
    finally:
        bars.close()


@contextmanager
def llm_log(path: Path | None) -> Iterator[LLMLog | None]:
    """The --log-llm file, open for the command's length; None without the flag."""
    if path is None:
        yield None
        return
    from tgsparql.llm.log import LLMLog, LLMLogError

    try:
        log = LLMLog(path)
    except LLMLogError as error:
        raise Failure(str(error)) from None
    try:
        yield log
    finally:
        log.close()


def reply_options(function: F) -> F:
    """--max-tokens and --log-llm: how long a reply may be, and where every call is logged."""
    options = [
        click.option("--max-tokens", type=click.IntRange(1), metavar="N",
                     help="Tokens an LLM reply may hold at most (default 1024)."),
        click.option("--log-llm", "log_llm", metavar="FILE",
                     type=click.Path(dir_okay=False, path_type=Path),
                     help="Append every prompt and raw LLM reply to FILE as JSON Lines (with "
                     "the model, constraint, usage, seconds, and any error): to see why nothing "
                     "was extracted or selected."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def backend_from(llm: str | None, model: str | None, base_url: str | None,
                 api_key: str | None, constrain: str, *, max_tokens: int | None = None,
                 log: LLMLog | None = None) -> Backend:
    context = click.get_current_context(silent=True)
    waits = context.meta.get(LLM_WAIT, {}) if context else {}
    try:
        return make_backend(
            llm, model=model, base_url=base_url, api_key=api_key, constraint=constrain,  # type: ignore[arg-type]
            max_tokens=max_tokens, log=log, **waits,
        )
    except LLMError as error:
        raise Failure(str(error)) from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tgsparql")
def main() -> None:
    """GraphRAG with query-time explainability, native on SPARQL.

    Ask a question of a knowledge graph; get the answer and a PROV-O record of what was
    retrieved, which edges were selected and why, and where each edge came from.
    """


@main.command()
@store_option
@click.option("--question", default=DEMO_QUESTION, show_default=True, help="What to ask.")
@llm_options
@constrain_option
def demo(store_path: StoreTarget, question: str, llm: str | None, model: str | None,
         base_url: str | None, api_key: str | None, constrain: str) -> None:
    """Load the bundled sample (the Curies) and answer a question with its explanation."""
    backend = backend_from(llm, model, base_url, api_key, constrain)
    with opened(store_path, waits_for_llm=True) as store:
        with as_file(files("tgsparql.demo").joinpath("curie.trig")) as sample:
            report = load_files(store, [sample])
        if report.failed:
            raise Failure(next(iter(report.failed.values())))
        click.secho(f"Loaded the demo sample: {sum(report.loaded.values())} quads "
                    "(facts, labels, sources and texts).", fg="cyan")
        click.secho(f"Question: {question}\n", bold=True)
        rag = _rag(store, backend, vocab.DEFAULT_COLLECTION)
        session = _stream_text(rag.query(question, stream=True))
        click.echo()
        explanation = _explain(store, vocab.DEFAULT_COLLECTION, session)
        click.echo(render_text(explanation))


@main.command()
@store_option
@click.argument("files_", metavar="FILE...", nargs=-1, required=True,
                type=click.Path(path_type=Path))
def load(store_path: StoreTarget, files_: tuple[Path, ...]) -> None:
    """Load RDF files: Turtle, TriG, N-Triples, N-Quads (RDF 1.2 included).

    Each file is checked in full first: a file with a syntax error loads nothing and the error
    names its line. Labels loaded are added to the grounding index.
    """
    with opened(store_path) as store, progress_bars() as bar:
        report = load_files(
            store,
            list(files_),
            progress=lambda path: bar(str(path), path.stat().st_size * 2 if path.is_file() else 0),
        )
        for path, count in report.loaded.items():
            click.echo(f"loaded {path}: {count} quads")
        _finish(report.labels_indexed, list(report.failed.values()))


@main.command()
@store_option
@click.option("--graph", "graphs", multiple=True, metavar="IRI",
              help="Export only this graph; repeatable; 'default' names the default graph. "
              "Default: every graph.")
@click.option("--format", "format_", type=click.Choice(["nquads", "trig"]), required=True,
              help="N-Quads or TriG, RDF 1.2: triple terms and graph names kept.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write to FILE instead of standard output.")
def export(store_path: StoreTarget, graphs: tuple[str, ...], format_: str,
           output: Path | None) -> None:
    """Export the store (or some graphs) as RDF 1.2 that `load` reads back identically.

    With --dialect reification (no --endpoint needed), edge references are written as
    rdf:Statement IRIs with rdf:subject, rdf:predicate and rdf:object, for SPARQL 1.1 tools and
    rdflib-based validators such as pyshacl; over an endpoint, --dialect says how it stores them.
    """
    from tgsparql.export import export as export_store
    from tgsparql.validate_session import GraphNameError, data_graph

    try:
        chosen = data_graph(graphs) if graphs else None
    except GraphNameError as error:
        raise click.BadParameter(str(error), param_hint="--graph") from None
    dialect = click.get_current_context().params.get("dialect") or "rdf12"
    if dialect == "rdfstar" and not isinstance(store_path, Remote):
        raise click.BadParameter("an export writes rdf12 or reification (rdfstar only as an "
                                 "endpoint stores it)", param_hint="--dialect")
    if isinstance(store_path, Remote):
        dialect = "rdf12"  # written as the endpoint's reads return them
    with opened(store_path) as store:
        try:
            if output is None:
                export_store(store, sys.stdout.buffer, format_, chosen,  # type: ignore[arg-type]
                             dialect)
                sys.stdout.buffer.flush()
            else:
                with output.open("wb") as file:
                    export_store(store, file, format_, chosen, dialect)  # type: ignore[arg-type]
        except BrokenPipeError:
            # The reader stopped reading (`| head`): nothing to say, and nothing more to write.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except OSError as error:
            raise Failure(f"cannot write {output or 'standard output'}: "
                          f"{error.strerror or error}") from None
        except StoreError as error:
            raise Failure(str(error)) from None


@main.command()
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
@llm_options
@functools.partial(constrain_option, what="extraction")
@reply_options
def ingest(store_path: StoreTarget, paths: tuple[Path, ...], chunk_size: int,
           chunk_overlap: int, force: bool, llm: str | None, model: str | None,
           base_url: str | None, api_key: str | None, constrain: str, max_tokens: int | None,
           log_llm: Path | None) -> None:
    """Extract facts from plain text and Markdown files, with where each came from.

    One document per file, titled by its first heading or line, pages split on form feeds,
    chunks read by the LLM. Facts go to the KG, their provenance to urn:graph:source, the
    texts to urn:graph:library. A file whose text was ingested before is skipped (--force reads
    it again). One line per file as it finishes, then a summary. Needs an LLM: the offline
    backend does not invent facts.
    """
    from tgsparql.chunking import ChunkingError, check_settings
    from tgsparql.ingest import IngestFailure, ingest_files
    from tgsparql.llm.base import ExtractionUnsupported
    from tgsparql.llm.offline import EXTRACTION_REFUSED, OfflineBackend

    try:
        check_settings(chunk_size, chunk_overlap)
    except ChunkingError as error:
        raise click.BadParameter(str(error), param_hint="--chunk-overlap") from None
    with llm_log(log_llm) as log:
        backend = backend_from(llm, model, base_url, api_key, constrain, max_tokens=max_tokens,
                               log=log)
        if isinstance(backend, OfflineBackend):  # refused before a store directory is made
            raise Failure(EXTRACTION_REFUSED)
        with opened(store_path, waits_for_llm=True) as store:
            if store_path is None:
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
    if not doc.facts:
        return (f"{verb} {doc.path}: 0 facts: the LLM stated none it could record "
                f"({doc.pages} pages, {doc.chunks} chunks" + (f", {drops}" if drops else "")
                + f"; --log-llm FILE shows its replies) as {doc.document.value}")
    return (f"{verb} {doc.path}: {doc.pages} pages, {doc.chunks} chunks, {doc.facts} facts "
            f"({doc.evidence_found} with evidence located" + (f", {drops}" if drops else "")
            + f") as {doc.document.value}")


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
    files_ = len(docs) + len(report.failed)
    return f"ingest: {files_} file{'s' if files_ != 1 else ''}: " + ", ".join(parts)


@main.command()
@store_option
@click.option("--rebuild", is_flag=True, help="Drop the index and build it anew.")
def index(store_path: StoreTarget, rebuild: bool) -> None:
    """Bring the label index used by grounding up to date (after loading by other means)."""
    with opened(store_path) as store:
        templates = Templates(store.dialect)
        try:
            count = (rebuild_label_index if rebuild else update_label_index)(store, templates)
        except StoreError as error:
            raise Failure(str(error)) from None
        click.echo(f"indexed {count} labels")


@main.command()
@store_option
@click.option("--dry-run", is_flag=True, help="Count what would be added; change nothing.")
@click.option("--batch", type=click.IntRange(1), default=2000, show_default=True,
              help="Records per update (each update is all or nothing).")
def migrate(store_path: StoreTarget, dry_run: bool, batch: int) -> None:
    """Add to sessions recorded by older versions the fields BI reads (tg:day, tg:completeDay,
    tg:failedDay, tg:selectedEdgeCount). Safe to interrupt and to run again."""
    from tgsparql.migrate import migrate as run_migration
    from tgsparql.migrate import pending

    with opened(store_path) as store, progress_bars() as bar:
        templates = Templates(store.dialect)
        try:
            todo = pending(store, templates)
            summary = f"{len(todo.sessions)} sessions and {len(todo.selections)} selections"
            if dry_run:
                click.echo(f"dry run: {summary} would be migrated")
                return
            updates = run_migration(store, templates, todo, batch=batch,
                                    progress=bar("migrating", len(todo)))
        except StoreError as error:
            raise Failure(str(error)) from None
    click.echo(f"migrated {summary} in {updates} updates")


@main.command()
@store_option
@click.argument("question")
@collection_option
@llm_options
@constrain_option
@reply_options
@click.option("--no-stream", is_flag=True, help="Wait for the whole answer, then print it.")
@click.option("--format", "format_", type=click.Choice(["text", "jsonl"]), default="text",
              show_default=True, help="jsonl: every GraphRagResponse as one JSON object a line.")
@click.option("--max-path-length", type=click.IntRange(1), default=2, show_default=True)
@click.option("--triple-limit", type=click.IntRange(1), default=30, show_default=True,
              help="Edges per entity and hop.")
@click.option("--entity-limit", type=click.IntRange(1), default=50, show_default=True,
              help="Seed entities at most.")
@click.option("--max-subgraph-size", type=click.IntRange(1), default=150, show_default=True)
@click.option("--max-reason-chars", type=click.IntRange(1),
              default=OutputLimits.reason_chars, show_default=True,
              envvar="TGSPARQL_MAX_REASON_CHARS",
              help="Characters kept of each reason the LLM gives; a longer one is cut and "
              "flagged tg:truncated. Env: TGSPARQL_MAX_REASON_CHARS.")
@click.option("--max-answer-chars", type=click.IntRange(1),
              default=OutputLimits.answer_chars, show_default=True,
              envvar="TGSPARQL_MAX_ANSWER_CHARS",
              help="Characters kept (printed and stored) of the LLM's answer; the rest is not "
              "read, and the answer is flagged tg:truncated. Env: TGSPARQL_MAX_ANSWER_CHARS.")
@click.option("--validate", "validate_", is_flag=True,
              help="Validate the new session against the bundled shapes; exit 1 if it does "
              "not conform.")
def query(store_path: StoreTarget, question: str, collection: str, llm: str | None,
          model: str | None, base_url: str | None, api_key: str | None, constrain: str,
          max_tokens: int | None, log_llm: Path | None, no_stream: bool, format_: str,
          max_path_length: int, triple_limit: int, entity_limit: int, max_subgraph_size: int,
          max_reason_chars: int, max_answer_chars: int, validate_: bool) -> None:
    """Answer QUESTION from the KG and record the session's explanation."""
    limits = RetrievalLimits(max_path_length, triple_limit, entity_limit, max_subgraph_size)
    output_limits = OutputLimits(max_reason_chars, max_answer_chars)
    with llm_log(log_llm) as log, opened(store_path, waits_for_llm=True) as store:
        backend = backend_from(llm, model, base_url, api_key, constrain, max_tokens=max_tokens,
                               log=log)
        if store_path is None:
            click.echo("warning: no --store given: querying an empty in-memory store", err=True)
        rag = _rag(store, backend, collection, limits, output_limits)
        messages = _warn_on_empty_selection(rag.query(question, stream=not no_stream))
        if format_ == "jsonl":
            failed = False
            session = ""
            for message in messages:
                click.echo(json.dumps(message.to_json(), ensure_ascii=False))
                failed = failed or message.error is not None
                if message.message_type == "explain" and message.explain_id and not session:
                    session = message.explain_id
            if failed:
                sys.exit(1)
            if validate_ and not _session_conforms(store, session, jsonl=True):
                sys.exit(1)
            return
        session = _stream_text(messages)
        if store_path is None:  # nothing to explain once this process ends
            click.echo(f"session {session} was recorded in memory and is gone with this "
                       "process: pass --store DIR to keep sessions", err=True)
        else:
            click.echo(f"explain: tgsparql explain {session}"
                       + (f" --collection {collection}" if collection != vocab.DEFAULT_COLLECTION
                          else ""), err=True)
        if validate_ and not _session_conforms(store, session, jsonl=False):
            sys.exit(1)


def _warn_on_empty_selection(
    messages: Iterator[GraphRagResponse],
) -> Iterator[GraphRagResponse]:
    """The messages, with a warning on stderr once the selection is announced empty: the
    answer then only says that the KG holds nothing that answers."""
    for message in messages:
        if message.explain_id and ":prov:selection:" in message.explain_id and not any(
            triple.predicate == vocab.TG_SELECTED_EDGE
            for triple in message.explain_triples
        ):
            click.echo("warning: no edge of the KG was selected as answering the question; "
                       "the answer says so (--log-llm FILE shows the selector's reply)", err=True)
        yield message


@main.group(invoke_without_command=True)
@store_option
@collection_option
@click.option("--limit", type=click.IntRange(1), default=20, show_default=True)
@click.option("--format", "format_", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@click.pass_context
def sessions(ctx: click.Context, store_path: StoreTarget, collection: str, limit: int,
             format_: str) -> None:
    """List recorded sessions, newest first; `sessions delete` removes old ones."""
    if ctx.invoked_subcommand is not None:
        return
    with opened(store_path) as store:
        try:
            found = list_sessions(store, Templates(store.dialect), collection, limit)
        except (StoreError, vocab.CollectionError) as error:
            raise Failure(str(error)) from None
    if format_ == "json":
        click.echo(json.dumps([s.to_json() for s in found], ensure_ascii=False, indent=2))
        return
    if not found:
        click.echo(f"no sessions in collection {collection!r}", err=True)
        return
    rows = [("STARTED", "STATUS", "SESSION", "QUESTION")] + [
        (s.started, s.status or "open", s.session, visible(_one_line(s.question, 60)))
        for s in found
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3])


@sessions.command("delete")
@store_option
@collection_option
@click.option("--older-than", metavar="DURATION",
              help="Delete sessions started longer ago than this: 30d, 12h, 90m, 2w, 1d12h.")
@click.option("--session", "session_iris", multiple=True, metavar="IRI",
              help="Delete this session (its IRI or UUID); repeatable.")
@click.option("--dry-run", is_flag=True, help="List what would be deleted; change nothing.")
def sessions_delete(store_path: StoreTarget, collection: str, older_than: str | None,
                    session_iris: tuple[str, ...], dry_run: bool) -> None:
    """Delete sessions with every triple they own (session, retrieval, selection, edge
    selections, answer, failure fields) and their answer documents; nothing else."""
    from tgsparql.retention import RetentionError, delete_sessions, parse_duration, select_sessions

    if (older_than is None) == (not session_iris):
        raise click.UsageError("give either --older-than DURATION or --session IRI")
    try:
        duration = parse_duration(older_than) if older_than is not None else None
    except RetentionError as error:
        raise click.BadParameter(str(error), param_hint="--older-than") from None
    with opened(store_path) as store:
        templates = Templates(store.dialect)
        try:
            chosen = select_sessions(store, templates, collection, older_than=duration,
                                     sessions=session_iris)
            removed = 0 if dry_run else delete_sessions(store, templates, collection, chosen)
        except (RetentionError, StoreError, vocab.CollectionError) as error:
            raise Failure(str(error)) from None
    for item in chosen:
        click.echo(f"{'would delete' if dry_run else 'deleted'} {item.ids.session.value} "
                   f"({item.quads} quads)")
    if dry_run:
        quads = sum(item.quads for item in chosen)
        click.echo(f"dry run: {len(chosen)} sessions ({quads} quads) would be deleted", err=True)
    else:
        click.echo(f"deleted {len(chosen)} sessions ({removed} quads)", err=True)


@main.command()
@store_option
@click.argument("session")
@collection_option
@click.option("--format", "format_",
              type=click.Choice(["text", "json", "turtle", "html", "dot", "mermaid"]),
              default="text", show_default=True,
              help="html: the trace page with its picture; dot, mermaid: the picture "
              "(question → edges → chunks → documents).")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write to FILE instead of standard output.")
def explain(store_path: StoreTarget, session: str, collection: str, format_: str,
            output: Path | None) -> None:
    """Explain SESSION (its IRI or UUID): retrieval, selected edges with reasons and sources."""
    with opened(store_path) as store:
        if format_ in ("html", "dot", "mermaid"):
            from tgsparql.serve import pages

            try:
                view = pages.session_view(store, Templates(store.dialect), collection, session)
            except (SessionNotFound, ValueError, StoreError) as error:
                raise Failure(str(error)) from None
            text = {
                "html": lambda: pages.render_session(view, standalone=True),
                "dot": view.picture.dot,
                "mermaid": view.picture.mermaid,
            }[format_]()
        else:
            explanation = _explain(store, collection, session)
            text = {
                "json": lambda: json.dumps(explanation.to_json(), ensure_ascii=False, indent=2)
                + "\n",
                "turtle": explanation.turtle,
                "text": lambda: render_text(explanation) + "\n",
            }[format_]()
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        raise Failure(f"cannot write {output}: {error.strerror or error}") from None


@main.command()
@click.option("--store", "store_path", envvar="TGSPARQL_STORE",
              type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="On-disk store directory to serve, opened read-only (other processes may "
              "keep recording sessions into it); or serve --endpoint URL. Env: TGSPARQL_STORE.")
@remote_options
@collection_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; loopback unless you mean to share it.")
@click.option("--port", type=click.IntRange(0, 65535), default=7879, show_default=True,
              help="Port; 0 picks a free one.")
@click.option("--serve-token", envvar="TGSPARQL_SERVE_TOKEN",
              help="Require 'Authorization: Bearer TOKEN' on every request to this server "
              "(--token is the endpoint's). Env: TGSPARQL_SERVE_TOKEN (preferred: keeps it out "
              "of ps).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=30.0,
              show_default=True, help="Seconds a query may run before it is stopped (503).")
@click.option("--max-results", type=click.IntRange(1), default=100_000, show_default=True,
              help="Solutions or triples a query may return (503 beyond).")
@click.option("--max-memory", metavar="SIZE", default="1GiB", show_default=True,
              help="Memory each query process may use (e.g. 512MiB, 2GiB; 0 for no bound); a "
              "query past it is stopped (503) and its process replaced.")
@click.option("--workers", type=click.IntRange(1), default=2, show_default=True,
              help="Query processes for /sparql: queries that may run at once. One more process "
              "is kept for pages and saved queries, which may also use idle ones.")
@click.option("--allowed-host", "allowed_hosts", metavar="NAME", multiple=True,
              help="Also accept requests whose Host is NAME (repeatable); by default only the "
              "loopback names and --host are, so no other site's page can reach the server "
              "through a browser (DNS rebinding).")
@click.option("--log", is_flag=True, help="Log every request (and how each ask ended) to "
              "stderr.")
@click.option("--ask", is_flag=True,
              help="Also answer questions: POST /ask streams each session's messages as they "
              "happen, and /ask is a page to ask from. The server then holds the store as its "
              "one writer (other writers wait until it stops). Needs --serve-token unless it "
              "listens on loopback.")
@click.option("--ask-limit", type=click.IntRange(1), default=2, show_default=True,
              help="Asks answered at once; more are refused (429).")
@click.option("--ask-rate", type=click.IntRange(1), default=10, show_default=True,
              help="Asks one client (address) may start a minute; more are refused (429).")
@click.option("--lock-timeout", type=click.FloatRange(min=0), default=DEFAULT_LOCK_TIMEOUT,
              show_default=True, envvar="TGSPARQL_LOCK_TIMEOUT",
              help="With --ask: seconds to wait for another process writing to the store to "
              "let it go. Env: TGSPARQL_LOCK_TIMEOUT.")
@llm_options
@constrain_option
def serve(store_path: Path | None, remote: Remote | None, collection: str, host: str, port: int,
          serve_token: str | None, timeout: float, max_results: int, max_memory: str,
          workers: int, allowed_hosts: tuple[str, ...], log: bool, ask: bool, ask_limit: int,
          ask_rate: int, lock_timeout: float, llm: str | None, model: str | None,
          base_url: str | None, api_key: str | None, constrain: str) -> None:
    """Serve the store (or the SPARQL endpoint) read-only: /sparql (SPARQL 1.1 Protocol),
    /queries (saved BI queries as CSV, TSV, JSON), /sessions (trace pages); with --ask, also
    /ask (questions answered, their explanation streamed as it is recorded)."""
    from tgsparql.serve.app import ServerConfig, TgsparqlServer, describe, is_loopback
    from tgsparql.serve.ask import AskLimits

    target = chosen_target(store_path, remote)
    if target is None:
        raise click.UsageError("give --store PATH or --endpoint URL to serve")
    if ask and not is_loopback(host) and serve_token is None:
        _usage_line(f"--ask on {host} needs --serve-token (or TGSPARQL_SERVE_TOKEN): anyone "
                    "who can reach it could write sessions and spend the LLM's tokens")
    if ask and isinstance(target, Remote):
        _usage_line("--ask needs --store PATH: it records sessions in an on-disk store it "
                    "holds as the one writer, not through --endpoint")
    served: dict[str, Any] = {"store": target}
    if isinstance(target, Remote):
        served = {"endpoint": target.endpoint, "endpoint_options": target.options}
    backend = backend_from(llm, model, base_url, api_key, constrain) if ask else None
    try:
        vocab.explainability_graph(collection)
        server = TgsparqlServer(ServerConfig(
            **served, host=host, port=port, token=serve_token, timeout=timeout,
            max_results=max_results, max_memory=_memory_size(max_memory) or None,
            allowed_hosts=allowed_hosts, workers=workers, collection=collection, log=log,
            ask=AskLimits(in_flight=ask_limit, per_minute=ask_rate,
                          stop_wait=_llm_longest_wait()) if ask else None,
            lock_timeout=lock_timeout,
        ), backend)
    except (OSError, StoreError, vocab.CollectionError) as error:
        raise Failure(str(error)) from None
    if not is_loopback(host) and serve_token is None:
        click.echo(f"warning: serving on {host} without --serve-token: anyone who can reach it "
                   "can read every session", err=True)
    click.echo(describe(server), err=True)
    # Stop on SIGTERM as on Ctrl-C, even where SIGINT was ignored by whoever started us.
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(b|kib|mib|gib|tib|k|m|g|t)?\s*",
                   re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _memory_size(text: str) -> int:
    """Bytes from `512MiB`, `2GiB`, `1.5G` (binary units) or a plain number of bytes."""
    found = _SIZE.fullmatch(text)
    if found is None:
        raise click.BadParameter(f"{text!r} is not a size such as 512MiB or 2GiB",
                                 param_hint="--max-memory")
    number, unit = found.groups()
    size = int(float(number) * _SIZE_UNITS[(unit or "b")[0].lower()])
    if 0 < size < 64 << 20:
        raise click.BadParameter("a query process needs at least 64MiB (0 for no bound)",
                                 param_hint="--max-memory")
    return size


def _llm_longest_wait() -> float:
    """Seconds the LLM may keep a session waiting, retries included, and a margin: how long a
    stopping server waits for its asks to end by themselves."""
    context = click.get_current_context()
    waits = context.meta.get(LLM_WAIT, {})
    tries = waits.get("max_retries", DEFAULT_LLM_RETRIES) + 1
    return tries * waits.get("timeout", DEFAULT_LLM_TIMEOUT) + 10.0


def _usage_line(message: str) -> None:
    """Bad usage as one line, exit 2 (click's usage errors take several)."""
    click.echo(f"error: {message}", err=True)
    click.get_current_context().exit(2)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@main.command()
@store_option
@click.argument("iri")
@collection_option
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def trace(store_path: StoreTarget, iri: str, collection: str, format_: str) -> None:
    """Trace IRI — an edge selection, a session (IRI or UUID) or a document — to its sources,
    or a document to the sessions and answers that used its facts."""
    from tgsparql.trace import TraceError, render_text as trace_text, trace as trace_iri

    with opened(store_path) as store:
        try:
            found = trace_iri(store, Templates(store.dialect), collection, iri)
        except (TraceError, StoreError, vocab.CollectionError) as error:
            raise Failure(str(error)) from None
    if format_ == "json":
        click.echo(json.dumps(found.to_json(), ensure_ascii=False, indent=2))
    else:
        click.echo(trace_text(found))


class CannotValidate(Failure):
    """A one-line error and exit code 2: the data could not be validated at all."""

    exit_code = 2


@main.command()
@store_option
@click.option("--shapes", "shape_files", multiple=True, metavar="PATH",
              type=click.Path(dir_okay=False, path_type=Path),
              help="SHACL shapes file (Turtle, TriG, N-Triples, ...); repeatable. "
              "Default: the bundled shapes of the explainability and extraction records, "
              "in the store's dialect.")
@click.option("--graph", "graphs", multiple=True, metavar="IRI",
              help="Validate only this graph; repeatable; 'default' names the default graph "
              "(the KG). Default: the union of all graphs.")
@click.option("--session", help="Validate only this session's entities (its IRI or UUID).")
@click.option("--format", "format_", type=click.Choice(["text", "turtle", "json", "junit"]),
              default="text", show_default=True,
              help="turtle: a standard sh:ValidationReport; junit: one test case per shape.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write the report to FILE (a one-line verdict goes to stderr).")
def validate(store_path: StoreTarget, shape_files: tuple[Path, ...], graphs: tuple[str, ...],
             session: str | None, format_: str, output: Path | None) -> None:
    """Validate the provenance in a store against SHACL shapes, for CI.

    Exit 0 when the data conforms (warnings allowed), 1 when it has violations, 2 when it
    could not be validated (bad shapes, a store that cannot be opened, an unknown session).
    """
    from tgsparql.validate_session import (
        GraphNameError, bundled_validator, data_graph, empty_graphs, render, session_nodes,
        verdict,
    )
    from tgsparql.validation import Shapes, ShapesError, Validator

    if store_path is None:
        raise CannotValidate("no store to validate: give --store PATH or --endpoint URL")
    if isinstance(store_path, Path):
        _refuse_non_store(store_path)
    try:
        graph = data_graph(graphs)
        shapes = Shapes.from_files(shape_files) if shape_files else None
    except (GraphNameError, ShapesError) as error:
        raise CannotValidate(str(error)) from None
    if shapes is not None and not len(shapes):
        raise CannotValidate(f"{shapes.origin}: no shapes (nothing to validate against)")
    try:
        with store_for(store_path) as store:
            validator = (
                bundled_validator(store.dialect)
                if shapes is None
                else Validator(shapes, dialect=store.dialect)
            )
            for name in empty_graphs(store, graph):
                raise CannotValidate(f"--graph {name} holds no triples: nothing to validate")
            focus = (
                session_nodes(store, Templates(store.dialect), session, graph) if session else None
            )
            report = validator.validate(store, default_graph=graph, focus=focus)
    except (ShapesError, StoreError, SessionNotFound, ValueError) as error:
        raise CannotValidate(str(error)) from None
    text = render(report, format_)
    if output is None:
        click.echo(text, nl=False)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as error:
            raise CannotValidate(f"cannot write {output}: {error.strerror or error}") from None
        click.echo(f"{verdict(report)}; report written to {output}", err=True)
    if report.violations:
        sys.exit(1)


def _refuse_non_store(path: Path) -> None:
    """`validate` reads a store that exists: it never creates one where a path names none."""
    if not path.exists():
        raise CannotValidate(f"no store at {path}")
    if not path.is_dir():
        raise CannotValidate(f"{path} is a file, not a store directory")
    if not (path / STORE_MARKER).is_file():
        what = "an empty directory" if not any(path.iterdir()) else "a directory"
        raise CannotValidate(f"{path} is {what}, not a store")


def _session_conforms(store: Store, session: str, *, jsonl: bool) -> bool:
    """`query --validate`: the new session against the bundled shapes, verdict printed."""
    from tgsparql.validate_session import validate_session, verdict
    from tgsparql.validation import ShapesError

    try:
        report = validate_session(store, session)
    except (ShapesError, StoreError, SessionNotFound, ValueError) as error:
        raise CannotValidate(str(error)) from None
    if jsonl:
        line = {"validation": {"session": session, **report.to_json()}}
        click.echo(json.dumps(line, ensure_ascii=False))
    else:
        click.echo(f"validate: {verdict(report)}", err=True)
        for line in report.to_text().splitlines()[1:]:
            click.echo(f"  {line}", err=True)
    return not report.violations


@main.command()
@remote_options
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def doctor(remote: Remote | None, format_: str) -> None:
    """Probe a SPARQL endpoint: reachable, readable, writable (a probe triple in a scratch
    named graph, then removed), named graphs, triple terms, quoted triples; recommend a dialect.

    Exit 0 when the endpoint can serve tgsparql (in --dialect, when given), else 1 with why.
    """
    from tgsparql.doctor import diagnose

    if remote is None:
        raise click.UsageError("give --endpoint URL (or set TGSPARQL_ENDPOINT)")
    wanted = remote.options.get("dialect")
    try:
        with remote.open() as store:
            diagnosis = diagnose(store, dialect=wanted)
    except StoreError as error:
        raise Failure(str(error)) from None
    if format_ == "json":
        click.echo(json.dumps(diagnosis.to_json(), ensure_ascii=False, indent=2))
    else:
        click.echo(diagnosis.to_text())
    if diagnosis.reason is not None:
        raise Failure(diagnosis.reason)


def _finish(labels_indexed: int, errors: list[str]) -> None:
    """The end of load: labels indexed, one line per failed file, exit 1."""
    if labels_indexed:
        click.echo(f"indexed {labels_indexed} labels for grounding")
    for message in errors:
        click.echo(f"error: {message}", err=True)
    if errors:
        sys.exit(1)


def _rag(store: Store, backend: Backend, collection: str,
         limits: RetrievalLimits | None = None,
         output_limits: OutputLimits | None = None) -> GraphRag:
    try:
        return GraphRag(store, backend, collection=collection, limits=limits,
                        output_limits=output_limits)
    except (StoreError, vocab.CollectionError) as error:
        raise Failure(str(error)) from None


def _stream_text(messages: Iterator[GraphRagResponse]) -> str:
    """Print answer chunks as they come; the session IRI, or a Failure for an error message."""
    session = ""
    for message in messages:
        if message.error is not None:
            click.echo()
            raise Failure(message.error.message)
        if message.message_type == "explain" and message.explain_id and not session:
            session = message.explain_id
        if message.message_type == "chunk" and message.response:
            click.echo(visible(message.response, keep="\n\t"), nl=False)
    click.echo()
    return session


def _explain(store: Store, collection: str, session: str) -> Explanation:
    try:
        return explain_session(store, Templates(store.dialect), collection, session)
    except (SessionNotFound, ValueError, StoreError) as error:
        raise Failure(str(error)) from None


def render_text(e: Explanation) -> str:
    """The explanation for a person: what was asked, found, chosen and why, and from where."""
    out: list[str] = []
    add = out.append
    add(click.style("Explanation", bold=True) + f"  {e.session}")
    add(f"  status     {e.status or 'open (not ended)'}"
        + (f" — {visible(e.error)}" if e.error else ""))
    add(f"  asked      {visible(e.question)}")
    add(f"  started    {e.started}" + (f"   ended {e.ended}" if e.ended else ""))
    seeds = ", ".join(visible(label) for _, label in e.entities) or "none"
    add(f"  grounding  concepts: {visible(', '.join(e.concepts)) or 'none'}; seed entities: {seeds}")
    add(f"  retrieved  {e.edge_count if e.edge_count is not None else '?'} edges")
    usage = _usage_text(e.selection_usage)
    invalid = f", {e.invalid_ids} unknown ids dropped" if e.invalid_ids else ""
    add(f"  selected   {len(e.selected)} edges{invalid}{usage}")
    for edge in e.selected:
        add(click.style(f"    [{edge.index}] ", fg="cyan")
            + visible(" — ".join(edge.labels)))
        cut = " [cut: the LLM's reason was longer]" if edge.reasoning_truncated else ""
        add(_wrap("why: " + edge.reasoning + cut, 8))
        for sentence in edge.citations:
            add(_wrap(f"cited: “{_one_line(sentence, 300)}”", 8))
        if not edge.sources:
            add("        from: no recorded source")
        for source in edge.sources:
            where = f'"{visible(source.title)}"' if source.title else source.document
            if source.page_number is not None:
                where += f", page {source.page_number}"
            if source.chunk_index is not None:
                where += f", chunk {source.chunk_index}"
            if source.char_offset is not None and source.char_length is not None:
                where += f" (characters {source.char_offset}–{source.char_offset + source.char_length})"
            add(f"        from: {where}")
            if source.text:
                add(_wrap(f"“{_one_line(source.text, 300)}”", 14))
    if e.answer is not None:
        check = "SHA-256 verified" if e.answer_intact else "SHA-256 MISMATCH"
        cited = sum(1 for edge in e.selected if edge.citations)
        citing = "" if e.invalid_citations is None else (
            f"; cites {cited} of {len(e.selected)} selected edges"
            + (f", {e.invalid_citations} markers naming no selected edge"
               if e.invalid_citations else ""))
        cut = ", cut: the LLM's answer was longer" if e.answer_truncated else ""
        add(f"  answer     ({check}{_usage_text(e.answer_usage)}{citing}{cut})")
        add(_wrap(e.answer, 8))
    return "\n".join(out)


def _usage_text(usage: dict[str, Any]) -> str:
    if not usage:
        return ""
    parts = [str(usage.get("model", "?"))]
    if "in_tokens" in usage or "out_tokens" in usage:
        parts.append(f"{usage.get('in_tokens', '?')} in / {usage.get('out_tokens', '?')} out tokens")
    return " by " + ", ".join(parts)


def _wrap(text: str, indent: int) -> str:
    """`text` filled to the width, on lines of its own: its line breaks become spaces (as
    textwrap makes them) and any other control character shows as an escape."""
    return textwrap.fill(visible(" ".join(text.split())), width=100, initial_indent=" " * indent,
                         subsequent_indent=" " * indent, break_on_hyphens=False,
                         break_long_words=False)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


if __name__ == "__main__":
    main()

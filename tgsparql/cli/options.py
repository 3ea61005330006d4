"""What every command shares: the store and endpoint flags and the store they open, the LLM
flags and the backend they make, progress bars, and how a failure is said."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, cast

import click
from click.core import ParameterSource

from tgsparql.cli.ahead import STORE_MARKER, opened_ahead
from tgsparql.rdf import vocab
from tgsparql.rdf.terms import DEFAULT_DIALECT, DIALECTS, Dialect
from tgsparql.stores import ENDPOINT_ENVIRONMENT
from tgsparql.stores.store import EmbeddedStore, Store, StoreError, open_store

if TYPE_CHECKING:
    from tgsparql.asking.llm.base import Backend
    from tgsparql.asking.llm.log import LLMLog
    from tgsparql.stores.endpoint import Endpoint
    from tgsparql.stores.remote import RemoteStore


F = TypeVar("F", bound=Callable[..., Any])


class Failure(click.ClickException):
    """A one-line error and exit code 1; no URL's credentials in it."""

    def show(self, file: Any = None) -> None:
        from tgsparql.rdf.redact import redacted_text  # only once something failed

        click.echo(f"error: {redacted_text(self.message)}", err=True)


class CannotCheck(Failure):
    """A one-line error and exit code 2: what was to be checked (`validate`, `check`) could not
    be checked at all."""

    exit_code = 2


StoreTarget: TypeAlias = "Path | Endpoint | None"
"""What `opened` opens: an on-disk store, an endpoint, or (None) a store in memory."""
LOCK_TIMEOUT = "tgsparql.lock_timeout"
"""Where --lock-timeout is kept in the click context, for `store_for`."""
DEFAULT_LOCK_TIMEOUT = 30.0
LLM_WAIT = "tgsparql.llm_wait"
"""Where --llm-timeout and --llm-retries are kept in the click context, for `backend_from`."""

_ENV = ENDPOINT_ENVIRONMENT
_REMOTE_OPTIONS = [
    click.option("--endpoint", "query_url", metavar="URL", envvar=_ENV["query_url"],
                 help="SPARQL 1.1 Protocol query endpoint of a remote store, instead of "
                 f"--store. Env: {_ENV['query_url']}."),
    click.option("--update-endpoint", "update_url", metavar="URL", envvar=_ENV["update_url"],
                 help="Its update endpoint; default: the query endpoint. "
                 f"Env: {_ENV['update_url']}."),
    click.option("--graph-store", "graph_store_url", metavar="URL",
                 envvar=_ENV["graph_store_url"],
                 help="Graph Store Protocol endpoint taking N-Quads, for bulk loads; default: "
                 f"batched INSERT DATA. Env: {_ENV['graph_store_url']}."),
    click.option("--dialect", type=click.Choice(DIALECTS), envvar=_ENV["dialect"],
                 help=f"How the endpoint writes edge references (default {DEFAULT_DIALECT}; "
                 f"`tgsparql doctor` recommends one). Env: {_ENV['dialect']}."),
    click.option("--kg-graph", metavar="IRI", envvar=_ENV["kg_graph"],
                 help="Named graph that holds the KG on a server whose default graph is the "
                 "union of all graphs (Virtuoso): writes to the default graph go there and reads "
                 f"of it name it as default-graph-uri. Env: {_ENV['kg_graph']}."),
    click.option("--user", envvar=_ENV["user"], help=f"Basic auth user. Env: {_ENV['user']}."),
    click.option("--password", envvar=_ENV["password"],
                 help=f"Basic auth password. Env: {_ENV['password']} (preferred: keeps it out "
                 "of ps)."),
    click.option("--token", envvar=_ENV["token"],
                 help=f"Bearer token for the endpoint. Env: {_ENV['token']} (preferred)."),
    click.option("--connect-timeout", type=click.FloatRange(min=0, min_open=True), default=10.0,
                 show_default=True, envvar="TGSPARQL_CONNECT_TIMEOUT",
                 help="Seconds to wait for a connection to the endpoint."),
    click.option("--read-timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
                 show_default=True, envvar="TGSPARQL_READ_TIMEOUT",
                 help="Seconds to wait for the endpoint to send more of a response."),
]
_REMOTE_KEYS = ("query_url", "update_url", "graph_store_url", "dialect", "kg_graph", "user",
                "password", "token", "connect_timeout", "read_timeout")
"""The parameter names of the endpoint flags: the Endpoint fields they set."""


def remote_options(function: F, *, dialect_as_given: bool = False) -> F:
    """The endpoint flags, handed to the command as one `remote` Endpoint (None without one).

    `dialect_as_given`: --dialect is also handed to the command as `dialect`, as given (None when
    not), and may come without --endpoint: `export` writes edge references in it, `doctor`
    checks that the endpoint serves it."""

    @functools.wraps(function)
    def packed(*args: Any, **kwargs: Any) -> Any:
        values = {key: kwargs.pop(key) for key in _REMOTE_KEYS}
        if dialect_as_given:
            kwargs["dialect"] = values["dialect"]
        kwargs["remote"] = _endpoint(values, dialect_alone=dialect_as_given)
        return function(*args, **kwargs)

    for option in reversed(_REMOTE_OPTIONS):
        packed = option(packed)
    return cast(F, packed)


def _endpoint(values: dict[str, Any], *, dialect_alone: bool) -> Endpoint | None:
    """The Endpoint the flags describe, checked here, once; None without --endpoint, where
    any other endpoint flag given on the command line is a usage error."""
    if values["query_url"] is None:
        context = click.get_current_context()
        given = [param for param in context.command.params if param.name in values
                 and context.get_parameter_source(param.name) == ParameterSource.COMMANDLINE
                 and not (param.name == "dialect" and dialect_alone)]
        if given:
            raise click.UsageError(f"{given[0].opts[0]} needs --endpoint URL "
                                   f"(or {_ENV['query_url']})")
        return None
    from tgsparql.stores.endpoint import Endpoint  # only for a command given an endpoint

    try:
        return Endpoint(**{key: value for key, value in values.items() if value is not None})
    except StoreError as error:
        raise Failure(str(error)) from None


def store_option(function: F, *, dialect_as_given: bool = False) -> F:
    """--store PATH or --endpoint URL (with its flags), handed to the command as `target`.

    The two exclude each other; when one comes from the command line and the other only from
    the environment, the command line wins. `dialect_as_given` as for `remote_options`. Neither
    is a usage error: what the command writes or reads is kept in a store, and one in memory
    would keep nothing."""
    return _store_options(function, memory=False, dialect_as_given=dialect_as_given)


def store_or_memory_option(function: F) -> F:
    """As `store_option`, for a command whose output stands alone: with neither flag it works
    on a store in memory (the demo; a question, which then says its session is gone)."""
    return _store_options(function, memory=True, dialect_as_given=False)


def _store_options(function: F, *, memory: bool, dialect_as_given: bool) -> F:
    @functools.wraps(function)
    def chosen(*args: Any, store_path: Path | None, remote: Endpoint | None,
               **kwargs: Any) -> Any:
        target = chosen_target(store_path, remote)
        context = click.get_current_context()
        if target is None and not memory and context.invoked_subcommand is None:
            name = context.command_path
            usage_line(f"{name} needs --store PATH (or TGSPARQL_STORE) or --endpoint URL: a store "
                       "in memory holds nothing before the command and keeps nothing after it")
        return function(*args, target=target, **kwargs)

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
        help="On-disk store directory (created if missing). Env: TGSPARQL_STORE.",
    )(chosen)
    return remote_options(cast(F, chosen), dialect_as_given=dialect_as_given)


def chosen_target(store_path: Path | None, remote: Endpoint | None) -> StoreTarget:
    """The one of --store and --endpoint that was given; the command line wins over the
    environment, and both on the same footing are a usage error."""
    if remote is None or store_path is None:
        return remote if remote is not None else store_path
    source = click.get_current_context().get_parameter_source
    from_env = ParameterSource.ENVIRONMENT
    store_env, remote_env = source("store_path") == from_env, source("query_url") == from_env
    if store_env == remote_env:
        raise click.UsageError("--store and --endpoint are mutually exclusive (so are "
                               f"TGSPARQL_STORE and {_ENV['query_url']})")
    return remote if store_env else store_path


class CollectionName(click.ParamType):
    """--collection as a Collection, its name checked as the flag is read; a bad one fails as
    every command failure does, in one line."""

    name = "collection"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> vocab.Collection:
        if isinstance(value, vocab.Collection):
            return value
        try:
            return vocab.Collection(value)
        except vocab.CollectionError as error:
            raise Failure(str(error)) from None


def collection_option(function: F) -> F:
    return click.option(
        "--collection",
        type=CollectionName(),
        metavar="NAME",
        default=vocab.DEFAULT_COLLECTION.name,
        show_default=True,
        help="Explainability collection: sessions go to the graph urn:graph:NAME.",
    )(function)


def _keep_llm_wait(context: click.Context, parameter: click.Parameter, value: Any) -> None:
    context.meta.setdefault(LLM_WAIT, {})[parameter.name] = value


def llm_options(function: F) -> F:
    """The LLM flags of every command that calls one; the waits reach `backend_from` through
    the click context, so no command has to pass them along. (The LLM interface is imported
    here, not with this module: `validate` and the other commands that ask no LLM skip it.)"""
    from tgsparql.asking.llm.base import (
        DEFAULT_LLM_RETRIES, DEFAULT_LLM_STREAM_TIMEOUT, DEFAULT_LLM_TIMEOUT,
        STREAM_TIMEOUT_KNOBS, TIMEOUT_KNOBS,
    )

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
        _timeout_option(TIMEOUT_KNOBS, "timeout", DEFAULT_LLM_TIMEOUT,
                        "Seconds to wait for the first token of a reply (the model reads the "
                        "prompt first: minutes on a CPU for a long one) before the try fails."),
        _timeout_option(STREAM_TIMEOUT_KNOBS, "stream_timeout", DEFAULT_LLM_STREAM_TIMEOUT,
                        "Seconds a reply under way may pause before the try fails."),
        click.option(
            "--llm-retries", "max_retries", type=click.IntRange(min=0),
            default=DEFAULT_LLM_RETRIES, show_default=True, envvar="TGSPARQL_LLM_RETRIES",
            expose_value=False, callback=_keep_llm_wait,
            help="Tries after the first on a timeout, a lost connection, 429 or 5xx, each after "
            "the abandoned request was closed; a dead LLM fails after (retries + 1) x "
            "--llm-timeout plus a few seconds of backoff. "
            "Env: TGSPARQL_LLM_RETRIES.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _timeout_option(knobs: tuple[str, str], name: str, default: float,
                    help: str) -> Callable[[F], F]:
    """An LLM wait, kept in the click context for `backend_from`."""
    flag, variable = knobs
    return click.option(flag, name, type=click.FloatRange(min=0, min_open=True),
                        default=default, show_default=True, envvar=variable, expose_value=False,
                        callback=_keep_llm_wait, help=f"{help} Env: {variable}.")


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
def opened(target: StoreTarget, *, waits_for_llm: bool = False,
           read_only: bool = False) -> Iterator[Store]:
    """The store, its errors a failure of the command; with `read_only`, a directory that holds
    a store as `reading` opens it (a command that only reads runs beside a writer such as `serve
    --ask`, with no wait), and one that does not yet as any command creates it."""
    existing = not isinstance(target, Path) or (target / STORE_MARKER).is_file()
    try:
        with (reading(target) if read_only and existing
              else store_for(target, waits_for_llm=waits_for_llm)) as store:
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
        # the turns writers take on a directory: a reading command (`reading`) takes none
        from tgsparql.stores.locking import TurnTakingStore, exclusive_store

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
    store = open_store() if target is None else open_remote(target)
    try:
        yield store
    finally:
        store.close()


def reading(target: StoreTarget) -> AbstractContextManager[Store]:
    """A store to read only. A directory is opened read-only, as last committed: beside a
    process that writes to it (`serve --ask`, a running `query`), with no wait for a writer's
    turn."""
    if isinstance(target, Path):
        return closing(EmbeddedStore(target, read_only=True, snapshot=opened_ahead(target)))
    return store_for(target)


def target_dialect(target: Path | Endpoint) -> Dialect:
    """The dialect the store `reading` opens writes, known before it is opened: an endpoint's
    as given, the embedded store's own."""
    return EmbeddedStore.dialect if isinstance(target, Path) else target.dialect


def refuse_non_store(path: Path) -> None:
    """A command that reads a store never creates one where a path names none (exit 2)."""
    if not path.exists():
        raise CannotCheck(f"no store at {path}")
    if not path.is_dir():
        raise CannotCheck(f"{path} is a file, not a store directory")
    if not (path / STORE_MARKER).is_file():
        what = "an empty directory" if not any(path.iterdir()) else "a directory"
        raise CannotCheck(f"{path} is {what}, not a store")


def open_remote(endpoint: Endpoint) -> RemoteStore:
    from tgsparql.stores.remote import RemoteStore  # its HTTP stack only for an endpoint

    return RemoteStore(endpoint)


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
    from tgsparql.asking.llm.log import LLMLog, LLMLogError

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
    from tgsparql.asking.llm.base import DEFAULT_MAX_TOKENS

    options = [
        click.option("--max-tokens", type=click.IntRange(1), metavar="N",
                     default=DEFAULT_MAX_TOKENS, show_default=True,
                     help="Tokens an LLM reply may hold at most."),
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
    from tgsparql.asking.llm.base import LLMError
    from tgsparql.asking.llm.factory import make_backend  # the backends: only for commands that ask

    context = click.get_current_context(silent=True)
    waits = context.meta.get(LLM_WAIT, {}) if context else {}
    try:
        return make_backend(
            llm, model=model, base_url=base_url, api_key=api_key, constraint=constrain,  # type: ignore[arg-type]
            max_tokens=max_tokens, log=log, **waits,
        )
    except LLMError as error:
        raise Failure(str(error)) from None


def write_output(text: str, output: Path | None, failure: type[Failure] = Failure) -> None:
    """`text` on standard output, or written to `output` (one that cannot be written fails as
    `failure`)."""
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        raise failure(f"cannot write {output}: {error.strerror or error}") from None


def write_report(text: str, output: Path | None, summary: str, what: str = "report") -> None:
    """A report (or `what` else) on standard output, or written to `output` with its one-line
    `summary` on stderr (a file that cannot be written: exit 2)."""
    write_output(text, output, CannotCheck)
    if output is not None:
        click.echo(f"{summary}; {what} written to {output}", err=True)


def limit_options(function: F) -> F:
    """How far retrieval reaches and how much of the LLM's output is kept, as `query` takes
    them; handed to the command as `limits` (RetrievalLimits) and `output_limits`
    (OutputLimits)."""
    # The pipeline loads only with the commands that ask: `validate` and its kin do not need it.
    from tgsparql.asking.pipeline import OutputLimits
    from tgsparql.asking.retrieval import RetrievalLimits

    options = [
        click.option("--max-path-length", type=click.IntRange(1), default=2, show_default=True),
        click.option("--triple-limit", type=click.IntRange(1), default=30, show_default=True,
                     help="Edges per entity and hop."),
        click.option("--entity-limit", type=click.IntRange(1), default=50, show_default=True,
                     help="Seed entities at most."),
        click.option("--max-subgraph-size", type=click.IntRange(1), default=150,
                     show_default=True),
        click.option("--max-reason-chars", type=click.IntRange(1),
                     default=OutputLimits.reason_chars, show_default=True,
                     envvar="TGSPARQL_MAX_REASON_CHARS",
                     help="Characters kept of each reason the LLM gives; a longer one is cut and "
                     "flagged tg:truncated. Env: TGSPARQL_MAX_REASON_CHARS."),
        click.option("--max-answer-chars", type=click.IntRange(1),
                     default=OutputLimits.answer_chars, show_default=True,
                     envvar="TGSPARQL_MAX_ANSWER_CHARS",
                     help="Characters kept (printed and stored) of the LLM's answer; the rest is "
                     "not read, and the answer is flagged tg:truncated. "
                     "Env: TGSPARQL_MAX_ANSWER_CHARS."),
    ]

    @functools.wraps(function)
    def packed(*args: Any, max_path_length: int, triple_limit: int, entity_limit: int,
               max_subgraph_size: int, max_reason_chars: int, max_answer_chars: int,
               **kwargs: Any) -> Any:
        return function(
            *args, **kwargs,
            limits=RetrievalLimits(max_path_length, triple_limit, entity_limit,
                                   max_subgraph_size),
            output_limits=OutputLimits(max_reason_chars, max_answer_chars))

    for option in reversed(options):
        packed = option(packed)
    return cast(F, packed)


def usage_line(message: str) -> None:
    """Bad usage as one line, exit 2 (click's usage errors take several)."""
    click.echo(f"error: {message}", err=True)
    click.get_current_context().exit(2)

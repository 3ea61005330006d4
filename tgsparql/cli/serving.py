"""`serve`: the store or an endpoint over HTTP, read-only unless asked to answer questions."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import click

from tgsparql.asking.llm.base import DEFAULT_LLM_RETRIES, DEFAULT_LLM_TIMEOUT
from tgsparql.cli.options import (
    DEFAULT_LOCK_TIMEOUT, LLM_WAIT, Failure, backend_from, chosen_target, collection_option,
    constrain_option, llm_options, remote_options, usage_line,
)
from tgsparql.rdf.vocab import Collection
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.store import StoreError


def _origins(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
             ) -> tuple[str, ...]:
    """--cors checked and put as browsers send Origin."""
    from tgsparql.serve.config import check_origin

    try:
        return tuple(check_origin(value) for value in values)
    except StoreError as error:
        raise click.BadParameter(str(error), ctx, param) from None


def _token(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--serve-token checked as it enters: an empty one would open the server to anyone."""
    from tgsparql.serve.config import check_token

    try:
        return None if value is None else check_token(value)
    except StoreError as error:
        raise click.BadParameter(str(error), ctx, param) from None


@click.command()
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
@click.option("--serve-token", envvar="TGSPARQL_SERVE_TOKEN", callback=_token,
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
@click.option("--cors", "cors", metavar="ORIGIN", multiple=True, callback=_origins,
              help="Let pages from ORIGIN (e.g. https://yasgui.example.org; repeatable, or * "
              "for any) read the answers from a browser: CORS headers and preflights. Off by "
              "default; never with credentials, so a page sends the token itself.")
@click.option("--csv-raw", is_flag=True,
              help="Write CSV cells as they are. By default a cell a spreadsheet would run as a "
              "formula (starting with = + - @, a tab or CR, and not a number) gets a leading '.")
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
def serve(store_path: Path | None, remote: Endpoint | None, collection: Collection, host: str,
          port: int, serve_token: str | None, timeout: float, max_results: int, max_memory: str,
          workers: int, allowed_hosts: tuple[str, ...], cors: tuple[str, ...], csv_raw: bool,
          log: bool, ask: bool, ask_limit: int, ask_rate: int, lock_timeout: float,
          llm: str | None, model: str | None, base_url: str | None, api_key: str | None,
          constrain: str) -> None:
    """Serve the store (or the SPARQL endpoint) read-only: /sparql (SPARQL 1.1 Protocol),
    /queries (saved BI queries as CSV, TSV, JSON), /sessions (trace pages); with --ask, also
    /ask (questions answered, their explanation streamed as it is recorded)."""
    from tgsparql.serve.app import ServerConfig, TgsparqlServer, describe, is_loopback
    from tgsparql.serve.ask import AskLimits

    target = chosen_target(store_path, remote)
    if target is None:
        raise click.UsageError("give --store PATH or --endpoint URL to serve")
    if ask and not is_loopback(host) and serve_token is None:
        usage_line(f"--ask on {host} needs --serve-token (or TGSPARQL_SERVE_TOKEN): anyone "
                    "who can reach it could write sessions and spend the LLM's tokens")
    if ask and isinstance(target, Endpoint):
        usage_line("--ask needs --store PATH: it records sessions in an on-disk store it "
                    "holds as the one writer, not through --endpoint")
    backend = backend_from(llm, model, base_url, api_key, constrain) if ask else None
    try:
        server = TgsparqlServer(ServerConfig(
            store=target if isinstance(target, Path) else None,
            endpoint=target if isinstance(target, Endpoint) else None, host=host, port=port,
            token=serve_token, timeout=timeout, max_results=max_results,
            max_memory=_memory_size(max_memory) or None, allowed_hosts=allowed_hosts,
            workers=workers, collection=collection, log=log,
            ask=AskLimits(in_flight=ask_limit, per_minute=ask_rate,
                          stop_wait=_llm_longest_wait()) if ask else None,
            lock_timeout=lock_timeout, cors=cors, csv_raw=csv_raw,
        ), backend)
    except (OSError, StoreError) as error:
        raise Failure(str(error)) from None
    if not is_loopback(host) and serve_token is None:
        click.echo(f"warning: serving on {host} without --serve-token: anyone who can reach it "
                   "can read every session", err=True)
    # Stop on SIGTERM as on Ctrl-C, even where SIGINT was ignored by whoever started us; from
    # before the line that says the server is up, which a supervisor may answer with SIGTERM.
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        click.echo(describe(server), err=True)
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


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt

"""Asking: `demo` (the bundled sample and one question) and `query`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from importlib.resources import as_file, files
from pathlib import Path

import click

from tgsparql.asking.llm.base import Backend
from tgsparql.asking.messages import GraphRagResponse
from tgsparql.asking.pipeline import GraphRag, OutputLimits
from tgsparql.asking.retrieval import RetrievalLimits
from tgsparql.cli.checks import session_conforms
from tgsparql.cli.options import (
    Failure, StoreTarget, backend_from, collection_option, constrain_option, limit_options, llm_log,
    llm_options, opened, reply_options, store_or_memory_option,
)
from tgsparql.cli.records import explained
from tgsparql.data.loader import load_files
from tgsparql.rdf import vocab
from tgsparql.record.explain import render_text
from tgsparql.record.terminal import visible
from tgsparql.stores.store import Store, StoreError

DEMO_QUESTION = "Where was the scientist who discovered polonium born?"


@click.command()
@store_or_memory_option
@click.option("--question", default=DEMO_QUESTION, show_default=True, help="What to ask.")
@llm_options
@constrain_option
def demo(target: StoreTarget, question: str, llm: str | None, model: str | None,
         base_url: str | None, api_key: str | None, constrain: str) -> None:
    """Load the bundled sample (the Curies) and answer a question with its explanation."""
    backend = backend_from(llm, model, base_url, api_key, constrain)
    with opened(target, waits_for_llm=True) as store:
        with as_file(files("tgsparql.data.demo").joinpath("curie.trig")) as sample:
            report = load_files(store, [sample])
        if report.failed:
            raise Failure(next(iter(report.failed.values())))
        click.secho(f"Loaded the demo sample: {sum(report.loaded.values())} quads "
                    "(facts, labels, sources and texts).", fg="cyan")
        click.secho(f"Question: {question}\n", bold=True)
        rag = _rag(store, backend, vocab.DEFAULT_COLLECTION)
        session = _stream_text(rag.query(question, stream=True))
        click.echo()
        explanation = explained(store, vocab.DEFAULT_COLLECTION, session)
        click.echo(render_text(explanation))


@click.command()
@store_or_memory_option
@click.argument("question")
@collection_option
@llm_options
@constrain_option
@reply_options
@click.option("--no-stream", is_flag=True, help="Wait for the whole answer, then print it.")
@click.option("--format", "format_", type=click.Choice(["text", "jsonl"]), default="text",
              show_default=True, help="jsonl: every GraphRagResponse as one JSON object a line.")
@limit_options
@click.option("--validate", "validate_", is_flag=True,
              help="Validate the new session against the bundled shapes; exit 1 if it does "
              "not conform.")
def query(target: StoreTarget, question: str, collection: vocab.Collection, llm: str | None,
          model: str | None, base_url: str | None, api_key: str | None, constrain: str,
          max_tokens: int | None, log_llm: Path | None, no_stream: bool, format_: str,
          limits: RetrievalLimits, output_limits: OutputLimits, validate_: bool) -> None:
    """Answer QUESTION from the KG and record the session's explanation."""
    with llm_log(log_llm) as log, opened(target, waits_for_llm=True) as store:
        backend = backend_from(llm, model, base_url, api_key, constrain, max_tokens=max_tokens,
                               log=log)
        if target is None:
            click.echo("warning: no --store given: querying an empty in-memory store", err=True)
        rag = _rag(store, backend, collection, limits, output_limits)
        warnings: list[str] = []
        messages = _warn_on_nothing_found(rag.query(question, stream=not no_stream), warnings)
        if format_ == "jsonl":
            failed = False
            session = ""
            for message in messages:
                click.echo(json.dumps(message.to_json(), ensure_ascii=False))
                failed = failed or message.error is not None
                if message.message_type == "explain" and message.explain_id and not session:
                    session = message.explain_id
            _warn(warnings)
            if failed:
                sys.exit(1)
            if validate_ and not session_conforms(store, session, jsonl=True):
                sys.exit(1)
            return
        session = _stream_text(messages)
        _warn(warnings)
        if target is None:  # nothing to explain once this process ends
            click.echo(f"session {session} was recorded in memory and is gone with this "
                       "process: pass --store DIR to keep sessions", err=True)
        else:
            click.echo(f"explain: tgsparql explain {session}"
                       + ("" if collection == vocab.DEFAULT_COLLECTION
                          else f" --collection {collection.name}"), err=True)
        if validate_ and not session_conforms(store, session, jsonl=False):
            sys.exit(1)


NOTHING_GROUNDED = ("warning: grounding found no entity of the KG in the question (no name or "
                    "phrase of it is a label there, nor part of one); the answer says so")
NOTHING_SELECTED = ("warning: no edge of the KG was selected as answering the question; the "
                    "answer says so (--log-llm FILE shows the selector's reply)")


def _warn_on_nothing_found(
    messages: Iterator[GraphRagResponse], warnings: list[str],
) -> Iterator[GraphRagResponse]:
    """The messages, with a warning on stderr once the retrieval is announced without a seed
    entity, or else the selection empty: the answer then only says that the KG holds nothing
    that answers, and the warning says where the search stopped. The final message's warnings
    about the answer are kept in `warnings`, to be said once the answer is out."""
    grounded = True
    for message in messages:
        stage = message.explain_id or ""
        predicates = {triple.predicate for triple in message.explain_triples}
        if ":prov:retrieval:" in stage and vocab.TG_ENTITY not in predicates:
            grounded = False
            click.echo(NOTHING_GROUNDED, err=True)
        if grounded and ":prov:selection:" in stage and vocab.TG_SELECTED_EDGE not in predicates:
            click.echo(NOTHING_SELECTED, err=True)
        warnings.extend(message.warnings)
        yield message


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)


def _rag(store: Store, backend: Backend, collection: vocab.Collection,
         limits: RetrievalLimits | None = None,
         output_limits: OutputLimits | None = None) -> GraphRag:
    try:
        return GraphRag(store, backend, collection=collection, limits=limits,
                        output_limits=output_limits)
    except StoreError as error:
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

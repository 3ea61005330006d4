"""Reading the record: `sessions` (and `sessions delete`), `explain`, `trace`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from tgsparql.cli.options import (
    Failure, StoreTarget, collection_option, opened, store_option, write_output,
)
from tgsparql.rdf.vocab import Collection
from tgsparql.record.explain import SessionNotFound, explain_session, list_sessions, render_text
from tgsparql.record.readback import Explanation
from tgsparql.record.terminal import one_line
from tgsparql.stores.store import Store, StoreError


@click.group(invoke_without_command=True)
@store_option
@collection_option
@click.option("--limit", type=click.IntRange(1), default=20, show_default=True)
@click.option("--format", "format_", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@click.pass_context
def sessions(ctx: click.Context, target: StoreTarget, collection: Collection, limit: int,
             format_: str) -> None:
    """List recorded sessions, newest first; `sessions delete` removes old ones."""
    if ctx.invoked_subcommand is not None:
        return
    with opened(target, read_only=True) as store:
        try:
            found = list_sessions(store, collection, limit)
        except StoreError as error:
            raise Failure(str(error)) from None
    if format_ == "json":
        click.echo(json.dumps([s.to_json() for s in found], ensure_ascii=False, indent=2))
        return
    if not found:
        click.echo(f"no sessions in collection {collection.name!r}", err=True)
        return
    rows = [("STARTED", "STATUS", "SESSION", "QUESTION")] + [
        (s.started, s.status or "open", s.session, one_line(s.question, 60))
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
def sessions_delete(target: StoreTarget, collection: Collection, older_than: str | None,
                    session_iris: tuple[str, ...], dry_run: bool) -> None:
    """Delete sessions with every triple they own (session, retrieval, selection, edge
    selections, answer, failure fields) and their answer documents; nothing else but the
    collection's rollup, which sums them and is rolled up again."""
    from tgsparql.asking.provenance import now
    from tgsparql.record.retention import (
        RetentionError, delete_sessions, parse_duration, select_sessions,
    )
    from tgsparql.record.rollup import has_rollup, roll_up

    if (older_than is None) == (not session_iris):
        raise click.UsageError("give either --older-than DURATION or --session IRI")
    try:
        duration = parse_duration(older_than) if older_than is not None else None
    except RetentionError as error:
        raise click.BadParameter(str(error), param_hint="--older-than") from None
    with opened(target) as store:
        try:
            chosen = select_sessions(store, collection, older_than=duration,
                                     sessions=session_iris)
            rolled_up = not dry_run and bool(chosen) and has_rollup(store, collection)
            removed = 0 if dry_run else delete_sessions(store, collection, chosen)
            rolled = roll_up(store, collection, at=now()) if rolled_up else None
        except (RetentionError, StoreError) as error:
            raise Failure(str(error)) from None
    for item in chosen:
        click.echo(f"{'would delete' if dry_run else 'deleted'} {item.ids.session.value} "
                   f"({item.quads} quads)")
    if dry_run:
        quads = sum(item.quads for item in chosen)
        click.echo(f"dry run: {len(chosen)} sessions ({quads} quads) would be deleted", err=True)
    else:
        click.echo(f"deleted {len(chosen)} sessions ({removed} quads)", err=True)
    if rolled is not None:
        click.echo(rolled.summary(), err=True)


@click.command()
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
def explain(target: StoreTarget, session: str, collection: Collection, format_: str,
            output: Path | None) -> None:
    """Explain SESSION (its IRI or UUID): retrieval, selected edges with reasons and sources."""
    with opened(target, read_only=True) as store:
        if format_ in ("html", "dot", "mermaid"):
            from tgsparql.record.page import render_session
            from tgsparql.record.session_view import session_view

            try:
                view = session_view(store, collection, session)
            except (SessionNotFound, ValueError, StoreError) as error:
                raise Failure(str(error)) from None
            text = {
                "html": lambda: render_session(view),
                "dot": view.picture.dot,
                "mermaid": view.picture.mermaid,
            }[format_]()
        else:
            explanation = explained(store, collection, session)
            text = {
                "json": lambda: json.dumps(explanation.to_json(), ensure_ascii=False, indent=2)
                + "\n",
                "turtle": explanation.turtle,
                "text": lambda: render_text(explanation) + "\n",
            }[format_]()
    write_output(text, output)


@click.command()
@store_option
@click.argument("iri")
@collection_option
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def trace(target: StoreTarget, iri: str, collection: Collection, format_: str) -> None:
    """Trace IRI — an edge selection, a session (IRI or UUID) or a document — to its sources,
    or a document to the sessions and answers that used its facts."""
    from tgsparql.record.trace import TraceError, trace_json
    from tgsparql.record.trace import render_text as trace_text
    from tgsparql.record.trace import trace as trace_iri

    with opened(target, read_only=True) as store:
        try:
            found = trace_iri(store, collection, iri)
        except (TraceError, StoreError) as error:
            raise Failure(str(error)) from None
    if format_ == "json":
        click.echo(json.dumps(trace_json(found), ensure_ascii=False, indent=2))
    else:
        click.echo(trace_text(found))


def explained(store: Store, collection: Collection, session: str) -> Explanation:
    try:
        return explain_session(store, collection, session)
    except (SessionNotFound, ValueError, StoreError) as error:
        raise Failure(str(error)) from None

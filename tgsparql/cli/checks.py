"""Checking: `validate` (a store against SHACL shapes), `drift` (recorded explanations against
the KG and its sources as they are now) and `doctor` (an endpoint)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tgsparql.cli.options import (
    CannotCheck, Failure, StoreTarget, collection_option, open_remote, reading, refuse_non_store,
    remote_options, store_option, target_dialect, write_report,
)
from tgsparql.rdf.iris import SessionNotFound
from tgsparql.rdf.terms import Dialect
from tgsparql.rdf.vocab import Collection
from tgsparql.stores.store import EmbeddedStore, Store, StoreError
from tgsparql.validation.report import SEVERITIES

if TYPE_CHECKING:
    from tgsparql.stores.endpoint import Endpoint


@click.command()
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
              help="turtle: a standard sh:ValidationReport; junit: a test suite per shape, a "
              "test case per focus node.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write the report to FILE (a one-line verdict goes to stderr).")
@click.option("--fail-on", type=click.Choice(list(SEVERITIES)), default="violation",
              show_default=True, help="Exit 1 when a result this severe or more remains.")
@click.option("--ignore-shape", "ignored_shapes", multiple=True, metavar="IRI",
              help="Leave out this shape's results; repeatable.")
@click.option("--all-results", is_flag=True,
              help="List each fact without extraction provenance, also when no fact has any.")
def validate(target: StoreTarget, shape_files: tuple[Path, ...], graphs: tuple[str, ...],
             session: str | None, format_: str, output: Path | None, fail_on: str,
             ignored_shapes: tuple[str, ...], all_results: bool) -> None:
    """Validate the provenance in a store against SHACL shapes, for CI.

    Exit 0 when no result at or above --fail-on remains (by default: no violation), 1 when
    one does, 2 when the data could not be validated (bad shapes, a store that cannot be
    opened, an unknown session).
    """
    from tgsparql.record.conformance import (
        GraphNameError, ShapeNameError, bundled_validator, data_graph, empty_graphs,
        files_validator, judge, render, session_nodes, shape_iris, verdict,
    )
    from tgsparql.validation import ShapesError

    if target is None:
        raise CannotCheck("no store to validate: give --store PATH or --endpoint URL")
    if isinstance(target, Path):
        refuse_non_store(target)
    try:
        graph = data_graph(graphs)
        ignored = shape_iris(ignored_shapes)
    except (GraphNameError, ShapeNameError) as error:
        raise CannotCheck(str(error)) from None
    try:
        # read before the store is: an on-disk store opened meanwhile (`ahead`) is then ready
        dialect = target_dialect(target)
        validator = (
            files_validator(shape_files, dialect) if shape_files else bundled_validator(dialect)
        )
        with reading(target) as store:
            if graph == "union":
                _union_shown(store)
            for name in empty_graphs(store, graph):
                raise CannotCheck(f"--graph {name} holds no triples: nothing to validate")
            focus = (
                session_nodes(store, session, graph) if session else None
            )
            report = validator.validate(store, default_graph=graph, focus=focus)
            judgement = judge(store, report, graph, fail_on=SEVERITIES[fail_on], ignored=ignored,
                              all_results=all_results)
    except (ShapesError, StoreError, SessionNotFound, ValueError) as error:
        raise CannotCheck(str(error)) from None
    write_report(render(judgement, format_), output,
                 verdict(judgement.report, judgement.fail_on))
    if judgement.failing:
        sys.exit(1)


@click.command()
@store_option
@collection_option
@click.option("--format", "format_", type=click.Choice(["text", "json", "csv"]), default="text",
              show_default=True, help="csv: one row per stale edge or source of a session.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write the report to FILE (the one-line summary goes to stderr).")
def drift(target: StoreTarget, collection: Collection, format_: str,
          output: Path | None) -> None:
    """List the recorded sessions whose explanation no longer holds, for CI: a selected edge
    that is no longer a KG fact, or a source document removed, ingested again since the
    session, or whose text changed; counted per session and per document.

    Exit 0 when nothing drifted, 1 when a session did, 2 when the record could not be read
    (no store, a store error).
    """
    from tgsparql.record.drift import find_drift

    if target is None:
        raise CannotCheck("no store to check: give --store PATH or --endpoint URL")
    if isinstance(target, Path):
        refuse_non_store(target)
    try:
        with reading(target) as store:
            found = find_drift(store, collection)
    except StoreError as error:
        raise CannotCheck(str(error)) from None
    import json  # here, not with the module, which `validate --session` loads too

    text = {
        "json": lambda: json.dumps(found.to_json(), ensure_ascii=False, indent=2) + "\n",
        "csv": found.to_csv,
        "text": lambda: found.to_text() + "\n",
    }[format_]()
    write_report(text, output, found.summary())
    if found.drifted:
        sys.exit(1)


def _union_shown(store: Store) -> None:
    """Validation reads the union of all graphs; an endpoint must show it whole (UnionNotShown,
    a StoreError, when it does not), or the report would be of the default graph alone. The
    embedded store always does (and its validation need not load the HTTP stack)."""
    if isinstance(store, EmbeddedStore):
        return
    from tgsparql.stores.remote import RemoteStore

    if isinstance(store, RemoteStore):
        from tgsparql.stores.doctor import require_union

        require_union(store)


def session_conforms(store: Store, session: str, *, jsonl: bool) -> bool:
    """`query --validate`: the new session against the bundled shapes, verdict printed."""
    from tgsparql.record.conformance import validate_session, verdict
    from tgsparql.validation import ShapesError

    try:
        _union_shown(store)
        report = validate_session(store, session)
    except (ShapesError, StoreError, SessionNotFound, ValueError) as error:
        raise CannotCheck(str(error)) from None
    if jsonl:
        import json

        line = {"validation": {"session": session, **report.to_json()}}
        click.echo(json.dumps(line, ensure_ascii=False))
    else:
        click.echo(f"validate: {verdict(report)}", err=True)
        for line in report.to_text().splitlines()[1:]:
            click.echo(f"  {line}", err=True)
    return not report.violations


@click.command()
@functools.partial(remote_options, dialect_as_given=True)
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def doctor(remote: Endpoint | None, dialect: Dialect | None, format_: str) -> None:
    """Probe a SPARQL endpoint: reachable, readable, writable (a probe triple in a scratch
    named graph, then removed), named graphs, triple terms, quoted triples; recommend a dialect.

    Exit 0 when the endpoint can serve tgsparql (in --dialect, when given), else 1 with why.
    """
    from tgsparql.stores.doctor import diagnose

    if remote is None:
        raise click.UsageError("give --endpoint URL (or set TGSPARQL_ENDPOINT)")
    try:
        with open_remote(remote) as store:
            diagnosis = diagnose(store, dialect=dialect)
    except StoreError as error:
        raise Failure(str(error)) from None
    if format_ == "json":
        import json

        click.echo(json.dumps(diagnosis.to_json(), ensure_ascii=False, indent=2))
    else:
        click.echo(diagnosis.to_text())
    if diagnosis.reason is not None:
        raise Failure(diagnosis.reason)

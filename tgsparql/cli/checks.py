"""Checking: `validate` (a store against SHACL shapes) and `doctor` (an endpoint)."""

from __future__ import annotations

import functools
import json
import sys
from contextlib import AbstractContextManager, closing
from pathlib import Path

import click

from tgsparql.cli.options import (
    STORE_MARKER, Failure, StoreTarget, open_remote, remote_options, store_for, store_option,
)
from tgsparql.rdf.terms import Dialect
from tgsparql.record.explain import SessionNotFound
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.store import EmbeddedStore, Store, StoreError
from tgsparql.validation.report import SEVERITIES


class CannotValidate(Failure):
    """A one-line error and exit code 2: the data could not be validated at all."""

    exit_code = 2


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
        GraphNameError, ShapeNameError, bundled_validator, data_graph, empty_graphs, judge, render,
        session_nodes, shape_iris, verdict,
    )
    from tgsparql.validation import Shapes, ShapesError, Validator

    if target is None:
        raise CannotValidate("no store to validate: give --store PATH or --endpoint URL")
    if isinstance(target, Path):
        _refuse_non_store(target)
    try:
        graph = data_graph(graphs)
        ignored = shape_iris(ignored_shapes)
        shapes = Shapes.from_files(shape_files) if shape_files else None
    except (GraphNameError, ShapeNameError, ShapesError) as error:
        raise CannotValidate(str(error)) from None
    if shapes is not None and not len(shapes):
        raise CannotValidate(f"{shapes.origin}: no shapes (nothing to validate against)")
    try:
        with _reading(target) as store:
            validator = (
                bundled_validator(store.dialect)
                if shapes is None
                else Validator(shapes, dialect=store.dialect)
            )
            if graph == "union":
                _union_shown(store)
            for name in empty_graphs(store, graph):
                raise CannotValidate(f"--graph {name} holds no triples: nothing to validate")
            focus = (
                session_nodes(store, session, graph) if session else None
            )
            report = validator.validate(store, default_graph=graph, focus=focus)
            judgement = judge(store, report, graph, fail_on=SEVERITIES[fail_on], ignored=ignored,
                              all_results=all_results)
    except (ShapesError, StoreError, SessionNotFound, ValueError) as error:
        raise CannotValidate(str(error)) from None
    text = render(judgement, format_)
    if output is None:
        click.echo(text, nl=False)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as error:
            raise CannotValidate(f"cannot write {output}: {error.strerror or error}") from None
        click.echo(f"{verdict(judgement.report, judgement.fail_on)}; report written to {output}",
                   err=True)
    if judgement.failing:
        sys.exit(1)


def _reading(target: StoreTarget) -> AbstractContextManager[Store]:
    """The store to validate. Validation only reads, so a store directory is opened read-only,
    as last committed: beside a process that writes to it (`serve --ask`, a running `query`),
    with no wait for a writer's turn."""
    if isinstance(target, Path):
        return closing(EmbeddedStore(target, read_only=True))
    return store_for(target)


def _refuse_non_store(path: Path) -> None:
    """`validate` reads a store that exists: it never creates one where a path names none."""
    if not path.exists():
        raise CannotValidate(f"no store at {path}")
    if not path.is_dir():
        raise CannotValidate(f"{path} is a file, not a store directory")
    if not (path / STORE_MARKER).is_file():
        what = "an empty directory" if not any(path.iterdir()) else "a directory"
        raise CannotValidate(f"{path} is {what}, not a store")


def _union_shown(store: Store) -> None:
    """Validation reads the union of all graphs; an endpoint must show it whole (UnionNotShown,
    a StoreError, when it does not), or the report would be of the default graph alone."""
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
        raise CannotValidate(str(error)) from None
    if jsonl:
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
        click.echo(json.dumps(diagnosis.to_json(), ensure_ascii=False, indent=2))
    else:
        click.echo(diagnosis.to_text())
    if diagnosis.reason is not None:
        raise Failure(diagnosis.reason)

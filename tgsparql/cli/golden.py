"""Golden questions: `golden` (freeze recorded sessions into a golden file) and `check` (ask its
questions again and say what changed)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tgsparql.asking.pipeline import OutputLimits
from tgsparql.asking.retrieval import RetrievalLimits
from tgsparql.cli.options import (
    CannotCheck, CollectionName, Failure, StoreTarget, backend_from, collection_option,
    constrain_option, limit_options, llm_log, llm_options, reading, refuse_non_store,
    reply_options, store_for, store_option, write_report,
)
from tgsparql.rdf import vocab
from tgsparql.record.explain import SessionNotFound
from tgsparql.record.golden import GoldenError, GoldenFile, load_golden
from tgsparql.record.regression import TOLERABLE, freeze, observe, sessions_to_freeze
from tgsparql.record.replay import ReplayError, replaying
from tgsparql.stores.store import StoreError


@click.command()
@store_option
@click.option("--from-sessions", is_flag=True,
              help="Freeze recorded sessions: their selected edges with their sources, cited "
              "documents, answers, seeds, unselected hops and validation verdicts.")
@collection_option
@click.option("--session", "sessions", multiple=True, metavar="IRI",
              help="Freeze this session (its IRI or UUID); repeatable. Default: the newest "
              "complete session of each question in the collection.")
@click.option("--validate/--no-validate", "validate_", default=True, show_default=True,
              help="Validate each session against the bundled shapes and freeze the verdict.")
@click.option("--format", "format_", type=click.Choice(["yaml", "json"]),
              help="Default: json for an --output FILE ending in .json, else yaml.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write the golden file to FILE; default: standard output.")
def golden(target: StoreTarget, from_sessions: bool, collection: vocab.Collection,
           sessions: tuple[str, ...], validate_: bool, format_: str | None,
           output: Path | None) -> None:
    """Write a golden file that freezes today's answers, for `tgsparql check`."""
    if not from_sessions:
        raise click.UsageError("say what to freeze: --from-sessions (recorded sessions)")
    if isinstance(target, Path):
        refuse_non_store(target)
    try:
        with reading(target) as store:
            chosen = sessions_to_freeze(store, collection, sessions)
            if not chosen:
                raise Failure(f"no complete session in collection {collection.name!r} to "
                              "freeze")
            observed = [observe(store, collection, session, validate=validate_)
                        for session in chosen]
            frozen = GoldenFile(tuple(freeze(session) for session in observed))
    except (SessionNotFound, ValueError, StoreError) as error:
        raise Failure(str(error)) from None
    for session in observed:
        if session.validation == "violates":
            click.echo(f"warning: session {session.session} does not conform now "
                       f"({session.validation_line}); frozen as `validation: violates`", err=True)
    chosen_format = format_ or ("json" if output and output.suffix.lower() == ".json"
                                else "yaml")
    count = len(frozen.questions)
    write_report(frozen.dump(chosen_format), output,  # type: ignore[arg-type]
                 f"{count} question{'s' if count != 1 else ''} frozen", what="golden file")


@click.command()
@store_option
@click.argument("golden_file", metavar="GOLDEN", type=click.Path(path_type=Path))
@click.option("--collection", type=CollectionName(), metavar="NAME",
              help="Record the sessions in this collection and keep them. Default: a throwaway "
              "collection, deleted when the check ends, so the real record is untouched.")
@click.option("--against", type=CollectionName(), metavar="COLLECTION",
              help="Compare each session with the newest session of its question in COLLECTION "
              "too (an earlier run's, kept with --collection).")
@click.option("--jobs", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Questions asked at once: an LLM's waits overlap.")
@click.option("--tolerate", multiple=True, type=click.Choice(TOLERABLE),
              help="Report changes of this check without failing; repeatable (`answer`, for "
              "an LLM whose wording varies).")
@click.option("--format", "format_", type=click.Choice(["text", "json", "junit"]),
              default="text", show_default=True,
              help="junit: a test case per question, its changes in the failure.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write the report to FILE (a one-line verdict goes to stderr).")
@llm_options
@constrain_option
@reply_options
@limit_options
def check(target: StoreTarget, golden_file: Path, collection: vocab.Collection | None,
          against: vocab.Collection | None, jobs: int, tolerate: tuple[str, ...],
          format_: str, output: Path | None, llm: str | None, model: str | None,
          base_url: str | None, api_key: str | None, constrain: str, max_tokens: int | None,
          log_llm: Path | None, limits: RetrievalLimits, output_limits: OutputLimits) -> None:
    """Ask the questions of the GOLDEN file again and report what changed, for CI.

    Exit 0 when every question holds, 1 when one changed (a change --tolerate names does not
    count), 2 when the questions could not be checked (a bad golden file, a store that cannot
    be opened, an --against collection without sessions).
    """
    try:
        questions = load_golden(golden_file)
    except GoldenError as error:
        raise CannotCheck(str(error)) from None
    if isinstance(target, Path):
        refuse_non_store(target)
    try:
        with llm_log(log_llm) as log, store_for(target, waits_for_llm=True) as store:
            backend = backend_from(llm, model, base_url, api_key, constrain,
                                   max_tokens=max_tokens, log=log)
            with replaying(store, backend, collection=collection, against=against,
                           tolerate=tolerate, limits=limits,
                           output_limits=output_limits) as replay:
                report = replay.check(questions, jobs=jobs)
    except (ReplayError, StoreError) as error:
        raise CannotCheck(str(error)) from None
    write_report(report.render(format_), output, report.headline())  # type: ignore[arg-type]
    if report.failing:
        sys.exit(1)

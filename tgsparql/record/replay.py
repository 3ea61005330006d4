"""Golden questions asked again (`tgsparql check`, the pytest marker): each through the same
pipeline as `tgsparql query`, recorded in a collection of its own (by default a throwaway one,
deleted afterwards, so the real record is untouched), read back and compared with its golden
entry and, when asked, with an earlier run's session of the same question. The report reads as
text, JSON or JUnit XML."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal
from xml.sax.saxutils import escape, quoteattr

from tgsparql.asking.llm.base import Backend
from tgsparql.asking.pipeline import GraphRag, OutputLimits
from tgsparql.asking.retrieval import RetrievalLimits
from tgsparql.rdf import vocab
from tgsparql.record.explain import SessionNotFound, list_sessions
from tgsparql.record.golden import GoldenFile, GoldenQuestion
from tgsparql.record.regression import (
    VARY_WITH_AN_LLM, Change, Known, Observed, compare, freeze, known, newest_session, observe,
)
from tgsparql.record.retention import delete_sessions, select_sessions
from tgsparql.stores.store import Store

ReportFormat = Literal["text", "json", "junit"]
THROWAWAY_PREFIX = "golden-check-"
"""How a throwaway collection's name begins; the rest is random."""


class ReplayError(ValueError):
    """The questions cannot be checked at all: an earlier run to compare with that holds no
    session."""


@dataclass(frozen=True)
class QuestionResult:
    """One golden question asked again: its session and every change found."""

    entry: GoldenQuestion
    session: str | None
    changes: tuple[Change, ...] = ()
    error: str | None = None
    """Why no session was recorded at all."""
    earlier: str | None = None
    """The earlier run's session it was compared with."""

    @property
    def fails(self) -> bool:
        return self.error is not None or any(change.fails for change in self.changes)

    def lines(self) -> list[str]:
        """What changed, a line each: failing ones first, tolerated and reported ones marked."""
        said = [f"error: {self.error}"] if self.error else []
        for change in sorted(self.changes, key=lambda c: not c.fails):
            where = "" if change.against == "golden" else f"against {change.against}: "
            mark = "" if change.fails else ("(tolerated) " if change.tolerated else "(note) ")
            said.append(f"{mark}{where}{change.message}")
        return said

    def to_json(self) -> dict[str, Any]:
        return {"name": self.entry.name, "question": self.entry.question,
                "session": self.session, "earlier_session": self.earlier,
                "passed": not self.fails, "error": self.error,
                "changes": [change.to_json() for change in self.changes]}


@dataclass(frozen=True)
class CheckReport:
    """Every golden question's result, and how they were asked."""

    origin: str
    results: tuple[QuestionResult, ...]
    collection: str
    kept: bool
    """Whether the sessions stay recorded (a collection given) or were deleted (throwaway)."""
    backend: str
    against: str | None = None
    tolerate: tuple[str, ...] = ()

    @property
    def failing(self) -> int:
        return sum(result.fails for result in self.results)

    @property
    def varies(self) -> bool:
        """Whether an LLM chose: then answers and selections may differ from run to run."""
        return self.backend != "offline"

    def headline(self) -> str:
        total = len(self.results)
        state = (f"{self.failing} of {total} questions changed" if self.failing
                 else "the question holds" if total == 1 else f"all {total} questions hold")
        kept = (f"recorded in collection {self.collection}" if self.kept
                else "recorded in a throwaway collection, deleted")
        against = f", compared with collection {self.against} too" if self.against else ""
        return f"check {self.origin}: {state} ({self.backend} backend; {kept}{against})"

    def to_text(self) -> str:
        lines = [self.headline()]
        if self.varies:
            tolerated = " (tolerated)" if "answer" in self.tolerate else ""
            lines.append(f"note: with an LLM, {', '.join(sorted(VARY_WITH_AN_LLM))} can vary "
                         f"from run to run; --tolerate answer reports answer changes without "
                         f"failing{tolerated}")
        for result in self.results:
            lines.append(f"{'FAIL' if result.fails else 'ok  '}  {result.entry.name}")
            if result.session and self.kept:
                lines.append(f"      session {result.session}")
            lines += [f"      {line}" for line in result.lines()]
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {"golden": self.origin, "backend": self.backend, "collection": self.collection,
                "kept": self.kept, "against": self.against, "tolerate": list(self.tolerate),
                "can_vary": sorted(VARY_WITH_AN_LLM) if self.varies else [],
                "questions": len(self.results), "failing": self.failing,
                "results": [result.to_json() for result in self.results]}

    def to_junit(self) -> str:
        """One test case per question, its changes the failure's message and text."""
        cases = []
        for result in self.results:
            text = "\n".join(result.lines())
            attributes = f"classname={quoteattr(self.origin)} name={quoteattr(result.entry.name)}"
            if result.fails:
                first = next(line for line in result.lines() if not line.startswith("("))
                body = (f"<failure message={quoteattr(first)} type=\"golden\">"
                        f"{escape(text)}</failure>")
            else:
                body = f"<system-out>{escape(text)}</system-out>" if text else ""
            cases.append(f"    <testcase {attributes}>{body}</testcase>\n")
        count = len(self.results)
        return ('<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<testsuites name="golden" tests="{count}" failures="{self.failing}" '
                'errors="0">\n'
                f'  <testsuite name={quoteattr(self.origin)} tests="{count}" '
                f'failures="{self.failing}" errors="0" skipped="0">\n'
                + "".join(cases) + "  </testsuite>\n</testsuites>\n")

    def render(self, format: ReportFormat) -> str:
        if format == "json":
            return json.dumps(self.to_json(), ensure_ascii=False, indent=2) + "\n"
        if format == "junit":
            return self.to_junit()
        return self.to_text()


@dataclass
class Replay:
    """Asks golden questions on a store through `GraphRag` and compares each session."""

    rag: GraphRag
    kept: bool
    against: vocab.Collection | None = None
    tolerate: tuple[str, ...] = ()
    asked: list[str] = field(default_factory=list)
    """The sessions recorded so far."""

    @property
    def store(self) -> Store:
        return self.rag.store

    def check(self, golden: GoldenFile | Sequence[GoldenQuestion], *, jobs: int = 1,
              origin: str = "the golden file") -> CheckReport:
        """Ask every question (`jobs` at a time) and compare; results in the file's order. A
        GoldenFile names itself in the report; `origin` names questions given alone."""
        if isinstance(golden, GoldenFile):
            questions, origin = golden.questions, golden.origin
        else:
            questions = tuple(golden)
        earlier = {entry.name: self._earlier(entry) for entry in questions}
        names = known(self.store, questions)
        with ThreadPoolExecutor(max_workers=max(1, jobs),
                                thread_name_prefix="tgsparql-check") as pool:
            results = tuple(pool.map(lambda entry: self._one(entry, names, earlier[entry.name]),
                                     questions))
        return CheckReport(origin, results, self.rag.collection.name, self.kept,
                           self.rag.backend.name, self.against.name if self.against else None,
                           self.tolerate)

    def one(self, entry: GoldenQuestion) -> QuestionResult:
        """Ask one question and compare its session with the entry (and the earlier run's)."""
        return self._one(entry, known(self.store, [entry]), self._earlier(entry))

    def _one(self, entry: GoldenQuestion, names: Known, earlier: str | None) -> QuestionResult:
        session, error = self._ask(entry.question)
        if session is None:
            return QuestionResult(entry, None, error=error or "no session was recorded")
        try:
            observed = observe(self.store, self.rag.collection, session,
                               validate=entry.validation is not None)
        except SessionNotFound:  # the store kept nothing of it, not even its failure
            return QuestionResult(entry, session, error=error or "its session was not recorded")
        changes = compare(entry, observed, names, tolerate=self.tolerate)
        if self.against is not None:
            changes += self._against(observed, earlier, self.against)
        return QuestionResult(entry, session, tuple(changes), earlier=earlier)

    def _against(self, observed: Observed, earlier: str | None,
                 against: vocab.Collection) -> list[Change]:
        """The session compared with the earlier run's, on what both records name."""
        if earlier is None:
            return [Change("session", "no earlier complete session of this question in "
                           f"collection {against.name}", failing=False, against=against.name)]
        before = freeze(observe(self.store, against, earlier).as_recorded())
        return compare(before, observed.as_recorded(), known(self.store, [before]),
                       against=against.name, tolerate=self.tolerate)

    def _earlier(self, entry: GoldenQuestion) -> str | None:
        if self.against is None:
            return None
        return newest_session(self.store, self.against, entry.question)

    def _ask(self, question: str) -> tuple[str | None, str | None]:
        session = error = None
        for message in self.rag.query(question):
            if message.message_type == "explain" and message.explain_id and session is None:
                session = message.explain_id
                self.asked.append(session)
            if message.error is not None:
                error = message.error.message
        return session, error


@contextmanager
def replaying(store: Store, backend: Backend, *, collection: vocab.Collection | None = None,
              against: vocab.Collection | None = None, tolerate: Iterable[str] = (),
              limits: RetrievalLimits | None = None,
              output_limits: OutputLimits | None = None) -> Iterator[Replay]:
    """A Replay recording into `collection`, or else into a throwaway collection whose sessions
    are deleted, with everything they own, when the block ends (however it ends)."""
    if against is not None and not list_sessions(store, against, 1):
        raise ReplayError(f"collection {against.name!r} holds no session to compare with")
    kept = collection is not None
    into = collection or vocab.Collection(THROWAWAY_PREFIX + uuid.uuid4().hex[:12])
    rag = GraphRag(store, backend, collection=into, limits=limits, output_limits=output_limits)
    replay = Replay(rag, kept, against, tuple(tolerate))
    try:
        yield replay
    finally:
        if not kept and replay.asked:
            delete_sessions(store, into, select_sessions(store, into, sessions=replay.asked))

"""A scripted LLM backend: given questions get given selections and answers, nothing else.

Tests of a pipeline want the LLM's part fixed, so that what is checked is the record. Edges
are scripted by what a test knows (the original triple, or its labels), not by edge id, which
depends on the labels of the prompt; the fake finds their ids in the prompt it is shown.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pyoxigraph as ox

from tgsparql.asking.labels import LabeledEdge, LabelTriple
from tgsparql.asking.llm.base import (
    Backend, ExtractionOutput, ExtractionRequest, LLMError, SelectionOutput, SelectionRequest,
)
from tgsparql.asking.llm.usage import Usage

EdgeRef = ox.Triple | LabelTriple | str
"""A scripted edge: its original triple, its three labels, or an edge id."""


class UnscriptedRequest(LLMError):
    """The fake was asked something its script does not cover."""


@dataclass(frozen=True)
class Script:
    """What the fake says for one question.

    `select`: (edge, reasoning) pairs, written as JSONL with the prompt's ids; or `raw`: the
    selector output verbatim (for hostile or partial output). `answer`: the answer text, asked
    for only when an edge was selected (else the pipeline answers that the KG holds nothing).
    """

    select: Sequence[tuple[EdgeRef, str]] = ()
    answer: str = "scripted answer"
    raw: str | None = None
    usage: Usage | None = field(default_factory=lambda: Usage("scripted", 0, 0))


class ScriptedAnswer:
    """The answer in word-sized chunks when streamed, whole otherwise."""

    def __init__(self, text: str, stream: bool, usage: Usage | None) -> None:
        self.text, self.stream, self.usage = text, stream, usage

    def __iter__(self) -> Iterator[str]:
        if not self.stream:
            yield self.text
            return
        words = self.text.split(" ")
        for i, word in enumerate(words):
            yield word if i == len(words) - 1 else word + " "


class ScriptedBackend:
    """A Backend (select, answer, extract) that replays `scripts`, keyed by question text.

    `extractions` maps a chunk's exact text to the JSONL facts reply. Every request is kept in
    `calls` as (method, question or chunk text), for assertions.
    """

    name = "scripted"

    def __init__(
        self,
        scripts: Mapping[str, Script],
        *,
        extractions: Mapping[str, str] | None = None,
    ) -> None:
        self.scripts = dict(scripts)
        self.extractions = dict(extractions or {})
        self.calls: list[tuple[str, str]] = []

    def select(self, request: SelectionRequest) -> SelectionOutput:
        self.calls.append(("select", request.question))
        script = self._script(request.question)
        if script.raw is not None:
            return SelectionOutput(script.raw, script.usage)
        lines = [
            json.dumps({"id": _find(ref, request.edges, request.question), "reasoning": why},
                       ensure_ascii=False)
            for ref, why in script.select
        ]
        return SelectionOutput("".join(line + "\n" for line in lines), script.usage)

    def answer(
        self, question: str, facts: Sequence[LabeledEdge], *, stream: bool
    ) -> ScriptedAnswer:
        self.calls.append(("answer", question))
        script = self._script(question)
        return ScriptedAnswer(script.answer, stream, script.usage)

    def extract(self, request: ExtractionRequest) -> ExtractionOutput:
        self.calls.append(("extract", request.text))
        if request.text not in self.extractions:
            raise UnscriptedRequest(
                f"no extraction scripted for the chunk {request.text[:80]!r} of "
                f"{request.title!r}; scripted chunks: {len(self.extractions)}"
            )
        return ExtractionOutput(self.extractions[request.text], Usage("scripted", 0, 0))

    def _script(self, question: str) -> Script:
        try:
            return self.scripts[question]
        except KeyError:
            known = "; ".join(repr(q) for q in self.scripts) or "none"
            raise UnscriptedRequest(
                f"no script for the question {question!r}; scripted questions: {known}"
            ) from None


def _find(ref: EdgeRef, edges: Sequence[LabeledEdge], question: str) -> str:
    for edge in edges:
        if ref == edge.id or ref == edge.triple or (isinstance(ref, tuple) and ref == edge.labels):
            return edge.id
    offered = "; ".join(" — ".join(edge.labels) for edge in edges[:20]) or "none"
    raise UnscriptedRequest(
        f"the scripted edge {ref!r} is not among the {len(edges)} edges retrieved for "
        f"{question!r} (offered: {offered})"
    )


def backend_of(backend: Any) -> Backend:
    """The backend a test names: "offline", any Backend, or a mapping of question → Script for
    a ScriptedBackend."""
    from tgsparql.asking.llm.offline import OfflineBackend

    if backend == "offline":
        return OfflineBackend()
    if isinstance(backend, Mapping):
        return ScriptedBackend(backend)
    return cast(Backend, backend)

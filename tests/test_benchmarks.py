"""The pipeline benchmark runs end to end at a tiny size, so it cannot rot."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pyoxigraph as ox

from conftest import REPO

FACTS = 2000
QUESTIONS = 5
ENTITIES = FACTS // 10
LABELS = ENTITIES + 50 + 8  # entities, predicates, classes
RDFS_LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")

TIMING_ROWS = [
    "grounding",
    "retrieval (retrieve_subgraph)",
    "label fetch (get_labelgraph)",
    "offline selection + answer",
    "recording (all writes of one session)",
    "— session",
    "— retrieval",
    "— selection",
    "— librarian put",
    "— answer",
    "recording without tg:retrievedEdge",
    "pipeline, recording on",
    "pipeline, recording off",
    "pipeline, recording on without tg:retrievedEdge",
]
RATIO_ROWS = [
    "explainability overhead (on / off)",
    "overhead without tg:retrievedEdge (on / off)",
]
COUNT_ROWS = [
    "edges retrieved per question",
    "seed entities per question",
    "edges selected per question",
]


def run_bench(work: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.pipeline_bench",
            "--facts",
            str(FACTS),
            "--questions",
            str(QUESTIONS),
            "--work",
            str(work),
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def table_rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| measure"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def test_tiny_benchmark_writes_every_row_and_reuses_its_cached_store(tmp_path: Path) -> None:
    work, out = tmp_path / "work", tmp_path / "results" / "pipeline.md"
    first = run_bench(work, out)
    assert first.returncode == 0, first.stderr
    text = out.read_text(encoding="utf-8")
    assert first.stdout.strip() == text.strip()

    rows = table_rows(text)
    assert list(rows) == TIMING_ROWS + RATIO_ROWS + COUNT_ROWS
    for name in TIMING_ROWS + RATIO_ROWS:
        median, p95 = float(rows[name][0]), float(rows[name][1])
        assert median > 0 and p95 > 0, name
        if name in TIMING_ROWS:
            assert p95 >= median, name
    assert rows["retrieval (retrieve_subgraph)"][2:] in (
        ["≤ 10 ms p50", "pass"],
        ["≤ 10 ms p50", "**FAIL**"],
    )
    assert rows["recording (all writes of one session)"][2] == "≤ 3 ms p50"
    assert rows["explainability overhead (on / off)"][2] == "≤ 1.10 (+10 %)"
    assert float(rows["edges retrieved per question"][0]) >= 1
    assert float(rows["seed entities per question"][0]) >= 1

    assert f"- KG: 2,000 facts, 200 entities, 50 predicates, {LABELS} rdfs:labels" in text
    assert f"({FACTS + LABELS:,} quads), on-disk store" in text
    assert f"- questions: {QUESTIONS} measured (after 5 warm-up), 5 / 5 grounded" in text
    assert ", 0 failed;" in text
    assert re.search(r"- machine: \d+ CPUs", text)
    assert f"pyoxigraph {ox.__version__}" in text
    assert "reused from the cache" not in text

    # The cached store holds exactly the generated KG: N distinct facts plus the labels.
    (store_dir,) = [path / "store" for path in work.iterdir()]
    store = ox.Store.read_only(str(store_dir))
    default = list(store.quads_for_pattern(None, None, None, ox.DefaultGraph()))
    assert len(default) == FACTS + LABELS
    assert sum(1 for quad in default if quad.predicate == RDFS_LABEL) == LABELS
    del store

    build_line = next(line for line in text.splitlines() if line.startswith("- build:"))
    second = run_bench(work, out)
    assert second.returncode == 0, second.stderr
    again = out.read_text(encoding="utf-8")
    assert "using the cached store" in second.stderr
    assert f"{build_line}, reused from the cache for this run" in again
    assert list(table_rows(again)) == TIMING_ROWS + RATIO_ROWS + COUNT_ROWS


def test_tiny_serve_benchmark_writes_a_row_per_query_and_server(tmp_path: Path) -> None:
    out = tmp_path / "serve.md"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.serve_bench", "--sessions", "200", "--seconds", "0.3",
         "--work", str(tmp_path / "work"), "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    rows = [line.split("|")[1:3] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| query")]
    servers = {server.strip() for _, server in rows}
    assert {name.strip() for name, _ in rows} == {"sessions_per_day", "tokens_by_model",
                                                  "failed_sessions"}
    assert servers <= {"tgsparql serve", "oxigraph serve-read-only"} and "tgsparql serve" in servers
    assert "- store: 200 sessions, 5,000 facts, 100 documents" in text


def run_module(module: str, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )


def shapes(store: ox.Store, kinds: list[ox.NamedNode]) -> dict[str, set[ox.NamedNode]]:
    """Per type of the source graph, the predicates its members carry."""
    found: dict[str, set[ox.NamedNode]] = {}
    for kind in kinds:
        members = [q.subject for q in store.quads_for_pattern(None, TYPE, kind, SOURCE)]
        assert members, kind
        found[kind.value] = {q.predicate for member in members
                             for q in store.quads_for_pattern(member, None, None, SOURCE)} - SPAN
    return found


def test_tiny_trace_benchmark_traces_every_session_and_matches_ingest_shapes(
    tmp_path: Path,
) -> None:
    from benchmarks.ingest_bench import ScriptedBackend, write_corpus
    from tgsparql.ingest import ingest_files
    from tgsparql.store import open_store

    work, out = tmp_path / "work", tmp_path / "trace.md"
    args = ("--facts", 2000, "--sessions", 200, "--measure", 20, "--documents", 2,
            "--work", work, "--out", out)
    first = run_module("benchmarks.trace_bench", *args)
    assert first.returncode == 0, first.stderr
    text = out.read_text(encoding="utf-8")
    assert first.stdout.strip() == text.strip()
    rows = table_rows(text)
    assert list(rows) == TRACE_TIMING_ROWS + TRACE_COUNT_ROWS
    for name in TRACE_TIMING_ROWS:
        assert 0 < float(rows[name][0]) <= float(rows[name][1]), name
    assert rows[TRACE_TIMING_ROWS[0]][2] == "≤ 5 ms p50"
    assert rows["selected edges traced per session"][:2] == ["10", "10"]
    assert float(rows["sources per session"][0]) >= 10
    assert float(rows["sessions per document"][0]) >= 1
    assert ("- KG: 2,000 facts with provenance: 2 documents, 20 pages, 200 chunks and "
            "subgraphs (10 facts each, 20 chunks restating a fact of another chunk)") in text
    assert "- sessions: 200 recorded, 10 selected edges and 20 retrieved edges each" in text
    assert "- measured: 20 sessions (after 5 warm-up), 2 documents of 100 chunks" in text

    # Every KG fact has a source; the provenance has the shapes a real ingest writes.
    (store_dir,) = [path / "store" for path in work.iterdir()]
    store = ox.Store.read_only(str(store_dir))
    contained = {q.object for q in store.quads_for_pattern(
        None, ox.NamedNode(TG + "contains"), None, SOURCE)}
    facts = [q.triple for q in store.quads_for_pattern(None, None, None, ox.DefaultGraph())
             if q.predicate != RDFS_LABEL]
    assert len(facts) == FACTS and set(facts) <= contained
    kinds = [ox.NamedNode(TG + k) for k in ("Document", "Page", "Chunk", "Subgraph")]
    kinds.append(ox.NamedNode("http://www.w3.org/ns/prov#Activity"))
    generated = shapes(store, kinds)
    del store
    corpus = write_corpus(tmp_path / "documents", 2, 7)
    ingested = open_store()
    assert not ingest_files(ingested, ScriptedBackend(corpus.replies), corpus.paths).failed
    assert shapes(ingested.oxigraph, kinds) == generated

    second = run_module("benchmarks.trace_bench", *args)
    assert second.returncode == 0, second.stderr
    assert "using the cached store" in second.stderr
    assert "reused from the cache for this run" in out.read_text(encoding="utf-8")


def test_tiny_ingest_benchmark_accounts_for_every_stage(tmp_path: Path) -> None:
    from benchmarks.ingest_bench import STAGES

    out = tmp_path / "ingest.md"
    done = run_module("benchmarks.ingest_bench", "--documents", 3, "--rounds", 1,
                      "--work", tmp_path / "work", "--out", out)
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    rows = table_rows(text)
    for name in ("facts / s", "provenance triples / s", "chunks / s"):
        memory, disk = (float(cell.replace(",", "")) for cell in rows[name][:2])
        assert memory > 0 and disk > 0, name
    assert float(rows["median (ms)"][0]) > 0 and float(rows["p95 (ms)"][1]) > 0
    assert [name for name in rows if name in STAGES] == STAGES
    for kind in (1, 3):
        shares = [float(rows[stage][kind].rstrip(" %")) for stage in STAGES]
        assert abs(sum(shares) - 100) < 1
    assert "- corpus: 3 plain-text documents of 3 pages, 360 sentences (one fact each)" in text
    assert "scripted backend, no LLM time" in text
    assert list((tmp_path / "work").iterdir()) == []

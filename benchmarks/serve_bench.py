"""Serve benchmark: saved BI queries over HTTP, `tgsparql serve` beside `oxigraph serve-read-only`.

Builds (once, cached under the work directory) an on-disk store of S recorded sessions in the
shape the `record_*` templates wrote before the fields BI reads were added (session, retrieval
with tg:retrievedEdge, selection with its edge selections and model usage, answer; one in
twenty failed after retrieval), over a small KG with extraction provenance (documents → pages
→ chunks → subgraphs). Records are generated as TriG text and bulk loaded, which is far faster
than one INSERT DATA per stage. A copy of it is then migrated by `tgsparql migrate` (timed):
that is the store as the current templates write it.

Then, with every server running at once, for each saved query and each server in turn (back
to back, so that one query's rows meet the same load on a shared machine), C client threads on
loopback send the same GET for a fixed time each, and the run reports requests per second, the
p50 and p95 latency and the servers' CPU time per request: the query as it
stood at BASELINE (read from git) on the old store, beside the current query on the migrated
store; each on `oxigraph serve-read-only` (the rendered SPARQL to `/query`, Accept: text/csv)
and through `tgsparql serve` (the current query as `/queries/NAME.csv`, the old one's rendered
text to `/sparql`, since a migrated store answers both alike). `tgsparql serve` refuses an
unmigrated store, so the old query runs on the migrated store there.

Run: python -m benchmarks.serve_bench --sessions 100000 --clients 1 --query all
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from benchmarks.harness import (
    BenchParser, Size, bulk_loaded_store, head, load_average, load_line, write,
)
from tgsparql.rdf.iris import LLM_PREFIX
from tgsparql.rdf.templates import Templates
from tgsparql.serve.saved import saved_queries

SIZES = {
    "sessions": Size(100_000, 200, "recorded sessions in the store"),
    "seconds": Size(10.0, 0.3, "seconds each query is measured on each server", least=0.1),
}
QUERIES = [("sessions_per_day", {}), ("tokens_by_model", {}),
           ("failed_sessions", {"limit": "20"})]
"""Measured by default, with these parameters (any other saved query runs with its defaults)."""
BASELINE = "4c5b6b2625a66c2b2875641275861c85769e2da1"
"""The revision whose saved queries the current ones are measured against (before tg:day)."""
FORMAT = 2
MIGRATION = 5
"""The record fields `tgsparql migrate` adds; a cached copy migrated for another is migrated
again from the cached old store."""
MODELS = ["gpt-4o-mini", "llama-3.1-8b", "qwen2.5-7b"]


def store_directory(work: Path, sessions: int, seed: int) -> Path:
    return work / f"serve-{sessions}-seed{seed}-v{FORMAT}"


def generate(path: Path, sessions: int, seed: int, documents: int = 100, *, days: int = 180,
             current: bool = False, per_file: int | None = None) -> dict[str, Any]:
    """TriG for the KG, its provenance and S sessions started over `days` days from 2024-01-01;
    returns counts, and the files written (`path`, then one more after every `per_file`
    sessions, so that each can be bulk loaded and removed in turn).

    The records are as the templates wrote them before the fields BI reads were added; with
    `current`, as they write them now: with those fields (what `tgsparql migrate` adds to the
    former, tests/test_benchmarks.py) and the Answer's citation counts."""
    rng = random.Random(seed)
    chunks_per_doc, facts_per_chunk = 10, 5
    facts: list[str] = []
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    files = [path]
    out = path.open("w", encoding="utf-8")
    prefixes = ("@prefix tg: <https://trustgraph.ai/ns/> .\n"
                "@prefix prov: <http://www.w3.org/ns/prov#> .\n"
                "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
                "@prefix dc: <http://purl.org/dc/elements/1.1/> .\n"
                "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n")
    try:
        out.write(prefixes)
        for d in range(documents):
            for c in range(chunks_per_doc):
                for f in range(facts_per_chunk):
                    n = (d * chunks_per_doc + c) * facts_per_chunk + f
                    facts.append(f"<http://example.org/e/E{n}> <http://example.org/p/P{n % 20}> "
                                 f"<http://example.org/e/E{(n * 7 + 1) % (documents * 50)}>")
        out.write("{\n" + "".join(f"  {fact} .\n" for fact in facts) + "}\n")
        out.write("GRAPH <urn:graph:source> {\n")
        for d in range(documents):
            doc = f"<urn:trustgraph:doc:bench{d}>"
            out.write(f"  {doc} a prov:Entity, tg:Document ; dc:title \"Document {d}\" .\n")
            page = f"<urn:page:bench{d}>"
            out.write(f"  {page} a prov:Entity, tg:Page ; prov:wasDerivedFrom {doc} ; "
                      "tg:pageNumber 1 .\n")
            for c in range(chunks_per_doc):
                chunk = f"<urn:chunk:bench{d}-{c}>"
                out.write(f"  {chunk} a prov:Entity, tg:Chunk ; prov:wasDerivedFrom {page} ; "
                          f"tg:chunkIndex {c} .\n")
                base = (d * chunks_per_doc + c) * facts_per_chunk
                contained = " , ".join(f"<<( {facts[base + f]} )>>"
                                       for f in range(facts_per_chunk))
                out.write(f"  <https://trustgraph.ai/subgraph/bench{d}-{c}> a prov:Entity, "
                          f"tg:Subgraph ; prov:wasDerivedFrom {chunk} ; tg:contains {contained} .\n")
        out.write("}\nGRAPH <urn:graph:explainability> {\n")
        cited = len(facts) * 9 // 10  # the last documents are never cited
        per_document = chunks_per_doc * facts_per_chunk
        for s in range(sessions):
            if per_file and s and s % per_file == 0:
                out.write("}\n")
                out.close()
                files.append(path.with_name(f"{path.stem}-{len(files)}{path.suffix}"))
                out = files[-1].open("w", encoding="utf-8")
                out.write(prefixes + "GRAPH <urn:graph:explainability> {\n")
            u = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            began = start + dt.timedelta(seconds=rng.randrange(0, days * 86400))
            stamp = began.strftime("%Y-%m-%dT%H:%M:%SZ")
            day = began.strftime("%Y-%m-%d")
            ended = (began + dt.timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
            chosen_facts = rng.sample(range(cited), 8)
            edges = [facts[n] for n in chosen_facts]
            failed = s % 20 == 19
            cites = s % 10 != 3  # one answer in ten cites nothing (never a failed session's)
            session = f"<urn:trustgraph:session:{u}>"
            out.write(f"  {session} a prov:Activity ; rdfs:label \"GraphRAG query session\" ; "
                      f"prov:startedAtTime \"{stamp}\"^^xsd:dateTime ; tg:query \"question {s}\" ; "
                      f"prov:endedAtTime \"{ended}\"^^xsd:dateTime ; ")
            if current:
                out.write(f"tg:day \"{day}\"^^xsd:date ; "
                          f"tg:{'failedDay' if failed else 'completeDay'} \"{day}\"^^xsd:date ; "
                          + ("" if cites else f"tg:uncitedDay \"{day}\"^^xsd:date ; "))
            out.write(f"tg:status \"failed\" ; tg:error \"the LLM timed out (run {s})\" .\n"
                      if failed else "tg:status \"complete\" .\n")
            retrieved = " , ".join(f"<<( {e} )>>" for e in edges)
            out.write(f"  <urn:trustgraph:prov:retrieval:{u}> a prov:Entity ; rdfs:label "
                      f"\"Retrieved edges\" ; prov:wasGeneratedBy {session} ; tg:edgeCount 8 ; "
                      f"tg:retrievedEdge {retrieved} .\n")
            if failed:
                continue
            model = MODELS[s % len(MODELS)]
            chosen = edges[:3]
            stating = [f"<urn:trustgraph:doc:bench{n // per_document}>" for n in chosen_facts[:3]]
            selection = f"<urn:trustgraph:prov:selection:{u}>"
            ids = " , ".join(f"<urn:trustgraph:prov:edge:{u}:{i}>" for i in range(len(chosen)))
            selection_in, selection_out = rng.randrange(300, 900), rng.randrange(20, 99)
            out.write(f"  {selection} a prov:Entity ; rdfs:label \"Selected edges\" ; "
                      f"prov:wasDerivedFrom <urn:trustgraph:prov:retrieval:{u}> ; "
                      f"tg:selectedEdge {ids} ; tg:llmModel \"{model}\" ; "
                      f"tg:inToken {selection_in} ; tg:outToken {selection_out} ; ")
            if current:
                documents_once = sorted(set(stating))
                out.write(f"tg:selectedEdgeCount {len(chosen)} ; "
                          f"tg:sourceDocumentCount {len(documents_once)} ; "
                          f"tg:sourceDocument {' , '.join(documents_once)} ; ")
            out.write("tg:invalidIdCount 0 .\n")
            for i, edge in enumerate(chosen):
                out.write(f"  <urn:trustgraph:prov:edge:{u}:{i}> a tg:EdgeSelection ; "
                          f"tg:edge <<( {edge} )>> ; tg:reasoning \"matches the question\" "
                          + (f"; tg:factDocument {stating[i]} .\n" if current else ".\n"))
            answer_in, answer_out = rng.randrange(200, 600), rng.randrange(30, 200)
            out.write(f"  <urn:trustgraph:prov:answer:{u}> a prov:Entity ; rdfs:label "
                      f"\"GraphRAG answer\" ; prov:wasDerivedFrom {selection} ; "
                      f"tg:llmModel \"{model}\" ; tg:inToken {answer_in} ; "
                      f"tg:outToken {answer_out} ; ")
            if current:
                out.write((f"tg:cites <urn:trustgraph:prov:edge:{u}:0> ; tg:citedEdgeCount 1 ; "
                           if cites else "tg:citedEdgeCount 0 ; ")
                          + "tg:invalidCitationCount 0 ; "
                          + f"tg:uncitedSentenceCount {int(not cites)} ; ")
            out.write(f"tg:document <urn:trustgraph:answer:{u}> .\n")
            if current:
                llm = f"<{LLM_PREFIX}{quote(model, safe='')}>"
                out.write(f"  {llm} tg:modelName \"{model}\" .\n"
                          f"  {session} tg:selectionUsage <<( {llm} tg:inToken {selection_in} )>> ,"
                          f" <<( {llm} tg:outToken {selection_out} )>> ;\n"
                          f"    tg:answerUsage <<( {llm} tg:inToken {answer_in} )>> ,"
                          f" <<( {llm} tg:outToken {answer_out} )>> .\n")
        out.write("}\n")
    finally:
        out.close()
    return {"sessions": sessions, "facts": len(facts), "documents": documents, "days": days,
            "files": [str(file) for file in files]}


def build(work: Path, sessions: int, seed: int) -> tuple[Path, Path, dict[str, Any]]:
    """The cached old-format store and its migrated copy (built if missing), and their build
    record."""
    directory = store_directory(work, sessions, seed)
    record = directory / "build.json"
    if record.exists():
        print(f"using the cached store {directory}", file=sys.stderr)
        info = json.loads(record.read_text())
        if info.get("migration") != MIGRATION:
            info.update(migrated_copy(directory))
            record.write_text(json.dumps(info, indent=1))
        return directory / "store", directory / "migrated", info
    info = bulk_loaded_store(directory, lambda trig: generate(trig, sessions, seed))
    info.update(migrated_copy(directory))
    record.write_text(json.dumps(info, indent=1))
    return directory / "store", directory / "migrated", info


def migrated_copy(directory: Path) -> dict[str, Any]:
    """A fresh copy of the old store, migrated by `tgsparql migrate` (timed)."""
    shutil.rmtree(directory / "migrated", ignore_errors=True)
    shutil.copytree(directory / "store", directory / "migrated")
    began = time.perf_counter()
    migrated = subprocess.run(
        [sys.executable, "-m", "tgsparql.cli", "migrate", "--store", str(directory / "migrated")],
        capture_output=True, text=True, check=True)
    return {"migrate_s": round(time.perf_counter() - began, 1),
            "migrated": migrated.stdout.strip(), "migration": MIGRATION}


def measured() -> list[str]:
    """The saved queries that stood at BASELINE: those the benchmark compares; a query added
    since has no old text to be compared with."""
    listed = subprocess.run(
        ["git", "ls-tree", "--full-tree", "--name-only", BASELINE, "queries/bi/"],
        cwd=Path(__file__).parent, capture_output=True, text=True, check=True).stdout.split()
    return [name for name in saved_queries() if f"queries/bi/{name}.rq" in listed]


def baseline_text(name: str, params: dict[str, str]) -> str:
    """The saved query NAME as it stood at BASELINE, rendered with `params` (and defaults)."""
    source = subprocess.run(
        ["git", "show", f"{BASELINE}:queries/bi/{name}.rq"], cwd=Path(__file__).parent,
        capture_output=True, text=True, check=True).stdout
    bound = saved_queries()[name].bind({key: [value] for key, value in params.items()})
    # that version took the collection's graph, as `graph`
    bound["graph"] = bound.pop("collection").graph
    return Templates().render_source(source, **bound)


def current_text(name: str, params: dict[str, str]) -> str:
    saved = saved_queries()[name]
    return Templates().render(saved.template, **saved.bind({k: [v] for k, v in params.items()}))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def load(port: int, path: str, accept: str, clients: int, seconds: float,
         give_up: float = 120) -> dict[str, float]:
    """C threads, each on one keep-alive connection, sending the request for `seconds`; a
    request unanswered after `give_up` seconds (or failed by the server's own timeout, set to
    the same) ends the measurement as {"gave_up_s": give_up}."""
    latencies: list[float] = []
    errors: list[str] = []
    gave_up: list[bool] = []
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def client() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=give_up + 5)
        mine: list[float] = []
        while time.perf_counter() < stop:
            began = time.perf_counter()
            try:
                connection.request("GET", path, headers={"Accept": accept})
                reply = connection.getresponse()
                body = reply.read()
            except OSError:  # no answer in time
                gave_up.append(True)
                break
            mine.append(time.perf_counter() - began)
            if reply.status != 200:
                if mine[-1] >= give_up * 0.9:
                    gave_up.append(True)
                else:
                    errors.append(f"{reply.status}: {body[:200]!r}")
                break
        with lock:
            latencies.extend(mine)

    began = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise RuntimeError(errors[0])
    if gave_up:
        return {"gave_up_s": give_up}
    latencies.sort()
    return {
        "requests": len(latencies),
        "rps": len(latencies) / elapsed,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p95_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))] * 1000,
    }


def wait_for(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


Rows = dict[tuple[str, str, str], dict[str, float] | None]
"""(query, server, "today" or "new") → its measurement; None where the server is missing."""


def run(args: argparse.Namespace) -> str:
    """Every server runs at once (tgsparql serve on the migrated store; Oxigraph on the old
    store and on the migrated one), and each query is measured on each of them back to back, so
    that the rows of one query meet the same load on a shared machine."""
    old_store, new_store, info = build(args.work, args.sessions, args.seed)
    info["load"] = load_average()
    queries = selected(args.queries)
    rows: Rows = {}
    cpu: dict[tuple[str, str, str], float] = {}
    servers: list[tuple[str, str, int, subprocess.Popen[bytes]]] = []
    port = free_port()
    servers.append(("tgsparql serve", "both", port, subprocess.Popen(
        [sys.executable, "-m", "tgsparql.cli", "serve", "--store", str(new_store), "--port",
         str(port), "--timeout", str(args.give_up), "--max-results", "1000000", "--workers",
         str(args.workers)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    oxigraph = shutil.which("oxigraph") or shutil.which(
        "oxigraph", path=str(Path(sys.executable).parent))
    if oxigraph is None:
        rows.update({(name, "oxigraph serve-read-only", version): None
                     for name, _ in queries for version in ("today", "new")})
    for version, store in (("today", old_store), ("new", new_store)):
        if oxigraph is not None:
            port = free_port()
            servers.append(("oxigraph serve-read-only", version, port, subprocess.Popen(
                [oxigraph, "serve-read-only", "--location", str(store), "--bind",
                 f"127.0.0.1:{port}", "--timeout-s", str(int(args.give_up))],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    try:
        for *_, port, _ in servers:
            wait_for(port)
        for name, params in queries:
            for server, serves, port, process in servers:
                for version in ("today", "new") if serves == "both" else (serves,):
                    path = _path(server, version, name, params)
                    warm = load(port, path, "text/csv", 1, 1.0, args.give_up)
                    if "gave_up_s" in warm:
                        rows[(name, server, version)] = warm
                        continue
                    began = cpu_seconds(process.pid)
                    rows[(name, server, version)] = measured = load(
                        port, path, "text/csv", args.clients, args.seconds, args.give_up)
                    if "requests" in measured:
                        cpu[(name, server, version)] = (
                            (cpu_seconds(process.pid) - began) / measured["requests"] * 1000)
    finally:
        for *_, process in servers:
            process.terminate()
            process.wait()
    return report(info, [name for name, _ in queries], rows, args, cpu)


def _path(server: str, version: str, name: str, params: dict[str, str]) -> str:
    """The request for a query: tgsparql serves the current one as `/queries/NAME.csv` and the
    old one's text on `/sparql` (the migrated store answers both alike); Oxigraph each text on
    `/query`."""
    if server == "tgsparql serve":
        if version == "new":
            return f"/queries/{name}.csv" + (f"?{urlencode(params)}" if params else "")
        return "/sparql?query=" + quote(baseline_text(name, params))
    text = baseline_text if version == "today" else current_text
    return "/query?query=" + quote(text(name, params))


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) a server process and its children have used so far: the
    query workers of tgsparql serve are its children. 0 where /proc cannot tell."""
    total = 0.0
    pids = [pid]
    while pids:
        current = pids.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            pids += [int(child) for child in
                     Path(f"/proc/{current}/task/{current}/children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def selected(names: list[str] | None) -> list[tuple[str, dict[str, str]]]:
    """The queries to measure: QUERIES unless named, `all` for every one that stood at
    BASELINE."""
    if not names:
        return QUERIES
    if names == ["all"]:
        names = measured()
    defaults = dict(QUERIES)
    return [(name, defaults.get(name, {})) for name in names]


def report(info: dict[str, Any], names: list[str], rows: Rows, args: argparse.Namespace,
           cpu: dict[tuple[str, str, str], float] | None = None) -> str:
    out = [*head("Serve benchmark", "python -m benchmarks.serve_bench"), "",
           f"Saved BI queries over HTTP, {args.clients} concurrent clients on loopback, "
           f"{args.seconds:g} s per query, version and server (after a 1 s warm-up). "
           f"*today*: the query as it stood at "
           f"`{BASELINE[:7]}` on the store as that version wrote it (through `tgsparql serve`: "
           "on the migrated store, which it answers alike); *new*: the current query on the "
           "migrated store. Every server runs throughout, and each query is measured on "
           "each server and version back to back. CPU: what the server's processes used per "
           "request (tgsparql serve: with its query workers), whatever else the machine ran.",
           "",
           "| query | server | today p50 ms | new p50 ms | today / new | today p95 ms "
           "| new p95 ms | requests (today, new) | CPU ms per request (today, new) |",
           "|---|---|---|---|---|---|---|---|---|"]
    cpu = cpu or {}

    def used(name: str, server: str) -> str:
        return ", ".join(f"{cpu[key]:.0f}" if key in cpu else "–"
                         for key in ((name, server, "today"), (name, server, "new")))

    for name in names:
        for server in ("oxigraph serve-read-only", "tgsparql serve"):
            today, new = rows.get((name, server, "today")), rows.get((name, server, "new"))
            if today is None or new is None:
                out.append(f"| {name} | {server} | not run (no `oxigraph` on PATH) "
                           "| | | | | | |")
                continue
            if "gave_up_s" in today or "gave_up_s" in new:
                cells = [_p(today, "p50_ms"), _p(new, "p50_ms"), "", _p(today, "p95_ms"),
                         _p(new, "p95_ms"), "", used(name, server)]
                out.append(f"| {name} | {server} | " + " | ".join(cells) + " |")
                continue
            out.append(f"| {name} | {server} | {today['p50_ms']:.1f} | {new['p50_ms']:.1f} "
                       f"| {today['p50_ms'] / new['p50_ms']:.1f} | {today['p95_ms']:.1f} "
                       f"| {new['p95_ms']:.1f} | {today['requests']:.0f}, {new['requests']:.0f} "
                       f"| {used(name, server)} |")
    out += ["",
            f"- store: {info['sessions']:,} sessions, {info['facts']:,} facts, "
            f"{info['documents']} documents, {info['quads']:,} quads; generated as TriG in "
            f"{info['generate_s']} s, bulk loaded in {info['load_s']} s; "
            f"`tgsparql migrate` of a copy in {info['migrate_s']} s ({info['migrated']})",
            f"- tgsparql serve: {args.workers} worker processes, read-only handles",
            load_line(info["load"])]
    return "\n".join(out) + "\n"


def _p(numbers: dict[str, float], key: str) -> str:
    if "gave_up_s" in numbers:
        return f"did not finish in {numbers['gave_up_s']:g} s"
    return f"{numbers[key]:.1f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = BenchParser("benchmarks.serve_bench", __doc__.split("\n")[0], SIZES,
                         out="serve.md", seed=20240601, work="cache of built stores")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (4)")
    parser.add_argument("--workers", type=int, default=2,
                        help="query worker processes of tgsparql serve (2)")
    parser.add_argument("--give-up", type=float, default=60.0, metavar="SECONDS",
                        help="a query unanswered after this long is reported as not finishing")
    parser.add_argument("--query", action="append", dest="queries", metavar="NAME",
                        choices=["all", *measured()],
                        help="a saved query to measure (repeatable; 'all' for every one); "
                             "default: " + ", ".join(name for name, _ in QUERIES))
    args = parser.parse(argv)
    print(write(args.out, run(args)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Growth benchmark, sessions side: what the record's readers cost as sessions accumulate.

Builds (once, cached under the work directory) an on-disk store of S sessions in the record's
form before the days said they hold sessions (tg:date), SESSIONS_PER_DAY of them a day (so 1 M
sessions span 1,000 days), with benchmarks.serve_bench's generator, bulk loaded PER_FILE
sessions at a time so that neither the TriG nor the loader's batches grow with S; a build
interrupted resumes with the files not loaded yet.

Then, per size: `tgsparql migrate` (which adds tg:date) and `tgsparql rollup` through the day
before the last, so that the last day's sessions are the live part the saved queries read from
the record, and `tgsparql drift` on the store made to drift (benchmarks.growth_drift), its whole
report in JSON (each a process of its own: time and peak memory); every saved BI query in process
(pyoxigraph on the same store, read-only, as `tgsparql serve`'s workers open it) and over HTTP,
on `tgsparql serve` and on `oxigraph serve-read-only` side by side, the query measured on each
server back to back; `tgsparql trace` and `tgsparql validate --session` of sampled sessions in
process; and the peak memory of `tgsparql serve` (its processes together). The rows go into
the growth table (`python -m benchmarks.growth_bench`).
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from benchmarks.growth_drift import REALISTIC, make_realistic
from benchmarks.growth_rows import GrowthRow
from benchmarks.serve_bench import free_port, generate, wait_for
from tgsparql.rdf.templates import Templates
from tgsparql.rdf.vocab import DEFAULT_COLLECTION, TG_QUERY
from tgsparql.record.conformance import validate_session
from tgsparql.record.trace import trace
from tgsparql.serve.saved import saved_queries
from tgsparql.stores.store import EmbeddedStore

SESSIONS_PER_DAY = 1000
PER_FILE = 50_000
FORMAT = 1
SLOW_S = 10
"""A saved query whose warm-up run takes longer is measured by that run alone."""
SAVED = "saved query "
"""How a saved BI query's steps begin: `saved query NAME, WAY`."""
IN_PROCESS, SERVE, OXIGRAPH = "in process", "tgsparql serve", "oxigraph serve-read-only"
"""The ways a saved query is measured."""
START = dt.date(2024, 1, 1)
"""The generator's first day (benchmarks.serve_bench.generate)."""


def store_directory(work: Path, sessions: int, seed: int) -> Path:
    return work / f"growth-sessions-{sessions}-seed{seed}-v{FORMAT}"


def days(sessions: int) -> int:
    return max(1, sessions // SESSIONS_PER_DAY)


def build(work: Path, sessions: int, seed: int) -> tuple[Path, dict[str, Any]]:
    """The cached store of `sessions` sessions (built if missing, or finished if a build was
    interrupted) and its build record."""
    directory = store_directory(work, sessions, seed)
    record = directory / "build.json"
    generated = directory / "generated.json"
    if record.exists():
        print(f"using the cached store {directory}", file=sys.stderr)
        return directory / "store", _realistic(directory, json.loads(record.read_text()))
    if not generated.exists():
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        began = time.perf_counter()
        info = generate(directory / "records.trig", sessions, seed, current=True,
                        days=days(sessions), per_file=PER_FILE)
        info["generate_s"] = round(time.perf_counter() - began, 1)
        generated.write_text(json.dumps(info, indent=1))
    info = json.loads(generated.read_text())
    began = time.perf_counter()
    store = ox.Store(str(directory / "store"))
    # a file is removed once loaded; one a stopped build was loading is loaded again whole
    # (quads are a set, so what it had loaded is not doubled)
    for number, file in enumerate(info.pop("files"), 1):
        if Path(file).exists():
            store.bulk_load(path=file, format=ox.RdfFormat.TRIG)
            Path(file).unlink()
            print(f"loaded file {number} ({time.perf_counter() - began:.0f} s)", file=sys.stderr)
    info["load_s"] = round(time.perf_counter() - began + info.get("load_s", 0), 1)
    began = time.perf_counter()
    store.optimize()
    info["optimize_s"] = round(time.perf_counter() - began, 1)
    info["quads"] = len(store)
    store.flush()
    del store
    info["build_peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    record.write_text(json.dumps(info, indent=1))
    return directory / "store", _realistic(directory, info)


def _realistic(directory: Path, info: dict[str, Any]) -> dict[str, Any]:
    """The build record of a store given its documents' real names and texts and some drift
    (benchmarks.growth_drift), made so once: a store cached before is changed in place."""
    if info.get("realistic") == REALISTIC:
        return info
    began = time.perf_counter()
    store = ox.Store(str(directory / "store"))
    info.update(make_realistic(store, START + dt.timedelta(days=info["days"] - 1)))
    store.flush()
    del store
    info["realistic_s"] = round(time.perf_counter() - began, 1)
    (directory / "build.json").write_text(json.dumps(info, indent=1))
    return info


def measure(sizes: list[int], work: Path, seed: int, runs: int = 7, traced: int = 20,
            validated: int = 3) -> list[GrowthRow]:
    """Every step at every size (docs in the module's text), smallest size first."""
    rows: list[GrowthRow] = []
    for sessions in sorted(sizes):
        path, info = build(work, sessions, seed)
        rows += _maintenance(path, sessions)
        rows += _saved_queries(path, sessions, runs)
        rows += _sessions_read(path, sessions, seed, traced, validated)
    return rows


def _maintenance(path: Path, sessions: int) -> list[GrowthRow]:
    """`tgsparql migrate`, then `tgsparql rollup` through the day before the generator's last,
    then `tgsparql drift` (its whole report, in JSON)."""
    through = START + dt.timedelta(days=days(sessions) - 2)
    rows = []
    for step, extra in (("migrate", []), ("rollup", ["--through", through.isoformat()])):
        seconds, peak, said = _run_measured(
            [sys.executable, "-m", "tgsparql.cli", step, "--store", str(path), *extra])
        rows.append(GrowthRow("sessions", sessions, step, seconds=seconds, peak_mb=peak,
                              note=said.splitlines()[-1] if said else ""))
    with tempfile.TemporaryDirectory() as scratch:
        seconds, peak, said = _run_measured(
            [sys.executable, "-m", "tgsparql.cli", "drift", "--store", str(path), "--format",
             "json", "--output", str(Path(scratch) / "drift.json")], drifted=True)
    rows.append(GrowthRow("sessions", sessions, "drift", seconds=seconds, peak_mb=peak,
                          note=said.splitlines()[-1] if said else ""))
    return rows


def _run_measured(command: Sequence[str], *, drifted: bool = False) -> tuple[float, float, str]:
    """Run a command to its end: its wall time, its peak resident memory in MB, its output;
    `drifted`: its exit 1 says that sessions drifted, not that it failed."""
    began = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    said = process.stdout.read() if process.stdout is not None else ""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in ((0, 1) if drifted else (0,)):
        raise RuntimeError(f"{' '.join(command)} failed: {said[-500:]}")
    return time.perf_counter() - began, usage.ru_maxrss / 1024, said.strip()


def _texts() -> dict[str, str]:
    """Each saved BI query rendered with its defaults, as any tool would run it."""
    return {name: Templates().render(saved.template, **saved.bind({}))
            for name, saved in saved_queries().items()}


def _saved_queries(path: Path, sessions: int, runs: int) -> list[GrowthRow]:
    """Each saved query in process, then over HTTP on both servers side by side."""
    texts = _texts()
    store = ox.Store.read_only(str(path))
    rows = []
    for name, text in texts.items():
        latencies = _timed(lambda text=text: list(store.query(text)), runs)
        rows.append(_row(sessions, f"{SAVED}{name}, {IN_PROCESS}", latencies,
                         _runs_note(latencies, runs)))
    del store
    serve_port, oxigraph_port = free_port(), free_port()
    servers = [(SERVE, serve_port, subprocess.Popen(
        [sys.executable, "-m", "tgsparql.cli", "serve", "--store", str(path), "--port",
         str(serve_port), "--timeout", "600", "--max-results", "1000000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))]
    oxigraph = shutil.which("oxigraph") or shutil.which(
        "oxigraph", path=str(Path(sys.executable).parent))
    if oxigraph is not None:
        servers.append((OXIGRAPH, oxigraph_port, subprocess.Popen(
            [oxigraph, "serve-read-only", "--location", str(path), "--bind",
             f"127.0.0.1:{oxigraph_port}", "--timeout-s", "600"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    try:
        for _, port, _ in servers:
            wait_for(port)
        for name, text in texts.items():
            for server, port, _ in servers:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                if server == SERVE:
                    request = ("GET", f"/queries/{name}.csv", None)
                else:  # the text in the body: Oxigraph takes 8 KiB of headers at most
                    request = ("POST", "/query", text.encode("utf-8"))
                step = f"{SAVED}{name}, {server}"
                try:
                    measured = _timed(lambda: _send(connection, *request), runs)
                except (RuntimeError, OSError) as error:  # a timeout is a row, not the end
                    rows.append(GrowthRow("sessions", sessions, step, note=f"no answer: {error}"))
                else:
                    rows.append(_row(sessions, step, measured,
                                     _runs_note(measured, runs) + ", one client"))
                finally:
                    connection.close()
        peak = sum(_peak_mb(pid) for pid in _process_tree(servers[0][2].pid))
        rows.append(GrowthRow("sessions", sessions, "serve", peak_mb=peak,
                              note="tgsparql serve and its query workers, after every query"))
    finally:
        for *_, process in servers:
            process.terminate()
            process.wait()
    return rows


def _send(connection: http.client.HTTPConnection, method: str, path: str,
          query: bytes | None) -> bytes:
    """One request on a kept-alive connection (a query in the body as
    application/sparql-query), its answer read whole; an error answer raises RuntimeError."""
    headers = {"Accept": "text/csv"}
    if query is not None:
        headers["Content-Type"] = "application/sparql-query"
    connection.request(method, path, body=query, headers=headers)
    reply = connection.getresponse()
    body = reply.read()
    if reply.status != 200:
        raise RuntimeError(f"{method} {path}: {reply.status} {body[:200]!r}")
    return body


def _sessions_read(path: Path, sessions: int, seed: int, traced: int,
                   validated: int) -> list[GrowthRow]:
    """`tgsparql trace` and `tgsparql validate --session` of sessions sampled from the store."""
    store = EmbeddedStore(path, read_only=True)
    found = [quad.subject.value for quad in ox.Store.read_only(str(path)).quads_for_pattern(
        None, TG_QUERY, None, DEFAULT_COLLECTION.graph)]
    chosen = random.Random(seed).sample(sorted(found), min(max(traced, validated), len(found)))
    traces = _timed_each(lambda iri: trace(store, DEFAULT_COLLECTION, iri), chosen[:traced])
    validations = _timed_each(lambda iri: validate_session(store, iri), chosen[:validated])
    return [_row(sessions, "trace", traces, f"tgsparql trace SESSION, in process, {len(traces)} "
                 "sessions"),
            _row(sessions, "validate --session", validations,
                 f"in process, {len(validations)} sessions")]


def _timed(run: Callable[[], object], runs: int) -> list[float]:
    """Milliseconds of each of `runs` runs, after one run not counted; only that first one when
    it took longer than SLOW_S (its row then says so), so one slow query keeps no run for hours."""
    first = _timed_each(lambda _: run(), [None])
    if runs > 1 and first[0] > SLOW_S * 1000:
        return first
    return _timed_each(lambda _: run(), range(runs))


def _runs_note(latencies: list[float], runs: int) -> str:
    if len(latencies) < runs:
        return f"the warm-up run alone: over {SLOW_S} s"
    return f"{runs} runs after a warm-up"


def _timed_each(run: Callable[[Any], object], items: Sequence[Any]) -> list[float]:
    latencies = []
    for item in items:
        began = time.perf_counter()
        run(item)
        latencies.append((time.perf_counter() - began) * 1000)
    return latencies


def _row(sessions: int, step: str, latencies: list[float], note: str) -> GrowthRow:
    ordered = sorted(latencies)
    return GrowthRow("sessions", sessions, step, p50_ms=ordered[len(ordered) // 2],
                     p95_ms=ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
                     note=note)


def _process_tree(pid: int) -> list[int]:
    pids, found = [pid], []
    while pids:
        current = pids.pop()
        found.append(current)
        try:
            pids += [int(child) for child in
                     Path(f"/proc/{current}/task/{current}/children").read_text().split()]
        except OSError:
            continue
    return found


def _peak_mb(pid: int) -> float:
    """The peak resident memory of a running process (VmHWM), 0 where /proc cannot tell."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0

"""Soak: many sessions through the pipeline on disk, with periodic validation, watching memory
and latency over time; then throughput of recorded sessions with 1, 2, 4, 8 writers.

    python -m benchmarks.soak_bench                    # 10 000 sessions
    python -m benchmarks.soak_bench --sessions 500 --window 50 --throughput-sessions 40

Writes a Markdown table (`--out`) and a PNG plot (`--plot`, needs matplotlib: the `bench`
extra).
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.resources import as_file, files
from pathlib import Path

import pyoxigraph as ox

from tgsparql.llm.offline import OfflineBackend
from tgsparql.loader import load_files
from tgsparql.locking import exclusive_store
from tgsparql.pipeline import GraphRag
from tgsparql.store import Store, open_store
from tgsparql.templates import Templates
from tgsparql.validate_session import session_nodes
from tgsparql.validation import Shapes, Validator

QUESTIONS = [
    "Where was the scientist who discovered polonium born?",
    "Which prize did the daughter of Pierre Curie win?",
    "Who married Marie Curie?",
    "Where did Pierre Curie die?",
    "What did Marie Curie discover?",
    "Where is the Radium Institute?",
]
RESULTS = Path(__file__).parent / "results"
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mib() -> float:
    """This process's resident memory now (not its peak), from /proc."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


def ask(rag: GraphRag, question: str) -> str:
    """One session, all messages consumed; its IRI. A failed session stops the benchmark."""
    session = ""
    for message in rag.query(question):
        if message.error is not None:
            raise RuntimeError(f"session failed: {message.error.message}")
        if not session and message.explain_id:
            session = message.explain_id
    return session


@dataclass
class Window:
    end: int
    """Sessions recorded when the window closed."""
    median_ms: float
    p95_ms: float
    rss_mib: float
    validated: int = 0
    violations: int = 0
    validation_s: float = 0.0


@dataclass
class Soak:
    windows: list[Window] = field(default_factory=list)
    seconds: float = 0.0


def demo_store(path: Path) -> None:
    with open_store(path) as store, as_file(files("tgsparql.demo").joinpath("curie.trig")) as demo:
        report = load_files(store, [demo])
        if report.failed:
            raise RuntimeError(next(iter(report.failed.values())))


def soak(path: Path, sessions: int, window: int, validate_every: int) -> Soak:
    """Record `sessions` sessions; per window, latency percentiles and RSS; every
    `validate_every` sessions, validate the sessions of the last window."""
    validator = Validator(Shapes.bundled())
    out = Soak()
    began = time.perf_counter()
    with open_store(path) as store:
        rag = GraphRag(store, OfflineBackend(), index_labels=False)
        latencies: list[float] = []
        recent: list[str] = []
        for n in range(1, sessions + 1):
            start = time.perf_counter_ns()
            recent.append(ask(rag, QUESTIONS[n % len(QUESTIONS)]))
            latencies.append((time.perf_counter_ns() - start) / 1e6)
            if n % window and n != sessions:
                continue
            row = Window(n, statistics.median(latencies), _p95(latencies), rss_mib())
            if n % validate_every == 0 or n == sessions:
                row.validated, row.violations, row.validation_s = _validate(store, validator,
                                                                           recent)
            out.windows.append(row)
            latencies, recent = [], []
    out.seconds = time.perf_counter() - began
    return out


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _validate(store: Store, validator: Validator, sessions: list[str]) -> tuple[int, int, float]:
    start = time.perf_counter()
    templates = Templates(store.dialect)
    nodes = [node for iri in sessions for node in session_nodes(store, templates, iri)]
    report = validator.validate(store, focus=nodes)
    return len(sessions), len(report.violations), time.perf_counter() - start


# ---- throughput -----------------------------------------------------------------------------


def threads_throughput(path: Path, writers: int, total: int) -> float:
    """Sessions/s with `writers` threads sharing one embedded on-disk store."""
    with open_store(path) as store:
        rag = GraphRag(store, OfflineBackend(), index_labels=False)
        return _run_threads(writers, total, lambda n: ask(rag, QUESTIONS[n % len(QUESTIONS)]))


def _run_threads(writers: int, total: int, one: Callable[[int], str]) -> float:
    barrier = threading.Barrier(writers + 1)
    shares = [total // writers + (i < total % writers) for i in range(writers)]

    def work(i: int) -> None:
        barrier.wait()
        for n in range(shares[i]):
            one(i + n)

    with ThreadPoolExecutor(writers) as pool:
        futures = [pool.submit(work, i) for i in range(writers)]
        barrier.wait()
        start = time.perf_counter()
        for future in futures:
            future.result()
    return total / (time.perf_counter() - start)


def processes_throughput(path: Path, writers: int, total: int, batch: int) -> float:
    """Sessions/s with `writers` processes taking turns (`exclusive_store`, `batch` sessions
    per turn); the time includes each process's start."""
    shares = [total // writers + (i < total % writers) for i in range(writers)]
    start = time.perf_counter()
    workers = [
        subprocess.Popen([sys.executable, "-m", "benchmarks.soak_bench", "--writer", str(path),
                          str(share), str(batch)], cwd=Path(__file__).parent.parent)
        for share in shares if share
    ]
    for worker in workers:
        if worker.wait() != 0:
            raise RuntimeError(f"a writer process exited with {worker.returncode}")
    return total / (time.perf_counter() - start)


def writer(path: str, count: int, batch: int) -> None:
    """The body of one writer process."""
    done = 0
    while done < count:
        with exclusive_store(path) as store:
            rag = GraphRag(store, OfflineBackend(), index_labels=False)
            for _ in range(min(batch, count - done)):
                ask(rag, QUESTIONS[done % len(QUESTIONS)])
                done += 1


@contextmanager
def oxigraph_server(work: Path) -> Iterator[tuple[str, str] | None]:
    """An Oxigraph server with the demo loaded, when the binary is installed; else None."""
    binary = Path(sys.executable).parent / "oxigraph"
    found = str(binary) if binary.is_file() else shutil.which("oxigraph")
    if found is None:
        yield None
        return
    location = work / "oxigraph-server"
    shutil.rmtree(location, ignore_errors=True)
    demo_store(location)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([found, "serve", "--location", str(location), "--bind",
                                f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
                connection.request("GET", "/")
                connection.getresponse().read()
                connection.close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the Oxigraph server did not start") from None
                time.sleep(0.05)
        base = f"http://127.0.0.1:{port}"
        yield base + "/query", base + "/update"
    finally:
        process.terminate()
        process.wait(timeout=10)


def remote_throughput(endpoints: tuple[str, str], writers: int, total: int) -> float:
    """Sessions/s with `writers` threads, each with its own RemoteStore on the server."""
    from tgsparql.remote import RemoteStore

    rags = [GraphRag(RemoteStore(endpoints[0], update_endpoint=endpoints[1]), OfflineBackend(),
                     index_labels=False) for _ in range(writers)]
    local = threading.local()
    pool = iter(rags)
    lock = threading.Lock()

    def one(n: int) -> str:
        if not hasattr(local, "rag"):
            with lock:
                local.rag = next(pool)
        return ask(local.rag, QUESTIONS[n % len(QUESTIONS)])

    try:
        return _run_threads(writers, total, one)
    finally:
        for rag in rags:
            rag.store.close()


# ---- report ---------------------------------------------------------------------------------


def render(result: Soak, sessions: int, throughput: dict[str, dict[int, float]],
           plot: Path | None) -> str:
    first, last = result.windows[0], result.windows[-1]
    validated = sum(w.validated for w in result.windows)
    violations = sum(w.violations for w in result.windows)
    lines = [
        "# Soak and concurrency benchmark",
        "",
        f"- soak: {sessions:,} sessions through `GraphRag` (offline backend) into one on-disk "
        f"store holding the demo KG, in {result.seconds:.1f} s "
        f"({sessions / result.seconds:.1f} sessions/s)",
        f"- validation: {validated:,} sessions validated in "
        f"{sum(1 for w in result.windows if w.validated)} runs, {violations} violations",
        f"- latency drift: last window median / first = "
        f"{last.median_ms / first.median_ms:.2f}",
        f"- memory: RSS {first.rss_mib:.1f} MiB after the first window, {last.rss_mib:.1f} MiB "
        f"after the last ({last.rss_mib - first.rss_mib:+.1f} MiB)",
        f"- machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, load "
        f"average {os.getloadavg()[0]:.2f} at the end; python {platform.python_version()}, "
        f"pyoxigraph {ox.__version__}",
        "",
        "## Latency per window",
        "",
        "| sessions | median ms | p95 ms | RSS MiB | validated | violations | validation s |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for w in result.windows:
        lines.append(f"| {w.end} | {w.median_ms:.2f} | {w.p95_ms:.2f} | {w.rss_mib:.1f} | "
                     f"{w.validated or ''} | {w.violations if w.validated else ''} | "
                     f"{f'{w.validation_s:.2f}' if w.validated else ''} |")
    counts = sorted({n for rates in throughput.values() for n in rates})
    lines += [
        "",
        "## Throughput: recorded sessions per second",
        "",
        "| writers | " + " | ".join(str(n) for n in counts) + " |",
        "|---|" + "---:|" * len(counts),
    ]
    for name, rates in throughput.items():
        lines.append(f"| {name} | " + " | ".join(
            f"{rates[n]:.1f}" if n in rates else "–" for n in counts) + " |")
    if plot is not None:
        lines += ["", f"![latency, memory and throughput]({plot.name})"]
    return "\n".join(lines) + "\n"


def draw(result: Soak, throughput: dict[str, dict[int, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    ends = [w.end for w in result.windows]
    left.plot(ends, [w.median_ms for w in result.windows], label="median")
    left.plot(ends, [w.p95_ms for w in result.windows], label="p95")
    left.set_xlabel("sessions recorded")
    left.set_ylabel("latency per session (ms)")
    left.set_ylim(bottom=0)
    memory = left.twinx()
    memory.plot(ends, [w.rss_mib for w in result.windows], color="grey", linestyle=":",
                label="RSS")
    memory.set_ylabel("RSS (MiB)")
    memory.set_ylim(bottom=0)
    left.legend(loc="lower left")
    memory.legend(loc="lower right")
    left.set_title("soak: latency and memory over time")
    for name, rates in throughput.items():
        writers = sorted(rates)
        right.plot(writers, [rates[n] for n in writers], marker="o", label=name)
    right.set_xscale("log", base=2)
    right.set_xlabel("concurrent writers")
    right.set_ylabel("recorded sessions / s")
    right.set_ylim(bottom=0)
    right.legend()
    right.set_title("throughput")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--window", type=int, default=500, help="Sessions per latency window.")
    parser.add_argument("--validate-every", type=int, default=1000,
                        help="Validate the last window's sessions every N sessions.")
    parser.add_argument("--writers", default="1,2,4,8", help="Writer counts to measure.")
    parser.add_argument("--throughput-sessions", type=int, default=400,
                        help="Sessions recorded per writer count and kind.")
    parser.add_argument("--batch", type=int, default=50,
                        help="Sessions a writer process records per turn on the store.")
    parser.add_argument("--work", type=Path, help="Scratch directory (default: a temporary one).")
    parser.add_argument("--out", type=Path, default=RESULTS / "soak.md")
    parser.add_argument("--plot", type=Path, default=RESULTS / "soak.png")
    parser.add_argument("--writer", nargs=3, metavar=("STORE", "COUNT", "BATCH"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer:
        writer(args.writer[0], int(args.writer[1]), int(args.writer[2]))
        return 0
    counts = [int(n) for n in args.writers.split(",")]
    work = args.work or Path(tempfile.mkdtemp(prefix="tgsparql-soak-"))
    work.mkdir(parents=True, exist_ok=True)

    path = work / "soak-store"
    shutil.rmtree(path, ignore_errors=True)
    demo_store(path)
    print(f"soak: {args.sessions} sessions into {path}", file=sys.stderr)
    result = soak(path, args.sessions, args.window, args.validate_every)

    throughput: dict[str, dict[int, float]] = {
        "embedded on disk, threads": {}, "embedded on disk, processes": {},
    }
    for n in counts:
        for name, measure in (
            ("embedded on disk, threads",
             lambda p: threads_throughput(p, n, args.throughput_sessions)),
            ("embedded on disk, processes",
             lambda p: processes_throughput(p, n, args.throughput_sessions, args.batch)),
        ):
            store_path = work / f"throughput-{n}"
            shutil.rmtree(store_path, ignore_errors=True)
            demo_store(store_path)
            throughput[name][n] = measure(store_path)
            print(f"{name}, {n} writers: {throughput[name][n]:.1f} sessions/s", file=sys.stderr)
    with oxigraph_server(work) as server:
        if server is not None:
            throughput["Oxigraph server (HTTP), threads"] = {}
            for n in counts:
                rate = remote_throughput(server, n, args.throughput_sessions)
                throughput["Oxigraph server (HTTP), threads"][n] = rate
                print(f"Oxigraph server, {n} writers: {rate:.1f} sessions/s", file=sys.stderr)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    plot = args.plot
    draw(result, throughput, plot)
    text = render(result, args.sessions, throughput, plot)
    args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

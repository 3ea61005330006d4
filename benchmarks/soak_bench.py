"""Soak: many sessions through the pipeline on disk, with periodic validation, watching memory
and latency over time; then throughput of recorded sessions with 1, 2, 4, 8 writers.

Memory is reported three ways, so growth can be placed: resident memory (RSS), what the C
allocator has handed out and not had back (glibc's mallinfo2: Python's large objects, pyoxigraph
and RocksDB), and Python's own heap (tracemalloc, in a shorter second soak, since tracing slows
every allocation).

    python -m benchmarks.soak_bench                    # 10 000 sessions
    python -m benchmarks.soak_bench --sessions 500 --window 50 --throughput-sessions 40

Writes a Markdown table (`--out`) and a PNG plot (`--plot`, needs matplotlib: the `bench`
extra).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import gc
import http.client
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.resources import as_file, files
from pathlib import Path

import pyoxigraph as ox

from benchmarks.harness import (
    RESULTS, BenchParser, Load, Size, head, load_average, load_line, write,
)
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.data.loader import load_files
from tgsparql.record.conformance import session_nodes
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.locking import exclusive_store
from tgsparql.stores.store import EmbeddedStore, Store, open_store
from tgsparql.validation import Shapes, Validator

QUESTIONS = [
    "Where was the scientist who discovered polonium born?",
    "Which prize did the daughter of Pierre Curie win?",
    "Who married Marie Curie?",
    "Where did Pierre Curie die?",
    "What did Marie Curie discover?",
    "Where is the Radium Institute?",
]
SIZES = {
    "sessions": Size(10_000, 30, "sessions of the soak"),
    "window": Size(500, 10, "sessions per latency window"),
    "validate-every": Size(1000, 20, "validate the last window's sessions every N sessions"),
    "filler": Size(400_000, 4000, "quads written and read to fill the block caches before the "
                   "soak", least=0),
    "traced-sessions": Size(2000, 20, "sessions of the second soak, which traces Python's heap"),
    "writers": Size("1,2,4,8", "1,2", "writer counts to measure", least=None),
    "throughput-sessions": Size(400, 6, "sessions recorded per writer count and kind"),
    "batch": Size(50, 3, "sessions a writer process records per turn on the store"),
}
REPO = Path(__file__).parent.parent
PAGE = os.sysconf("SC_PAGE_SIZE")
FLAT_MIB = 16.0
"""Target: RSS grows by at most this much over the second half of the soak."""
FILLER = "urn:tgsparql:bench:cache-filler:"
"""Graphs, one per batch, that fill the store's block caches before the soak (`fill_caches`)."""
FILLER_BATCH = 3000
DRIFT = 1.25
"""Target: the last window's median latency is at most this times the first's."""


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _glibc() -> ctypes.CDLL | None:
    """The C library if it is glibc 2.33 or later (mallinfo2, malloc_trim); else None."""
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2") or not hasattr(libc, "malloc_trim"):
        return None
    libc.mallinfo2.restype = _MallInfo2
    return libc


LIBC = _glibc()


def rss_mib() -> float:
    """This process's resident memory now (not its peak), from /proc."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


def malloc_mib() -> float | None:
    """Memory the C allocator has handed out and not had back, in every arena and mmap: live
    memory of Python's large objects, pyoxigraph and RocksDB, without the freed memory that
    glibc keeps (which RSS counts). None without glibc."""
    if LIBC is None:
        return None
    info = LIBC.mallinfo2()
    return (info.uordblks + info.hblkhd) / 2**20


def trimmed_rss_mib() -> float | None:
    """RSS after a collection and `malloc_trim(0)`, which hands glibc's free pages back to the
    system. None without glibc."""
    gc.collect()
    if LIBC is None:
        return None
    LIBC.malloc_trim(0)
    return rss_mib()


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
    """Sessions recorded when the window closed; memory is measured then, after the window's
    validation, if any."""
    median_ms: float
    p95_ms: float
    rss_mib: float = 0.0
    malloc_mib: float | None = None
    python_mib: float | None = None
    """Python's traced heap (only in a traced soak)."""
    validated: int = 0
    violations: int = 0
    validation_s: float = 0.0


@dataclass
class Soak:
    windows: list[Window] = field(default_factory=list)
    seconds: float = 0.0
    trimmed_mib: float | None = None
    """RSS after malloc_trim, once the last window is measured."""
    rereads: list[tuple[float, float | None]] = field(default_factory=list)
    """(RSS, malloc) after each full read of the store that follows the soak."""
    caches: list[tuple[str, int, int]] = field(default_factory=list)
    """The store's RocksDB block caches: (kind, capacity in bytes, column families using it)."""
    filled: tuple[int, float, float | None] | None = None
    """(filler quads, RSS, malloc) once the block caches were filled, before the first session."""
    growth: list[tuple[str, int]] = field(default_factory=list)
    """In a traced soak, the source lines whose Python memory grew most from the first window to
    the last: (file:line, bytes)."""


def demo_store(path: Path) -> None:
    with open_store(path) as store, as_file(files("tgsparql.data.demo").joinpath("curie.trig")) as demo:
        report = load_files(store, [demo])
        if report.failed:
            raise RuntimeError(next(iter(report.failed.values())))


def soak(path: Path, sessions: int, window: int, validate_every: int, rereads: int = 2,
         trace: bool = False, filler: int = 0) -> Soak:
    """Record `sessions` sessions; per window, latency percentiles and memory; every
    `validate_every` sessions, validate the sessions of the last window. Then read the whole
    store `rereads` times: memory that a second read does not raise is a full cache, not a leak.
    `trace` follows Python's heap with tracemalloc (which slows every allocation). `filler`
    quads fill the block caches first, so that their filling is not read as growth."""
    validator = Validator(Shapes.bundled())
    out = Soak()
    if trace:
        tracemalloc.start()
    first: tracemalloc.Snapshot | None = None
    try:
        began = time.perf_counter()
        with open_store(path) as store:
            if filler:
                fill_caches(store, filler)
                out.filled = (filler, rss_mib(), malloc_mib())
            rag = GraphRag(store, OfflineBackend(), index_labels=False)
            latencies: list[float] = []
            recent: list[str] = []
            for n in range(1, sessions + 1):
                start = time.perf_counter_ns()
                recent.append(ask(rag, QUESTIONS[n % len(QUESTIONS)]))
                latencies.append((time.perf_counter_ns() - start) / 1e6)
                if n % window and n != sessions:
                    continue
                row = Window(n, statistics.median(latencies), _p95(latencies))
                if n % validate_every == 0 or n == sessions:
                    row.validated, row.violations, row.validation_s = _validate(
                        store, validator, recent)
                latencies, recent = [], []
                row.rss_mib, row.malloc_mib = rss_mib(), malloc_mib()
                if trace:
                    row.python_mib = tracemalloc.get_traced_memory()[0] / 2**20
                    snapshot = tracemalloc.take_snapshot()
                    if first is None:
                        first = snapshot
                    out.growth = _growth(first, snapshot)
                out.windows.append(row)
            out.seconds = time.perf_counter() - began
            out.trimmed_mib = trimmed_rss_mib()
            for _ in range(rereads):
                out.rereads.append(reread(store))
    finally:
        if trace:
            tracemalloc.stop()
    out.caches = block_caches(path)
    return out


def fill_caches(store: EmbeddedStore, quads: int) -> None:
    """Fill the store's block caches to the capacity Oxigraph gives them before measuring.

    A RocksDB block cache keeps the blocks of files that compaction has since replaced until
    newer blocks push them out, so under steady writes it fills to its capacity however small
    the data read: an unwarmed soak shows that filling as growth for tens of thousands of
    sessions. Quads with fresh terms in a graph of their own (none of the pipeline's queries
    read it), flushed batch by batch so compaction runs, each batch read back.
    """
    oxigraph = store.oxigraph
    pick = random.Random(20240601)
    for batch in range(-(-quads // FILLER_BATCH)):
        graph = ox.NamedNode(f"{FILLER}{batch}")
        oxigraph.extend(
            ox.Quad(ox.NamedNode(f"urn:tgsparql:bench:filler:{n}"),
                    ox.NamedNode(f"urn:tgsparql:bench:filler-property:{n % 20}"),
                    ox.Literal(f"filler text {n} to occupy the string table", language="en"),
                    graph)
            for n in range(batch * FILLER_BATCH, min((batch + 1) * FILLER_BATCH, quads)))
        oxigraph.flush()
        for read in (graph, ox.NamedNode(f"{FILLER}{pick.randint(0, batch)}")):
            collections.deque(oxigraph.quads_for_pattern(None, None, None, read), maxlen=0)


def reread(store: EmbeddedStore) -> tuple[float, float | None]:
    """Read every quad of every graph, each term decoded, as a validation of everything would;
    (RSS, malloc) after it."""
    collections.deque(store.oxigraph.quads_for_pattern(None, None, None, None), maxlen=0)
    return rss_mib(), malloc_mib()


def block_caches(path: Path) -> list[tuple[str, int, int]]:
    """The block caches RocksDB reports in the store's LOG when it opens it: Oxigraph sets their
    sizes, and pyoxigraph cannot change them. (kind, capacity in bytes, column families)."""
    log = path / "LOG"
    if not log.is_file():
        return []
    found = re.findall(r"block_cache: (\S+)\s+block_cache_name: (\S+)\s+block_cache_options:"
                       r"\s+capacity : (\d+)", log.read_text(encoding="utf-8", errors="replace"))
    users = collections.Counter(pointer for pointer, _, _ in found)
    kinds = {pointer: (kind, int(capacity)) for pointer, kind, capacity in found}
    return [(*kinds[pointer], count) for pointer, count in users.items()]


def _growth(first: tracemalloc.Snapshot, last: tracemalloc.Snapshot) -> list[tuple[str, int]]:
    ours = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, __file__)]
    stats = last.filter_traces(ours).compare_to(first.filter_traces(ours), "lineno")
    return [(_where(stat.traceback[0]), stat.size_diff) for stat in stats[:3]]


def _where(frame: tracemalloc.Frame) -> str:
    """A frame's file relative to the repository or to its installed package."""
    path = Path(frame.filename)
    if path.is_relative_to(REPO):
        path = path.relative_to(REPO)
    elif "site-packages" in path.parts:
        path = Path(*path.parts[path.parts.index("site-packages") + 1:])
    else:
        path = Path(path.name)
    return f"{path}:{frame.lineno}"


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _validate(store: Store, validator: Validator, sessions: list[str]) -> tuple[int, int, float]:
    start = time.perf_counter()
    nodes = [node for iri in sessions for node in session_nodes(store, iri)]
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
    from tgsparql.stores.remote import RemoteStore

    endpoint = Endpoint(endpoints[0], update_url=endpoints[1])
    rags = [GraphRag(RemoteStore(endpoint), OfflineBackend(), index_labels=False)
            for _ in range(writers)]
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


def render(result: Soak, traced: Soak, sessions: int,
           throughput: dict[str, dict[int, float]], plot: Path | None,
           load_before: Load) -> str:
    first, last = result.windows[0], result.windows[-1]
    middle = _middle(result)
    validated = sum(w.validated for w in result.windows)
    violations = sum(w.violations for w in result.windows)
    drift = last.median_ms / first.median_ms
    growth = last.rss_mib - middle.rss_mib
    lines = [
        *head("Soak and concurrency benchmark", "python -m benchmarks.soak_bench"),
        load_line(load_before),
        f"- soak: {sessions:,} sessions through `GraphRag` (offline backend) into one on-disk "
        f"store holding the demo KG, in {result.seconds:.1f} s "
        f"({sessions / result.seconds:.1f} sessions/s)",
        *_filler_lines(result),
        f"- validation: {validated:,} sessions validated in "
        f"{sum(1 for w in result.windows if w.validated)} runs, {violations} violations",
        f"- target, memory flat: RSS grows by at most {FLAT_MIB:.0f} MiB over the second half "
        f"({middle.end:,} to {last.end:,} sessions): {middle.rss_mib:.1f} to "
        f"{last.rss_mib:.1f} MiB, {growth:+.1f} MiB: {_verdict(growth <= FLAT_MIB)}",
        f"- target, latency does not drift: last window median / first ≤ {DRIFT}: "
        f"{drift:.2f}: {_verdict(drift <= DRIFT)}",
        f"- RSS {first.rss_mib:.1f} MiB after the first window, {last.rss_mib:.1f} MiB after "
        f"the last ({last.rss_mib - first.rss_mib:+.1f} MiB)"
        + (f"; {result.trimmed_mib:.1f} MiB after `malloc_trim(0)` at the end (free memory "
           f"glibc had kept: {last.rss_mib - result.trimmed_mib:.1f} MiB)"
           if result.trimmed_mib is not None else ""),
        *_allocator_lines(result),
        *_python_lines(traced),
        "",
        "## Latency and memory per window",
        "",
        "Memory is measured as each window closes, after its validation if it has one. "
        "malloc: memory glibc has handed out and not had back (`mallinfo2`), that is live "
        "memory of Python's large objects, pyoxigraph and RocksDB, without the freed memory "
        "that glibc keeps and RSS counts.",
        "",
        "| sessions | median ms | p95 ms | RSS MiB | malloc MiB | validated | violations "
        "| validation s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for w in result.windows:
        lines.append(f"| {w.end} | {w.median_ms:.2f} | {w.p95_ms:.2f} | {w.rss_mib:.1f} | "
                     f"{_mib(w.malloc_mib)} | {w.validated or ''} | "
                     f"{w.violations if w.validated else ''} | "
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


def _filler_lines(result: Soak) -> list[str]:
    if result.filled is None:
        return ["- block caches not filled first: their filling shows as growth"]
    quads, rss, malloc = result.filled
    return [f"- before the first session, {quads:,} quads of fresh terms were written to graphs "
            f"of their own (batches of {FILLER_BATCH:,}, each flushed and read back) to fill the "
            f"store's block caches, which otherwise fill over tens of thousands of sessions "
            f"(see the notes): RSS {rss:.1f} MiB, malloc {_mib(malloc)} MiB after it"]


def _middle(result: Soak) -> Window:
    """The last window that closed at or before half the sessions (the first, if none did)."""
    half = result.windows[-1].end / 2
    return max((w for w in result.windows if w.end <= half), key=lambda w: w.end,
               default=result.windows[0])


def _verdict(passed: bool) -> str:
    return "pass" if passed else "**FAIL**"


def _mib(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _allocator_lines(result: Soak) -> list[str]:
    first, last = result.windows[0], result.windows[-1]
    if first.malloc_mib is None or last.malloc_mib is None:
        return ["- malloc: not measured (the C library is not glibc 2.33 or later)"]
    lines = [f"- malloc {first.malloc_mib:.1f} MiB after the first window, "
             f"{last.malloc_mib:.1f} MiB after the last "
             f"({last.malloc_mib - first.malloc_mib:+.1f} MiB)"]
    if result.caches:
        caches = "; ".join(f"{kind} of {capacity / 2**20:.0f} MiB for {users} column "
                           f"famil{'y' if users == 1 else 'ies'}"
                           for kind, capacity, users in result.caches)
        total = sum(capacity for _, capacity, _ in result.caches) / 2**20
        lines.append(f"- the store's RocksDB block caches (from its LOG; Oxigraph sets them): "
                     f"{caches}; {total:.0f} MiB in all, the most that reads can keep cached")
    if result.rereads:
        reads = ", then ".join(f"{_mib(malloc)} MiB (RSS {rss:.1f})"
                               for rss, malloc in result.rereads)
        lines.append(f"- reading every quad of the store after the soak: malloc "
                     f"{last.malloc_mib:.1f} MiB before, {reads} after each of "
                     f"{len(result.rereads)} reads")
    return lines


def _python_lines(traced: Soak) -> list[str]:
    first, last = traced.windows[0], traced.windows[-1]
    if first.python_mib is None or last.python_mib is None:
        return []
    growth = ", ".join(f"{where} {size / 1024:+.1f} KiB" for where, size in traced.growth)
    return [f"- Python heap (tracemalloc, in a second soak of {last.end:,} sessions with the same "
            f"windows and validation): {first.python_mib * 1024:.0f} KiB after the first window, "
            f"{last.python_mib * 1024:.0f} KiB after the last; most grown lines: {growth}"]


def draw(result: Soak, traced: Soak, throughput: dict[str, dict[int, float]],
         path: Path) -> None:
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
    if all(w.malloc_mib is not None for w in result.windows):
        memory.plot(ends, [w.malloc_mib for w in result.windows], color="black",
                    linestyle="--", label="malloc in use")
    if all(w.python_mib is not None for w in traced.windows):
        memory.plot([w.end for w in traced.windows], [w.python_mib for w in traced.windows],
                    color="tab:green", linestyle="-.", label="Python heap (traced soak)")
    memory.set_ylabel("memory (MiB)")
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
    parser = BenchParser("benchmarks.soak_bench", __doc__.split("\n\n")[0], SIZES,
                         out="soak.md")
    parser.add_argument("--work", type=Path, help="Scratch directory (default: a temporary one).")
    parser.add_argument("--plot", type=Path, default=RESULTS / "soak.png")
    parser.add_argument("--writer", nargs=3, metavar=("STORE", "COUNT", "BATCH"),
                        help=argparse.SUPPRESS)
    args = parser.parse(argv)
    if args.writer:
        writer(args.writer[0], int(args.writer[1]), int(args.writer[2]))
        return 0
    load_before = load_average()
    counts = [int(n) for n in args.writers.split(",")]
    work = args.work or Path(tempfile.mkdtemp(prefix="tgsparql-soak-"))
    work.mkdir(parents=True, exist_ok=True)

    path = work / "soak-store"
    shutil.rmtree(path, ignore_errors=True)
    demo_store(path)
    print(f"soak: {args.sessions} sessions into {path}", file=sys.stderr)
    result = soak(path, args.sessions, args.window, args.validate_every, filler=args.filler)
    traced_path = work / "traced-store"
    shutil.rmtree(traced_path, ignore_errors=True)
    demo_store(traced_path)
    print(f"traced soak: {args.traced_sessions} sessions into {traced_path}", file=sys.stderr)
    traced = soak(traced_path, args.traced_sessions, args.window, args.validate_every,
                  rereads=0, trace=True)

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

    plot = args.plot
    plot.parent.mkdir(parents=True, exist_ok=True)
    draw(result, traced, throughput, plot)
    print(write(args.out, render(result, traced, args.sessions, throughput, plot, load_before)),
          end="")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

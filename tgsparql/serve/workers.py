"""The query processes of `tgsparql serve` and the pool that hands them jobs.

Processes rather than threads because a running pyoxigraph query cannot be cancelled from
Python: a query past `--timeout` is stopped by killing its worker (a fresh one takes its place),
and one past `--max-memory` dies of its process's RLIMIT_DATA (answered 503).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import queue
import resource
import signal
import threading
import time
from multiprocessing.connection import Connection

from tgsparql.serve.ask import offer_in_nav
from tgsparql.serve.config import ServerConfig, size_text
from tgsparql.serve.jobs import Job, SparqlJob, run
from tgsparql.serve.readonly import open_served
from tgsparql.serve.sparql import Answer, ProtocolError
from tgsparql.stores.store import StoreError

OUT_OF_MEMORY_EXIT = 3
OUT_OF_MEMORY = (OUT_OF_MEMORY_EXIT, -signal.SIGABRT, -signal.SIGKILL)
"""How a worker past --max-memory ends: Python's MemoryError exits with OUT_OF_MEMORY_EXIT, a
failed allocation in pyoxigraph's Rust code aborts, and the kernel's OOM killer kills."""


class Worker:
    """One query process and its end of the pipe."""

    def __init__(self, config: ServerConfig) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child, config), daemon=True)
        self.process.start()
        child.close()

    def ready(self, timeout: float = 60.0) -> bool:
        try:
            return self.conn.poll(timeout) and self.conn.recv() == "ready"
        except (EOFError, OSError):
            return False

    def stop(self) -> None:
        self.process.kill()
        self.process.join()
        self.conn.close()


class WorkerPool:
    """Runs each job in an idle worker; a job past the timeout kills its worker (503), and so
    does one past the memory bound (its worker dies of it).

    There are `workers + page_workers` processes, and /sparql queries may hold `workers` of them
    at once: slow SPARQL queries cannot starve the pages and saved queries, which may use any.
    The idle worker used last goes first: its store handle's caches hold what recent queries
    read, where a round robin would spread a dashboard's reads over every process's caches."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self._idle: queue.LifoQueue[Worker] = queue.LifoQueue()
        self._all: set[Worker] = set()
        self._busy_since: dict[Worker, float] = {}
        self._lock = threading.Lock()
        self._sparql_slots = threading.BoundedSemaphore(config.workers)
        starting = [self._spawn() for _ in range(config.workers + config.page_workers)]
        for worker in starting:
            if not worker.ready():
                self.close()
                raise StoreError("a query worker did not start" + (
                    f" within --max-memory {size_text(config.max_memory)}"
                    if worker.process.exitcode in OUT_OF_MEMORY else ""))
            self._idle.put(worker)

    def run(self, job: Job, timeout: float | None = None) -> Answer:
        """The job's answer, within `timeout` seconds (--timeout unless shorter); a /sparql job
        first waits for one of its slots."""
        if timeout is not None and timeout < self.config.timeout:
            return self._run(job, timeout, timeout)
        timeout = self.config.timeout
        if not isinstance(job, SparqlJob):
            return self._run(job, timeout)
        started = time.monotonic()
        if not self._sparql_slots.acquire(timeout=timeout):
            raise self._busy()
        try:
            return self._run(job, max(0.0, started + timeout - time.monotonic()))
        finally:
            self._sparql_slots.release()

    def _busy(self) -> ProtocolError:
        return ProtocolError(503, f"every query worker stayed busy for {self.config.timeout:g} s "
                                  "(--timeout); try again later", retry_after=self._next_free())

    def _run(self, job: Job, wait: float, timeout: float | None = None) -> Answer:
        timeout = self.config.timeout if timeout is None else timeout
        try:
            worker = self._idle.get(timeout=wait)
        except queue.Empty:
            raise self._busy() from None
        with self._lock:
            self._busy_since[worker] = time.monotonic()
        try:
            worker.conn.send(job)
            if worker.conn.poll(timeout):
                status, content_type, body = worker.conn.recv()
                self._done(worker)
                self._idle.put(worker)
                return Answer(status, content_type, body)
        except (EOFError, OSError):
            self._replace(worker)
            if worker.process.exitcode in OUT_OF_MEMORY and self.config.max_memory:
                raise ProtocolError(503, "the query needed more memory than the "
                                         f"{size_text(self.config.max_memory)} bound (--max-memory) "
                                         "and was stopped") from None
            raise ProtocolError(500, "the query worker failed; it has been restarted") from None
        self._replace(worker)
        raise ProtocolError(503, f"the query ran longer than the {timeout:g} s timeout "
                                 "(--timeout) and was stopped")

    def _next_free(self) -> int:
        """Whole seconds until the first busy worker is done or stopped by the timeout."""
        with self._lock:
            started = min(self._busy_since.values(), default=time.monotonic())
        return max(1, math.ceil(started + self.config.timeout - time.monotonic()))

    def _done(self, worker: Worker) -> None:
        with self._lock:
            self._busy_since.pop(worker, None)

    def close(self) -> None:
        with self._lock:
            for worker in self._all:
                worker.stop()
            self._all.clear()

    def _spawn(self) -> Worker:
        worker = Worker(self.config)
        with self._lock:
            self._all.add(worker)
        return worker

    def _replace(self, worker: Worker) -> None:
        """Kill the worker now; its successor joins the pool once it has started."""
        self._done(worker)
        with self._lock:
            self._all.discard(worker)
        worker.stop()

        def start() -> None:
            fresh = self._spawn()
            if fresh.ready():
                self._idle.put(fresh)

        threading.Thread(target=start, daemon=True).start()


def _worker_main(conn: Connection, config: ServerConfig) -> None:
    """A worker's life: bound its memory, open the store read-only, then answer jobs until the
    pipe closes."""
    if config.max_memory:
        # RLIMIT_DATA counts what allocators use (heap and private writable mappings), not the
        # address space merely reserved, which for pyoxigraph and glibc is several times more.
        resource.setrlimit(resource.RLIMIT_DATA, (config.max_memory, config.max_memory))
        os.environ["RUST_BACKTRACE"] = "0"  # a failed allocation: one line, not a backtrace
    store = open_served(config)
    if config.ask is not None:
        offer_in_nav()
    conn.send("ready")
    while True:
        try:
            job: Job = conn.recv()
        except EOFError:
            return
        try:
            answer = run(store, config, job)
        except MemoryError:
            os._exit(OUT_OF_MEMORY_EXIT)  # the pool answers 503 and starts a fresh process
        except ProtocolError as error:
            answer = job.failure(config, error.status, error.message)
        except Exception as error:  # a failing request must not take the worker with it
            # One line: what follows the first (a response body quoted in it) is not repeated.
            first = (str(error).splitlines() or [""])[0][:300]
            answer = job.failure(config, 500, f"{type(error).__name__}: {first}")
        conn.send((answer.status, answer.content_type, answer.body))

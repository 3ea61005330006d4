"""`tgsparql serve`: a read-only SPARQL endpoint, saved BI queries and trace pages over a store.

Design. The HTTP side is the standard library's `ThreadingHTTPServer`: it only parses requests,
checks the token and sizes, and relays; every query runs in a small pool of worker processes.
Processes rather than threads because a running pyoxigraph query cannot be cancelled from
Python: a query past `--timeout` is stopped by killing its worker (a fresh one takes its place),
which no in-process server, WSGI or ASGI, could do. With the work in the workers, a third-party
web framework would add a dependency without removing any of this code. Wrapping
`oxigraph serve-read-only` instead was measured (`benchmarks/results/serve.md`): the same engine,
10–20 % more requests per second, but it reads the store as it was when it started and never
sees a session recorded after that, so it cannot serve a store that is still being written.

Sharing the store with a writer: see readonly.py, how each worker keeps a read-only handle
that sees every session committed before its request started.

Serving a remote store (`--endpoint`). Each worker holds a RemoteStore instead and forwards every
query to the endpoint; the results come back through pyoxigraph's parsers and are served with the
same content negotiation, caps and timeout (the worker waiting on a slow endpoint is stopped like
one running a slow query). A failing endpoint is answered 502 with its one-line reason.

Hostile clients. Every wait, size and allocation is bounded: a query by --timeout (its process
killed) and by --max-memory (its process's RLIMIT_DATA: a failed allocation ends the process,
and the query is answered 503); a request by `max_request` (256 KiB), whether its body comes
with a Content-Length or in chunks, and its request line with it. /sparql may hold --workers
of the processes at once, so one is always left for the pages and saved queries. A Host header must
name the server, so a page elsewhere cannot reach it through a browser by rebinding its own
name to this address; and every answer forbids scripts, sniffing, framing and referrers.

Asking (`--ask`, ask.py). The main process then holds the store as its one writer and runs each
ask's pipeline in its request's thread, streaming the messages out as they come; the query
processes read on as before and see each session once it is committed.

Where it lives: `config` (ServerConfig), `readonly` (the store a worker reads), `jobs` (what a
worker does, one typed job per kind of request), `workers` (the processes and their pool),
`routes` (the HTTP handler), `ask` (--ask); this module assembles them.
"""

from __future__ import annotations

import json
from http.server import ThreadingHTTPServer

from tgsparql.asking.llm.base import Backend
from tgsparql.record.migrate import MIGRATE_HINT, needs_migration
from tgsparql.serve.ask import Asker, offer_in_nav
from tgsparql.serve.config import ServerConfig, size_text
from tgsparql.serve.readonly import open_served
from tgsparql.serve.routes import Handler, Hosts
from tgsparql.serve.workers import WorkerPool
from tgsparql.stores.remote import display_url
from tgsparql.stores.store import StoreError

__all__ = ["ServerConfig", "TgsparqlServer", "describe", "is_loopback"]


class TgsparqlServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, config: ServerConfig, ask_backend: Backend | None = None) -> None:
        self.config = config
        self.hosts = Hosts.of(config)
        if config.endpoint is not None:  # fail here, once, rather than in every worker
            with open_served(config) as remote:
                remote.run("serve/endpoint_reachable")
        _refuse_unmigrated(config)
        self.asker: Asker | None = None
        if config.ask is not None:
            if ask_backend is None:
                raise StoreError("--ask needs an LLM backend")
            assert config.store is not None
            self.asker = Asker(config.store, ask_backend, collection=config.collection,
                               limits=config.ask, lock_timeout=config.lock_timeout)
            offer_in_nav()
        try:
            self.pool = WorkerPool(config)
            try:
                super().__init__((config.host, config.port), Handler)
            except OSError:
                self.pool.close()
                raise
        except BaseException:
            if self.asker is not None:
                self.asker.close()
            raise

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def server_close(self) -> None:
        super().server_close()
        if self.asker is not None:
            self.asker.close()
        self.pool.close()


def _refuse_unmigrated(config: ServerConfig) -> None:
    """The saved BI queries read fields older versions did not record: on such a collection
    they would count wrong, so serving waits until the store is migrated."""
    with open_served(config) as store:
        graph = config.collection.graph
        if needs_migration(store, graph):
            raise StoreError(f"{graph.value} holds sessions recorded by an older version, which "
                             f"the saved BI queries would miscount; {MIGRATE_HINT}")


def is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def describe(server: TgsparqlServer) -> str:
    """The startup line: where it listens and what it serves."""
    config = server.config
    served = {"store": str(config.store)} if config.endpoint is None else {
        "endpoint": display_url(config.endpoint.query_url), "dialect": config.dialect}
    return json.dumps({
        "url": server.url, **served, "token": config.token is not None,
        "timeout_s": config.timeout, "max_results": config.max_results,
        "max_memory": size_text(config.max_memory), "workers": config.workers,
        "page_workers": config.page_workers,
        "ask": None if config.ask is None else {
            "in_flight": config.ask.in_flight, "per_minute": config.ask.per_minute},
        "hosts": server.hosts.described(), "cors": list(config.cors),
        "csv_raw": config.csv_raw,
    })

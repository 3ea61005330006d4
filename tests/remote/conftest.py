"""Real SPARQL servers for the remote-store tests, started on 127.0.0.1 and stopped afterwards.

Oxigraph server 0.5 (`rdf12`) is the root conftest's `oxigraph` fixture (tests/servers.py), shared
with the tests of `tgsparql serve`. Oxigraph server 0.4 serves `rdfstar`; its package pins a
pyoxigraph of its own, so it is installed in a virtual environment of its own under the test cache
(TGSPARQL_TEST_CACHE, default ~/.cache/tgsparql-tests), made on first use. Virtuoso 7 (Debian's
`virtuoso-opensource`) serves `reification`: a private instance with a generated virtuoso.ini and
a database directory of its own, SPARQL update granted to its SPARQL user through isql; its
default graph is the union of all graphs, so the KG lives in the named graph VIRTUOSO_KG. Each
server is shared by the session; each test starts from an empty store.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.remote.faulty_proxy import FaultyProxy

# Server and free_port are imported from here by other tests too.
from tests.servers import STARTUP_SECONDS, Server, free_port, serve_oxigraph, stop, wait_until_up
from tgsparql.stores.remote import RemoteStore

VIRTUOSO_KG = "urn:tgsparql:kg"
VIRTUOSO_CLEAR = ('DELETE { GRAPH ?g { ?s ?p ?o } } WHERE { GRAPH ?g { ?s ?p ?o } '
                  'FILTER(STRSTARTS(STR(?g), "urn:")) }')
VIRTUOSO_MISSING = ("Virtuoso 7 is not installed: no virtuoso-t and isql-vt on PATH "
                    "(apt-get install virtuoso-opensource)")
"""Virtuoso ignores DROP ALL; this empties every graph of the tests (all are `urn:` IRIs) and
leaves Virtuoso's own graphs alone."""
VIRTUOSO_INI = """\
[Database]
DatabaseFile = {db}/virtuoso.db
ErrorLogFile = {db}/virtuoso.log
LockFile = {db}/virtuoso.lck
TransactionFile = {db}/virtuoso.trx
xa_persistent_file = {db}/virtuoso.pxa
[TempDatabase]
DatabaseFile = {db}/virtuoso-temp.db
TransactionFile = {db}/virtuoso-temp.trx
[Parameters]
ServerPort = 127.0.0.1:{sql_port}
DisableUnixSocket = 1
CheckpointInterval = 0
NumberOfBuffers = 20000
MaxDirtyBuffers = 15000
DirsAllowed = .
[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerRoot = {db}
ServerThreads = 10
Charset = UTF-8
[SPARQL]
ResultSetMaxRows = 1000000
MaxQueryExecutionTime = 300
"""


def _oxigraph_04() -> Path:
    """The 0.4 server binary, installed on first use into a cached environment of its own.
    Test runs on one machine install it in turn (a lock beside it), and a run takes it only
    once an install has finished (a mark written last): one run's half-written binary is
    never another's to start."""
    cache = Path(os.environ.get("TGSPARQL_TEST_CACHE") or Path.home() / ".cache" / "tgsparql-tests")
    env = cache / "oxigraph-0.4"
    binary = env / "bin" / "oxigraph"
    installed = env / "installed"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "oxigraph-0.4.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed.is_file():
            steps = [[sys.executable, "-m", "venv", "--clear", str(env)],
                     [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet",
                      "oxigraph>=0.4,<0.5"]]
            for step in steps:
                done = subprocess.run(step, capture_output=True, text=True, timeout=300)
                if done.returncode != 0:
                    lines = (done.stderr or done.stdout).strip().splitlines()
                    pytest.skip(f"cannot install Oxigraph server 0.4 in {env}: "
                                + (lines[-1] if lines else f"exit status {done.returncode}"))
            installed.touch()
    return binary


@pytest.fixture(scope="session")
def oxigraph04(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from serve_oxigraph(_oxigraph_04(), tmp_path_factory.mktemp("oxigraph04"), "rdfstar")


def virtuoso_binaries() -> tuple[str, str] | None:
    """The server and its isql client: Debian names them virtuoso-t and isql-vt."""
    server = shutil.which("virtuoso-t")
    isql = shutil.which("isql-vt") or shutil.which("isql-v")
    return (server, isql) if server and isql else None


def _grant_update(isql: str, sql_port: int, process: subprocess.Popen[bytes]) -> None:
    """SPARQL update for the endpoint's SPARQL user, once the SQL port takes connections."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        done = subprocess.run(
            [isql, f"127.0.0.1:{sql_port}", "dba", "dba", 'exec=GRANT SPARQL_UPDATE TO "SPARQL";'],
            capture_output=True, text=True, timeout=STARTUP_SECONDS)
        if done.returncode == 0 and "Error" not in done.stdout + done.stderr:
            return
        if process.poll() is not None or time.monotonic() > deadline:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise RuntimeError("cannot grant SPARQL_UPDATE through isql: "
                               + (lines[-1] if lines else f"exit status {done.returncode}"))
        time.sleep(0.2)


def serve_virtuoso(server: str, isql: str, db: Path) -> Iterator[Server]:
    """A private Virtuoso on free loopback ports, its database in `db`, update granted."""
    sql_port, http_port = free_port(), free_port()
    ini = db / "virtuoso.ini"
    ini.write_text(VIRTUOSO_INI.format(db=db, sql_port=sql_port, http_port=http_port))
    with (db / "server.out").open("wb") as out:
        process = subprocess.Popen([server, "+foreground", "+configfile", str(ini)], cwd=db,
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        try:
            wait_until_up(process, http_port)
        except RuntimeError as error:
            log = (db / "server.out").read_text(errors="replace").strip().splitlines()
            raise RuntimeError(f"Virtuoso: {error}; its log ends: {log[-1:]}") from None
        _grant_update(isql, sql_port, process)
        yield Server("127.0.0.1", http_port, "/sparql", "/sparql", None, "reification",
                     VIRTUOSO_KG, VIRTUOSO_CLEAR)
    finally:
        stop(process)


@pytest.fixture(scope="session")
def virtuoso(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    binaries = virtuoso_binaries()
    if binaries is None:
        pytest.skip(VIRTUOSO_MISSING)
    yield from serve_virtuoso(*binaries, tmp_path_factory.mktemp("virtuoso"))


@pytest.fixture(scope="session")
def proxy_server(oxigraph: Server) -> Iterator[FaultyProxy]:
    proxy = FaultyProxy((oxigraph.host, oxigraph.port))
    try:
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture
def proxy(proxy_server: FaultyProxy, oxigraph: Server) -> Iterator[FaultyProxy]:
    """The proxy with no fault and no requests counted, in front of an empty server."""
    oxigraph.store().update("DROP ALL")
    proxy_server.inject(None)
    yield proxy_server
    proxy_server.inject(None)


@pytest.fixture
def remote(proxy: FaultyProxy, oxigraph: Server) -> Iterator[RemoteStore]:
    """A RemoteStore through the proxy, quick to give up: 2 retries, 10 ms first pause."""
    with oxigraph.store(proxy.url, retries=2, backoff=0.01, read_timeout=10) as store:
        yield store

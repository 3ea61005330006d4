"""Many sessions recorded at once — from threads sharing one store, from processes taking turns
on one on-disk store, and from threads and processes writing side by side to one SPARQL server —
lose nothing, all validate, and never share an IRI."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import REPO

from tests.servers import oxigraph_server
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.rdf import vocab
from tgsparql.record.explain import list_sessions
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.locking import LOCK_NAME, StoreBusy, TurnTakingStore, exclusive_store
from tgsparql.stores.store import Store, StoreError, open_store
from tgsparql.testing import assert_conforms

WORKER = REPO / "tests" / "writer_process.py"
QUESTIONS = [
    "Where was the scientist who discovered polonium born?",
    "Which prize did the daughter of Pierre Curie win?",
    "Who married Marie Curie?",
    "Where did Pierre Curie die?",
]


def sessions_of(store: Store) -> list:
    return list_sessions(store, vocab.DEFAULT_COLLECTION, 100_000)


def check_all_recorded(store: Store, expected: list[str]) -> None:
    """Every expected session is there, complete, once; the whole store conforms."""
    found = sessions_of(store)
    assert sorted(s.session for s in found) == sorted(expected)
    assert len(set(expected)) == len(expected)
    assert {s.status for s in found} == {"complete"}
    assert_conforms(store)


def test_threads_sharing_one_store_lose_nothing(tgsparql_demo_store_dir: Path) -> None:
    threads, per_thread = 8, 6
    with open_store(tgsparql_demo_store_dir) as store:
        rag = GraphRag(store, OfflineBackend())
        start = threading.Barrier(threads)

        def work(n: int) -> list[str]:
            start.wait()
            mine = []
            for i in range(per_thread):
                answer, messages = rag.ask(QUESTIONS[(n + i) % len(QUESTIONS)])
                assert messages[-1].error is None and answer
                mine.append(messages[0].explain_id)
            return mine

        with ThreadPoolExecutor(threads) as pool:
            recorded = [iri for batch in pool.map(work, range(threads)) for iri in batch]
        assert len(recorded) == threads * per_thread
        check_all_recorded(store, recorded)


def test_threads_each_with_a_remote_store_on_one_endpoint_lose_nothing(
    tgsparql_demo_store_dir: Path
) -> None:
    from tgsparql.stores.remote import RemoteStore

    threads, per_thread = 4, 4
    with oxigraph_server(tgsparql_demo_store_dir) as base:
        endpoint = Endpoint(base + "/query", update_url=base + "/update")

        def work(n: int) -> list[str]:
            with RemoteStore(endpoint) as store:
                rag = GraphRag(store, OfflineBackend(), index_labels=False)
                return [rag.ask(QUESTIONS[(n + i) % len(QUESTIONS)])[1][0].explain_id
                        for i in range(per_thread)]

        with ThreadPoolExecutor(threads) as pool:
            recorded = [iri for batch in pool.map(work, range(threads)) for iri in batch]
        with RemoteStore(endpoint) as store:
            check_all_recorded(store, recorded)


def run_writers(path: Path | str, processes: int, count: int, batch: int) -> list[list[str]]:
    workers = [
        subprocess.Popen([sys.executable, str(WORKER), str(path), str(count), str(batch)],
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(processes)
    ]
    outputs = []
    for worker in workers:
        out, err = worker.communicate(timeout=50)
        assert worker.returncode == 0, err
        outputs.append(out.splitlines())
    return outputs


def test_processes_taking_turns_on_one_disk_store_lose_nothing(
    tgsparql_demo_store_dir: Path
) -> None:
    outputs = run_writers(tgsparql_demo_store_dir, processes=4, count=6, batch=2)
    done = [line.split()[1] for lines in outputs for line in lines if line.startswith("done ")]
    assert len(done) == 4 * 6
    with open_store(tgsparql_demo_store_dir) as store:
        check_all_recorded(store, done)


def test_processes_writing_at_once_to_one_endpoint_lose_nothing(
    tgsparql_demo_store_dir: Path
) -> None:
    from tgsparql.stores.remote import RemoteStore

    with oxigraph_server(tgsparql_demo_store_dir) as base:
        outputs = run_writers(base, processes=3, count=10, batch=0)
        done = [line.split()[1] for lines in outputs for line in lines if line.startswith("done ")]
        assert len(done) == 3 * 10
        with RemoteStore(Endpoint(base + "/query", update_url=base + "/update")) as store:
            check_all_recorded(store, done)


def test_a_second_writer_without_the_lock_gets_a_clear_error(tgsparql_demo_store_dir: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, pyoxigraph as ox; s = ox.Store(sys.argv[1]); "
         "print('open', flush=True); sys.stdin.read()", str(tgsparql_demo_store_dir)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "open\n"
        with pytest.raises(StoreError, match=r"another process has it open for writing \(one "
                                             r"writer process at a time; .*exclusive_store\)"):
            open_store(tgsparql_demo_store_dir)
        began = time.monotonic()
        with pytest.raises(StoreBusy, match="stayed busy for 0.3 s: a process that does not "
                                            "use the writer lock has it open"):
            with exclusive_store(tgsparql_demo_store_dir, timeout=0.3):
                pass
        assert time.monotonic() - began < 5
    finally:
        holder.communicate("", timeout=10)


def lock_holder(path: Path) -> subprocess.Popen[str]:
    """A process that holds the writer lock of `path` until its stdin closes."""
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; from tgsparql.stores.locking import exclusive_store\n"
         "with exclusive_store(sys.argv[1]):\n    print('held', flush=True); sys.stdin.read()",
         str(path)],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_a_waiting_writer_gets_the_store_once_the_holder_lets_go(
    tgsparql_demo_store_dir: Path
) -> None:
    holder = lock_holder(tgsparql_demo_store_dir)
    try:
        assert holder.stdout.readline() == "held\n"
        pid = (tgsparql_demo_store_dir / LOCK_NAME).read_text().strip()
        with pytest.raises(StoreBusy, match=f"process {pid} has it open for writing"):
            with exclusive_store(tgsparql_demo_store_dir, timeout=0.2):
                pass
        threading.Timer(0.3, lambda: holder.stdin.close()).start()
        with exclusive_store(tgsparql_demo_store_dir, timeout=20) as store:
            assert len(store.oxigraph) > 0
    finally:
        holder.wait(timeout=10)


def test_cli_commands_on_one_directory_take_turns(tgsparql_demo_store_dir: Path) -> None:
    from click.testing import CliRunner

    from tgsparql.cli import main

    holder = lock_holder(tgsparql_demo_store_dir)
    env = {"TGSPARQL_STORE": None, "TGSPARQL_ENDPOINT": None, "TGSPARQL_LOCK_TIMEOUT": None}
    query = ["query", "--store", str(tgsparql_demo_store_dir), "--no-stream", QUESTIONS[2]]
    try:
        assert holder.stdout.readline() == "held\n"
        busy = CliRunner().invoke(main, [*query, "--lock-timeout", "0.2"], env=env)
        assert busy.exit_code == 1
        assert busy.stderr == (f"error: the store at {tgsparql_demo_store_dir} stayed busy for "
                               f"0.2 s: process {holder.pid} has it open for writing\n")
        threading.Timer(0.5, lambda: holder.stdin.close()).start()
        waited = CliRunner().invoke(main, query, env=env)  # the default waits its turn
        assert waited.exit_code == 0, waited.output
    finally:
        holder.wait(timeout=10)
    with open_store(tgsparql_demo_store_dir) as store:
        (session,) = sessions_of(store)
        assert session.status == "complete"


def test_a_turn_taking_store_lets_other_writers_in_while_its_user_waits(
    tgsparql_demo_store_dir: Path
) -> None:
    shared = TurnTakingStore(tgsparql_demo_store_dir, timeout=5, step_aside_after=0.05)
    try:
        assert shared.ask("ASK { ?s ?p ?o }")
        with shared.stepping_aside():  # waits for the store to be given up, never sleeps
            with exclusive_store(tgsparql_demo_store_dir, timeout=30) as other:
                other.update("INSERT DATA { <urn:x:meanwhile> <urn:x:p> 1 }")
        assert shared.ask("ASK { <urn:x:meanwhile> ?p ?o }")  # its turn again, with the news
        assert shared.turns == 2
    finally:
        shared.close()


def test_a_turn_taking_store_keeps_the_store_through_quick_waits(
    tgsparql_demo_store_dir: Path
) -> None:
    shared = TurnTakingStore(tgsparql_demo_store_dir, step_aside_after=600)
    try:
        assert shared.ask("ASK { ?s ?p ?o }")
        with shared.stepping_aside():
            shared.update("INSERT DATA { <urn:x:a> <urn:x:p> 1 }")
        assert shared.ask("ASK { <urn:x:a> ?p ?o }")
        assert shared.turns == 1
    finally:
        shared.close()
    # closed: the lock is free at once
    with exclusive_store(tgsparql_demo_store_dir, timeout=0) as other:
        assert other.ask("ASK { <urn:x:a> ?p ?o }")


def test_a_turn_taking_store_dropping_caches_gives_up_its_turn_until_the_next_operation(
    tgsparql_demo_store_dir: Path
) -> None:
    shared = TurnTakingStore(tgsparql_demo_store_dir, step_aside_after=600)
    try:
        shared.update("INSERT DATA { <urn:x:a> <urn:x:p> 1 }")
        shared.drop_caches()
        with exclusive_store(tgsparql_demo_store_dir, timeout=0) as other:  # free at once
            assert other.ask("ASK { <urn:x:a> ?p ?o }")
        assert shared.ask("ASK { <urn:x:a> ?p ?o }")
        assert shared.turns == 2
    finally:
        shared.close()

"""A recording process killed with SIGKILL at a random moment leaves a store that opens, whose
complete sessions validate and whose interrupted session is reported incomplete."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from click.testing import CliRunner
from conftest import REPO

from tgsparql.cli import main
from tgsparql.data.loader import load_files
from tgsparql.rdf import vocab
from tgsparql.record.conformance import session_nodes
from tgsparql.record.explain import list_sessions
from tgsparql.stores.store import open_store
from tgsparql.testing import assert_conforms

WORKER = REPO / "tests" / "writer_process.py"
KILLS = 6  # at least this many, and on until one lands inside a session
MAX_KILLS = 30


def kill_at_random(path: Path, seed: int) -> tuple[list[str], list[str]]:
    """Start a writer, SIGKILL it 0–0.8 s into recording; the sessions it started and ended."""
    worker = subprocess.Popen([sys.executable, str(WORKER), str(path), "100000", "0"],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(worker.stdout), daemon=True)
    assert worker.stdout.readline().startswith("started ")  # the store is open and recording
    reader.start()
    time.sleep(random.Random(seed).uniform(0.0, 0.8))
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(timeout=10)
    reader.join(timeout=10)
    assert worker.returncode == -signal.SIGKILL
    whole = [line for line in lines if line.endswith("\n")]  # the kill can cut the last one
    started = [line.split()[1] for line in whole if line.startswith("started ")]
    done = [line.split()[1] for line in whole if line.startswith("done ")]
    return started, done


def check_after_kill(path: Path, done: list[str]) -> bool:
    """The store opens, nothing acknowledged is lost, complete sessions conform, and an
    interrupted session is what `tgsparql validate` reports; whether there was one."""
    with open_store(path) as store:  # opens: RocksDB replays its log
        found = {s.session: s for s in list_sessions(store, vocab.DEFAULT_COLLECTION, 10**6)}
        assert set(done) <= set(found)
        complete = [iri for iri, s in found.items() if s.status == "complete"]
        open_ = [iri for iri, s in found.items() if s.status is None]
        assert set(complete) | set(open_) == set(found) and len(open_) <= 1
        assert set(done) <= set(complete) and len(complete) - len(done) <= 1
        if complete:
            nodes = [n for iri in complete for n in session_nodes(store, iri)]
            assert_conforms(store, focus=nodes)

    result = CliRunner().invoke(main, ["validate", "--store", str(path), "--format", "json"],
                                env={"TGSPARQL_STORE": None, "TGSPARQL_ENDPOINT": None})
    if not open_:
        assert result.exit_code == 0, result.output
        return False
    (interrupted,) = open_
    assert result.exit_code == 1, result.output
    violations = [r for r in json.loads(result.stdout)["results"]
                  if r["severity"] == "Violation"]
    assert {r["focusNode"]["value"] for r in violations} == {interrupted}
    messages = {r["message"] for r in violations}
    assert any("never left open" in m for m in messages)
    assert any("ends with exactly one tg:status" in m for m in messages)
    return True


def test_writers_killed_at_random_points_leave_valid_stores_and_flag_the_interrupted(
    tmp_path: Path, tgsparql_demo_file: Path
) -> None:
    interrupted = 0
    seed = 0
    while seed < KILLS or (not interrupted and seed < MAX_KILLS):
        path = tmp_path / f"kg{seed}"
        with open_store(path) as store:
            load_files(store, [tgsparql_demo_file])
        _, done = kill_at_random(path, seed)
        interrupted += check_after_kill(path, done)
        seed += 1
    assert interrupted >= 1  # the kills really landed inside sessions, not only between them

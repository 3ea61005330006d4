"""What an LLM may cost a session: bounded waits, whoever else writes to the store meanwhile.

Real `tgsparql` processes against a local server that accepts and never answers."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import tgsparql_process
from llm.silent_server import SilentServer, silent_llm  # noqa: F401  (fixture)
from tgsparql.explain import list_sessions
from tgsparql.llm.base import DEFAULT_LLM_RETRIES, DEFAULT_LLM_TIMEOUT
from tgsparql.llm.openai_backend import OpenAIBackend
from tgsparql.store import open_store
from tgsparql.templates import Templates

LONGEST_BACKOFF = 8.0
"""The openai client's longest pause between tries."""


def test_the_default_wait_fails_a_dead_llm_within_a_minute() -> None:
    backend = OpenAIBackend(base_url="http://127.0.0.1:9/v1")
    assert backend.client.timeout == DEFAULT_LLM_TIMEOUT
    assert backend.client.max_retries == DEFAULT_LLM_RETRIES
    worst = (DEFAULT_LLM_RETRIES + 1) * DEFAULT_LLM_TIMEOUT + DEFAULT_LLM_RETRIES * LONGEST_BACKOFF
    assert worst <= 60


@pytest.mark.parametrize("given", ["flags", "environment"])
def test_a_dead_llm_fails_the_session_in_time_and_never_locks_other_writers_out(
    demo_dir: Path, tmp_path: Path, silent_llm: SilentServer, given: str
) -> None:
    timeout = 20
    wait = (["--llm-timeout", timeout, "--llm-retries", 0] if given == "flags" else [])
    env = ({"TGSPARQL_LLM_TIMEOUT": str(timeout), "TGSPARQL_LLM_RETRIES": "0"}
           if given == "environment" else {})
    query = tgsparql_process("query", "Where was Marie Curie born?", "--store", demo_dir,
                     "--llm", "openai", "--base-url", silent_llm.base_url, "--model", "m",
                     "--format", "jsonl", *wait, **env)
    try:
        assert silent_llm.requested.wait(timeout=120), "the query never asked its LLM"
        asked = time.monotonic()
        # The query now waits for its LLM; another writer gets its turn on the store meanwhile.
        extra = tmp_path / "extra.nt"
        extra.write_text("<urn:x:meanwhile> <urn:x:p> \"written while the LLM hung\" .\n")
        # Far shorter than the LLM's timeout: were the store held across the LLM call, this
        # writer would give up long before the query let go of it.
        writer = tgsparql_process("load", "--store", demo_dir, "--lock-timeout", 5, extra)
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        assert out.startswith(f"loaded {extra}: 1 quads")
        assert query.poll() is None, "the query ended before the other writer was done"
        out, err = query.communicate(timeout=120)
        waited = time.monotonic() - asked
    finally:
        query.kill()
        query.wait()
    assert query.returncode == 1, err
    last = json.loads(out.splitlines()[-1])
    assert last["message_type"] == "error"
    assert "selection failed: LLM request to" in last["error"]["message"]
    assert "timed out" in last["error"]["message"].lower()
    assert waited < timeout + 30  # its own timeout, not the 120 s x 3 tries of the past
    with open_store(demo_dir) as store:
        [session] = list_sessions(store, Templates(), "explainability", 10)
        assert session.status == "failed"
        assert store.ask('ASK { <urn:x:meanwhile> ?p ?o }')

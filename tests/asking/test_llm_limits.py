"""What an LLM may cost a session: bounded waits, whoever else writes to the store meanwhile,
and bounded text, however much it writes.

Real `tgsparql` processes against local servers: one that accepts and never answers, and a
scripted one that replies with megabytes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import tgsparql_process

from tests.asking.llm.fake_openai import (  # noqa: F401  (fixture)
    FakeOpenAI, Reply, fake_openai, prompt_facts,
)
from tests.asking.llm.silent_server import SilentServer, silent_llm  # noqa: F401  (fixture)
from tgsparql.asking.llm.base import (
    DEFAULT_LLM_RETRIES, DEFAULT_LLM_STREAM_TIMEOUT, DEFAULT_LLM_TIMEOUT,
)
from tgsparql.asking.llm.openai_backend import MAX_BACKOFF, OpenAIBackend
from tgsparql.asking.pipeline import OutputLimits
from tgsparql.rdf import vocab
from tgsparql.record.explain import list_sessions
from tgsparql.stores.store import open_store

MEGABYTES = 5 * 1024 * 1024


def test_the_default_wait_fails_a_dead_llm_within_five_minutes() -> None:
    # A CPU model may read a long prompt for a minute before its first token: the default
    # waits for that, and fails a server that never answers after one retry.
    backend = OpenAIBackend(base_url="http://127.0.0.1:9/v1")
    assert backend.first_token_timeout == DEFAULT_LLM_TIMEOUT
    assert backend.stream_timeout == DEFAULT_LLM_STREAM_TIMEOUT < DEFAULT_LLM_TIMEOUT
    assert backend.client.timeout.read == DEFAULT_LLM_TIMEOUT
    assert backend.max_retries == DEFAULT_LLM_RETRIES
    assert backend.client.max_retries == 0  # the backend retries, closing what it abandons
    worst = (DEFAULT_LLM_RETRIES + 1) * DEFAULT_LLM_TIMEOUT + DEFAULT_LLM_RETRIES * MAX_BACKOFF
    assert worst <= 300


@pytest.mark.parametrize("given", ["flags", "environment"])
def test_a_dead_llm_fails_the_session_in_time_and_never_locks_other_writers_out(
    tgsparql_demo_store_dir: Path, tmp_path: Path, silent_llm: SilentServer, given: str
) -> None:
    timeout = 20
    wait = (["--llm-timeout", timeout, "--llm-retries", 0] if given == "flags" else [])
    env = ({"TGSPARQL_LLM_TIMEOUT": str(timeout), "TGSPARQL_LLM_RETRIES": "0"}
           if given == "environment" else {})
    query = tgsparql_process("query", "Where was Marie Curie born?",
                             "--store", tgsparql_demo_store_dir,
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
        writer = tgsparql_process("load", "--store", tgsparql_demo_store_dir,
                                  "--lock-timeout", 5, extra)
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
    assert last["error"]["message"].startswith(
        f"selection failed: the LLM server {silent_llm.base_url} did not answer in time: "
        f"no first token within {timeout} s")
    assert "--llm-timeout or TGSPARQL_LLM_TIMEOUT" in last["error"]["message"]
    assert waited < timeout + 30  # its own timeout, not the 120 s x 3 tries of the past
    with open_store(tgsparql_demo_store_dir) as store:
        [session] = list_sessions(store, vocab.DEFAULT_COLLECTION, 10)
        assert session.status == "failed"
        assert store.ask('ASK { <urn:x:meanwhile> ?p ?o }')


def rambling_selection(body: dict) -> Reply:
    """Selects the first edge of the prompt, with a reason of megabytes."""
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    [first, *_] = prompt_facts(prompt)
    return Reply(json.dumps({"id": first["id"], "reasoning": "because " * (MEGABYTES // 8)}))


def run(*args: object, **env: str) -> tuple[int, str, str]:
    process = tgsparql_process(*args, **env)
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


@pytest.mark.parametrize("limits", ["default", "flags", "environment"])
def test_megabytes_from_the_llm_are_cut_flagged_and_the_session_completes(
    tgsparql_demo_store_dir: Path, fake_openai: FakeOpenAI, limits: str
) -> None:
    reason_chars, answer_chars = ((OutputLimits.reason_chars, OutputLimits.answer_chars)
                                  if limits == "default" else (100, 500))
    flags = (["--max-reason-chars", 100, "--max-answer-chars", 500] if limits == "flags" else [])
    env = ({"TGSPARQL_MAX_REASON_CHARS": "100", "TGSPARQL_MAX_ANSWER_CHARS": "500"}
           if limits == "environment" else {})
    streamed = limits != "flags"
    answer = ["Warsaw " * 146] * (MEGABYTES // 1022) if streamed else "Warsaw " * (MEGABYTES // 7)
    fake_openai.script(rambling_selection, Reply(answer))
    code, out, err = run("query", "Where was Marie Curie born?", "--store", tgsparql_demo_store_dir,
                         "--llm", "openai", "--base-url", fake_openai.base_url, "--model", "m",
                         "--format", "jsonl", "--validate", *flags,
                         *([] if streamed else ["--no-stream"]), **env)
    assert code == 0, err
    messages = [json.loads(line) for line in out.splitlines()]
    printed = "".join(m.get("response") or "" for m in messages if m.get("message_type") == "chunk")
    assert printed == ("Warsaw " * (answer_chars // 7 + 1))[:answer_chars]
    assert messages[-1]["validation"]["conforms"] is True
    session = next(m["explain_id"] for m in messages if m.get("message_type") == "explain")
    code, out, err = run("explain", session, "--store", tgsparql_demo_store_dir, "--format", "json")
    assert code == 0, err
    explained = json.loads(out)
    assert explained["status"] == "complete"
    [edge] = explained["selected"]
    assert edge["reasoning"] == ("because " * (reason_chars // 8 + 1))[:reason_chars]
    assert edge["reasoning_truncated"] is True
    assert explained["answer"] == printed
    assert explained["answer_truncated"] is True and explained["answer_intact"] is True
    text = " ".join(run("explain", session, "--store", tgsparql_demo_store_dir)[1].split())
    assert "[cut: the LLM's reason was longer]" in text
    assert "cut: the LLM's answer was longer)" in text


def test_what_fits_the_limits_is_kept_whole_and_not_flagged(
    tgsparql_demo_store_dir: Path, fake_openai: FakeOpenAI
) -> None:
    def short_selection(body: dict) -> Reply:
        reply = rambling_selection(body)
        line = json.loads(reply.text)
        return Reply(json.dumps({"id": line["id"], "reasoning": "x" * 100}))

    fake_openai.script(short_selection, Reply(["W" * 250, "W" * 250]))
    code, out, err = run("query", "Where was Marie Curie born?", "--store", tgsparql_demo_store_dir,
                         "--llm", "openai", "--base-url", fake_openai.base_url, "--model", "m",
                         "--format", "jsonl", "--max-reason-chars", 100,
                         "--max-answer-chars", 500)
    assert code == 0, err
    session = next(json.loads(line)["explain_id"] for line in out.splitlines())
    explained = json.loads(run("explain", session, "--store", tgsparql_demo_store_dir,
                               "--format", "json")[1])
    [edge] = explained["selected"]
    assert (edge["reasoning"], edge["reasoning_truncated"]) == ("x" * 100, False)
    assert (explained["answer"], explained["answer_truncated"]) == ("W" * 500, False)
    turtle = run("explain", session, "--store", tgsparql_demo_store_dir, "--format", "turtle")[1]
    assert "truncated" not in turtle


def test_ingest_takes_the_same_llm_wait_settings(
    tmp_path: Path, silent_llm: SilentServer
) -> None:
    text = tmp_path / "ada.txt"
    text.write_text("Ada Lovelace was born in London.\n", encoding="utf-8")
    ingest = tgsparql_process("ingest", text, "--store", tmp_path / "kg", "--llm", "openai",
                              "--base-url", silent_llm.base_url, "--model", "m",
                              "--llm-timeout", 2, "--llm-retries", 0)
    out, err = ingest.communicate(timeout=120)
    assert silent_llm.requested.is_set()
    assert ingest.returncode == 1, out
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert (f"{text}: page 1, chunk 0: the LLM server {silent_llm.base_url} did not answer in "
            "time: no first token within 2 s (raise --llm-timeout or TGSPARQL_LLM_TIMEOUT)") in line

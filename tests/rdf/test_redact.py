"""No URL's credentials reach what tgsparql records, logs or prints."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import cli
from tgsparql.rdf.redact import HIDDEN, redacted_text, redacted_url
from tgsparql.stores.store import open_store

SECRET = "Sup3rS3cret"


@pytest.mark.parametrize("url,shown", [
    ("http://user:PASS@host:8080/v1?key=abc&model=x",
     f"http://{HIDDEN}@host:8080/v1?key={HIDDEN}&model=x"),
    ("https://h/v1?api_key=1&access_token=2&tokens=5&model=m",
     f"https://h/v1?api_key={HIDDEN}&access_token={HIDDEN}&tokens=5&model=m"),
    ("http://[::1]:99/v1?sig=z", f"http://[::1]:99/v1?sig={HIDDEN}"),
    ("http://user@h/p", f"http://{HIDDEN}@h/p"),
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),  # nothing secret: as it is
    ("https://api.openai.com/v1?model=gpt", "https://api.openai.com/v1?model=gpt"),
])
def test_a_url_loses_its_userinfo_and_secret_looking_parameters(url: str, shown: str) -> None:
    assert redacted_url(url) == shown


def test_urls_in_running_text_are_redacted_and_the_sentence_kept() -> None:
    text = "cannot reach http://u:p@h/v1?key=s: refused (see https://a.b/c?token=1, then)."
    assert redacted_text(text) == (f"cannot reach http://{HIDDEN}@h/v1?key={HIDDEN}: refused "
                                   f"(see https://a.b/c?token={HIDDEN}, then).")


@given(user=st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8),
       password=st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=6, max_size=12),
       name=st.sampled_from(["key", "api_key", "apikey", "access_token", "token", "secret",
                             "password", "sig", "X-Amz-Signature", "auth"]),
       before=st.text(max_size=20), after=st.text(max_size=20))
def test_no_secret_of_a_url_survives_in_any_text(user: str, password: str, name: str,
                                                 before: str, after: str) -> None:
    url = f"http://{user}:{password}@llm.example:8080/v1?{name}={password}x"
    shown = redacted_text(f"{before} {url} {after}")
    assert f"{password}x" not in shown and f"{user}:{password}@" not in shown


def test_a_failed_sessions_error_the_log_and_stderr_name_no_credentials(
    tmp_path: Path
) -> None:
    url = f"http://user:{SECRET}@127.0.0.1:9/v1?key={SECRET}"
    log, store_dir = tmp_path / "llm.jsonl", tmp_path / "kg"
    demo = cli("demo", "--store", store_dir, "--llm", "offline")
    assert demo.exit_code == 0
    run = cli("query", "--store", store_dir, "--llm", "openai", "--model", "m", "--base-url",
              url, "--llm-timeout", "1", "--llm-retries", "0", "--log-llm", log,
              "Where was Marie Curie born?")
    assert run.exit_code == 1 and SECRET not in run.stdout + run.stderr, run
    assert HIDDEN in run.stderr
    assert SECRET not in log.read_text(encoding="utf-8")
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
    with open_store(store_dir) as store:
        errors = [row["error"].value for row in store.select(
            "SELECT ?error WHERE { GRAPH ?g { ?s <https://trustgraph.ai/ns/error> ?error } }")]
    assert errors and all(SECRET not in error and HIDDEN in error for error in errors), errors

"""Choosing the LLM backend from flags and the environment."""

from __future__ import annotations

import pytest

from tgsparql.asking.llm import LLMError, make_backend
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.llm.openai_backend import OpenAIBackend

URL = "http://127.0.0.1:9/v1"


def test_offline_by_default_with_an_empty_environment() -> None:
    backend = make_backend(environ={})
    assert isinstance(backend, OfflineBackend)
    assert backend.name == "offline"


def test_offline_by_default_reads_the_process_environment(monkeypatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "TGSPARQL_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(make_backend(), OfflineBackend)
    monkeypatch.setenv("OPENAI_BASE_URL", URL)
    backend = make_backend()
    assert isinstance(backend, OpenAIBackend) and backend.base_url == URL


def test_empty_environment_values_count_as_unset() -> None:
    environ = {"OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", "TGSPARQL_MODEL": ""}
    assert isinstance(make_backend(environ=environ), OfflineBackend)


def test_openai_when_base_url_is_in_the_environment() -> None:
    backend = make_backend(environ={"OPENAI_BASE_URL": URL})
    assert isinstance(backend, OpenAIBackend)
    assert backend.name == "openai"
    assert backend.base_url == URL
    assert backend.where == URL


def test_openai_with_model_and_base_url_from_the_environment() -> None:
    backend = make_backend(environ={"OPENAI_BASE_URL": URL, "TGSPARQL_MODEL": "env-model"})
    assert isinstance(backend, OpenAIBackend)
    assert backend.model == "env-model"  # configured: no server is asked
    assert backend.client.api_key == "unused"


def test_api_key_alone_means_the_hosted_openai_api() -> None:
    backend = make_backend(environ={"OPENAI_API_KEY": "sk-test", "TGSPARQL_MODEL": "gpt-x"})
    assert isinstance(backend, OpenAIBackend)
    assert backend.base_url is None
    assert backend.where == "the OpenAI API"
    assert backend.client.api_key == "sk-test"


def test_model_in_environment_without_a_server_asks_for_one() -> None:
    # A configured model selects the openai backend; without a server that is an error,
    # not a silent fall back to offline.
    with pytest.raises(LLMError, match="OPENAI_BASE_URL"):
        make_backend(environ={"TGSPARQL_MODEL": "env-model"})


def test_flags_override_the_environment() -> None:
    environ = {"OPENAI_BASE_URL": URL, "TGSPARQL_MODEL": "env-model", "OPENAI_API_KEY": "env-key"}
    backend = make_backend(
        model="flag-model",
        base_url="http://127.0.0.1:10/v1",
        api_key="flag-key",
        constraint="grammar",
        environ=environ,
    )
    assert isinstance(backend, OpenAIBackend)
    assert backend.model == "flag-model"
    assert backend.base_url == "http://127.0.0.1:10/v1"
    assert backend.client.api_key == "flag-key"
    assert backend.constraint == "grammar"


def test_offline_flag_overrides_a_configured_environment() -> None:
    environ = {"OPENAI_BASE_URL": URL, "TGSPARQL_MODEL": "env-model"}
    assert isinstance(make_backend("offline", environ=environ), OfflineBackend)


def test_openai_flag_takes_the_server_from_the_environment() -> None:
    backend = make_backend("openai", environ={"OPENAI_BASE_URL": URL})
    assert isinstance(backend, OpenAIBackend) and backend.base_url == URL


def test_base_url_flag_alone_selects_openai() -> None:
    backend = make_backend(base_url=URL, environ={})
    assert isinstance(backend, OpenAIBackend) and backend.base_url == URL
    assert backend.constraint == "none"


def test_openai_without_a_server_raises_a_helpful_error() -> None:
    with pytest.raises(LLMError) as info:
        make_backend("openai", environ={})
    message = str(info.value)
    assert "OPENAI_BASE_URL" in message
    assert "--base-url" in message
    assert "OPENAI_API_KEY" in message


def test_unknown_backend_name_raises_llm_error_listing_the_choices() -> None:
    with pytest.raises(LLMError) as info:
        make_backend("gpt", environ={})  # type: ignore[arg-type]
    assert str(info.value) == "unknown LLM backend 'gpt'; choose offline or openai"

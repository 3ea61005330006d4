"""Choosing a backend from flags and the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from tgsparql.asking.llm.base import (
    DEFAULT_LLM_RETRIES, DEFAULT_LLM_STREAM_TIMEOUT, DEFAULT_LLM_TIMEOUT, Backend, Constraint,
    LLMError,
)
from tgsparql.asking.llm.log import LLMLog
from tgsparql.asking.llm.offline import OfflineBackend

BackendName = Literal["offline", "openai"]


def make_backend(
    name: BackendName | None = None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    constraint: Constraint = "none",
    max_tokens: int | None = None,
    log: LLMLog | None = None,
    timeout: float = DEFAULT_LLM_TIMEOUT,
    stream_timeout: float = DEFAULT_LLM_STREAM_TIMEOUT,
    max_retries: int = DEFAULT_LLM_RETRIES,
    environ: Mapping[str, str] | None = None,
) -> Backend:
    """`openai` when asked for or when an LLM is configured in the environment, else `offline`.

    Configured means OPENAI_BASE_URL, OPENAI_API_KEY or TGSPARQL_MODEL is set (or the
    matching flag given). `max_tokens` caps each reply (the backend's default when None);
    `log` receives every prompt and raw reply; `timeout` bounds the wait for a reply's first
    token, `stream_timeout` a pause in a reply under way.
    """
    env = os.environ if environ is None else environ
    model = model or env.get("TGSPARQL_MODEL") or None
    base_url = base_url or env.get("OPENAI_BASE_URL") or None
    api_key = api_key or env.get("OPENAI_API_KEY") or None
    if name is None:
        name = "openai" if (model or base_url or api_key) else "offline"
    if name == "offline":
        return OfflineBackend()
    if name == "openai":
        if not (base_url or api_key):
            raise LLMError(
                "the openai backend needs a server: set OPENAI_BASE_URL or --base-url "
                "(and OPENAI_API_KEY for hosted APIs)"
            )
        # Imported here: the openai client takes ~2 s to import, which offline runs never need.
        from tgsparql.asking.llm.openai_backend import OpenAIBackend

        limits = {} if max_tokens is None else {"max_tokens": max_tokens}
        return OpenAIBackend(model=model, base_url=base_url, api_key=api_key,
                             constraint=constraint, log=log, timeout=timeout,
                             stream_timeout=stream_timeout, max_retries=max_retries, **limits)
    raise LLMError(f"unknown LLM backend {name!r}; choose offline or openai")

"""LLM backends: what selects edges and writes answers, behind one interface."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tgsparql.asking.llm.base import (
    AnswerStream, Backend, LLMError, SelectionOutput, SelectionRequest,
)

if TYPE_CHECKING:
    from tgsparql.asking.llm.factory import make_backend

__all__ = [
    "AnswerStream",
    "Backend",
    "LLMError",
    "SelectionOutput",
    "SelectionRequest",
    "make_backend",
]


def __getattr__(name: str) -> Any:
    """make_backend imported on first use: it loads every backend, which a module needing only
    this interface (the CLI's shared options) does not."""
    if name == "make_backend":
        from tgsparql.asking.llm.factory import make_backend
        return make_backend
    raise AttributeError(f"module 'tgsparql.asking.llm' has no attribute {name!r}")

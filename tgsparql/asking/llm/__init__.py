"""LLM backends: what selects edges and writes answers, behind one interface."""

from tgsparql.asking.llm.base import (
    AnswerStream, Backend, LLMError, SelectionOutput, SelectionRequest,
)
from tgsparql.asking.llm.factory import make_backend

__all__ = [
    "AnswerStream",
    "Backend",
    "LLMError",
    "SelectionOutput",
    "SelectionRequest",
    "make_backend",
]

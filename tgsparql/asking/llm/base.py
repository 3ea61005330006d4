"""The interface every backend implements, and the prompts they share."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import jinja2
import pyoxigraph as ox

from tgsparql.asking.llm.usage import Usage
from tgsparql.rdf.redact import redacted_text

if TYPE_CHECKING:
    from tgsparql.asking.labels import LabeledEdge
    from tgsparql.asking.roles import RoleReader

DEFAULT_LLM_TIMEOUT = 120.0
"""Seconds to wait for the first token of a reply: the connection, the model reading the prompt
(minutes for a long prompt on a CPU), its first word. With DEFAULT_LLM_RETRIES, a server that
accepts and never answers fails the call in about four minutes."""
DEFAULT_LLM_STREAM_TIMEOUT = 30.0
"""Seconds a reply already under way may pause between two of its parts: a stalled stream is
told from a model still reading its prompt."""
DEFAULT_LLM_RETRIES = 1
DEFAULT_MAX_TOKENS = 1024
"""Tokens an LLM reply may hold at most, unless told otherwise (`--max-tokens`)."""
TIMEOUT_KNOBS: Final = ("--llm-timeout", "TGSPARQL_LLM_TIMEOUT")
"""The flag and environment variable that raise DEFAULT_LLM_TIMEOUT, named by its error."""
STREAM_TIMEOUT_KNOBS: Final = ("--llm-stream-timeout", "TGSPARQL_LLM_STREAM_TIMEOUT")

Constraint = Literal["none", "grammar"]
"""How a backend may constrain the selection output: not at all, or by a GBNF grammar."""


class LLMError(RuntimeError):
    """The LLM could not be reached or gave no usable reply. Its message names no secret: the
    credentials of any URL in it are redacted, since it is recorded, logged and printed."""

    def __init__(self, message: str) -> None:
        super().__init__(redacted_text(message))


class ExtractionUnsupported(LLMError):
    """The backend cannot read facts out of text, so ingesting with it would invent them."""


@dataclass(frozen=True)
class SelectionRequest:
    question: str
    edges: Sequence[LabeledEdge]
    seeds: Sequence[ox.NamedNode]
    roles: RoleReader | None = None
    """Reads what the KG says a node is (`tgsparql.asking.roles`), for a backend that must tell
    apart ends whose labels answer alike; none when no store stands behind the edges."""


@dataclass(frozen=True)
class SelectionOutput:
    text: str
    """JSONL, one `{"id": …, "reasoning": …}` per selected edge; parsed tolerantly later."""
    usage: Usage | None


@dataclass(frozen=True)
class ExtractionRequest:
    text: str
    """The chunk, exactly as stored."""
    title: str


@dataclass(frozen=True)
class ExtractionOutput:
    text: str
    """JSONL, one `{"s", "p", "o", "evidence"}` object per fact; parsed tolerantly later."""
    usage: Usage | None


class AnswerStream(Protocol):
    """Chunks of the answer text; `usage` is known once the iteration is over. A stream may
    also say `cut` then: True when the model stopped at its token limit, mid-answer (a stream
    without it is taken as whole)."""

    usage: Usage | None

    def __iter__(self) -> Iterator[str]: ...


class Backend(Protocol):
    name: str

    def select(self, request: SelectionRequest) -> SelectionOutput: ...

    def answer(
        self, question: str, facts: Sequence[LabeledEdge], *, stream: bool
    ) -> AnswerStream: ...

    def extract(self, request: ExtractionRequest) -> ExtractionOutput:
        """The facts a chunk states; ExtractionUnsupported when the backend cannot read text."""
        ...


@cache
def _prompts() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(
            lambda name: files("tgsparql.asking.prompts").joinpath(name).read_text(encoding="utf-8")
        ),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    environment.filters["one_line"] = one_line
    return environment


def one_line(text: str) -> str:
    """`text` on one line: its line breaks as spaces, so a label cannot start a line of its own
    in a prompt that gives one fact a line."""
    return " ".join(text.splitlines())


def render_prompt(name: str, **params: Any) -> str:
    """A prompt of `tgsparql/asking/prompts/`. The question and labels go in as plain text, as a
    person would read them (JSON escapes such as \\u0027 only confuse a small model); each label
    on the line of its fact."""
    return _prompts().get_template(name).render(**params)

"""Any OpenAI-compatible chat server: OpenAI itself, llama.cpp, vLLM, Ollama, LM Studio …

Every call streams, even when its caller wants the reply whole: the wait for the first token
(the model reading its prompt) is then told from a reply that stalls half-way, each with its own
timeout, and a reply abandoned on a timeout is cut off at the socket, which tells a one-slot
server such as llama.cpp to stop writing it before the retry comes in.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

import httpx2
import openai

from tgsparql.asking.labels import LabeledEdge
from tgsparql.asking.llm.base import (
    DEFAULT_LLM_RETRIES, DEFAULT_LLM_STREAM_TIMEOUT, DEFAULT_LLM_TIMEOUT, DEFAULT_MAX_TOKENS,
    STREAM_TIMEOUT_KNOBS, TIMEOUT_KNOBS, Constraint, ExtractionOutput, ExtractionRequest,
    LLMError, SelectionOutput, SelectionRequest, render_prompt,
)
from tgsparql.asking.llm.log import LLMLog
from tgsparql.asking.llm.usage import Usage
from tgsparql.rdf.redact import redacted_url

MAX_SELECTED_LINES: Final = 20
MAX_FACT_LINES: Final = 30
"""Fact lines a constrained extraction reply may hold, per chunk."""
MAX_GRAMMAR_NAME: Final = 100
MAX_GRAMMAR_EVIDENCE: Final = 300
RETRIED_STATUSES: Final = frozenset({408, 409, 429})
"""Besides 5xx: the statuses worth another try, as the OpenAI client retries them."""
FIRST_BACKOFF: Final = 0.5
"""Seconds before the first retry; each further one waits twice as long, up to MAX_BACKOFF."""
MAX_BACKOFF: Final = 8.0
CUT_BY_TOKEN_LIMIT: Final = "length"
"""The finish_reason of a reply the model stopped at max_tokens."""

class OpenAIBackend:
    name = "openai"

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_LLM_TIMEOUT,
        stream_timeout: float = DEFAULT_LLM_STREAM_TIMEOUT,
        max_retries: int = DEFAULT_LLM_RETRIES,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        constraint: Constraint = "none",
        log: LLMLog | None = None,
    ) -> None:
        """`constraint="grammar"`: a GBNF grammar on llama.cpp-compatible servers, a strict
        `response_format` JSON schema on the OpenAI API (its replies turned back into lines).
        `log`: every prompt and raw reply. `timeout`: seconds to the first token of a reply;
        `stream_timeout`: seconds a reply under way may pause; `max_retries`: tries after the
        first when one fails before any text came."""
        self.base_url = base_url
        self.first_token_timeout = timeout
        self.stream_timeout = stream_timeout
        self.max_retries = max_retries
        self.log = log
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.constraint = constraint
        try:
            self.client = openai.OpenAI(
                base_url=base_url,
                # Local servers need no key, but the client insists on one.
                api_key=api_key or ("unused" if base_url else None),
                # The longer wait bounds every read; _Deadline keeps each to its own.
                timeout=httpx2.Timeout(max(timeout, stream_timeout), connect=timeout),
                max_retries=0,  # retried here, where a try's abandoned reply is closed first
            )
        except openai.OpenAIError as error:
            raise LLMError(f"cannot configure the OpenAI client: {error}") from None
        self._model = model

    @property
    def where(self) -> str:
        return redacted_url(self.base_url) if self.base_url else "the OpenAI API"

    @property
    def model(self) -> str:
        """The configured model, else the first one the server lists."""
        if self._model is None:
            try:
                models = list(self.client.models.list())
            except openai.APIConnectionError as error:
                raise LLMError(self._unreachable(error)) from None
            except openai.OpenAIError as error:
                raise LLMError(f"no model given and {self.where} did not list one: {error}") from None
            if not models:
                raise LLMError(f"no model given and {self.where} lists none; pass --model")
            self._model = models[0].id
        return self._model

    @property
    def speaks_json_schema(self) -> bool:
        """The OpenAI API itself, which takes JSON schemas but no GBNF grammar."""
        return self.base_url is None or urlsplit(self.base_url).hostname == "api.openai.com"

    def _constrained(self, grammar: str, schema_name: str, item: dict[str, Any],
                     max_items: int) -> dict[str, Any]:
        """The request parameters that constrain a reply of JSON lines, each like `item`."""
        if self.constraint != "grammar":
            return {}
        if not self.speaks_json_schema:
            return {"extra_body": {"grammar": grammar}}
        schema = {
            "type": "object",
            "properties": {"lines": {"type": "array", "items": item, "maxItems": max_items}},
            "required": ["lines"],
            "additionalProperties": False,
        }
        return {"response_format": {
            "type": "json_schema",
            "json_schema": {"name": schema_name, "strict": True, "schema": schema},
        }}

    def _lines(self, text: str, params: dict[str, Any]) -> str:
        """A JSON-schema reply `{"lines": [...]}` as the JSON Lines the parsers read; any other
        reply as it came, for them to survive."""
        if "response_format" not in params:
            return text
        try:
            items = json.loads(text)["lines"]
        except (ValueError, TypeError, KeyError):
            return text
        if not isinstance(items, list):
            return text
        return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)

    def select(self, request: SelectionRequest) -> SelectionOutput:
        ids = [edge.id for edge in request.edges]
        extra = self._constrained(
            render_prompt("selection.gbnf.j2", ids=ids,
                          max_lines=min(len(ids), MAX_SELECTED_LINES)),
            "selected_edges",
            _object(id={"type": "string", "enum": ids}, reasoning={"type": "string"}),
            min(len(ids), MAX_SELECTED_LINES),
        )
        messages = [
            {"role": "system", "content": render_prompt("select_system.txt")},
            {
                "role": "user",
                "content": render_prompt(
                    "select_user.j2", question=request.question, edges=request.edges
                ),
            },
        ]
        reply = _Reply(self, "select", messages=messages, **extra)
        text = self._lines("".join(reply), extra)
        return SelectionOutput(text=text, usage=reply.usage)

    def answer(
        self, question: str, facts: Sequence[LabeledEdge], *, stream: bool
    ) -> OpenAIAnswer:
        messages = [
            {"role": "system", "content": render_prompt("answer_system.txt")},
            {"role": "user", "content": render_prompt("answer_user.j2", question=question, facts=facts)},
        ]
        return OpenAIAnswer(_Reply(self, "answer", messages=messages), stream)

    def extract(self, request: ExtractionRequest) -> ExtractionOutput:
        messages = [
            {"role": "system", "content": render_prompt("extract_system.txt")},
            {
                "role": "user",
                "content": render_prompt(
                    "extract_user.j2", title=request.title, text=request.text
                ),
            },
        ]
        text_field = {"type": "string"}
        extra = self._constrained(
            render_prompt("extraction.gbnf.j2", max_lines=MAX_FACT_LINES,
                          max_name=MAX_GRAMMAR_NAME, max_evidence=MAX_GRAMMAR_EVIDENCE),
            "facts",
            _object(s=text_field, p=text_field, o=text_field, evidence=text_field),
            MAX_FACT_LINES,
        )
        reply = _Reply(self, "extract", messages=messages, **extra)
        text = self._lines("".join(reply), extra)
        return ExtractionOutput(text=text, usage=reply.usage)

    def _log(self, call: str, sent: dict[str, Any], reply: str | None, *,
             usage: Usage | None = None, error: str | None = None,
             started: float | None = None, finish_reason: str | None = None) -> None:
        if self.log is None:
            return
        request = {key: value for key, value in sent.items() if key != "extra_body"}
        request.update(sent.get("extra_body") or {})
        seconds = time.monotonic() - started if started is not None else None
        self.log.write(call, request=request, reply=reply, usage=usage, error=error,
                       seconds=seconds, finish_reason=finish_reason)

    def _unreachable(self, error: openai.APIConnectionError) -> str:
        """Said first, whatever was being asked: nothing else can work until the server answers."""
        if isinstance(error, openai.APITimeoutError):
            return self._late(first_token=True)
        return f"the LLM server {self.where} is unreachable ({_describe(error)})"

    def _late(self, *, first_token: bool) -> str:
        """A timeout, with the flag and the variable that give the model more time."""
        if first_token:
            flag, variable = TIMEOUT_KNOBS
            return (f"the LLM server {self.where} did not answer in time: no first token within "
                    f"{self.first_token_timeout:g} s (raise {flag} or {variable})")
        flag, variable = STREAM_TIMEOUT_KNOBS
        return (f"the LLM server {self.where} did not answer in time: its reply stalled for "
                f"{self.stream_timeout:g} s (raise {flag} or {variable})")

    def _usage(self, model: str | None, usage: Any) -> Usage:
        return Usage(
            model=model or self.model,
            in_tokens=getattr(usage, "prompt_tokens", None),
            out_tokens=getattr(usage, "completion_tokens", None),
        )


class _Retry(Exception):
    """A try that failed in a way worth another: a timeout, a lost connection, 429 or 5xx."""


class _Reply:
    """One call, streamed: its text as it comes, then its model, usage and finish reason.

    A try that fails before any text came is retried, after the abandoned request was closed;
    once text has been handed on, a failure is final (the reader already has half a reply)."""

    def __init__(self, backend: OpenAIBackend, call: str, **params: Any) -> None:
        self.backend = backend
        self.call = call
        self.params = params
        self.usage: Usage | None = None
        self.finish_reason: str | None = None

    @property
    def cut(self) -> bool:
        """The model stopped at max_tokens: the reply ends mid-way."""
        return self.finish_reason == CUT_BY_TOKEN_LIMIT

    def __iter__(self) -> Iterator[str]:
        backend = self.backend
        sent = dict(model=backend.model, max_tokens=backend.max_tokens,
                    temperature=backend.temperature, stream=True,
                    stream_options={"include_usage": True}, **self.params)
        text: list[str] = []
        for attempt in range(backend.max_retries + 1):
            started = time.monotonic()
            try:
                yield from self._try(sent, started, text)
                return
            except (_Retry, LLMError) as error:
                final = isinstance(error, LLMError) or text or attempt == backend.max_retries
                backend._log(self.call, sent, "".join(text) if text else None, error=str(error),
                             started=started)
                if final:
                    raise LLMError(str(error)) from None
            time.sleep(min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** attempt))

    def _try(self, sent: dict[str, Any], started: float, text: list[str]) -> Iterator[str]:
        backend = self.backend
        try:
            chunks = backend.client.chat.completions.create(**sent)
        except openai.APIConnectionError as error:
            raise _Retry(backend._unreachable(error)) from None
        except openai.APIStatusError as error:
            message = f"LLM request to {backend.where} failed: {_describe(error)}"
            if error.status_code in RETRIED_STATUSES or error.status_code >= 500:
                raise _Retry(message) from None
            raise LLMError(message) from None
        except (openai.OpenAIError, ValueError) as error:  # ValueError: a reply that is not JSON
            raise LLMError(f"LLM request to {backend.where} failed: {_describe(error)}") from None
        deadline = _Deadline(_socket_of(chunks.response),
                             started + backend.first_token_timeout - time.monotonic())
        model, usage = None, None
        try:
            for chunk in chunks:
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = chunk.usage
                if text:
                    deadline.extend(backend.stream_timeout)
                for choice in chunk.choices:
                    self.finish_reason = choice.finish_reason or self.finish_reason
                    if choice.delta is not None and choice.delta.content:
                        deadline.extend(backend.stream_timeout)
                        text.append(choice.delta.content)
                        yield choice.delta.content
        except Exception as error:  # the transport's own errors surface here mid-stream
            if deadline.cut:
                raise _Retry(backend._late(first_token=not text)) from None
            raise _Retry(f"LLM stream from {backend.where} broke off: {_describe(error)}") \
                from None
        finally:  # also when the reader stops early: the rest is not read
            deadline.stop()
            chunks.close()
        self.usage = backend._usage(model, usage)
        backend._log(self.call, sent, "".join(text), usage=self.usage, started=started,
                     finish_reason=self.finish_reason)


class OpenAIAnswer:
    """The answer's chunks as they come, or (not streamed) all of it as one."""

    def __init__(self, reply: _Reply, stream: bool) -> None:
        self.reply = reply
        self.stream = stream
        self.usage: Usage | None = None
        self.cut = False

    def __iter__(self) -> Iterator[str]:
        chunks = iter(self.reply)
        try:
            if self.stream:
                yield from chunks
            else:
                yield "".join(chunks)
        finally:
            chunks.close()  # type: ignore[attr-defined]
        self.usage = self.reply.usage
        self.cut = self.reply.cut


class _Deadline:
    """Cuts a reply's connection when its next part is late, which wakes its reader (blocked in
    a read) and tells the server that nobody reads the reply any more. `cut` says it did."""

    def __init__(self, connection: socket.socket | None, seconds: float) -> None:
        self.connection = connection
        self.cut = False
        self._until = time.monotonic() + seconds
        self._stopped = False
        self._changed = threading.Condition()
        if connection is not None:
            threading.Thread(target=self._watch, name="tgsparql-llm-deadline",
                             daemon=True).start()

    def extend(self, seconds: float) -> None:
        """The next part is due within `seconds` from now (sooner or later than before)."""
        with self._changed:
            self._until = time.monotonic() + seconds
            self._changed.notify()

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify()

    def _watch(self) -> None:
        with self._changed:
            while not self._stopped:
                left = self._until - time.monotonic()
                if left <= 0:
                    self.cut = True
                    try:  # the plain socket's shutdown, also under TLS: the reader still reads
                        socket.socket.shutdown(self.connection, socket.SHUT_RDWR)  # type: ignore[arg-type]
                    except OSError:
                        pass  # already closed: nothing left to cut
                    return
                self._changed.wait(left)


def _socket_of(response: httpx2.Response) -> socket.socket | None:
    """The socket a streamed response is read from, where the transport tells."""
    stream = response.extensions.get("network_stream")
    connection = stream.get_extra_info("socket") if stream is not None else None
    return connection if isinstance(connection, socket.socket) else None


def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    """A strict JSON schema object: every property required, no others."""
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"HTTP {status}: {text}" if status else text

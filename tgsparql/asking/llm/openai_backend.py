"""Any OpenAI-compatible chat server: OpenAI itself, llama.cpp, vLLM, Ollama, LM Studio …"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

import openai

from tgsparql.asking.labels import LabeledEdge
from tgsparql.asking.llm.base import (
    DEFAULT_LLM_RETRIES, DEFAULT_LLM_TIMEOUT, DEFAULT_MAX_TOKENS, Constraint, ExtractionOutput, ExtractionRequest,
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

class OpenAIBackend:
    name = "openai"

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_LLM_TIMEOUT,
        max_retries: int = DEFAULT_LLM_RETRIES,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        constraint: Constraint = "none",
        log: LLMLog | None = None,
    ) -> None:
        """`constraint="grammar"`: a GBNF grammar on llama.cpp-compatible servers, a strict
        `response_format` JSON schema on the OpenAI API (its replies turned back into lines).
        `log`: every prompt and raw reply."""
        self.base_url = base_url
        self.log = log
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.constraint = constraint
        try:
            self.client = openai.OpenAI(
                base_url=base_url,
                # Local servers need no key, but the client insists on one.
                api_key=api_key or ("unused" if base_url else None),
                timeout=timeout,
                max_retries=max_retries,
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
        response = self._call("select", messages=messages, **extra)
        if not response.choices:
            raise LLMError(f"{self.where} returned no choices for the selection")
        text = self._lines(response.choices[0].message.content or "", extra)
        return SelectionOutput(text=text, usage=self._usage(response.model, response.usage))

    def answer(
        self, question: str, facts: Sequence[LabeledEdge], *, stream: bool
    ) -> OpenAIAnswer:
        messages = [
            {"role": "system", "content": render_prompt("answer_system.txt")},
            {"role": "user", "content": render_prompt("answer_user.j2", question=question, facts=facts)},
        ]
        return OpenAIAnswer(self, messages, stream)

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
        response = self._call("extract", messages=messages, **extra)
        if not response.choices:
            raise LLMError(f"{self.where} returned no choices for the extraction")
        text = self._lines(response.choices[0].message.content or "", extra)
        return ExtractionOutput(text=text, usage=self._usage(response.model, response.usage))

    def _call(self, call: str, **params: Any) -> Any:
        """One request; logged whole unless it streams (its stream logs itself when done)."""
        sent = dict(model=self.model, max_tokens=self.max_tokens, temperature=self.temperature,
                    **params)
        started = time.monotonic()
        try:
            response = self.client.chat.completions.create(**sent)
        except openai.APIConnectionError as error:
            message = self._unreachable(error)
            self._log(call, sent, None, error=message, started=started)
            raise LLMError(message) from None
        except (openai.OpenAIError, ValueError) as error:  # ValueError: a reply that is not JSON
            message = f"LLM request to {self.where} failed: {_describe(error)}"
            self._log(call, sent, None, error=message, started=started)
            raise LLMError(message) from None
        if not params.get("stream"):
            reply = response.choices[0].message.content if response.choices else None
            self._log(call, sent, reply, usage=self._usage(response.model, response.usage),
                      started=started)
        return response

    def _log(self, call: str, sent: dict[str, Any], reply: str | None, *,
             usage: Usage | None = None, error: str | None = None,
             started: float | None = None) -> None:
        if self.log is None:
            return
        request = {key: value for key, value in sent.items() if key != "extra_body"}
        request.update(sent.get("extra_body") or {})
        seconds = time.monotonic() - started if started is not None else None
        self.log.write(call, request=request, reply=reply, usage=usage, error=error,
                       seconds=seconds)

    def _unreachable(self, error: openai.APIConnectionError) -> str:
        """Said first, whatever was being asked: nothing else can work until the server answers."""
        if isinstance(error, openai.APITimeoutError):
            return f"the LLM server {self.where} did not answer in time ({_describe(error)})"
        return f"the LLM server {self.where} is unreachable ({_describe(error)})"

    def _usage(self, model: str | None, usage: Any) -> Usage:
        return Usage(
            model=model or self.model,
            in_tokens=getattr(usage, "prompt_tokens", None),
            out_tokens=getattr(usage, "completion_tokens", None),
        )


class OpenAIAnswer:
    def __init__(self, backend: OpenAIBackend, messages: list[dict[str, str]], stream: bool) -> None:
        self.backend = backend
        self.messages = messages
        self.stream = stream
        self.usage: Usage | None = None

    def __iter__(self) -> Iterator[str]:
        if not self.stream:
            response = self.backend._call("answer", messages=self.messages)
            if not response.choices:
                raise LLMError(f"{self.backend.where} returned no choices for the answer")
            self.usage = self.backend._usage(response.model, response.usage)
            yield response.choices[0].message.content or ""
            return
        params: dict[str, Any] = dict(
            messages=self.messages, stream=True, stream_options={"include_usage": True}
        )
        started = time.monotonic()
        chunks = self.backend._call("answer", **params)
        sent = dict(model=self.backend.model, max_tokens=self.backend.max_tokens,
                    temperature=self.backend.temperature, **params)
        model, usage = None, None
        text: list[str] = []
        try:
            for chunk in chunks:
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices:
                    if choice.delta is not None and choice.delta.content:
                        text.append(choice.delta.content)
                        yield choice.delta.content
        except Exception as error:  # the transport's own errors surface here mid-stream
            message = f"LLM stream from {self.backend.where} broke off: {_describe(error)}"
            self.backend._log("answer", sent, "".join(text), error=message, started=started)
            raise LLMError(message) from None
        finally:  # also when the reader stops early: the rest is not read
            chunks.close()
        self.usage = self.backend._usage(model, usage)
        self.backend._log("answer", sent, "".join(text), usage=self.usage, started=started)


def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    """A strict JSON schema object: every property required, no others."""
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"HTTP {status}: {text}" if status else text

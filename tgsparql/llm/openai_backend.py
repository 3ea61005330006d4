"""Any OpenAI-compatible chat server: OpenAI itself, llama.cpp, vLLM, Ollama, LM Studio …"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import openai

from tgsparql.labels import LabeledEdge
from tgsparql.llm.base import (
    DEFAULT_LLM_RETRIES,
    DEFAULT_LLM_TIMEOUT,
    Constraint,
    ExtractionOutput,
    ExtractionRequest,
    LLMError,
    SelectionOutput,
    SelectionRequest,
    render_prompt,
)
from tgsparql.provenance import Usage



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
        max_tokens: int = 1024,
        temperature: float = 0.0,
        constraint: Constraint = "none",
    ) -> None:
        self.base_url = base_url
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
        return self.base_url or "the OpenAI API"

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

    def select(self, request: SelectionRequest) -> SelectionOutput:
        extra: dict[str, Any] = {}
        if self.constraint == "grammar":
            extra["extra_body"] = {
                "grammar": render_prompt(
                    "selection.gbnf.j2",
                    ids=[edge.id for edge in request.edges],
                    max_lines=min(len(request.edges), 20),
                )
            }
        messages = [
            {"role": "system", "content": render_prompt("select_system.txt")},
            {
                "role": "user",
                "content": render_prompt(
                    "select_user.j2", question=request.question, edges=request.edges
                ),
            },
        ]
        response = self._call(messages=messages, **extra)
        if not response.choices:
            raise LLMError(f"{self.where} returned no choices for the selection")
        text = response.choices[0].message.content or ""
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
        response = self._call(messages=messages)
        if not response.choices:
            raise LLMError(f"{self.where} returned no choices for the extraction")
        text = response.choices[0].message.content or ""
        return ExtractionOutput(text=text, usage=self._usage(response.model, response.usage))

    def _call(self, **params: Any) -> Any:
        try:
            return self.client.chat.completions.create(
                model=self.model,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                **params,
            )
        except openai.APIConnectionError as error:
            raise LLMError(self._unreachable(error)) from None
        except (openai.OpenAIError, ValueError) as error:  # ValueError: a reply that is not JSON
            raise LLMError(f"LLM request to {self.where} failed: {_describe(error)}") from None

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
            response = self.backend._call(messages=self.messages)
            if not response.choices:
                raise LLMError(f"{self.backend.where} returned no choices for the answer")
            self.usage = self.backend._usage(response.model, response.usage)
            yield response.choices[0].message.content or ""
            return
        chunks = self.backend._call(
            messages=self.messages, stream=True, stream_options={"include_usage": True}
        )
        model, usage = None, None
        try:
            for chunk in chunks:
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices:
                    if choice.delta is not None and choice.delta.content:
                        yield choice.delta.content
        except Exception as error:  # the transport's own errors surface here mid-stream
            raise LLMError(
                f"LLM stream from {self.backend.where} broke off: {_describe(error)}"
            ) from None
        finally:  # also when the reader stops early: the rest is not read
            chunks.close()
        self.usage = self.backend._usage(model, usage)


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"HTTP {status}: {text}" if status else text

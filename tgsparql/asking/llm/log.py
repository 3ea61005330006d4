"""The LLM log: every prompt sent and every raw reply, as JSON Lines a user can read back.

It shows why nothing was extracted or selected: what the model was asked, with which
constraint, and exactly what it wrote, before any parsing. A new log is its owner's alone
(mode 0600), and its errors name no URL's credentials.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from pathlib import Path
from typing import Any, TextIO

from tgsparql.asking.llm.usage import Usage
from tgsparql.rdf.redact import redacted_text


class LLMLogError(OSError):
    """The log file cannot be opened or written."""


class LLMLog:
    """Appends one JSON object a line per LLM call; shared safely by the pipeline's threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:  # prompts and replies are the KG's and the users' words: the owner's alone
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._file: TextIO = os.fdopen(descriptor, "a", encoding="utf-8")
        except OSError as error:
            raise LLMLogError(f"cannot open the LLM log {path}: {error.strerror or error}") from None

    def write(
        self,
        call: str,
        *,
        request: dict[str, Any],
        reply: str | None,
        usage: Usage | None = None,
        error: str | None = None,
        seconds: float | None = None,
        finish_reason: str | None = None,
    ) -> None:
        """One call: `call` says what for (select, answer, extract); `request` is what was
        sent (model, messages, constraint, limits); `reply` the raw text, None if none came;
        `finish_reason` why the model stopped ("length": at max_tokens, the reply cut)."""
        entry: dict[str, Any] = {**request, "reply": reply}
        if usage is not None:
            entry["usage"] = {"model": usage.model, "in_tokens": usage.in_tokens,
                              "out_tokens": usage.out_tokens}
        if finish_reason is not None:
            entry["finish_reason"] = finish_reason
        if error is not None:
            entry["error"] = redacted_text(error)
        if seconds is not None:
            entry["seconds"] = round(seconds, 3)
        self.note(call, **entry)

    def note(self, call: str, **details: Any) -> None:
        """One line: a call, or what was made of replies after they came (extract-checks: the
        facts ingest did not write, or kept flagged, and why)."""
        entry = {
            "time": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
            "call": call,
            **details,
        }
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self._lock:
            try:
                self._file.write(line)
                self._file.flush()
            except (OSError, ValueError) as failure:  # ValueError: written after close
                raise LLMLogError(f"cannot write the LLM log {self.path}: {failure}") from None

    def close(self) -> None:
        with self._lock:
            self._file.close()

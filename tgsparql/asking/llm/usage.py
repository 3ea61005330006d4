"""What an LLM call cost, as the backends report it and the record keeps it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """What an LLM reported for one call; None where it reported nothing."""

    model: str | None = None
    in_tokens: int | None = None
    out_tokens: int | None = None

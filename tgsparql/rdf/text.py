"""A label's words: the one normalisation that grounding, IRI minting and the offline LLM share."""

from __future__ import annotations

import re
import unicodedata

WORD = re.compile(r"[^\W_]+")
"""A run of letters and digits: what counts as a word of a label or question."""


def normalize_label(text: str) -> str:
    """A label's words: NFKC, case-folded, joined by one space."""
    return " ".join(WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def words(text: str) -> list[str]:
    return normalize_label(text).split()

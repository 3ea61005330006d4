"""Text from the store or an LLM shown on a terminal: its control characters made visible.

A question, a label or an answer may hold escape sequences (`\\x1b]0;…\\x07` retitles a terminal,
others recolour it, move the cursor or hide what follows) and bidirectional overrides that make
text read other than it is. Text output shows each as an escape (`\\x1b`, `\\u202e`); machine
formats (json, turtle, jsonl) keep the text exact.
"""

from __future__ import annotations

import re

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
"""The bidirectional marks, embeddings, overrides and isolates, as a regex character range."""
_HIDDEN = re.compile(f"[\x00-\x1f\x7f-\x9f{BIDI_CONTROLS}]")


def visible(text: str, *, keep: str = "") -> str:
    """`text` with every control character and bidi control escaped, except those in `keep`
    (say "\\n" for text that may run over several lines)."""

    def escape(found: re.Match[str]) -> str:
        char = found.group()
        if char in keep:
            return char
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _HIDDEN.sub(escape, text)


def one_line(text: str, limit: int = 300) -> str:
    """`text` on one line, cut at `limit` characters, its control characters shown as escapes."""
    flat = " ".join(text.split())
    return visible(flat if len(flat) <= limit else flat[: limit - 1] + "…")

"""JSON Lines as LLMs write them: fenced, wrapped in prose, broken, or several objects a line."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Final

MAX_SCANNED_LINE: Final = 65_536
_FENCE = re.compile(r"^\s*```[\w-]*\s*$")
# Only real line ends: U+2028, U+2029 and U+0085 may stand unescaped inside a JSON string.
_LINE_END = re.compile(r"\r\n|\r|\n")
_DECODER = json.JSONDecoder()


def object_lines(text: str) -> Iterator[list[dict[str, Any]]]:
    """For each line that is not blank or a code fence, the JSON objects found on it (maybe none).

    A line is taken as JSON first (an object, or an array of objects); failing that, every
    object that starts at one of its '{' is decoded, so prose around objects is survived.
    """
    for line in _LINE_END.split(text):
        if not line.strip() or _FENCE.match(line):
            continue
        value = _loads(line.strip().rstrip(","))
        values = [value] if value is not None else _embedded(line)
        found: list[dict[str, Any]] = []
        for item in values:
            for candidate in item if isinstance(item, list) else [item]:
                if isinstance(candidate, dict):
                    found.append(candidate)
        yield found


def _embedded(line: str) -> Iterator[Any]:
    if len(line) > MAX_SCANNED_LINE:
        # Decoding from every '{' of a huge line could take quadratic time; take the outermost.
        start, end = line.find("{"), line.rfind("}")
        value = _loads(line[start : end + 1]) if 0 <= start < end else None
        if value is not None:
            yield value
        return
    position = line.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(line, position)
        except (ValueError, RecursionError):
            position = line.find("{", position + 1)
            continue
        yield value
        position = line.find("{", end)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None

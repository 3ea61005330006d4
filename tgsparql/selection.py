"""Reading the selector's JSONL: tolerant of what LLMs write, exact about what it keeps (SPEC §5)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyoxigraph as ox

_FENCE = re.compile(r"^\s*```[\w-]*\s*$")
# Only real line ends: U+2028, U+2029 and U+0085 may stand unescaped inside a JSON string.
_LINE_END = re.compile(r"\r\n|\r|\n")
_DECODER = json.JSONDecoder()
MAX_SCANNED_LINE = 65_536


@dataclass(frozen=True)
class SelectedEdge:
    id: str
    triple: ox.Triple
    reasoning: str


@dataclass
class ParsedSelection:
    edges: list[SelectedEdge] = field(default_factory=list)
    invalid_ids: list[str] = field(default_factory=list)
    """Ids the selector gave that are not in the prompt, in the order given."""
    skipped_lines: int = 0
    """Non-blank lines that were not a JSON object with a string id."""
    duplicates: int = 0


def parse_selection(text: str, uri_map: Mapping[str, ox.Triple]) -> ParsedSelection:
    result = ParsedSelection()
    seen: set[str] = set()
    for line in _LINE_END.split(text):
        if not line.strip() or _FENCE.match(line):
            continue
        objects = list(_objects_in(line))
        if not objects:
            result.skipped_lines += 1
            continue
        for obj in objects:
            edge_id = obj["id"].strip()
            if edge_id not in uri_map:
                result.invalid_ids.append(edge_id)
            elif edge_id in seen:
                result.duplicates += 1
            else:
                seen.add(edge_id)
                reasoning = obj.get("reasoning")
                if reasoning is None:
                    reasoning = ""
                elif not isinstance(reasoning, str):
                    reasoning = json.dumps(reasoning, ensure_ascii=False)
                result.edges.append(SelectedEdge(edge_id, uri_map[edge_id], reasoning))
    return result


def _objects_in(line: str) -> Iterator[dict[str, Any]]:
    """The selection objects on one line: the line as JSON, else the JSON objects inside it."""
    value = _loads(line.strip().rstrip(","))
    values = [value] if value is not None else _embedded(line)
    for value in values:
        candidates: Iterable[Any] = value if isinstance(value, list) else [value]
        for candidate in candidates:
            if isinstance(candidate, dict) and isinstance(candidate.get("id"), str):
                yield candidate


def _embedded(line: str) -> Iterator[Any]:
    """Each JSON object that starts at a '{' of the line, left to right (prose around them)."""
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

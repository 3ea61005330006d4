"""Reading the selector's JSONL: tolerant of what LLMs write, exact about what it keeps (docs/spec.md §5)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyoxigraph as ox

from tgsparql.asking.jsonl import object_lines


@dataclass(frozen=True)
class SelectedEdge:
    id: str
    triple: ox.Triple
    reasoning: str
    reasoning_truncated: bool = False
    """The LLM's reason was longer than the limit and `reasoning` is its beginning."""


@dataclass
class ParsedSelection:
    edges: list[SelectedEdge] = field(default_factory=list)
    invalid_ids: list[str] = field(default_factory=list)
    """Ids the selector gave that are not in the prompt, in the order given."""
    skipped_lines: int = 0
    """Non-blank lines that were not a JSON object with a string id."""
    duplicates: int = 0


def parse_selection(
    text: str, uri_map: Mapping[str, ox.Triple], *, max_reason_chars: int | None = None
) -> ParsedSelection:
    """The edges `text` selects, each reason cut to `max_reason_chars` (and marked so)."""
    result = ParsedSelection()
    seen: set[str] = set()
    for found in object_lines(text):
        objects = [obj for obj in found if isinstance(obj.get("id"), str)]
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
                cut = max_reason_chars is not None and len(reasoning) > max_reason_chars
                if cut:
                    reasoning = reasoning[:max_reason_chars]
                result.edges.append(SelectedEdge(edge_id, uri_map[edge_id], reasoning, cut))
    return result

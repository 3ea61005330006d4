"""A session's picture: one small graph, question → selected edges → chunks → documents.

Laid out in four columns, its labels wrapped rather than cut, so it can be drawn as inline SVG
(`templates/picture.svg`, on the session page and in `explain --format html`); written as
Graphviz DOT or Mermaid for `explain --format dot|mermaid`.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from dataclasses import dataclass

from tgsparql.record.readback import RecordedEdge

COLUMNS = ("question", "edge", "chunk", "document")
NODE_WIDTH, COLUMN_GAP, ROW_GAP, MARGIN = 240, 60, 14, 10
LINE_CHARS, LINE_HEIGHT, MAX_LINES = 30, 15, 8
"""A picture label is wrapped at LINE_CHARS characters a line, up to MAX_LINES lines; an edge's
label starts with its number, so even a label cut after MAX_LINES names one edge."""


@dataclass(frozen=True)
class Node:
    id: str
    kind: str
    lines: tuple[str, ...]
    title: str
    x: int
    y: int
    height: int
    link: str | None = None
    """A same-page anchor the node links to."""

    @property
    def label(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Picture:
    """question → edges → chunks → documents, with positions for the SVG."""

    nodes: list[Node]
    links: list[tuple[Node, Node]]
    width: int
    height: int

    def dot(self) -> str:
        lines = ["digraph trace {", "  rankdir=LR;", '  node [shape=box, fontname="sans-serif"];']
        for node in self.nodes:
            lines.append(f"  {node.id} [label={_dot_text(node.label)}, "
                         f"tooltip={_dot_text(node.title)}, class={node.kind}];")
        lines += [f"  {a.id} -> {b.id};" for a, b in self.links]
        lines.append("}")
        return "\n".join(lines) + "\n"

    def mermaid(self) -> str:
        lines = ["flowchart LR"]
        for node in self.nodes:
            label = "<br/>".join(_mermaid_text(line) for line in node.lines)
            lines.append(f'  {node.id}["{label}"]')
        lines += [f"  {a.id} --> {b.id}" for a, b in self.links]
        return "\n".join(lines) + "\n"


def picture(question: str, edges: list[RecordedEdge]) -> Picture:
    columns: dict[str, list[tuple[str, str, str, str | None]]] = {kind: [] for kind in COLUMNS}
    links: list[tuple[str, str]] = []
    columns["question"].append(("q", question, question, "#question"))
    seen: set[str] = set()
    for edge in edges:
        edge_id = f"e{edge.index}"
        label = f"[{edge.index}] " + " — ".join(edge.labels or ())
        columns["edge"].append((edge_id, label, f"{label}\nwhy: {edge.reasoning}",
                                f"#edge-{edge.index}"))
        links.append(("q", edge_id))
        for s in edge.sources:
            chunk_id, doc_id = _node_id("c", s.chunk), _node_id("d", s.document)
            if chunk_id not in seen:
                seen.add(chunk_id)
                where = [f"page {s.page_number}"] if s.page_number is not None else []
                where += [f"chunk {s.chunk_index}"] if s.chunk_index is not None else []
                columns["chunk"].append((
                    chunk_id, f"{s.title or s.document}: {', '.join(where) or s.chunk}",
                    s.evidence or s.chunk, None))
            if doc_id not in seen:
                seen.add(doc_id)
                columns["document"].append((doc_id, s.title or s.document, s.document, None))
            for link in ((edge_id, chunk_id), (chunk_id, doc_id)):
                if link not in links:
                    links.append(link)
    laid: dict[str, list[tuple[str, tuple[str, ...], str, str | None]]] = {
        kind: [(node_id, wrap(label), title, anchor) for node_id, label, title, anchor in rows]
        for kind, rows in columns.items()
    }
    heights = {kind: sum(_node_height(lines) + ROW_GAP for _, lines, _, _ in rows) - ROW_GAP
               for kind, rows in laid.items()}
    height = MARGIN * 2 + max(heights.values())
    nodes: dict[str, Node] = {}
    for column, kind in enumerate(COLUMNS):
        y = MARGIN + (height - 2 * MARGIN - heights[kind]) // 2
        for node_id, lines, title, anchor in laid[kind]:
            nodes[node_id] = Node(node_id, kind, lines, title,
                                  MARGIN + column * (NODE_WIDTH + COLUMN_GAP), y,
                                  _node_height(lines), anchor)
            y += _node_height(lines) + ROW_GAP
    width = MARGIN * 2 + len(COLUMNS) * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP
    return Picture(list(nodes.values()), [(nodes[a], nodes[b]) for a, b in links], width, height)


def wrap(text: str) -> tuple[str, ...]:
    """`text` on lines of at most LINE_CHARS characters, broken between words where it can be
    and inside a word where it must; past MAX_LINES the last line ends in "…"."""
    lines = textwrap.wrap(" ".join(text.split()), LINE_CHARS, break_on_hyphens=False) or [""]
    if len(lines) <= MAX_LINES:
        return tuple(lines)
    return (*lines[: MAX_LINES - 1], lines[MAX_LINES - 1][: LINE_CHARS - 1] + "…")


def _node_height(lines: tuple[str, ...]) -> int:
    """Room for the kind's line above the label's lines."""
    return 12 + LINE_HEIGHT * (len(lines) + 1)


def _node_id(prefix: str, iri: str) -> str:
    """A stable identifier DOT and Mermaid accept for any IRI."""
    return prefix + hashlib.sha256(iri.encode("utf-8")).hexdigest()[:10]


def _dot_text(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _mermaid_text(text: str) -> str:
    """Mermaid's entity codes for the characters that would end or break a label."""
    for char, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, code)
    return text

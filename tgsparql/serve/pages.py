"""Trace pages for people: the session list, one session explained, and its picture.

The picture is one small graph, question → selected edges → chunks → documents, laid out in
four columns; it is drawn as inline SVG for the pages and `explain --format html`, and written
as Graphviz DOT or Mermaid for `explain --format dot|mermaid`. Pages are jinja2 templates in
`templates/`, autoescaped; nothing on them runs JavaScript, and the server's
Content-Security-Policy lets nothing run: no script at all, only the pages' one stylesheet (by
its hash). Only http and https IRIs become links, so no `javascript:` IRI in the data is one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jinja2

from tgsparql.explain import Explanation, SessionSummary, explain_session
from tgsparql.provenance import SessionIds
from tgsparql.store import Store
from tgsparql.templates import Templates
from tgsparql.trace import ChunkSource, session_trace

COLUMNS = ("question", "edge", "chunk", "document")
_WEB_LINK = re.compile(r"https?://", re.IGNORECASE)
NODE_WIDTH, NODE_HEIGHT, COLUMN_GAP, ROW_GAP, MARGIN = 230, 44, 60, 14, 10


@dataclass(frozen=True)
class Highlighted:
    """A chunk's text cut around its evidence sentence, so the page can mark it."""

    before: str
    evidence: str
    after: str


@dataclass
class SourceView:
    source: ChunkSource
    text: Highlighted | None


@dataclass
class EdgeView:
    index: int
    iri: str
    labels: tuple[str, str, str]
    reasoning: str
    sources: list[SourceView] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)
    """The answer's sentences that cite the edge."""


@dataclass(frozen=True)
class Node:
    id: str
    kind: str
    label: str
    title: str
    x: int
    y: int


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
            lines.append(f'  {node.id}["{_mermaid_text(node.label)}"]')
        lines += [f"  {a.id} --> {b.id}" for a, b in self.links]
        return "\n".join(lines) + "\n"


@dataclass
class SessionView:
    explanation: Explanation
    edges: list[EdgeView]
    picture: Picture

    @property
    def uuid(self) -> str:
        return self.explanation.session.rsplit(":", 1)[1]


def session_view(store: Store, templates: Templates, collection: str, session: str) -> SessionView:
    """Everything the session page shows; raises SessionNotFound for an unknown session."""
    explanation = explain_session(store, templates, collection, session)
    traced = session_trace(store, templates, collection, SessionIds.from_session_iri(session))
    chunk_sources = {edge.edge_selection: edge.sources for edge in traced.edges} if traced else {}
    edges = [
        EdgeView(
            index=edge.index,
            iri=edge.iri,
            labels=edge.labels,
            reasoning=edge.reasoning,
            sources=[SourceView(s, highlight(s)) for s in chunk_sources.get(edge.iri, [])],
            citations=edge.citations,
        )
        for edge in explanation.selected
    ]
    return SessionView(explanation, edges, picture(explanation.question or "", edges))


def highlight(source: ChunkSource) -> Highlighted | None:
    """The chunk text split at its evidence: at the recorded offset when it matches there,
    else where the evidence first occurs; None when there is no chunk text to show."""
    text = source.chunk_text
    if text is None:
        return None
    evidence = source.evidence
    if not evidence:
        return Highlighted(text, "", "")
    start = source.evidence_offset
    if start is None or text[start : start + len(evidence)] != evidence:
        start = text.find(evidence)
    if start < 0:
        return Highlighted(text, "", "")
    end = start + len(evidence)
    return Highlighted(text[:start], text[start:end], text[end:])


def picture(question: str, edges: list[EdgeView]) -> Picture:
    columns: dict[str, list[tuple[str, str, str]]] = {kind: [] for kind in COLUMNS}
    links: list[tuple[str, str]] = []
    columns["question"].append(("q", question, question))
    seen: set[str] = set()
    for edge in edges:
        edge_id = f"e{edge.index}"
        columns["edge"].append((edge_id, " — ".join(edge.labels), edge.reasoning))
        links.append(("q", edge_id))
        for view in edge.sources:
            s = view.source
            chunk_id, doc_id = _node_id("c", s.chunk), _node_id("d", s.document)
            if chunk_id not in seen:
                seen.add(chunk_id)
                where = [f"page {s.page_number}"] if s.page_number is not None else []
                where += [f"chunk {s.chunk_index}"] if s.chunk_index is not None else []
                columns["chunk"].append((chunk_id, ", ".join(where) or s.chunk,
                                         s.evidence or s.chunk))
            if doc_id not in seen:
                seen.add(doc_id)
                columns["document"].append((doc_id, s.title or s.document, s.document))
            for link in ((edge_id, chunk_id), (chunk_id, doc_id)):
                if link not in links:
                    links.append(link)
    tallest = max(len(rows) for rows in columns.values())
    height = MARGIN * 2 + tallest * (NODE_HEIGHT + ROW_GAP) - ROW_GAP
    nodes: dict[str, Node] = {}
    for column, kind in enumerate(COLUMNS):
        rows = columns[kind]
        top = MARGIN + (height - 2 * MARGIN - (len(rows) * (NODE_HEIGHT + ROW_GAP) - ROW_GAP)) // 2
        for row, (node_id, label, title) in enumerate(rows):
            nodes[node_id] = Node(node_id, kind, _short(label, 34), title,
                                  MARGIN + column * (NODE_WIDTH + COLUMN_GAP),
                                  top + row * (NODE_HEIGHT + ROW_GAP))
    width = MARGIN * 2 + len(COLUMNS) * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP
    return Picture(list(nodes.values()), [(nodes[a], nodes[b]) for a, b in links], width, height)


def render_session(view: SessionView, *, standalone: bool = False) -> str:
    return _environment().get_template("session.html").render(
        view=view, e=view.explanation, node=(NODE_WIDTH, NODE_HEIGHT), standalone=standalone
    )


def render_sessions(sessions: list[SessionSummary], query: str, limit: int) -> str:
    return _environment().get_template("sessions.html").render(
        sessions=sessions, query=query, limit=limit
    )


def render_queries(saved: list[dict[str, Any]]) -> str:
    return _environment().get_template("queries.html").render(queries=saved)


def render_error(status: int, message: str) -> str:
    return _environment().get_template("error.html").render(status=status, message=message)


def render_sparql(**context: Any) -> str:
    """The SPARQL page (`editor.page` says what it holds)."""
    return _environment().get_template("sparql.html").render(**context)


@cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("tgsparql.serve", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.tests["web_link"] = lambda iri: bool(_WEB_LINK.match(iri))
    return environment


def _style_hash() -> str:
    """The CSP hash of base.html's <style>, the only inline content the pages have."""
    source, _, _ = _environment().loader.get_source(_environment(), "base.html")  # type: ignore
    found = re.search(r"<style>(.*?)</style>", source, re.DOTALL)
    assert found is not None, "base.html has no <style>"
    digest = hashlib.sha256(found.group(1).encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; style-src {_style_hash()}; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)


def _node_id(prefix: str, iri: str) -> str:
    """A stable identifier DOT and Mermaid accept for any IRI."""
    return prefix + hashlib.sha256(iri.encode("utf-8")).hexdigest()[:10]


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _dot_text(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _mermaid_text(text: str) -> str:
    """Mermaid's entity codes for the characters that would end or break a label."""
    for char, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, code)
    return text

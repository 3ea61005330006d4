"""Trace pages for people: the session list, one session explained, and its picture.

The session page reads top down as a reader asks: the answer, each cited sentence linked to
the edge it cites (and the edge back to the sentence, by anchors), the selected edges with
their reasons and sources, the picture, the edges retrieved but not selected, and whether the
record conforms to the shapes. The picture is one small graph, question → selected edges →
chunks → documents, laid out in four columns, its labels wrapped rather than cut; it is drawn
as inline SVG for the pages and `explain --format html`, and written as Graphviz DOT or Mermaid
for `explain --format dot|mermaid`. Pages are jinja2 templates in `templates/`, autoescaped;
nothing on them runs JavaScript, and the server's Content-Security-Policy lets nothing run: no
script at all, only the pages' one stylesheet (by its hash). Only http and https IRIs become
links out, so no `javascript:` IRI in the data is one; an entity's own page here is linked by
its IRI as a URL-encoded parameter.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import textwrap
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlencode

import jinja2
import pyoxigraph as ox

from tgsparql.asking.labels import fetch_labels, label_of, label_terms
from tgsparql.asking.sources import ChunkSource
from tgsparql.rdf.iris import SessionIds
from tgsparql.rdf.vocab import Collection
from tgsparql.record.explain import SessionSummary, explain_session
from tgsparql.record.readback import AnswerCitation, Explanation, RecordedEdge
from tgsparql.stores.store import Store
from tgsparql.validation.report import VIOLATION, ValidationReport, show_term

COLUMNS = ("question", "edge", "chunk", "document")
_WEB_LINK = re.compile(r"https?://", re.IGNORECASE)
NODE_WIDTH, COLUMN_GAP, ROW_GAP, MARGIN = 240, 60, 14, 10
LINE_CHARS, LINE_HEIGHT, MAX_LINES = 30, 15, 8
"""A picture label is wrapped at LINE_CHARS characters a line, up to MAX_LINES lines; an edge's
label starts with its number, so even a label cut after MAX_LINES names one edge."""
UNSELECTED_SHOWN = 200
"""How many retrieved-but-not-selected edges the page lists; the saved query lists them all."""
FINDINGS_SHOWN = 50
"""How many validation results the page lists; `tgsparql validate --session` lists them all."""


@dataclass(frozen=True)
class Highlighted:
    """A chunk's text cut around its evidence sentence, so the page can mark it."""

    before: str
    evidence: str
    after: str


@dataclass(frozen=True)
class Passage:
    """A run of the answer's text: plain, or a sentence that cites edges (`citations`)."""

    text: str
    citations: tuple[AnswerCitation, ...] = ()


@dataclass(frozen=True)
class Finding:
    """One validation result, as the page lists it."""

    severity: str
    focus: str
    path: str
    message: str


@dataclass(frozen=True)
class Conformance:
    """The session checked against the bundled shapes, or why it could not be."""

    checked: bool
    conforms: bool = False
    shapes: int = 0
    violations: int = 0
    warnings: int = 0
    findings: tuple[Finding, ...] = ()
    reason: str = ""

    @classmethod
    def of(cls, report: ValidationReport) -> Conformance:
        """The page's view of a report: its counts and its first FINDINGS_SHOWN results,
        violations first."""
        ordered = sorted(report.results, key=lambda r: r.severity.value != VIOLATION.value)
        return cls(True, not report.violations, len(report.shapes), len(report.violations),
                   len(report.results) - len(report.violations), tuple(
                       Finding(r.to_json()["severity"], show_term(r.focus_node),  # type: ignore
                               show_term(r.result_path), r.message)
                       for r in ordered[:FINDINGS_SHOWN]))

    @classmethod
    def not_checked(cls, reason: str) -> Conformance:
        return cls(False, reason=reason)

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "findings": [f.__dict__ for f in self.findings]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Conformance:
        return cls(**{**data, "findings": tuple(Finding(**f) for f in data["findings"])})


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


@dataclass
class SessionView:
    explanation: Explanation
    picture: Picture
    conformance: Conformance | None = None
    """None where the page does not validate (`explain --format html`)."""
    unselected_query: str = ""
    """The saved query that lists every retrieved edge not selected, for this session."""

    @property
    def uuid(self) -> str:
        return SessionIds.from_session_iri(self.explanation.session).uuid

    @property
    def edges(self) -> list[RecordedEdge]:
        return self.explanation.selected

    @property
    def answer(self) -> list[Passage]:
        return passages(self.explanation.answer or "", self.explanation.citations)

    @property
    def unplaced_citations(self) -> list[AnswerCitation]:
        """Citations whose sentence is nowhere in the answer text (a record edited since)."""
        placed = {c.iri for p in self.answer for c in p.citations}
        return [c for c in self.explanation.citations if c.iri not in placed]

    @property
    def unselected_url(self) -> str:
        """The saved query on the SPARQL page, where every row can be read or downloaded."""
        return "/sparql?" + urlencode({"query": self.unselected_query, "format": "html"})


def session_view(store: Store, collection: Collection, session: str,
                 conformance: Conformance | None = None) -> SessionView:
    """Everything the session page shows, read as `explain_session` reads it; raises
    SessionNotFound for an unknown session."""
    explanation = explain_session(store, collection, session, UNSELECTED_SHOWN)
    unselected_query = store.templates.render(
        "_trace/session_unselected", graph=collection.graph,
        session=SessionIds.from_session_iri(session).session)
    return SessionView(explanation, picture(explanation.question or "", explanation.selected),
                       conformance, unselected_query)


def passages(answer: str, citations: list[AnswerCitation]) -> list[Passage]:
    """The answer cut into plain runs and cited sentences. A citation is placed at its recorded
    offset when its sentence stands there, else where the sentence first occurs; citations of
    one sentence share its passage; one overlapping a placed sentence is left unplaced."""
    spans: dict[tuple[int, int], list[AnswerCitation]] = {}
    for citation in citations:
        start = citation.offset
        sentence = citation.sentence
        if not sentence:
            continue
        if start is None or answer[start : start + len(sentence)] != sentence:
            start = answer.find(sentence)
        if start >= 0:
            spans.setdefault((start, start + len(sentence)), []).append(citation)
    out: list[Passage] = []
    at = 0
    for (start, end), group in sorted(spans.items()):
        if start < at:
            continue  # overlaps the sentence before it
        if start > at:
            out.append(Passage(answer[at:start]))
        out.append(Passage(answer[start:end], tuple(sorted(group, key=lambda c: c.edge_index))))
        at = end
    if at < len(answer):
        out.append(Passage(answer[at:]))
    return out


@dataclass(frozen=True)
class TermView:
    text: str
    iri: str | None = None
    """An IRI's, which the page links to that entity's own page."""


@dataclass
class EntityView:
    """One page of the KG's edges that touch an entity."""

    iri: str
    label: str
    page: int
    size: int
    edges: list[tuple[TermView, TermView, TermView]]
    more: bool

    @property
    def first(self) -> int:
        return (self.page - 1) * self.size + 1


ENTITY_PAGE_EDGES = 100
ENTITY_PAGES = 1000
"""An entity page lists ENTITY_PAGE_EDGES edges, up to page ENTITY_PAGES (the first 100,000
edges of a hub; the SPARQL page reaches the rest)."""


def entity_view(store: Store, iri: str, page: int) -> EntityView:
    """Page `page` (from 1) of the edges touching the entity, one query for the edges and one
    for their labels; raises ValueError for a text that is not an IRI."""
    entity = ox.NamedNode(iri)
    rows = store.run("serve/entity_edges", entity=entity, limit=ENTITY_PAGE_EDGES + 1,
                     offset=(page - 1) * ENTITY_PAGE_EDGES).rows
    triples = [ox.Triple(row["subject"], row["predicate"], row["object"])  # type: ignore
               for row in rows[:ENTITY_PAGE_EDGES]]
    labels = fetch_labels(store, label_terms(triples) + [entity])

    def term(value: Any) -> TermView:
        return TermView(label_of(value, labels),
                        value.value if isinstance(value, ox.NamedNode) else None)

    return EntityView(iri, label_of(entity, labels), page, ENTITY_PAGE_EDGES,
                      [(term(t.subject), term(t.predicate), term(t.object)) for t in triples],
                      len(rows) > ENTITY_PAGE_EDGES)


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


def render_session(view: SessionView, *, standalone: bool = False) -> str:
    return _environment().get_template("session.html").render(
        view=view, e=view.explanation, node_width=NODE_WIDTH, line_height=LINE_HEIGHT,
        standalone=standalone, unselected_shown=UNSELECTED_SHOWN,
    )


def render_entity(view: EntityView) -> str:
    return _environment().get_template("entity.html").render(view=view)


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
    environment.filters["highlight"] = highlight
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


def _dot_text(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _mermaid_text(text: str) -> str:
    """Mermaid's entity codes for the characters that would end or break a label."""
    for char, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, code)
    return text

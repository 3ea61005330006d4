"""The server's pages for people: the session list, one session explained (as `record.page`
renders it, here linked to the server's other pages), an entity's edges, the saved queries,
errors and the SPARQL page. Pages are jinja2 templates in `templates/`, extending the record's
`base.html`; nothing on them runs JavaScript, and the server's Content-Security-Policy lets
nothing run: no script at all, only the pages' one stylesheet (by its hash). An entity's own
page here is linked by its IRI as a URL-encoded parameter.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import jinja2
import pyoxigraph as ox

from tgsparql.asking.labels import fetch_labels, label_of, label_terms
from tgsparql.record import page as record_page
from tgsparql.record.explain import SessionSummary
from tgsparql.record.session_view import SessionView
from tgsparql.stores.store import Store


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


def render_session(view: SessionView) -> str:
    return record_page.render_session(view, _environment())


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
    return record_page.environment(jinja2.PackageLoader("tgsparql.serve", "templates"))


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

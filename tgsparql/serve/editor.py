"""The SPARQL page: what a browser gets at /sparql, a query box and the results as a table.

Nothing on it runs script, so it works under the pages' Content-Security-Policy, which lets none
run: the query box is a GET form to /sparql with `format=html`, and the results come back as
this page, rendered on the server. The query is checked, run and capped exactly as any protocol
request (same worker slots, timeout, memory bound, --max-results, SERVICE refusal), and a query
that fails comes back as the page with the query still in the box and the reason above it. A
result of any size is counted up to --max-results, but only its first PAGE_ROWS rows become
table rows; the download links (CSV, JSON, or Turtle and N-Triples for a graph) carry it all.
Protocol clients never see this page: it needs `format=html`, or a request with no query whose
Accept rates text/html above every RDF format (sparql.description_format); any other client
gets the service description there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from urllib.parse import parse_qs, urlencode

import pyoxigraph as ox

from tgsparql.rdf.iris import SESSION_PREFIX
from tgsparql.rdf.templates import templates_for
from tgsparql.rdf.terms import DEFAULT_DIALECT, Dialect
from tgsparql.rdf.vocab import Collection
from tgsparql.serve import pages
from tgsparql.serve.saved import saved_queries
from tgsparql.serve.sparql import (
    Answer, Queryable, QueryRequest, Result, capped, check_query, evaluate,
)
from tgsparql.stores.endpoint import UNION_PARAMETER
from tgsparql.stores.store import QueryForm

HTML = "text/html; charset=utf-8"
PAGE_ROWS = 1000
_PREFIX = re.compile(r"PREFIX\s+([A-Za-z][\w-]*):\s*<([^>]*)>")
_LOCAL_NAME = re.compile(r"[A-Za-z_][\w-]*")
_SESSION = re.compile(re.escape(SESSION_PREFIX) + r"([0-9a-fA-F-]{36})")
_TRACE_TITLE = re.compile(r"#\s*Trace:\s*(.*?)(?:, in one query|:)")


@dataclass(frozen=True)
class Example:
    """A query one click away: a saved BI query with its defaults, or a trace query."""

    kind: str
    name: str
    title: str
    query: str

    @property
    def url(self) -> str:
        return "/sparql?" + urlencode({"query": self.query, "format": "html"})


@dataclass(frozen=True)
class Cell:
    text: str
    title: str | None = None
    """The full IRI of a prefixed name, or a literal's datatype or language."""
    iri: str | None = None
    """An IRI's, which the page links when it is http(s)."""
    session: str | None = None
    """A session IRI's UUID, which the page links to the session's page."""


@dataclass(frozen=True)
class Results:
    form: QueryForm
    columns: list[str]
    rows: list[list[Cell]]
    total: int
    boolean: bool | None = None


def query_on_page(url_query: str) -> str | None:
    """The query text of a request from the page (`format=html`), refused before it ran."""
    params = parse_qs(url_query, keep_blank_values=True)
    return params.get("query", [""])[-1] if _from_page(params) else None


def _from_page(params: dict[str, list[str]]) -> bool:
    return params.get("format", [""])[-1].lower() == "html"


@cache
def prefixes() -> str:
    return templates_for(DEFAULT_DIALECT).render("_prefixes")


@cache
def examples(dialect: Dialect, collection: Collection) -> tuple[Example, ...]:
    """The saved BI queries with their default parameters (the collection's graph), rendered for
    the served store's dialect, then the saved trace queries, their VALUES lines holding
    example IRIs (`queries/trace/`)."""
    templates = templates_for(dialect)
    out = []
    for saved in saved_queries().values():
        params = saved.bind({"collection": [collection.name]} if any(
            p.name == "collection" for p in saved.parameters) else {})
        out.append(Example("bi", saved.name, saved.title,
                           templates.render(saved.template, **params)))
    for name in templates.names():
        if name.startswith("trace/"):
            text = templates.render(name)
            found = _TRACE_TITLE.match(text)
            out.append(Example("trace", name.split("/", 1)[1],
                               found.group(1) if found else name, text))
    return tuple(out)


def starting_query(collection: Collection) -> str:
    """What the box holds at first: the project's prefixes and the newest sessions
    (`queries/serve/editor_start.rq`)."""
    return templates_for(DEFAULT_DIALECT).render("serve/editor_start", graph=collection.graph)


def page(query: str, dialect: Dialect, collection: Collection, *,
         request: QueryRequest | None = None, results: Results | None = None,
         error: str | None = None, status: int = 200) -> Answer:
    """The page, with the query in the box and its results or its error below it."""
    html = pages.render_sparql(
        query=query, examples=examples(dialect, collection), results=results, error=error,
        status=status, downloads=downloads(request, results) if request and results else [],
        shown=PAGE_ROWS,
    )
    return Answer(status, HTML, html.encode("utf-8"))


def results_page(store: Queryable, request: QueryRequest, max_results: int, dialect: Dialect,
                 collection: Collection) -> Answer:
    """Run the query as the protocol would, and answer the page with its results."""
    check_query(request.query, request.base)
    results = tabulate(evaluate(store, request), max_results)
    return page(request.query, dialect, collection, request=request, results=results)


def tabulate(result: Result, max_results: int) -> Results:
    """A result as table rows, the first PAGE_ROWS of at most `max_results`."""
    if isinstance(result, ox.QueryBoolean):
        return Results("ask", [], [], 1, bool(result))
    if isinstance(result, ox.QuerySolutions):
        columns = [variable.value for variable in result.variables]
        rows = capped(result, max_results, "results")
        return Results("select", columns,
                       [[cell(row[name]) for name in columns] for row in rows[:PAGE_ROWS]],
                       len(rows))
    triples = capped(result, max_results, "triples")
    return Results("graph", ["subject", "predicate", "object"],
                   [[cell(t.subject), cell(t.predicate), cell(t.object)]
                    for t in triples[:PAGE_ROWS]], len(triples))


def cell(term: object) -> Cell:
    """One term as shown: an IRI in a project namespace shortened to its prefix, a session
    IRI with its UUID for the link to its page."""
    if term is None:
        return Cell("")
    if isinstance(term, ox.NamedNode):
        iri = term.value
        session = _SESSION.fullmatch(iri)
        short = shorten(iri)
        return Cell(short, iri if short != iri else None, iri,
                    session.group(1) if session else None)
    if isinstance(term, ox.Literal):
        return Cell(term.value, f"@{term.language}" if term.language
                    else shorten(term.datatype.value))
    return Cell(str(term))


def shorten(iri: str) -> str:
    for prefix, namespace in _namespaces():
        if iri.startswith(namespace) and _LOCAL_NAME.fullmatch(iri[len(namespace):]):
            return f"{prefix}:{iri[len(namespace):]}"
    return iri


@cache
def _namespaces() -> tuple[tuple[str, str], ...]:
    """The project's prefixes, longest namespace first, so the most specific one is used."""
    found = _PREFIX.findall(prefixes())
    return tuple(sorted(found, key=lambda pair: -len(pair[1])))


def downloads(request: QueryRequest, results: Results) -> list[tuple[str, str, str]]:
    """(label, url, file name) of the result in each downloadable format."""
    formats = [("Turtle", "turtle", "ttl"), ("N-Triples", "ntriples", "nt")] \
        if results.form == "graph" else [("CSV", "csv", "csv"), ("JSON", "json", "json")]
    out = []
    for label, key, extension in formats:
        params = [("query", request.query), ("format", key)]
        params += [("default-graph-uri", iri) for iri in request.default_graphs]
        params += [(UNION_PARAMETER, "true")] if request.union_default_graph else []
        params += [("named-graph-uri", iri) for iri in request.named_graphs]
        out.append((label, "/sparql?" + urlencode(params), f"results.{extension}"))
    return out

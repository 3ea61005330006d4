"""The SPARQL 1.1 Protocol, read-only: reading a query request, checking it, answering it.

Updates are refused by construction. A request is read as a query only: `update=` parameters
and `application/sparql-update` bodies are refused before anything is parsed, and the text of
`query=` is parsed by pyoxigraph's query parser on an empty scratch store, so an update (which
that parser does not accept) is answered 400 before the real store is touched. The real store
is opened read-only and only ever given `query()`; a remote store (`serve --endpoint`) is only
ever sent queries, whose results pyoxigraph reads back before they are served.

No outbound requests. pyoxigraph's engine answers `SERVICE <url> { … }` by connecting to the URL,
so a query naming SERVICE (SILENT or not) is refused before it runs. The parser itself decides
what is the keyword: every `service` in the text (any case) is rewritten to `servixe`, which is
no keyword; a query whose rewrite still parses had the word only inside strings, IRIs, names or
comments, and one whose rewrite does not parse used the keyword (or is not a query at all;
it cannot be parsed as written to tell which, since an ASK is evaluated as it is parsed).

CSV cells that a spreadsheet would run as a formula are neutralised (`formula_safe`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qs

import pyoxigraph as ox

from tgsparql.stores.store import QueryForm, query_form, result_form

Result = ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples | list[ox.Triple]
"""A query's result as pyoxigraph gives it; a remote store's graph results are a list."""


class Queryable(Protocol):
    """What the endpoint runs queries on: the read-only embedded store or a remote store."""

    def query(
        self,
        query: str,
        *,
        default_graph: Sequence[ox.NamedNode] | None = None,
        named_graphs: Sequence[ox.NamedNode] = (),
    ) -> Result: ...

RESULT_FORMATS: dict[str, ox.QueryResultsFormat] = {
    "json": ox.QueryResultsFormat.JSON,
    "xml": ox.QueryResultsFormat.XML,
    "csv": ox.QueryResultsFormat.CSV,
    "tsv": ox.QueryResultsFormat.TSV,
}
GRAPH_FORMATS: dict[str, ox.RdfFormat] = {
    "turtle": ox.RdfFormat.TURTLE,
    "ntriples": ox.RdfFormat.N_TRIPLES,
    "nquads": ox.RdfFormat.N_QUADS,
    "trig": ox.RdfFormat.TRIG,
}
_ALIASES = {"ttl": "turtle", "nt": "ntriples", "nq": "nquads", "srj": "json", "srx": "xml"}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_UPDATE_START = re.compile(
    r"(?:\s|#[^\n]*\n|(?:PREFIX\s+[^:\s]*:\s*<[^>]*>)|(?:BASE\s*<[^>]*>))*"
    r"(INSERT|DELETE|LOAD|CLEAR|CREATE|DROP|COPY|MOVE|ADD|WITH)\b",
    re.IGNORECASE,
)
READ_ONLY = "this endpoint is read-only: SPARQL Update is refused"
NO_SERVICE = ("SERVICE is refused: this server makes no outbound requests (query the other "
              "endpoint yourself)")
_SERVICE_WORD = re.compile(r"servi(c)e", re.IGNORECASE | re.ASCII)


class ProtocolError(Exception):
    """A request answered with an HTTP error status and a one-line plain-text reason."""

    def __init__(self, status: int, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after
        """Seconds for a 503's Retry-After, when known."""


@dataclass(frozen=True)
class QueryRequest:
    """What a protocol request asks: the query text and its RDF dataset, if it names one."""

    query: str
    default_graphs: tuple[str, ...] = ()
    named_graphs: tuple[str, ...] = ()
    accept: str = ""
    format: str | None = None


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


def read_request(
    method: str, url_query: str, content_type: str, body: bytes, accept: str
) -> QueryRequest:
    """The query of a GET or POST protocol request; updates in any form are refused (400)."""
    params = parse_qs(url_query, keep_blank_values=True)
    media = content_type.split(";", 1)[0].strip().lower()
    if method == "POST":
        if media == "application/sparql-update":
            raise ProtocolError(400, READ_ONLY)
        if media == "application/x-www-form-urlencoded":
            form = parse_qs(_text(body), keep_blank_values=True)
            params = {**params, **{k: params.get(k, []) + v for k, v in form.items()}}
        elif media == "application/sparql-query":
            if "query" in params:
                raise ProtocolError(400, "a direct POST carries its query in the body, not in "
                                         "a query= parameter")
            params["query"] = [_text(body)]
        else:
            raise ProtocolError(
                415, "POST a query as application/x-www-form-urlencoded (query=...) or as "
                     "application/sparql-query"
            )
    elif method != "GET":
        raise ProtocolError(405, f"{method} is not allowed: the endpoint answers GET and POST")
    if "update" in params or "using-graph-uri" in params or "using-named-graph-uri" in params:
        raise ProtocolError(400, READ_ONLY)
    queries = params.get("query", [])
    if len(queries) != 1 or not queries[0].strip():
        raise ProtocolError(400, "give exactly one non-empty query (query=... or a direct POST)")
    formats = params.get("format", [])
    return QueryRequest(
        query=queries[0],
        default_graphs=tuple(_iris(params.get("default-graph-uri", []))),
        named_graphs=tuple(_iris(params.get("named-graph-uri", []))),
        accept=accept,
        format=formats[-1] if formats else None,
    )


def check_query(text: str) -> QueryForm:
    """The query's form, from pyoxigraph's parser on an empty store; updates are refused."""
    refuse_service(text)  # first: an ASK is evaluated as it is parsed, SERVICE and all
    try:
        return query_form(text)
    except SyntaxError as error:
        if _UPDATE_START.match(text):
            raise ProtocolError(400, READ_ONLY) from None
        raise ProtocolError(400, f"not a SPARQL query: {error}") from None


def refuse_service(text: str) -> None:
    """Refuse (400) a query that uses SERVICE: running it would make the server connect out."""
    if not _SERVICE_WORD.search(text):
        return
    rewritten = _SERVICE_WORD.sub(
        lambda m: m.group(0)[:5] + ("X" if m.group(1).isupper() else "x") + m.group(0)[6], text)
    try:
        query_form(rewritten)  # nothing to connect to: no SERVICE is left in it
    except SyntaxError:
        raise ProtocolError(400, READ_ONLY if _UPDATE_START.match(text) else NO_SERVICE) \
            from None


def negotiate(form: QueryForm, accept: str, format: str | None) -> str:
    """The format key for the answer: `format=` if given, else the best of Accept."""
    table = GRAPH_FORMATS if form == "graph" else RESULT_FORMATS
    if format is not None:
        key = _ALIASES.get(format.lower(), format.lower())
        if key not in table:
            raise ProtocolError(
                406, f"format {format!r} is not available for this query; choose one of "
                     + ", ".join(table)
            )
        return key
    media_types = {_media(value): key for key, value in table.items()}
    if form != "graph":
        media_types["application/json"] = "json"
    default = "turtle" if form == "graph" else "json"
    ranges = _accept_ranges(accept)
    if not ranges:
        return default
    best: tuple[float, int, str] | None = None
    for order, (media, q) in enumerate(ranges):
        if q <= 0:
            continue
        if media in media_types:
            key = media_types[media]
        elif media in ("*/*", "application/*", "text/*"):
            key = default
        else:
            continue
        if best is None or (q, -order) > (best[0], best[1]):
            best = (q, -order, key)
    if best is None:
        raise ProtocolError(
            406, "none of the accepted media types can carry this result; available: "
                 + ", ".join(sorted(media_types))
        )
    return best[2]


def media_type(form: QueryForm, key: str) -> str:
    table: Mapping[str, Any] = GRAPH_FORMATS if form == "graph" else RESULT_FORMATS
    return table[key].media_type


def execute(store: Queryable, request: QueryRequest, max_results: int, *,
            csv_raw: bool = False) -> Answer:
    """Check, run and serialize one query; at most `max_results` solutions or triples."""
    form = check_query(request.query)
    key = negotiate(form, request.accept, request.format)
    return serialize(evaluate(store, request), key, max_results, csv_raw=csv_raw)


def evaluate(store: Queryable, request: QueryRequest) -> Result:
    """The result of a query `check_query` has let through, on the request's dataset."""
    defaults = [ox.NamedNode(iri) for iri in request.default_graphs]
    try:
        return store.query(request.query, default_graph=defaults or None,
                           named_graphs=[ox.NamedNode(iri) for iri in request.named_graphs])
    except SyntaxError as error:
        raise ProtocolError(400, f"not a SPARQL query: {error}") from None


def serialize(result: Result, key: str, max_results: int, *, csv_raw: bool = False) -> Answer:
    """A query result in the format `key`, refusing (503) one larger than `max_results`; CSV
    cells are `formula_safe` unless `csv_raw`."""
    form = result_form(result)
    if isinstance(result, ox.QueryBoolean):
        body = result.serialize(format=RESULT_FORMATS[key])
    elif isinstance(result, ox.QuerySolutions):
        variables = [variable.value for variable in result.variables]
        rows = capped(result, max_results, "results")
        solutions = _solutions(variables, rows, spreadsheet=key == "csv" and not csv_raw)
        body = solutions.serialize(format=RESULT_FORMATS[key])
    else:
        triples = capped(result, max_results, "triples")
        body = ox.serialize(triples, format=GRAPH_FORMATS[key]) or b""
    return Answer(200, media_type(form, key), body)


def formula_safe(cell: str) -> str:
    """A CSV cell a spreadsheet shows as text instead of running it as a formula (OWASP, CSV
    injection): one that starts with = + - @, a tab or a carriage return gets a leading '.
    A cell that is wholly a number (-3, +1.5e3) is left as it is: a spreadsheet reads it as
    that number, and there is no room in it for anything else."""
    if cell.startswith(_FORMULA_START) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def _solutions(variables: Sequence[str], rows: Sequence[ox.QuerySolution], *,
               spreadsheet: bool = False) -> ox.QuerySolutions:
    """Counted rows back into a QuerySolutions, so pyoxigraph's own writers serialize them;
    for a `spreadsheet`, each literal `formula_safe`.

    pyoxigraph can only serialize a QuerySolutions it has not iterated; the cap needs the rows
    counted first, so they go through the SPARQL JSON results format, which it reads exactly.
    """
    bindings = [
        {name: _json_term(term) for name in variables if (term := row[name]) is not None}
        for row in rows
    ]
    if spreadsheet:
        for binding in bindings:
            for term in binding.values():
                if term["type"] == "literal":
                    term["value"] = formula_safe(term["value"])
    document = {"head": {"vars": list(variables)}, "results": {"bindings": bindings}}
    data = json.dumps(document, ensure_ascii=False).encode("utf-8")
    solutions = ox.parse_query_results(data, format=ox.QueryResultsFormat.JSON)
    assert isinstance(solutions, ox.QuerySolutions)
    return solutions


def _json_term(term: Any) -> dict[str, Any]:
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Triple):
        return {"type": "triple", "value": {
            "subject": _json_term(term.subject),
            "predicate": _json_term(term.predicate),
            "object": _json_term(term.object),
        }}
    out: dict[str, Any] = {"type": "literal", "value": term.value}
    if term.language:
        out["xml:lang"] = term.language
    else:
        out["datatype"] = term.datatype.value
    return out


def capped(items: Any, max_results: int, what: str) -> list[Any]:
    """The items, refusing (503) more than `max_results` of them."""
    kept = []
    for item in items:
        if len(kept) == max_results:
            raise ProtocolError(
                503, f"the result has more than {max_results} {what} (the server's "
                     "--max-results); narrow the query or add a LIMIT"
            )
        kept.append(item)
    return kept


def _media(value: ox.QueryResultsFormat | ox.RdfFormat) -> str:
    return value.media_type.split(";", 1)[0].strip()


def _accept_ranges(accept: str) -> list[tuple[str, float]]:
    out = []
    for part in accept.split(","):
        pieces = [piece.strip() for piece in part.split(";")]
        if not pieces[0]:
            continue
        q = 1.0
        for piece in pieces[1:]:
            name, _, value = piece.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        out.append((pieces[0].lower(), q))
    return out


def _iris(values: Sequence[str]) -> list[str]:
    for value in values:
        try:
            ox.NamedNode(value)
        except ValueError:
            raise ProtocolError(400, f"not an IRI: {value!r:.100}") from None
    return list(values)


def _text(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(400, "the request body is not UTF-8") from None

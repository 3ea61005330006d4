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

Formats. A query's answer is in the first `format=` value its form has (short names such as
`tsv`, `rdf+xml` or `json-ld`, or media types, as SPARQLWrapper sends both), else in the best
match of Accept by its q-values. A GET without a query answers the SPARQL page only when HTML
is the client's best match; any other client gets the endpoint's SPARQL 1.1 Service
Description. Relative IRIs in a query resolve against the endpoint's URL, as the protocol
allows. CSV cells that a spreadsheet would run as a formula are neutralised (`formula_safe`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs

import pyoxigraph as ox

from tgsparql.stores.endpoint import UNION_PARAMETER
from tgsparql.stores.store import QueryForm, query_form, result_form

Result = ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples | list[ox.Triple]
"""A query's result as pyoxigraph gives it; a remote store's graph results are a list."""
DefaultGraph = Sequence[ox.NamedNode] | Literal["union"] | None
"""A request's default graph: the graphs it names, the union of every graph, or (None) the
store's own default graph."""


class Queryable(Protocol):
    """What the endpoint runs queries on: the read-only embedded store or a remote store."""

    def query(
        self,
        query: str,
        *,
        default_graph: DefaultGraph = None,
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
    "rdfxml": ox.RdfFormat.RDF_XML,
    "jsonld": ox.RdfFormat.JSON_LD,
}
"""In the order a wildcard of Accept picks them: `*/*` the first, `text/*` the first text/."""
FORMAT_IRIS = {
    "json": "SPARQL_Results_JSON", "xml": "SPARQL_Results_XML", "csv": "SPARQL_Results_CSV",
    "tsv": "SPARQL_Results_TSV", "turtle": "Turtle", "ntriples": "N-Triples",
    "nquads": "N-Quads", "trig": "TriG", "rdfxml": "RDF_XML", "jsonld": "JSON-LD",
}
"""Each format's name in http://www.w3.org/ns/formats/, for the service description."""
PAGE = "html"
"""The format key of the SPARQL page."""


def _media(value: ox.QueryResultsFormat | ox.RdfFormat) -> str:
    return value.media_type.split(";", 1)[0].strip()


def _names(table: Mapping[str, ox.QueryResultsFormat | ox.RdfFormat],
           aliases: Mapping[str, str]) -> dict[str, str]:
    """Every name a client may give a format by (`format=` or Accept), to its key."""
    return {**{key: key for key in table},
            **{_media(value): key for key, value in table.items()}, **aliases}


GENERIC_XML = ("application/xml", "text/xml")
"""What clients send for XML of either kind, read as pyoxigraph, Jena and Virtuoso read it: results
in XML, RDF/XML for a graph. Not from a browser (`_browsing`), which lists `application/xml;q=0.9`
beside its page types and is answered as if it had sent only those and `*/*`."""
_PAGE_TYPES = ("text/html", "application/xhtml+xml")
RESULT_NAMES = _names(RESULT_FORMATS, {
    "srj": "json", "application/json": "json", "srx": "xml",
    **dict.fromkeys(GENERIC_XML, "xml")})
GRAPH_NAMES = _names(GRAPH_FORMATS, {
    "ttl": "turtle", "application/turtle": "turtle", "n3": "turtle", "text/n3": "turtle",
    "nt": "ntriples", "n-triples": "ntriples", "nq": "nquads", "n-quads": "nquads",
    "xml": "rdfxml", "rdf": "rdfxml", "rdf+xml": "rdfxml", "json": "jsonld",
    "json-ld": "jsonld", "application/json": "jsonld", "application/x-json+ld": "jsonld",
    **dict.fromkeys(GENERIC_XML, "rdfxml")})
"""`xml` and `json` name the graph formats of those syntaxes: SPARQLWrapper sends `format=xml`
for a CONSTRUCT by default."""
DESCRIPTION_NAMES = {**GRAPH_NAMES, PAGE: PAGE, "text/html": PAGE, "application/xhtml+xml": PAGE}
"""What a GET without a query may be answered in: a graph format, or the SPARQL page."""
_UNICODE = ("utf-8", "utf8", "us-ascii")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_POSITION = re.compile(r"^error at ([0-9]+):")
SD = "http://www.w3.org/ns/sparql-service-description#"
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
    union_default_graph: bool = False
    """Whether the default graph is the union of every graph (`union-default-graph`)."""
    named_graphs: tuple[str, ...] = ()
    accept: str = ""
    formats: tuple[str, ...] = ()
    """Every `format=` value, in order: the first one the query's form has is its format."""
    base: str | None = None
    """The endpoint's URL, which the query's relative IRIs resolve against (after its own BASE,
    if it has one)."""


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


def read_request(
    method: str, url_query: str, content_type: str, body: bytes, accept: str,
    base: str | None = None,
) -> QueryRequest:
    """The query of a GET or POST protocol request; updates in any form are refused (400)."""
    params = parse_qs(url_query, keep_blank_values=True)
    media, *options = (piece.strip() for piece in content_type.split(";"))
    media = media.lower()
    if method == "POST":
        if media == "application/sparql-update":
            raise ProtocolError(400, READ_ONLY)
        if media in ("application/x-www-form-urlencoded", "application/sparql-query"):
            _check_charset(options)
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
    union = UNION_PARAMETER in params
    if union and "default-graph-uri" in params:
        raise ProtocolError(400, f"give {UNION_PARAMETER} or default-graph-uri, not both")
    return QueryRequest(
        query=queries[0],
        default_graphs=tuple(_iris(params.get("default-graph-uri", []))),
        union_default_graph=union,
        named_graphs=tuple(_iris(params.get("named-graph-uri", []))),
        accept=accept,
        formats=tuple(params.get("format", [])),
        base=base,
    )


def _check_charset(options: Sequence[str]) -> None:
    """Refuse (415) a body declared in a charset other than UTF-8: it is read as UTF-8 only,
    and a UTF-16 query that happens to decode would be a different query."""
    for option in options:
        name, _, value = option.partition("=")
        charset = value.strip().strip('"')
        if name.strip().lower() == "charset" and charset.lower() not in _UNICODE:
            raise ProtocolError(415, f"the body is declared as charset={charset!r:.40}; send "
                                     "the query as UTF-8 (charset=utf-8)")


def endpoint_iri(authority: str, path: str) -> str | None:
    """http://AUTHORITY/PATH, if that is an IRI: the base of a query's relative IRIs and the
    endpoint a service description names."""
    iri = f"http://{authority}{path}"
    try:
        ox.NamedNode(iri)
    except ValueError:
        return None
    return iri


def based(query: str, base: str | None) -> str:
    """The query as it is parsed and run: after a BASE of the endpoint's URL, on a line of its
    own (so an error's line number is one more than the client's; see `_not_a_query`)."""
    return f"BASE <{base}>\n{query}" if base else query


def check_query(query: str, base: str | None = None) -> QueryForm:
    """The query's form, from pyoxigraph's parser on an empty store; updates are refused."""
    text = based(query, base)
    refuse_service(text)  # first: an ASK is evaluated as it is parsed, SERVICE and all
    try:
        return query_form(text)
    except SyntaxError as error:
        if _UPDATE_START.match(text):
            raise ProtocolError(400, READ_ONLY) from None
        raise _not_a_query(error, base) from None


def _not_a_query(error: SyntaxError, base: str | None) -> ProtocolError:
    """The parser's message, at the client's own line, in words: pyoxigraph names a malformed
    IRI by its failure ("expected IRI parsing failed")."""
    message = str(error).replace("IRI parsing failed", "a valid IRI")
    if base:
        message = _POSITION.sub(lambda found: f"error at {int(found[1]) - 1}:", message, 1)
    return ProtocolError(400, f"not a SPARQL query: {message}")


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


def negotiate(form: QueryForm, accept: str, formats: Sequence[str] = ()) -> str:
    """The format key for the answer: the first `format=` value this form has, else the best of
    Accept."""
    names = GRAPH_NAMES if form == "graph" else RESULT_NAMES
    key = _choose(names, accept, formats)
    if key is not None:
        return key
    if formats:
        raise ProtocolError(
            406, f"format {', '.join(formats)!r:.200} is not available for this query; choose "
                 "one of " + ", ".join(GRAPH_FORMATS if form == "graph" else RESULT_FORMATS))
    raise ProtocolError(
        406, "none of the accepted media types can carry this result; available: "
             + ", ".join(sorted(name for name in names if "/" in name)))


def description_format(url_query: str, accept: str) -> str | None:
    """What a GET without a query is answered with: `PAGE` (the SPARQL page) when that is the
    client's best match, else the graph format of the service description; None for a GET
    that carries a query or an update, or that accepts neither, which the protocol answers."""
    params = parse_qs(url_query, keep_blank_values=True)
    if "query" in params or "update" in params:
        return None
    return _choose(DESCRIPTION_NAMES, accept, params.get("format", []))


def _choose(names: Mapping[str, str], accept: str, formats: Sequence[str]) -> str | None:
    """The key of the first of `formats` in `names` (each value may list several, comma
    separated), else of the best media type of Accept; None if there is none."""
    if formats:
        for value in formats:
            for name in value.split(","):
                key = names.get(name.split(";", 1)[0].strip().lower())
                if key is not None:
                    return key
        return None
    if _browsing(accept):
        accept = ",".join(part for part in accept.split(",")
                          if part.split(";", 1)[0].strip().lower() not in GENERIC_XML)
    best = best_media(accept, [name for name in names if "/" in name])
    return None if best is None else names[best]


def _browsing(accept: str) -> bool:
    """Whether Accept is a browser's: it asks for a page (text/html or XHTML)."""
    return any(media in _PAGE_TYPES and q > 0 for media, q in _accept_ranges(accept))


def best_media(accept: str, offered: Sequence[str]) -> str | None:
    """The one of `offered` (in order of preference) that Accept rates highest, by the q of the
    most specific range that matches it (RFC 9110 §12.5.1); ties go to the range listed first,
    then to the first offered. None if Accept rates them all 0; an empty Accept takes any."""
    ranges = _accept_ranges(accept) or [("*/*", 1.0)]
    best: tuple[tuple[float, int, int], str] | None = None
    for rank, media in enumerate(offered):
        wildcard = media.split("/", 1)[0] + "/*"
        matches = [(specificity, q, position) for position, (pattern, q) in enumerate(ranges)
                   if (specificity := {media: 2, wildcard: 1, "*/*": 0}.get(pattern)) is not None]
        if not matches:
            continue
        _, q, position = max(matches, key=lambda match: match[0])
        if q > 0 and (best is None or (q, -position, -rank) > best[0]):
            best = ((q, -position, -rank), media)
    return None if best is None else best[1]


def media_type(form: QueryForm, key: str) -> str:
    table: Mapping[str, Any] = GRAPH_FORMATS if form == "graph" else RESULT_FORMATS
    return table[key].media_type


def execute(store: Queryable, request: QueryRequest, max_results: int, *,
            csv_raw: bool = False) -> Answer:
    """Check, run and serialize one query; at most `max_results` solutions or triples."""
    form = check_query(request.query, request.base)
    key = negotiate(form, request.accept, request.formats)
    return serialize(evaluate(store, request), key, max_results, csv_raw=csv_raw)


def evaluate(store: Queryable, request: QueryRequest) -> Result:
    """The result of a query `check_query` has let through, on the request's dataset."""
    defaults = [ox.NamedNode(iri) for iri in request.default_graphs]
    default_graph: DefaultGraph = "union" if request.union_default_graph else defaults or None
    try:
        return store.query(based(request.query, request.base), default_graph=default_graph,
                           named_graphs=[ox.NamedNode(iri) for iri in request.named_graphs])
    except SyntaxError as error:
        raise _not_a_query(error, request.base) from None


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
        try:
            body = ox.serialize(triples, format=GRAPH_FORMATS[key]) or b""
        except (OSError, ValueError) as error:
            raise ProtocolError(406, f"this graph cannot be written as {key} ({error}); ask "
                                     "for turtle, ntriples, nquads or trig") from None
    return Answer(200, media_type(form, key), body)


def formula_safe(cell: str) -> str:
    """A CSV cell a spreadsheet shows as text instead of running it as a formula (OWASP, CSV
    injection): one that starts with = + - @, a tab or a carriage return gets a leading '.
    A cell that is wholly a number (-3, +1.5e3) is left as it is: a spreadsheet reads it as
    that number, and there is no room in it for anything else."""
    if cell.startswith(_FORMULA_START) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def service_description(endpoint: str, key: str) -> Answer:
    """The endpoint's SPARQL 1.1 Service Description, in the graph format `key`: where it is,
    that it answers SPARQL 1.1 queries (not updates), in which formats, over which dataset.
    It claims no feature: the default graph is the store's own, not the union of its graphs
    (a request asks for that union with `union-default-graph`, a protocol parameter the
    vocabulary has no term for), and SERVICE (federated query) is refused."""
    # Labels of its own, so the same endpoint is described by the same bytes every time (a HEAD
    # gives the Content-Length its GET sends; a client may cache it).
    service, dataset, graph = (ox.BlankNode(name) for name in ("service", "dataset", "graph"))
    a = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")

    def sd(name: str) -> ox.NamedNode:
        return ox.NamedNode(SD + name)

    triples = [
        ox.Triple(service, a, sd("Service")),
        ox.Triple(service, sd("endpoint"), ox.NamedNode(endpoint)),
        ox.Triple(service, sd("supportedLanguage"), sd("SPARQL11Query")),
        *(ox.Triple(service, sd("resultFormat"),
                    ox.NamedNode("http://www.w3.org/ns/formats/" + name))
          for name in FORMAT_IRIS.values()),
        ox.Triple(service, sd("defaultDataset"), dataset),
        ox.Triple(dataset, a, sd("Dataset")),
        ox.Triple(dataset, sd("defaultGraph"), graph),
        ox.Triple(graph, a, sd("Graph")),
    ]
    return serialize(triples, key, len(triples))


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

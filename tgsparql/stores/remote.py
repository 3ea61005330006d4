"""A store behind a SPARQL 1.1 Protocol endpoint, for KGs that live in a SPARQL server.

SPARQLWrapper builds each protocol request (endpoint, parameters, auth, Accept); this module
sends it with its own connect and read timeouts, retries what may be retried, and parses every
result with pyoxigraph (SPARQL JSON, N-Triples), never rdflib, so triple terms survive.

Server notes, for the parameters a read may send:
- Oxigraph: `union-default-graph` (the union of every graph), `default-graph-uri` (repeatable),
  a Graph Store Protocol endpoint at `/store` that takes N-Quads POSTed to it.
- Fuseki, GraphDB: `default-graph-uri`; no standard parameter asks for the union (give the
  `Endpoint` `union_parameter=None` and a union read fails with a clear error rather than
  reading the wrong graph).
- Virtuoso: its default graph is the union of all graphs, and an INSERT DATA without GRAPH has
  no target. Give the `Endpoint` a `kg_graph`, a named graph that stands for tgsparql's default
  graph (the KG): reads of the default graph send it as `default-graph-uri`, each `GRAPH <iri>`
  the query names as `named-graph-uri` (Virtuoso leaves a named graph out of a dataset that has
  a default graph but does not list it, while `GRAPH ?g` still ranges over every graph), updates
  send it as `using-graph-uri` (Virtuoso's target for triples outside GRAPH), bulk loads put the
  default graph's triples into it, and a union read sends no dataset at all. Its
  `ResultSetMaxRows` (10000 by default) must exceed the largest result tgsparql reads, or
  results are cut short.
Without `kg_graph` no protocol parameter names a store's own default graph next to named
graphs, so a graph list that mixes `ox.DefaultGraph()` with named graphs is refused.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import BinaryIO
from urllib.parse import urlsplit, urlunsplit

import pyoxigraph as ox
from SPARQLWrapper import ASK, CONSTRUCT, INSERT, JSON, POST, SELECT, SPARQLWrapper

from tgsparql.rdf.lexical import records
from tgsparql.rdf.templates import TemplateError
from tgsparql.rdf.terms import Dialect
from tgsparql.rdf.vocab import XSD_INTEGER
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.store import DataGraph, Solution, StoreError, WithTemplates, query_form

SPARQL_JSON = "application/sparql-results+json"
N_TRIPLES = "application/n-triples"
TURTLE = "text/turtle"
RDF_REIFIES = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies")
N_QUADS = "application/n-quads"
VIRTUOSO_ASK = "__ASK_RETVAL"
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
MAX_BACKOFF = 8.0

Progress = Callable[[int], None]
"""Told how many more quads were sent."""


class EndpointUnreachable(StoreError):
    """No HTTP exchange took place: the endpoint could not be connected to."""


class _Failed(Exception):
    """One failed exchange: what went wrong, whether trying again could help, and whether the
    server was reached at all."""

    def __init__(self, what: str, transient: bool, *, reached: bool = True) -> None:
        super().__init__(what)
        self.what = what
        self.transient = transient
        self.reached = reached


@dataclass(frozen=True)
class _Group:
    """The triples of one graph in a batch (`graph` None: the default graph)."""

    graph: ox.NamedNode | None
    triples: list[ox.Triple]


class RemoteStore(WithTemplates):
    """The Store protocol over HTTP, to the endpoint's URLs."""

    round_trips = True

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.dialect: Dialect = endpoint.dialect
        self.kg_graph = ox.NamedNode(endpoint.kg_graph) if endpoint.kg_graph is not None else None
        self._closed = False
        self.requests = 0
        """HTTP exchanges attempted so far (each retry counts), for benchmarks and tests."""
        self._counting = threading.Lock()  # a session's stages may call from two threads

    def __repr__(self) -> str:
        return f"RemoteStore({display_url(self.endpoint.query_url)!r}, dialect={self.dialect!r})"

    # -- the Store protocol -------------------------------------------------------------------

    def select(self, query: str, *, default_graph: DataGraph = None) -> list[Solution]:
        body = self._read(query, SELECT, SPARQL_JSON, default_graph)
        try:
            result = ox.parse_query_results(body, ox.QueryResultsFormat.JSON)
            if not isinstance(result, ox.QuerySolutions):
                raise SyntaxError("a boolean where solutions were expected")
            names = [variable.value for variable in result.variables]
            return [
                {name: value for name in names if (value := solution[name]) is not None}
                for solution in result
            ]
        except (SyntaxError, ValueError) as error:
            raise self._error(f"malformed SPARQL JSON results: {_line(error)}")

    def ask(self, query: str, *, default_graph: DataGraph = None) -> bool:
        return self._boolean(self._read(query, ASK, SPARQL_JSON, default_graph))

    def _boolean(self, body: bytes) -> bool:
        """The boolean of an ASK; Virtuoso 7 answers one in JSON as solutions of one variable
        `__ASK_RETVAL`, a row (holding 1) for true and none for false, which is read as such."""
        try:
            result = ox.parse_query_results(body, ox.QueryResultsFormat.JSON)
            if isinstance(result, ox.QuerySolutions) and [
                    v.value for v in result.variables] == [VIRTUOSO_ASK]:
                return any(row[VIRTUOSO_ASK] != ox.Literal("0", datatype=XSD_INTEGER)
                           for row in result)
        except (SyntaxError, ValueError) as error:
            raise self._error(f"malformed SPARQL JSON results: {_line(error)}")
        if not isinstance(result, ox.QueryBoolean):
            raise self._error("malformed SPARQL JSON results: no boolean")
        return bool(result)

    def construct(self, query: str) -> list[ox.Triple]:
        return self._triples(query, None, ())

    def query(
        self,
        query: str,
        *,
        default_graph: DataGraph = None,
        named_graphs: Sequence[ox.NamedNode] = (),
    ) -> ox.QuerySolutions | ox.QueryBoolean | list[ox.Triple]:
        """A query of any form, as pyoxigraph would answer it, for relaying it unread
        (`tgsparql serve --endpoint`). `named_graphs`, when given, are the dataset's named
        graphs (named-graph-uri)."""
        try:
            form = query_form(query)
        except SyntaxError as error:
            raise self._error(f"not a SPARQL query: {_line(error)}") from None
        if form == "graph":
            return self._triples(query, default_graph, named_graphs)
        asking = form == "ask"
        body = self._read(query, ASK if asking else SELECT, SPARQL_JSON, default_graph,
                          named_graphs)
        if asking:
            document = {"head": {}, "boolean": self._boolean(body)}
            return ox.parse_query_results(json.dumps(document).encode(),
                                          ox.QueryResultsFormat.JSON)
        try:  # read to the end once, so a malformed body fails here and not in the reader
            result = ox.parse_query_results(body, ox.QueryResultsFormat.JSON)
            if not isinstance(result, ox.QuerySolutions):
                raise SyntaxError("a boolean where solutions were expected")
            for _ in result:
                pass
        except (SyntaxError, ValueError) as error:
            raise self._error(f"malformed SPARQL JSON results: {_line(error)}")
        return ox.parse_query_results(body, ox.QueryResultsFormat.JSON)  # type: ignore[return-value]

    def _triples(self, query: str, default_graph: DataGraph,
                 named_graphs: Sequence[ox.NamedNode]) -> list[ox.Triple]:
        """The triples, as N-Triples; from an RDF-star store as Turtle, whose quoted triples
        pyoxigraph reads as RDF 1.2 reifiers, folded back into the triples they quote."""
        star = self.dialect == "rdfstar"
        body = self._read(query, CONSTRUCT, TURTLE if star else N_TRIPLES, default_graph,
                          named_graphs)
        try:
            quads = ox.parse(body, ox.RdfFormat.TURTLE if star else ox.RdfFormat.N_TRIPLES)
            triples = [quad.triple for quad in quads]
            return _fold_reifiers(triples) if star else triples
        except (SyntaxError, ValueError) as error:
            syntax = "Turtle" if star else "N-Triples"
            raise self._error(f"malformed {syntax}: {_line(error)}")

    def update(self, update: str) -> None:
        wrapper = self._wrapper(self.endpoint.updates_to, update, INSERT, "*/*")
        if self.kg_graph is not None:
            wrapper.addParameter("using-graph-uri", self.kg_graph.value)
        self._send(self.endpoint.updates_to, wrapper, retry=is_insert_data(update), updating=True)

    def bulk_load(
        self,
        source: BinaryIO,
        format: ox.RdfFormat,
        *,
        graph: ox.NamedNode | None = None,
        progress: Progress | None = None,
    ) -> None:
        """Send the stream in batches: N-Quads POSTed to the Graph Store Protocol endpoint when
        there is one and the store speaks RDF 1.2, else INSERT DATA rendered for the dialect.

        Blank nodes are refused: each batch is its own request, and would split them apart.
        Each batch is written whole or not at all, but those before a failure stay: its error
        says how many quads they held."""
        self._check_open()
        target = graph if graph is not None else self.kg_graph
        sent = 0
        try:
            for batch in _batches(ox.parse(source, format), target, self.endpoint.batch_size):
                _refuse_blank_nodes(batch)
                written = batch + records(batch)
                if self.endpoint.graph_store_url is not None and self.dialect == "rdf12":
                    self._post_quads(written)
                else:
                    self.run("bulk_insert", groups=_groups(written))
                sent += len(batch)
                if progress is not None:
                    progress(len(batch))
        except StoreError as error:
            raise StoreError(f"{error} (after {sent:,} quads were written)") from None
        except SyntaxError as error:
            raise StoreError(f"bulk load failed: {_line(error)}") from None
        except TemplateError as error:
            raise StoreError(f"bulk load failed: {error}") from None

    def close(self) -> None:
        """Nothing is held open between requests; later calls fail clearly."""
        self._closed = True

    def __enter__(self) -> RemoteStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- requests -----------------------------------------------------------------------------

    def _read(self, query: str, kind: str, accept: str, default_graph: DataGraph,
              named_graphs: Sequence[ox.NamedNode] = ()) -> bytes:
        wrapper = self._wrapper(self.endpoint.query_url, query, kind, accept)
        parameters = self._dataset_parameters(query, default_graph)
        if named_graphs:
            parameters = [p for p in parameters if p[0] != "named-graph-uri"]
            parameters += [("named-graph-uri", graph.value) for graph in named_graphs]
        for name, value in parameters:
            wrapper.addParameter(name, value)
        return self._send(self.endpoint.query_url, wrapper, retry=True, updating=False)

    def _dataset_parameters(self, query: str, default_graph: DataGraph) -> list[tuple[str, str]]:
        if self.kg_graph is not None:
            return self._kg_dataset(query, default_graph)
        if default_graph is None:
            return []
        if default_graph == "union":
            if self.endpoint.union_parameter is None:
                raise self._error("cannot ask this server for the union of all "
                                  "graphs (no union parameter configured)")
            return [(self.endpoint.union_parameter, "true")]
        graphs = list(default_graph)
        named = [g for g in graphs if isinstance(g, ox.NamedNode)]
        if named and len(named) < len(graphs):
            raise self._error("the SPARQL protocol cannot name the default graph "
                              "beside named graphs in default-graph-uri")
        return [("default-graph-uri", g.value) for g in named]

    def _kg_dataset(self, query: str, default_graph: DataGraph) -> list[tuple[str, str]]:
        """The dataset on a server whose own default graph is the union (see the module note)."""
        if default_graph == "union":
            return []
        assert self.kg_graph is not None
        kg = self.kg_graph.value
        graphs = [kg] if default_graph is None else [
            kg if isinstance(g, ox.DefaultGraph) else g.value for g in default_graph]
        defaults = list(dict.fromkeys(graphs))
        named = [g for g in graphs_named_in(query) if g not in defaults]
        return ([("default-graph-uri", g) for g in defaults]
                + [("named-graph-uri", g) for g in named])

    def _wrapper(self, url: str, text: str, kind: str, accept: str) -> SPARQLWrapper:
        self._check_open()
        wrapper = SPARQLWrapper(url, updateEndpoint=url, returnFormat=JSON, agent="tgsparql")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # it guesses the form; the caller's verb decides it
            wrapper.setQuery(text)
        wrapper.queryType = kind
        wrapper.setMethod(POST)
        wrapper.setOnlyConneg(True)
        wrapper.addCustomHttpHeader("Accept", accept)
        if self.endpoint.user and self.endpoint.password:
            wrapper.setCredentials(self.endpoint.user, self.endpoint.password)
        if self.endpoint.token:
            wrapper.addCustomHttpHeader("Authorization", f"Bearer {self.endpoint.token}")
        return wrapper

    def _post_quads(self, quads: list[ox.Quad]) -> None:
        """One batch to the Graph Store Protocol endpoint: POST adds, so sending again is safe."""
        url = self.endpoint.graph_store_url or ""
        body = ox.serialize(quads, format=ox.RdfFormat.N_QUADS)
        headers = {"Content-Type": N_QUADS, "User-Agent": "tgsparql", **self._auth_header()}
        self._attempts(url, lambda: self._exchange("POST", url, headers, body, updating=True),
                       retry=True)

    def _auth_header(self) -> dict[str, str]:
        """The Authorization header SPARQLWrapper would send, for requests it does not build."""
        endpoint = self.endpoint
        if endpoint.token:
            return {"Authorization": f"Bearer {endpoint.token}"}
        if endpoint.user and endpoint.password:
            pair = base64.b64encode(f"{endpoint.user}:{endpoint.password}".encode()).decode("ascii")
            return {"Authorization": f"Basic {pair}"}
        return {}

    def _send(self, url: str, wrapper: SPARQLWrapper, *, retry: bool, updating: bool) -> bytes:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # about Accept, which _wrapper has set itself
            request = wrapper._createRequest()
        headers = dict(request.header_items())
        return self._attempts(url, lambda: self._exchange(
            request.get_method(), request.full_url, headers, request.data, updating=updating),
            retry=retry)

    def _attempts(self, url: str, exchange: Callable[[], bytes], *, retry: bool) -> bytes:
        """Run the exchange, again after a growing pause while it fails transiently (if allowed)."""
        attempts = 1 + (self.endpoint.retries if retry else 0)
        for attempt in range(attempts):
            try:
                return exchange()
            except _Failed as failure:
                if not failure.transient or attempt == attempts - 1:
                    tries = f" (after {attempt + 1} attempts)" if attempt else ""
                    kind = StoreError if failure.reached else EndpointUnreachable
                    raise self._error(failure.what + tries, url=url, kind=kind) from None
                time.sleep(min(self.endpoint.backoff * 2**attempt, MAX_BACKOFF))
        raise AssertionError("unreachable")

    def _exchange(self, method: str, url: str, headers: Mapping[str, str],
                  body: bytes | None, *, updating: bool) -> bytes:
        with self._counting:
            self.requests += 1
        parts = urlsplit(url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(parts.hostname or "", parts.port, timeout=self.endpoint.connect_timeout)
        try:
            try:
                connection.connect()
            except TimeoutError:
                raise _Failed(f"no connection within {self.endpoint.connect_timeout:g} s "
                              "(connect timeout)", True, reached=False) from None
            except OSError as error:
                raise _Failed(f"unreachable: {error.strerror or error}", True,
                              reached=False) from None
            assert connection.sock is not None
            connection.sock.settimeout(self.endpoint.read_timeout)
            target = urlunsplit(("", "", parts.path or "/", parts.query, ""))
            try:
                connection.request(method, target, body=body, headers=dict(headers))
                response = connection.getresponse()
                data = response.read()
            except TimeoutError:
                raise _Failed(f"no response within {self.endpoint.read_timeout:g} s (read timeout)",
                              True) from None
            except http.client.IncompleteRead as error:
                raise _Failed(f"truncated response body ({len(error.partial)} bytes received, "
                              f"{error.expected} missing)", True) from None
            except (http.client.HTTPException, OSError) as error:
                reason = str(error) or type(error).__name__
                raise _Failed(f"connection failed mid-request: {reason}", True) from None
        finally:
            connection.close()
        if response.status >= 400:
            what = f"HTTP {response.status} {response.reason}" + _first_line(data)
            if updating and response.status in (401, 403, 405):
                what = "update refused: " + what
            elif response.status in (401, 403):
                what = "read refused: " + what
            raise _Failed(what, response.status in RETRY_STATUSES)
        return data

    def _check_open(self) -> None:
        if self._closed:
            raise self._error("the store is closed")

    def _error(self, what: str, *, url: str | None = None,
               kind: type[StoreError] = StoreError) -> StoreError:
        """What went wrong at `url`, the query endpoint when not given."""
        return kind(f"SPARQL endpoint {display_url(url or self.endpoint.query_url)}: {what}")


def display_url(url: str) -> str:
    """The URL without any user or password in it, fit to print."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


_LEXICAL = re.compile(
    r"'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"|<[^<>\s]*>|#[^\n]*",
    re.DOTALL,
)
_GRAPH_NAMES = re.compile(r"(?<![\w?$:])GRAPH\s*<([^<>\s]*)>|" + _LEXICAL.pattern,
                          re.DOTALL | re.IGNORECASE)
_KEYWORDS = re.compile(
    r"\b(INSERT|DELETE|DATA|WHERE|LOAD|CLEAR|DROP|CREATE|ADD|MOVE|COPY|WITH|USING)\b",
    re.IGNORECASE,
)


def is_insert_data(update: str) -> bool:
    """Whether the update is one INSERT DATA and nothing else: the only update that is safe to
    send again, since adding the same triples twice leaves the store as adding them once.

    Strings, IRIs and comments are set aside first, so their text cannot pass for keywords."""
    keywords = [word.upper() for word in _KEYWORDS.findall(_LEXICAL.sub(" ", update))]
    return keywords == ["INSERT", "DATA"]


def graphs_named_in(query: str) -> list[str]:
    """The IRIs of the query's `GRAPH <iri>` patterns, in order, once each; strings and
    comments are skipped, so their text cannot pass for a pattern."""
    found = (match.group(1) for match in _GRAPH_NAMES.finditer(query))
    return list(dict.fromkeys(iri for iri in found if iri is not None))


def _batches(quads: Iterable[ox.Quad], graph: ox.NamedNode | None,
             size: int) -> Iterator[list[ox.Quad]]:
    if graph is not None:
        quads = (
            ox.Quad(q.subject, q.predicate, q.object, graph)
            if isinstance(q.graph_name, ox.DefaultGraph) else q
            for q in quads
        )
    iterator = iter(quads)
    while batch := list(islice(iterator, size)):
        yield batch


def _fold_reifiers(triples: list[ox.Triple]) -> list[ox.Triple]:
    """RDF-star Turtle read as RDF 1.2: each `<< s p o >>` became a blank reifier `_:r` with
    `_:r rdf:reifies <<( s p o )>>`; put the quoted triple back where `_:r` stands. (An
    RDF-star store has no reifiers of its own, so every such blank node came from a quote.)"""
    quoted = {
        t.subject: t.object for t in triples
        if t.predicate == RDF_REIFIES and isinstance(t.subject, ox.BlankNode)
        and isinstance(t.object, ox.Triple)
    }

    def resolve(term: ox.Triple) -> ox.Triple:
        inner = term.object
        if isinstance(inner, ox.BlankNode) and inner in quoted:
            inner = resolve(quoted[inner])
        return ox.Triple(term.subject, term.predicate, inner)

    folded = []
    for t in triples:
        if t.subject in quoted:
            if t.predicate == RDF_REIFIES:
                continue
            raise ValueError(f"a quoted triple as a subject has no RDF 1.2 form: {t}")
        target = t.object
        folded.append(ox.Triple(t.subject, t.predicate, resolve(quoted[target]))
                      if isinstance(target, ox.BlankNode) and target in quoted else t)
    return folded


def _groups(quads: list[ox.Quad]) -> list[_Group]:
    by_graph: dict[ox.NamedNode | None, list[ox.Triple]] = {}
    for quad in quads:
        name = quad.graph_name if isinstance(quad.graph_name, ox.NamedNode) else None
        by_graph.setdefault(name, []).append(quad.triple)
    return [_Group(name, triples) for name, triples in by_graph.items()]


def _refuse_blank_nodes(quads: list[ox.Quad]) -> None:
    for quad in quads:
        if _has_blank_node(quad.triple) or isinstance(quad.graph_name, ox.BlankNode):
            raise StoreError(
                f"bulk load failed: blank node in {quad}: a remote store is loaded in batches "
                "that would split it apart; give it an IRI (skolemize) first"
            )


def _has_blank_node(triple: ox.Triple) -> bool:
    return any(
        isinstance(term, ox.BlankNode) or (isinstance(term, ox.Triple) and _has_blank_node(term))
        for term in (triple.subject, triple.object)
    )


def _first_line(data: bytes) -> str:
    for line in data.decode("utf-8", "replace").splitlines():
        if line.strip():
            return ": " + _clip(line.strip())
    return ""


def _line(error: BaseException) -> str:
    return _clip(" ".join(str(error).split()))


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

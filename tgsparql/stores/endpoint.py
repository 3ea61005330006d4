"""Where a remote store is and how to talk to it: one value, checked where it enters (the
command's flags, the environment, Python) and handed on whole; kept apart from the remote store
so the flags need not import its HTTP stack."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import urlsplit

import pyoxigraph as ox

from tgsparql.rdf.terms import DEFAULT_DIALECT, DIALECTS, Dialect
from tgsparql.stores import ENDPOINT_ENVIRONMENT
from tgsparql.stores.store import StoreError

UNION_PARAMETER = "union-default-graph"
"""The protocol extension of the Oxigraph server (and of `tgsparql serve`) that asks for the union
of every graph as the default graph."""


@dataclass(frozen=True)
class Endpoint:
    """A SPARQL 1.1 Protocol endpoint: SELECT/ASK/CONSTRUCT go to `query_url`, updates to
    `update_url` (the query URL when not given), bulk loads to `graph_store_url` when given.
    See `tgsparql.stores.remote` for what `union_parameter` and `kg_graph` ask of a server."""

    query_url: str
    update_url: str | None = None
    graph_store_url: str | None = None
    """A Graph Store Protocol endpoint taking N-Quads POSTed to it, for bulk loads."""
    dialect: Dialect = DEFAULT_DIALECT
    """How the endpoint writes edge references."""
    kg_graph: str | None = None
    """The named graph that stands for tgsparql's default graph (Virtuoso)."""
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    """A bearer token, instead of basic auth (`user` and `password`)."""
    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    """Seconds of silence at most while a response comes."""
    retries: int = 3
    backoff: float = 0.5
    """Seconds of the first pause before a retry; each later pause doubles."""
    union_parameter: str | None = UNION_PARAMETER
    """The parameter that asks for the union of all graphs; None where the server has none."""
    batch_size: int = 2000
    """Quads per request of a bulk load."""

    def __post_init__(self) -> None:
        for name, url in (("endpoint", self.query_url), ("update endpoint", self.update_url),
                          ("graph store", self.graph_store_url)):
            if url is not None and urlsplit(url).scheme not in ("http", "https"):
                raise StoreError(f"the SPARQL {name} must be an http(s) URL, not {url!r}")
        if self.dialect not in DIALECTS:
            raise StoreError(
                f"unknown dialect {self.dialect!r}; choose one of {', '.join(DIALECTS)}")
        if self.token and (self.user or self.password):
            raise StoreError("give basic auth (user and password) or a bearer token, not both")
        if bool(self.user) != bool(self.password):
            raise StoreError("basic auth needs both a user and a password")
        if self.connect_timeout <= 0 or self.read_timeout <= 0 or self.retries < 0 \
                or self.batch_size < 1:
            raise StoreError("timeouts and the batch size must be positive, retries not negative")
        if self.kg_graph is not None:
            try:
                ox.NamedNode(self.kg_graph)
            except ValueError as error:
                raise StoreError(
                    f"the KG graph must be an IRI, not {self.kg_graph!r}: {error}") from None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> Endpoint:
        """The endpoint TGSPARQL_ENDPOINT and its siblings describe (`dataclasses.replace`
        changes a setting of it)."""
        given = {key: environ.get(var) or None for key, var in ENDPOINT_ENVIRONMENT.items()}
        query_url = given["query_url"]
        if query_url is None:
            raise StoreError("no SPARQL endpoint: give one or set TGSPARQL_ENDPOINT")
        return cls(
            query_url, update_url=given["update_url"], graph_store_url=given["graph_store_url"],
            dialect=cast(Dialect, given["dialect"] or DEFAULT_DIALECT),  # checked on creation
            kg_graph=given["kg_graph"], user=given["user"], password=given["password"],
            token=given["token"],
        )

    @property
    def updates_to(self) -> str:
        """Where updates go: the update URL, else the query URL."""
        return self.update_url or self.query_url

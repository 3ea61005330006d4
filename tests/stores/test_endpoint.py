"""The Endpoint value: checked once where it is made, from Python or the environment."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.store import StoreError

URL = "http://127.0.0.1:9/query"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"query_url": "ftp://example.org/sparql"},
         "the SPARQL endpoint must be an http(s) URL, not 'ftp://example.org/sparql'"),
        ({"dialect": "owl"}, "unknown dialect 'owl'; choose one of rdf12, rdfstar, reification"),
        ({"user": "u", "password": "p", "token": "t"},
         "give basic auth (user and password) or a bearer token, not both"),
        ({"user": "u"}, "basic auth needs both a user and a password"),
        ({"read_timeout": 0},
         "timeouts and the batch size must be positive, retries not negative"),
        ({"kg_graph": "not an iri"}, "the KG graph must be an IRI, not 'not an iri'"),
    ],
)
def test_bad_configuration_is_refused(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(StoreError) as raised:
        Endpoint(**{"query_url": URL, **settings})
    assert str(raised.value).startswith(message)


def test_configuration_from_the_environment() -> None:
    endpoint = Endpoint.from_environment({
        "TGSPARQL_ENDPOINT": URL,
        "TGSPARQL_UPDATE_ENDPOINT": "http://127.0.0.1:9/update",
        "TGSPARQL_DIALECT": "reification",
        "TGSPARQL_TOKEN": "t",
    })
    assert (endpoint.query_url, endpoint.updates_to, endpoint.dialect, endpoint.token) == (
        URL, "http://127.0.0.1:9/update", "reification", "t")
    assert replace(endpoint, dialect="rdfstar").dialect == "rdfstar"
    with pytest.raises(StoreError, match="no SPARQL endpoint: give one or set TGSPARQL_ENDPOINT"):
        Endpoint.from_environment({})


def test_updates_go_to_the_query_url_unless_told_otherwise() -> None:
    assert Endpoint(URL).updates_to == URL


def test_its_repr_keeps_the_secrets_out() -> None:
    shown = repr(Endpoint(URL, user="ada", password="s3cret")) + repr(Endpoint(URL, token="t0ken"))
    assert "s3cret" not in shown and "t0ken" not in shown

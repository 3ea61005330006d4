"""Stores: the embedded pyoxigraph store, a store behind a SPARQL endpoint, processes taking
turns on one store, and the probe of what an endpoint can do.

The rule of this wing: it knows no pipeline. It runs templates by name and reads their answers;
what a question, a session or a shape is, it does not know. It uses only `tgsparql.rdf`.
"""

ENDPOINT_ENVIRONMENT = {
    "query_url": "TGSPARQL_ENDPOINT",
    "update_url": "TGSPARQL_UPDATE_ENDPOINT",
    "graph_store_url": "TGSPARQL_GRAPH_STORE",
    "dialect": "TGSPARQL_DIALECT",
    "kg_graph": "TGSPARQL_KG_GRAPH",
    "user": "TGSPARQL_USER",
    "password": "TGSPARQL_PASSWORD",
    "token": "TGSPARQL_TOKEN",
}
"""The environment variable of each endpoint setting, read by `Endpoint.from_environment` and by
the command's endpoint flags; kept here so the flags need not load the Endpoint class (a command
given no endpoint never makes one)."""

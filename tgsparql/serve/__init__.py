"""Serving the explainability graph: a read-only SPARQL endpoint, saved BI queries, trace pages.

The rule of this face: it shows what the wings below build, over HTTP. Nothing below imports it;
the CLI starts it.
"""

from tgsparql.serve.app import ServerConfig, TgsparqlServer

__all__ = ["ServerConfig", "TgsparqlServer"]

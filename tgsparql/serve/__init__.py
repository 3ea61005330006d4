"""Serving the explainability graph: a read-only SPARQL endpoint, saved BI queries, trace pages."""

from tgsparql.serve.app import ServerConfig, TgsparqlServer

__all__ = ["ServerConfig", "TgsparqlServer"]

"""Stores: the embedded pyoxigraph store, a store behind a SPARQL endpoint, processes taking
turns on one store, and the probe of what an endpoint can do.

The rule of this wing: it knows no pipeline. It runs templates by name and reads their answers;
what a question, a session or a shape is, it does not know. It uses only `tgsparql.rdf`.
"""

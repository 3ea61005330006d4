"""Asking: a question grounded, its subgraph retrieved, edges selected and an answer written by
an LLM, and every step written to the record.

The rule of this wing: it writes the record and never reads it back as a whole (that is
`tgsparql.record`). It uses `tgsparql.stores` and `tgsparql.rdf`.
"""

"""Data in and out: RDF files loaded, documents chunked and their facts extracted by an LLM,
the store exported, and the demo's sample.

The rule of this wing: it writes the KG and the extraction record, through the label index and
the librarian of `tgsparql.asking`; it does not read sessions back (`tgsparql.record`).
"""

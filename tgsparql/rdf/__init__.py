"""Names and terms: the vocabulary, IRI minting, RDF terms and text, and the SPARQL templates
with their escaping filters.

The rule of this wing: it knows no store. Everything above may use it; it uses nothing of
tgsparql but itself.
"""

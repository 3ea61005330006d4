"""Namespaces, graph names and the IRIs of docs/spec.md §1, defined once for the whole package."""

from __future__ import annotations

import re
from typing import Final

from pyoxigraph import NamedNode

TG: Final = "https://trustgraph.ai/ns/"
PROV: Final = "http://www.w3.org/ns/prov#"
RDF: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS: Final = "http://www.w3.org/2000/01/rdf-schema#"
OWL: Final = "http://www.w3.org/2002/07/owl#"
XSD: Final = "http://www.w3.org/2001/XMLSchema#"
DC: Final = "http://purl.org/dc/elements/1.1/"
DCTERMS: Final = "http://purl.org/dc/terms/"
SH: Final = "http://www.w3.org/ns/shacl#"

PREFIXES: Final[dict[str, str]] = {
    "tg": TG,
    "prov": PROV,
    "rdf": RDF,
    "rdfs": RDFS,
    "owl": OWL,
    "xsd": XSD,
    "dc": DC,
    "dcterms": DCTERMS,
    "sh": SH,
}

RDFS_LABEL: Final = NamedNode(RDFS + "label")
RDF_TYPE: Final = NamedNode(RDF + "type")
WELL_KNOWN_SCHEMA_PREDICATES: Final = tuple(
    NamedNode(namespace + name)
    for namespace, names in (
        (RDF, "first rest value subject predicate object reifies"),
        (
            RDFS,
            "label comment seeAlso isDefinedBy subClassOf subPropertyOf domain range member",
        ),
        (
            OWL,
            "sameAs equivalentClass equivalentProperty inverseOf differentFrom disjointWith "
            "imports versionInfo priorVersion backwardCompatibleWith incompatibleWith deprecated "
            "onProperty someValuesFrom allValuesFrom hasValue unionOf intersectionOf "
            "complementOf oneOf disjointUnionOf propertyDisjointWith propertyChainAxiom hasKey "
            "minCardinality maxCardinality cardinality qualifiedCardinality "
            "minQualifiedCardinality maxQualifiedCardinality onClass onDataRange members "
            "distinctMembers annotatedSource annotatedProperty annotatedTarget "
            "sourceIndividual assertionProperty targetIndividual targetValue onDatatype "
            "withRestrictions topObjectProperty topDataProperty",
        ),
    )
    for name in names.split()
)
"""The rdf:, rdfs: and owl: terms a KG uses as predicates, which retrieval leaves out (docs/spec.md §5
walks facts, not schema). Any other term of those namespaces is left out too, in Python."""
XSD_STRING: Final = NamedNode(XSD + "string")
XSD_INTEGER: Final = NamedNode(XSD + "integer")
XSD_DOUBLE: Final = NamedNode(XSD + "double")
XSD_BOOLEAN: Final = NamedNode(XSD + "boolean")
XSD_DATETIME: Final = NamedNode(XSD + "dateTime")
XSD_DATE: Final = NamedNode(XSD + "date")

GRAPH_SOURCE: Final = NamedNode("urn:graph:source")
GRAPH_LIBRARY: Final = NamedNode("urn:graph:library")
# Beyond the spec: normalised label keys that make grounding an index lookup, not a scan.
GRAPH_LABEL_INDEX: Final = NamedNode("urn:graph:index")
# Beyond the spec: literals as the data wrote them, where the store keeps another form.
GRAPH_LEXICAL: Final = NamedNode("urn:graph:lexical")

DEFAULT_COLLECTION: Final = "explainability"
RESERVED_COLLECTIONS: Final = frozenset({"source", "library", "index", "lexical"})
_COLLECTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class CollectionError(ValueError):
    """A collection name that cannot name an explainability graph."""


def explainability_graph(collection: str = DEFAULT_COLLECTION) -> NamedNode:
    """`urn:graph:{collection}`, refusing names that would land in another graph of docs/spec.md §1."""
    if not isinstance(collection, str) or not _COLLECTION.fullmatch(collection):
        raise CollectionError(
            f"invalid collection name {collection!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if collection in RESERVED_COLLECTIONS:
        raise CollectionError(
            f"collection name {collection!r} is reserved: urn:graph:{collection} holds other data"
        )
    return NamedNode(f"urn:graph:{collection}")

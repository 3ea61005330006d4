"""Namespaces, graph names and the IRIs of docs/spec.md §1, defined once for the whole package."""

from __future__ import annotations

import re
from enum import Enum
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
TGS: Final = "https://trustgraph.ai/shapes/"
"""The bundled shapes (shapes/*.ttl); no prefix of reports, which name shapes by their IRIs."""

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

# The predicates the package reads and writes by name (docs/spec.md §2, §8); a template writes
# them as prefixed names, Python code as these constants.
TG_QUERY: Final = NamedNode(TG + "query")
TG_STATUS: Final = NamedNode(TG + "status")
TG_ERROR: Final = NamedNode(TG + "error")
TG_EDGE_COUNT: Final = NamedNode(TG + "edgeCount")
TG_RETRIEVED_EDGE: Final = NamedNode(TG + "retrievedEdge")
TG_CONCEPT: Final = NamedNode(TG + "concept")
TG_NAME_GROUNDING: Final = NamedNode(TG + "nameGrounding")
TG_NAME: Final = NamedNode(TG + "name")
TG_SEED: Final = NamedNode(TG + "seed")
TG_CANDIDATE_RANK: Final = NamedNode(TG + "candidateRank")
TG_CANDIDATE_COUNT: Final = NamedNode(TG + "candidateCount")
TG_INVALID_ID_COUNT: Final = NamedNode(TG + "invalidIdCount")
TG_TRUNCATED: Final = NamedNode(TG + "truncated")
TG_INVALID_CITATION_COUNT: Final = NamedNode(TG + "invalidCitationCount")
TG_CITED_EDGE_COUNT: Final = NamedNode(TG + "citedEdgeCount")
TG_UNCITED_SENTENCE_COUNT: Final = NamedNode(TG + "uncitedSentenceCount")
TG_CITATION: Final = NamedNode(TG + "citation")
TG_CITED_EDGE: Final = NamedNode(TG + "citedEdge")
TG_SENTENCE: Final = NamedNode(TG + "sentence")
TG_CHAR_OFFSET: Final = NamedNode(TG + "charOffset")
TG_CHAR_LENGTH: Final = NamedNode(TG + "charLength")
TG_SELECTED_EDGE: Final = NamedNode(TG + "selectedEdge")
TG_EDGE: Final = NamedNode(TG + "edge")
TG_REASONING: Final = NamedNode(TG + "reasoning")
TG_ENTITY: Final = NamedNode(TG + "entity")
TG_DOCUMENT: Final = NamedNode(TG + "document")
TG_FACT_DOCUMENT: Final = NamedNode(TG + "factDocument")
TG_LLM_MODEL: Final = NamedNode(TG + "llmModel")
TG_IN_TOKEN: Final = NamedNode(TG + "inToken")
TG_OUT_TOKEN: Final = NamedNode(TG + "outToken")
TG_CONTENT: Final = NamedNode(TG + "content")
TG_MIME_TYPE: Final = NamedNode(TG + "mimeType")
TG_CONTENT_SHA256: Final = NamedNode(TG + "contentSha256")
TG_PAGE_NUMBER: Final = NamedNode(TG + "pageNumber")
TG_CHUNK_INDEX: Final = NamedNode(TG + "chunkIndex")
TG_CONTAINS: Final = NamedNode(TG + "contains")
TG_SOURCE_TEXT: Final = NamedNode(TG + "sourceText")
TG_SOURCE_CHAR_OFFSET: Final = NamedNode(TG + "sourceCharOffset")
TG_SOURCE_CHAR_LENGTH: Final = NamedNode(TG + "sourceCharLength")
# The rule retrieval ranks each node's edges by, recorded as the retrieval's tg:rankingRule.
TG_QUESTION_PATH_RARITY_RANKING: Final = NamedNode(TG + "QuestionPathRarityRanking")
PROV_STARTED_AT_TIME: Final = NamedNode(PROV + "startedAtTime")
PROV_ENDED_AT_TIME: Final = NamedNode(PROV + "endedAtTime")
PROV_WAS_DERIVED_FROM: Final = NamedNode(PROV + "wasDerivedFrom")
PROV_WAS_GENERATED_BY: Final = NamedNode(PROV + "wasGeneratedBy")
PROV_USED: Final = NamedNode(PROV + "used")
PROV_WAS_ASSOCIATED_WITH: Final = NamedNode(PROV + "wasAssociatedWith")
RDF_SUBJECT: Final = NamedNode(RDF + "subject")
RDF_PREDICATE: Final = NamedNode(RDF + "predicate")
RDF_OBJECT: Final = NamedNode(RDF + "object")
DC_TITLE: Final = NamedNode(DC + "title")
RDF_STATEMENT: Final = NamedNode(RDF + "Statement")
PROV_ACTIVITY: Final = NamedNode(PROV + "Activity")
PROV_AGENT: Final = NamedNode(PROV + "Agent")
PROV_ENTITY: Final = NamedNode(PROV + "Entity")
# The classes of the source graph's extraction record (§1); `_CLASS` tells tg:Document from the
# predicate tg:document.
TG_DOCUMENT_CLASS: Final = NamedNode(TG + "Document")
TG_PAGE_CLASS: Final = NamedNode(TG + "Page")
TG_CHUNK_CLASS: Final = NamedNode(TG + "Chunk")
TG_SUBGRAPH_CLASS: Final = NamedNode(TG + "Subgraph")
# The lexical graph's record of a literal (§1).
TG_LITERAL_SUBJECT: Final = NamedNode(TG + "literalSubject")
TG_LITERAL_PREDICATE: Final = NamedNode(TG + "literalPredicate")
TG_STORED_LITERAL: Final = NamedNode(TG + "storedLiteral")
TG_LEXICAL_FORM: Final = NamedNode(TG + "lexicalForm")
TG_DATATYPE: Final = NamedNode(TG + "datatype")
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
XSD_DECIMAL: Final = NamedNode(XSD + "decimal")

GRAPH_SOURCE: Final = NamedNode("urn:graph:source")
GRAPH_LIBRARY: Final = NamedNode("urn:graph:library")
# Beyond the spec: normalised label keys that make grounding an index lookup, not a scan.
GRAPH_LABEL_INDEX: Final = NamedNode("urn:graph:index")
# Beyond the spec: literals as the data wrote them, where the store keeps another form.
GRAPH_LEXICAL: Final = NamedNode("urn:graph:lexical")

RECORD_FORMAT: Final = 1
"""The format of the explainability record, as `tg:recordFormat` of a collection says: one more
each time queries/migrate/collection_pending.rq learns a field that `migrate` adds, so that a
collection marked with an older format is checked in full again."""

RESERVED_COLLECTIONS: Final = frozenset({"source", "library", "index", "lexical"})
_COLLECTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class CollectionError(ValueError):
    """A collection name that cannot name an explainability graph."""


class Collection:
    """A collection of sessions, by a name checked where it enters (a flag, a URL parameter, a
    Python call), so that whatever holds one knows its graph is its own. Immutable, equal by
    name; written out rather than a frozen dataclass, whose generated methods would cost every
    command about 0.5 ms to load."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        """Refuse names that would land in another graph of docs/spec.md §1."""
        if not isinstance(name, str) or not _COLLECTION.fullmatch(name):
            raise CollectionError(
                f"invalid collection name {name!r}: use 1-64 letters, digits, '.', '_' or "
                "'-', starting with a letter or digit"
            )
        if name in RESERVED_COLLECTIONS:
            raise CollectionError(
                f"collection name {name!r} is reserved: urn:graph:{name} holds other data"
            )
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Collection) and other._name == self._name

    def __hash__(self) -> int:
        return hash((Collection, self._name))

    def __repr__(self) -> str:
        return f"Collection({self._name!r})"

    @property
    def graph(self) -> NamedNode:
        """`urn:graph:{name}`, the graph its explainability record is written in."""
        return NamedNode(f"urn:graph:{self.name}")


DEFAULT_COLLECTION: Final = Collection("explainability")


class TgTerms(Enum):
    """An enumeration whose members stand for terms of the tg: namespace, named by their values."""

    @property
    def iri(self) -> NamedNode:
        return NamedNode(TG + self.value)

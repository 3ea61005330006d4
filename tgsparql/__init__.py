"""tgsparql: GraphRAG with query-time explainability, native on SPARQL."""

from tgsparql.asking.llm import make_backend
from tgsparql.asking.messages import Error, GraphRagResponse, Source
from tgsparql.asking.pipeline import GraphRag
from tgsparql.asking.retrieval import RetrievalLimits
from tgsparql.rdf.vocab import Collection, CollectionError
from tgsparql.stores.store import EmbeddedStore, Store, StoreError, open_store

__all__ = [
    "Collection",
    "CollectionError",
    "EmbeddedStore",
    "Error",
    "GraphRag",
    "GraphRagResponse",
    "RetrievalLimits",
    "Source",
    "Store",
    "StoreError",
    "make_backend",
    "open_store",
]

"""tgsparql: GraphRAG with query-time explainability, native on SPARQL."""

from tgsparql.llm import make_backend
from tgsparql.messages import Error, GraphRagResponse, Source
from tgsparql.pipeline import GraphRag
from tgsparql.retrieval import RetrievalLimits
from tgsparql.store import EmbeddedStore, Store, StoreError, open_store

__all__ = [
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

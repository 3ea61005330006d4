"""tgsparql: GraphRAG with query-time explainability, native on SPARQL."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tgsparql.asking.llm import make_backend
    from tgsparql.asking.messages import Error, GraphRagResponse, Source
    from tgsparql.asking.pipeline import GraphRag
    from tgsparql.asking.retrieval import RetrievalLimits
    from tgsparql.rdf.vocab import Collection, CollectionError
    from tgsparql.stores.store import EmbeddedStore, Store, StoreError, open_store

_HOMES = {
    "Collection": "tgsparql.rdf.vocab",
    "CollectionError": "tgsparql.rdf.vocab",
    "EmbeddedStore": "tgsparql.stores.store",
    "Error": "tgsparql.asking.messages",
    "GraphRag": "tgsparql.asking.pipeline",
    "GraphRagResponse": "tgsparql.asking.messages",
    "RetrievalLimits": "tgsparql.asking.retrieval",
    "Source": "tgsparql.asking.messages",
    "Store": "tgsparql.stores.store",
    "StoreError": "tgsparql.stores.store",
    "make_backend": "tgsparql.asking.llm",
    "open_store": "tgsparql.stores.store",
}
"""Where each public name lives: imported on first use, so a command that needs only the store
or the validator (`tgsparql validate`) does not load the LLM backends and the pipeline."""

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'tgsparql' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)

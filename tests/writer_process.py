"""A process that records GraphRAG sessions into an on-disk store, for the concurrency and
crash tests: `python tests/writer_process.py STORE COUNT BATCH`.

An on-disk STORE it takes with `exclusive_store` for BATCH sessions at a time (0: for the whole
run); a STORE that is a SPARQL server's base URL (`http://…`, with `/query` and `/update`) it
writes to all the time, as a server takes writers side by side. It prints `started IRI` once a session's first write is in the store and `done IRI` once its
last is, flushed, so the parent knows exactly what it may expect to find.
"""

from __future__ import annotations

import sys

from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.locking import exclusive_store
from tgsparql.stores.remote import RemoteStore

QUESTIONS = [
    "Where was the scientist who discovered polonium born?",
    "Which prize did the daughter of Pierre Curie win?",
    "Who married Marie Curie?",
    "Where did Pierre Curie die?",
]


def record(rag: GraphRag, question: str) -> None:
    session = None
    for message in rag.query(question):
        if message.error is not None:
            raise SystemExit(f"session failed: {message.error.message}")
        if session is None and message.explain_id:
            session = message.explain_id
            print("started", session, flush=True)
    print("done", session, flush=True)


def main(path: str, count: int, batch: int) -> None:
    if path.startswith(("http://", "https://")):
        with RemoteStore(Endpoint(path + "/query", update_url=path + "/update")) as remote:
            rag = GraphRag(remote, OfflineBackend(), index_labels=False)
            for i in range(count):
                record(rag, QUESTIONS[i % len(QUESTIONS)])
        return
    done = 0
    while done < count:
        size = count - done if batch == 0 else min(batch, count - done)
        with exclusive_store(path) as store:
            rag = GraphRag(store, OfflineBackend(), index_labels=False)
            for _ in range(size):
                record(rag, QUESTIONS[done % len(QUESTIONS)])
                done += 1


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))

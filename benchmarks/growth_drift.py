"""The sessions store of the growth benchmark as a real ingest and a year of use leave it.

benchmarks.serve_bench's generator names its documents `urn:trustgraph:doc:benchN` and keeps no
text of them in the librarian: a name that is not the SHA-256 of a text and no text at all is
what `tgsparql drift` calls a text changed (docs/spec.md §2.1), so every session counted as
drifted. A real ingest names a document by the SHA-256 of its text, keeps the text in the
librarian and records its extraction activity. `make_realistic` gives a built store that shape
in place (each document renamed where the record names it, its text and activity added), then
the drift a store in use has: 1 % of the cited facts deleted from the KG and one cited document
ingested again on the last day, so that the sessions before that moment drifted and the later
ones did not. It runs once per store (its build record says it ran) and needs no rebuild: the
1 M-session store takes it as a set of updates, each as small as one document's references.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.iris import DOCUMENT_PREFIX

REALISTIC = 1
"""The version of the change below a build record names once it was made."""
DOCUMENTS = 100
"""The generator's documents (benchmarks.serve_bench.generate's default)."""
CITED_FACTS = DOCUMENTS * 50 * 9 // 10
"""The facts sessions select: those of the first 90 documents (10 chunks of 5 facts each)."""
DELETED_EVERY = 100
"""One cited fact in this many is deleted from the KG."""
REINGESTED = 0
"""The document ingested again on the generator's last day."""
SOURCE, LIBRARY = vocab.GRAPH_SOURCE, vocab.GRAPH_LIBRARY
PROV_USED = ox.NamedNode(vocab.PROV + "used")
PROV_STARTED = ox.NamedNode(vocab.PROV + "startedAtTime")
DC_TITLE = ox.NamedNode("http://purl.org/dc/elements/1.1/title")


def document_text(d: int) -> str:
    return f"Document {d}: " + " ".join(f"sentence {d}.{n}." for n in range(50))


def document_iri(d: int) -> ox.NamedNode:
    digest = hashlib.sha256(document_text(d).encode("utf-8")).hexdigest()
    return ox.NamedNode(DOCUMENT_PREFIX + digest)


def generated_iri(d: int) -> ox.NamedNode:
    return ox.NamedNode(f"{DOCUMENT_PREFIX}bench{d}")


def fact(n: int) -> ox.Quad:
    """The generator's fact `n`, in the default graph."""
    return ox.Quad(ox.NamedNode(f"http://example.org/e/E{n}"),
                   ox.NamedNode(f"http://example.org/p/P{n % 20}"),
                   ox.NamedNode(f"http://example.org/e/E{(n * 7 + 1) % (DOCUMENTS * 50)}"),
                   ox.DefaultGraph())


def make_realistic(store: ox.Store, last_day: dt.date) -> dict[str, Any]:
    """Rename, describe and change a generated store as the module says; what it did."""
    ingested = _stamp(dt.datetime(2023, 12, 31, tzinfo=dt.timezone.utc))
    renamed = 0
    for d in range(DOCUMENTS):
        old, new = generated_iri(d), document_iri(d)
        found = [*store.quads_for_pattern(old, None, None),
                 *store.quads_for_pattern(None, None, old)]
        renamed += len(found)
        store.extend([ox.Quad(new if q.subject == old else q.subject, q.predicate,
                              new if q.object == old else q.object, q.graph_name) for q in found])
        for quad in found:
            store.remove(quad)
        text = document_text(d)
        activity = ox.NamedNode(f"urn:activity:bench{d}")
        store.extend([
            ox.Quad(new, vocab.TG_CONTENT, ox.Literal(text), LIBRARY),
            ox.Quad(new, ox.NamedNode(vocab.TG + "mimeType"), ox.Literal("text/plain"), LIBRARY),
            ox.Quad(new, vocab.TG_CONTENT_SHA256,
                    ox.Literal(hashlib.sha256(text.encode("utf-8")).hexdigest()), LIBRARY),
            ox.Quad(new, DC_TITLE, ox.Literal(f"Document {d}"), LIBRARY),
            ox.Quad(activity, PROV_USED, new, SOURCE),
            ox.Quad(activity, PROV_STARTED, ox.Literal(
                _stamp(dt.datetime.combine(last_day, dt.time(12), dt.timezone.utc))
                if d == REINGESTED else ingested, datatype=vocab.XSD_DATETIME), SOURCE),
        ])
    deleted = [fact(n) for n in range(0, CITED_FACTS, DELETED_EVERY)]
    for quad in deleted:
        store.remove(quad)
    return {"realistic": REALISTIC, "references_renamed": renamed,
            "facts_deleted": len(deleted), "reingested": document_iri(REINGESTED).value}


def _stamp(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

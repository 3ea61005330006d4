"""Re-DocRED: documents as sentences, relation labels as facts hung under their evidence.

A document's text is its sentences in order, each the sentence's tokens joined by one space,
the sentences joined by one newline (`join_sentences`); offsets count characters of that text,
so `text[chunk.start:chunk.end]` is exactly the sentence. The title is the document's `title`.
Every label `{h, t, r, evidence}` becomes the fact `entity_iri(first mention name of h)
<http://www.wikidata.org/prop/direct/{r}> entity_iri(first mention name of t)`, the property
labelled from `rel_info.json` and each entity with its first mention's name. There is one
subgraph per evidence sentence, holding every fact that sentence is evidence for; a fact with
several evidence sentences is in each of their subgraphs. Labels without evidence are loaded
without provenance and counted.

Run: python -m benchmarks.importers.redocred [--docs F] [--rel-info F] --out FILE.nq
"""

from __future__ import annotations

import datetime as dt
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pyoxigraph as ox

from benchmarks.importers import DatasetError, QuadWriter, Sentence, importer_main, read_json
from tgsparql.asking.provenance import now
from tgsparql.rdf.iris import entity_iri

DOCS: Final = ("datasets", "redocred", "dev_revised.json")
REL_INFO: Final = ("datasets", "redocred", "rel_info.json")
"""Where the files are under `TGSPARQL_DATA` (`benchmarks.data`)."""
WIKIDATA_PROPERTY: Final = "http://www.wikidata.org/prop/direct/"
AGENT: Final = ox.NamedNode("https://trustgraph.ai/agent/benchmarks-importer-redocred")
AGENT_LABEL: Final = "benchmarks.importers.redocred"
MODEL: Final = "Re-DocRED gold relation labels (no model)"


@dataclass(frozen=True)
class EvidenceSentence:
    """A sentence that is evidence for a fact, as the dataset gives it."""

    document_title: str
    chunk: ox.NamedNode
    text: str


@dataclass
class ReDocRedImport:
    path: Path
    documents: int = 0
    chunks: int = 0
    labels: int = 0
    """Relation labels read (a fact stated in several documents is several labels)."""
    facts: int = 0
    """Distinct facts loaded."""
    without_evidence: int = 0
    """Labels with no evidence sentence: their facts carry no provenance from them."""
    evidence: dict[ox.Triple, list[EvidenceSentence]] = field(default_factory=dict)
    """Every evidence sentence of each fact, over all documents."""


def join_sentences(sents: list[list[str]]) -> tuple[str, list[Sentence]]:
    """The document text and each sentence's exact span in it."""
    spans, start = [], 0
    for tokens in sents:
        text = " ".join(tokens)
        spans.append(Sentence(start, start + len(text), text))
        start += len(text) + 1
    return "\n".join(span.text for span in spans), spans


def read_rel_info(path: str | Path) -> dict[str, str]:
    data = read_json(path)
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise DatasetError(f"{path}: expected an object of property id -> label")
    return data


def _check_document(path: str | Path, i: int, doc: Any, rel_info: dict[str, str]) -> None:
    def bad(problem: str) -> DatasetError:
        return DatasetError(f"{path}: document {i}: {problem}")

    if not isinstance(doc, dict) or not isinstance(doc.get("title"), str):
        raise bad("expected an object with a title")
    sents, vertices, labels = doc.get("sents"), doc.get("vertexSet"), doc.get("labels")
    if not isinstance(sents, list) or not all(
        isinstance(s, list) and all(isinstance(t, str) for t in s) for s in sents
    ):
        raise bad("sents must be lists of token texts")
    if not isinstance(vertices, list) or not all(
        isinstance(v, list) and v and isinstance(v[0], dict) and isinstance(v[0].get("name"), str)
        and v[0]["name"].strip() for v in vertices
    ):
        raise bad("every vertexSet cluster needs a first mention with a name")
    if not isinstance(labels, list):
        raise bad("labels must be a list")
    for label in labels:
        if not isinstance(label, dict):
            raise bad("a label is not an object")
        h, t, r, evidence = (label.get(k) for k in ("h", "t", "r", "evidence"))
        if not all(isinstance(x, int) and 0 <= x < len(vertices) for x in (h, t)):
            raise bad(f"label {label!r}: h and t must index vertexSet")
        if r not in rel_info:
            raise bad(f"label {label!r}: relation {r!r} is not in rel_info")
        if not isinstance(evidence, list) or not all(
            isinstance(e, int) and 0 <= e < len(sents) for e in evidence
        ):
            raise bad(f"label {label!r}: evidence must index sents")


def import_redocred(docs_path: str | Path, rel_info_path: str | Path, out: str | Path,
                    started: dt.datetime | None = None) -> ReDocRedImport:
    """Write the documents and their labelled facts with provenance to `out` (N-Quads)."""
    rel_info = read_rel_info(rel_info_path)
    docs = read_json(docs_path)
    if not isinstance(docs, list):
        raise DatasetError(f"{docs_path}: expected a list of documents")
    for i, doc in enumerate(docs):
        _check_document(docs_path, i, doc, rel_info)
    writer = QuadWriter(AGENT, AGENT_LABEL, MODEL, started or now())
    report = ReDocRedImport(Path(out))
    facts: dict[ox.Triple, None] = {}
    for doc in docs:
        title = doc["title"]
        text, sentences = join_sentences(doc["sents"])
        ids = writer.document(title, text)
        chunks = [writer.chunk(ids, i, s, title) for i, s in enumerate(sentences)]
        report.documents += 1
        report.chunks += len(chunks)
        names = [cluster[0]["name"] for cluster in doc["vertexSet"]]
        stated: dict[int, list[ox.Triple]] = defaultdict(list)
        for label in doc["labels"]:
            head, tail = names[label["h"]], names[label["t"]]
            prop = ox.NamedNode(WIKIDATA_PROPERTY + label["r"])
            fact = ox.Triple(entity_iri(head), prop, entity_iri(tail))
            writer.fact(fact, ((fact.subject, head), (prop, rel_info[label["r"]]),
                               (fact.object, tail)))
            facts[fact] = None
            report.labels += 1
            if not label["evidence"]:
                report.without_evidence += 1
            for index in sorted(set(label["evidence"])):
                stated[index].append(fact)
                report.evidence.setdefault(fact, []).append(
                    EvidenceSentence(title, chunks[index], sentences[index].text))
        for index, triples in sorted(stated.items()):
            writer.subgraph(ids, chunks[index], sentences[index], dict.fromkeys(triples))
    report.facts = len(facts)
    writer.write(out)
    return report


def main(argv: list[str] | None = None) -> int:
    return importer_main(
        argv, __doc__, {"docs": DOCS, "rel-info": REL_INFO}, import_redocred,
        lambda report: f"{report.documents} documents, {report.chunks} chunks, {report.labels} "
        f"labels, {report.facts} facts, {report.without_evidence} labels without evidence "
        f"-> {report.path}")


if __name__ == "__main__":
    sys.exit(main())

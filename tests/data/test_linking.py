"""Linking: ingested names meet the entities the KG already holds, measured on documents that
write names as people do, and what is loaded and what is ingested answer one question."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from conftest import FIXTURES

from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.data.ingest import IngestReport, ingest_files
from tgsparql.data.linking import Link, LinkMethod, LinkMode, link_names
from tgsparql.data.loader import load_files
from tgsparql.rdf.iris import entity_iri, relation_iri
from tgsparql.rdf.vocab import DEFAULT_COLLECTION
from tgsparql.record.trace import EdgeTrace, render_text, trace
from tgsparql.stores.store import EmbeddedStore
from tgsparql.testing import assert_conforms
from tgsparql.testing.fakes import ScriptedBackend

PAINTERS = FIXTURES / "linking" / "painters.ttl"
DOCUMENTS: list[dict[str, Any]] = json.loads(
    (FIXTURES / "linking" / "documents.json").read_text(encoding="utf-8"))["documents"]
ART = "http://example.org/art/"
MENTIONS = """
PREFIX tg: <https://trustgraph.ai/ns/>
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?document ?name ?entity ?how ?candidates WHERE { GRAPH <urn:graph:source> {
  ?mention a tg:Mention ; tg:mentionText ?name ; tg:denotes ?entity ; tg:linkedBy ?how ;
      tg:candidateCount ?candidates ; prov:wasDerivedFrom/prov:wasDerivedFrom+ ?document .
  ?document a tg:Document .
} }
"""


def art(name: str) -> ox.NamedNode:
    return ox.NamedNode(ART + name)


@pytest.fixture
def painters() -> EmbeddedStore:
    store = EmbeddedStore()
    load_files(store, [PAINTERS])
    return store


def ingest_texts(store: EmbeddedStore, tmp_path: Path, documents: list[dict[str, Any]],
                 **options: Any) -> IngestReport:
    """Each document's facts, as a scripted extractor states them for its one chunk."""
    paths = []
    for document in documents:
        path = tmp_path / document["file"]
        path.write_text(document["text"], encoding="utf-8")
        paths.append(path)
    backend = ScriptedBackend({}, extractions={
        document["text"]: "\n".join(json.dumps(fact) for fact in document["facts"])
        for document in documents})
    return ingest_files(store, backend, paths, **options)


@dataclass
class Shares:
    mentions: int
    of_kg_entities: int
    right: int
    wrong: int
    unlinked: int

    def __str__(self) -> str:
        return (f"{self.mentions} mentions, {self.of_kg_entities} of KG entities: "
                f"{self.right / self.of_kg_entities:.1%} linked right, "
                f"{self.wrong / self.mentions:.1%} linked wrongly, "
                f"{self.unlinked} KG mentions minted")


def measure(store: EmbeddedStore, report: IngestReport) -> Shares:
    """Every recorded mention against the entity its document means by the name."""
    expected = {document.document.value: spec["expected"]
                for document, spec in zip(report.documents, DOCUMENTS)}
    shares = Shares(0, 0, 0, 0, 0)
    for row in store.select(MENTIONS):
        meant = expected[row["document"].value][row["name"].value]
        linked = row["how"] != LinkMethod.MINTED.iri
        shares.mentions += 1
        shares.of_kg_entities += meant is not None
        shares.right += linked and row["entity"].value == meant
        shares.wrong += linked and row["entity"].value != meant
        shares.unlinked += not linked and meant is not None
    return shares


# ---- the measure


@pytest.mark.parametrize(("mode", "least_right"), [("names", 0.9), ("exact", 0.6), ("none", 0.0)])
def test_names_as_people_write_them_link_to_the_right_entities_and_none_wrongly(
    painters: EmbeddedStore, tmp_path: Path, mode: LinkMode, least_right: float
) -> None:
    # kept unsupported, so that every name's decision is recorded and measured
    report = ingest_texts(painters, tmp_path, DOCUMENTS, link=mode, keep_unsupported=True)
    shares = measure(painters, report)
    print(f"--link {mode}: {shares}")
    assert shares.mentions == sum(len(document["expected"]) for document in DOCUMENTS) == 40
    assert shares.right / shares.of_kg_entities >= least_right
    assert shares.wrong / shares.mentions < 0.02
    assert (report.linked, report.minted) == (shares.right + shares.wrong,
                                             shares.mentions - shares.right - shares.wrong)
    assert_conforms(painters)


# ---- how a name is linked


def links(store: EmbeddedStore, *names: str, mode: LinkMode = "names") -> dict[str, Link]:
    return link_names(store, names, mode)


def test_a_surname_a_lower_case_name_a_title_and_a_possessive_fit_the_full_label(
    painters: EmbeddedStore
) -> None:
    found = links(painters, "Vermeer", "frans hals", "Mr. Vermeer", "Rembrandt's", "Jan Steen")
    assert {name: (link.entity, link.method) for name, link in found.items()} == {
        "Vermeer": (art("Vermeer"), LinkMethod.NAME),
        "frans hals": (art("Hals"), LinkMethod.LABEL),
        "Mr. Vermeer": (art("Vermeer"), LinkMethod.NAME),
        "Rembrandt's": (art("Rembrandt"), LinkMethod.NAME),
        "Jan Steen": (art("Steen"), LinkMethod.LABEL),
    }


def test_a_name_several_entities_fit_alike_is_decided_by_the_documents_other_names(
    painters: EmbeddedStore
) -> None:
    alone = links(painters, "Saskia")["Saskia"]
    assert (alone.entity, alone.method, alone.candidates) == (
        entity_iri("Saskia"), LinkMethod.MINTED, 2), "a person and a painting of her"
    with_kin = links(painters, "Saskia", "Titus van Rijn", "Pieter Lastman")["Saskia"]
    assert (with_kin.entity, with_kin.method, with_kin.candidates) == (
        art("Saskia"), LinkMethod.CONTEXT, 2)


def test_names_the_kg_does_not_hold_are_minted(painters: EmbeddedStore) -> None:
    found = links(painters, "The Hague", "Haarlem guild", "Govert Flinck")
    assert {name: (link.entity, link.method, link.candidates) for name, link in found.items()} == {
        name: (entity_iri(name), LinkMethod.MINTED, 0) for name in found}


def test_exact_links_only_labels_and_none_links_nothing(painters: EmbeddedStore) -> None:
    exact = links(painters, "Vermeer", "johannes vermeer", mode="exact")
    assert [(link.entity, link.method) for link in exact.values()] == [
        (entity_iri("Vermeer"), LinkMethod.MINTED), (art("Vermeer"), LinkMethod.LABEL)]
    none = links(painters, "Johannes Vermeer", mode="none")["Johannes Vermeer"]
    assert (none.entity, none.method) == (entity_iri("Johannes Vermeer"), LinkMethod.MINTED)


def test_linked_entities_get_no_label_of_the_name_and_the_mention_records_the_decision(
    painters: EmbeddedStore, tmp_path: Path
) -> None:
    report = ingest_texts(painters, tmp_path, DOCUMENTS[1:2])
    (document,) = report.documents
    assert (document.linked, document.minted) == (10, 1)
    labels = {q.object.value for q in painters.oxigraph.quads_for_pattern(
        art("Vermeer"), ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label"), None)}
    assert labels == {"Johannes Vermeer"}
    decisions = {(row["name"].value, row["entity"].value, row["how"].value)
                 for row in painters.select(MENTIONS)}
    assert ("Mr. Vermeer", ART + "Vermeer", LinkMethod.NAME.iri.value) in decisions
    assert ("The Hague", entity_iri("The Hague").value, LinkMethod.MINTED.iri.value) in decisions
    assert painters.ask("ASK { GRAPH <urn:graph:source> "
                        "{ ?activity <https://trustgraph.ai/ns/linkMode> 'names' } }")


# ---- loaded and ingested, asked and traced together


def test_a_question_needing_a_loaded_and_an_ingested_fact_is_answered_and_both_are_traced(
    painters: EmbeddedStore, tmp_path: Path
) -> None:
    text = "Govert Flinck came to Amsterdam in 1633 and was a pupil of Rembrandt for a year."
    evidence = "Govert Flinck came to Amsterdam in 1633 and was a pupil of Rembrandt"
    flinck = {"file": "flinck.txt", "text": text,
              "facts": [{"s": "Govert Flinck", "p": "pupil of", "o": "Rembrandt",
                         "evidence": evidence}]}
    report = ingest_texts(painters, tmp_path, [flinck])
    document = report.documents[0].document
    ingested = ox.Triple(entity_iri("Govert Flinck"), relation_iri("pupil of"), art("Rembrandt"))
    loaded = ox.Triple(art("Rembrandt"), art("bornIn"), art("Leiden"))

    messages = list(GraphRag(painters, OfflineBackend()).query(
        "Govert Flinck was a pupil of a painter born where?"))
    assert not [m for m in messages if m.error is not None]
    answer = "".join(m.response for m in messages if m.message_type == "chunk")
    assert answer.startswith("Leiden.")
    session = next(m.explain_id for m in messages if m.explain_id and "session" in m.explain_id)
    traced = trace(painters, DEFAULT_COLLECTION, session)
    assert [edge.edge for edge in traced.selected] == [ingested, loaded]
    edge_trace = trace(painters, DEFAULT_COLLECTION, traced.selected[0].edge_selection)
    assert isinstance(edge_trace, EdgeTrace)
    (source,) = edge_trace.edge.sources
    assert (source.document, source.page_number, source.chunk_index, source.evidence) == (
        document.value, 1, 0, evidence)
    assert trace(painters, DEFAULT_COLLECTION, traced.selected[1].edge_selection
                 ).edge.sources == []  # type: ignore[union-attr]
    text_trace = render_text(traced)
    assert f"document “{text}”  {document.value}" in text_trace
    assert "no recorded source" in text_trace
    assert_conforms(painters)

"""The session page, for a reader: the answer first, each citation linked to the edge it cites
and back; the edges; a picture whose labels wrap and whose chunks name their document; the
edges retrieved but not selected; whether the record conforms to the shapes; and the seed
entities' own pages. Served by a real `tgsparql serve`, checked in Chromium under its policy."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path
from urllib.parse import quote, urlencode

import pyoxigraph as ox
import pytest

from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.asking.retrieval import RetrievalLimits
from tgsparql.data.loader import load_files
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.record.explain import explain_session
from tgsparql.record.picture import LINE_CHARS, MAX_LINES, wrap
from tgsparql.record.session_view import UNSELECTED_SHOWN
from tgsparql.serve import ServerConfig, pages, routes
from tgsparql.stores.store import open_store

from .browser import Browser, Tab, browser, installed_chromium
from .conftest import ServeProcess, running, serve_process

EX = "https://example.org/page/"
SHARED = "The International Committee for Weights and Measures"  # 52 characters
HOSTILE = '<script>alert(1)</script><b>Committee</b> of "weights" & measures'
LONG = "Committee of weights and measures " + " ".join(f"annex{i}" for i in range(80))
FILLERS = 240
COMMITTEE = "Which committee for weights and measures does the Hub relate to?"
ARTIFACTS = Path(__file__).resolve().parents[2] / "tests" / "artifacts"


@dataclass
class Recorded:
    path: Path
    committee: str
    """A session over a hub: four edges selected, FILLERS retrieved and not."""
    curie: str
    """A demo session whose edges have chunks and documents."""
    broken: str
    """A demo session whose retrieval's tg:edgeCount was changed after the fact."""
    citations: int
    """How many tg:Citation the committee session's answer has."""

    def built(self) -> tuple[Path, list[str], str]:
        return self.path, [self.committee, self.curie, self.broken], self.broken


def kg_turtle() -> str:
    lines = [f"@prefix ex: <{EX}> .", "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
             'ex:Hub rdfs:label "Hub" .', 'ex:relatesTo rdfs:label "relates to" .']
    for name, label in (("Sevres", SHARED + " at Sèvres"), ("Paris", SHARED + " at Paris"),
                        ("Hostile", HOSTILE), ("Long", LONG)):
        lines.append(f"ex:Hub ex:relatesTo ex:{name} . ex:{name} rdfs:label {json.dumps(label)} .")
    # Each filler by a predicate of its own: a seed's rare predicates are retrieved whatever
    # the question says, so the fillers are offered to the selector and rejected.
    lines += [f'ex:Hub ex:filler{i} ex:item{i} . ex:item{i} rdfs:label "filler item {i}" . '
              f'ex:filler{i} rdfs:label "relates to" .' for i in range(FILLERS)]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    folder = tmp_path_factory.mktemp("reader")
    (folder / "kg.ttl").write_text(kg_turtle(), encoding="utf-8")
    store = open_store(folder / "store")
    with as_file(files("tgsparql.data.demo").joinpath("curie.trig")) as demo:
        assert not load_files(store, [demo, folder / "kg.ttl"]).failed
    rag = GraphRag(store, OfflineBackend(),
                   limits=RetrievalLimits(triple_limit=400, max_subgraph_size=1000))
    committee, curie, broken = (list(rag.query(q))[0].explain_id or "" for q in (
        COMMITTEE, "Who did Marie Curie marry?", "Where was Marie Curie born?"))
    explained = explain_session(store, vocab.DEFAULT_COLLECTION, committee)
    assert [e.labels[2] for e in explained.selected] == [
        SHARED + " at Paris", LONG, HOSTILE, SHARED + " at Sèvres"]
    store.close()
    raw = ox.Store(str(folder / "store"))
    retrieval = SessionIds.from_session_iri(broken).retrieval
    edge_count = ox.NamedNode(vocab.TG + "edgeCount")
    graph = vocab.DEFAULT_COLLECTION.graph
    for quad in list(raw.quads_for_pattern(retrieval, edge_count, None, graph)):
        raw.remove(quad)
    raw.add(ox.Quad(retrieval, edge_count, ox.Literal(999_999), graph))
    raw.flush()
    del raw
    return Recorded(folder / "store", committee, curie, broken, len(explained.citations))


@pytest.fixture(scope="module")
def reader(recorded: Recorded) -> Iterator[ServeProcess]:
    with serve_process(recorded.built()) as served:
        yield served


def uuid_of(session: str) -> str:
    return session.rsplit(":", 1)[1]


def page_of(reader: ServeProcess, session: str) -> str:
    reply = reader.get(f"/sessions/{uuid_of(session)}")
    assert reply.status == 200, reply.text[-500:]
    return reply.text


def edge_nodes(page: str) -> list[list[str]]:
    """The lines of each edge box of the picture, as a browser shows them (unescaped)."""
    boxes = re.findall(r'<g class="node node-edge">(.*?)</g>', page, re.DOTALL)
    return [[html.unescape(line) for line in re.findall(r"<tspan[^>]*>([^<]*)</tspan>", box)]
            for box in boxes]


def test_the_answer_comes_first_and_each_citation_links_to_its_edge_and_back(
    reader: ServeProcess, recorded: Recorded
) -> None:
    page = page_of(reader, recorded.committee)
    assert page.index('id="answer"') < page.index('id="edge-0"') < page.index('id="trace-picture"')
    answer = re.search(r'<div class="answer" id="answer">(.*?)</div>', page, re.DOTALL)
    assert answer is not None
    forward = re.findall(r'<a id="citation-(\d+)" href="#edge-(\d+)"', answer.group(1))
    assert len(forward) == recorded.citations == 4
    for citation, edge in forward:
        block = re.search(rf'<div class="edge" id="edge-{edge}">(.*?)\n</div>', page, re.DOTALL)
        assert block is not None, f"citation {citation} links to a missing edge {edge}"
        back = re.search(rf'<a href="#citation-{citation}"><q>([^<]*)</q></a>', block.group(1))
        assert back is not None, f"edge {edge} does not link back to citation {citation}"
        sentence = html.unescape(back.group(1))
        assert sentence in html.unescape(re.sub(r"<[^>]+>", "", answer.group(1)))
    sentences = re.findall(r'<a class="cited" id="sentence-\d+" href="#edge-\d+">([^<]*)</a>',
                           answer.group(1))
    assert len(sentences) == 4 and "[" in sentences[0]  # each sentence keeps its marker


def test_picture_labels_wrap_and_two_edges_sharing_forty_characters_stay_two(
    reader: ServeProcess, recorded: Recorded
) -> None:
    page = page_of(reader, recorded.committee)
    nodes = edge_nodes(page)
    assert len(nodes) == 4
    assert all(len(line) <= LINE_CHARS for lines in nodes for line in lines)
    shown = [" ".join(lines) for lines in nodes]
    assert len(set(shown)) == 4
    assert shown[0] == f"[0] Hub — relates to — {SHARED} at Paris"
    assert shown[3] == f"[3] Hub — relates to — {SHARED} at Sèvres"
    long_box = nodes[1]
    assert len(long_box) == MAX_LINES and long_box[-1].endswith("…")
    assert shown[1].startswith("[1] Hub — relates to — Committee of weights and measures annex0")
    assert f"[1] Hub — relates to — {html.escape(LONG, quote=False)}" in page  # in the list


def test_a_hostile_label_is_text_everywhere(reader: ServeProcess, recorded: Recorded) -> None:
    page = page_of(reader, recorded.committee)
    assert "<script" not in page and "<b>Committee" not in page
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;Committee&lt;/b&gt;"
    assert page.count(escaped) >= 4  # edge list, picture, answer, its citation
    assert edge_nodes(page)[2] == list(wrap(f"[2] Hub — relates to — {HOSTILE}"))


def test_chunk_boxes_name_their_document(reader: ServeProcess, recorded: Recorded) -> None:
    page = page_of(reader, recorded.curie)
    chunks = re.findall(r'<g class="node node-chunk">(.*?)</g>', page, re.DOTALL)
    shown = [" ".join(re.findall(r"<tspan[^>]*>([^<]*)</tspan>", box)) for box in chunks]
    assert "Marie Curie: From Warsaw to Paris: page 1, chunk 1" in shown
    assert "Pierre Curie, Physicist of Paris: page 1, chunk 1" in shown


def test_the_edges_not_selected_are_listed_collapsed_up_to_a_cap_with_the_query_for_all(
    reader: ServeProcess, recorded: Recorded
) -> None:
    page = page_of(reader, recorded.committee)
    details = re.search(r'<details id="unselected">(.*?)</details>', page, re.DOTALL)
    assert details is not None
    listed = re.findall(r"<li>([^<]*)</li>", details.group(1))
    assert f"{FILLERS} edges retrieved but not selected" in details.group(1)
    assert len(listed) == UNSELECTED_SHOWN
    assert all(item.startswith("Hub — relates to — filler item ") for item in listed)
    assert SHARED not in details.group(1)  # the selected ones are not among them
    more = re.search(r'<p class="muted" id="unselected-more">(\d+) more: <a href="([^"]+)">',
                     details.group(1))
    assert more is not None and int(more.group(1)) == FILLERS - UNSELECTED_SHOWN
    every = reader.get(html.unescape(more.group(2)))
    assert every.status == 200
    assert f'<span id="row-count">{FILLERS}</span> rows' in every.text
    assert "filler item 239" in every.text and SHARED not in every.text.split("row-count")[1]


def test_a_session_that_does_not_conform_says_so_with_its_violations(
    reader: ServeProcess, recorded: Recorded
) -> None:
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns)
              for p in recorded.path.iterdir() if p.is_file()}
    broken = page_of(reader, recorded.broken)
    said = re.search(r'<p class="error" id="conformance">Does not conform to the shapes: '
                     r"(\d+) violations?", broken)
    assert said is not None and int(said.group(1)) >= 1
    findings = re.search(r'<table class="findings">(.*?)</table>', broken, re.DOTALL)
    assert findings is not None and "Violation" in findings.group(1)
    assert "tg:edgeCount" in findings.group(1) or "edge count" in findings.group(1).lower()
    fine = page_of(reader, recorded.curie)
    assert re.search(r'<p class="conforms" id="conformance">Conforms to the shapes \(\d+ checked',
                     fine)
    after = {p.name: (p.stat().st_size, p.stat().st_mtime_ns)
             for p in recorded.path.iterdir() if p.is_file()}
    assert after == before  # validating wrote nothing


def test_a_validation_past_its_time_bound_leaves_the_page_saying_so(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound is kept by the server, which stops the worker that validates: at 0 s no
    validation can answer in time, and the page is served all the same."""
    monkeypatch.setattr(routes, "VALIDATION_SECONDS", 0.0)
    with running(ServerConfig(store=recorded.path, port=0, timeout=20)) as server:
        reply = ServeProcess(server.url, recorded.path, [], "").get(
            f"/sessions/{uuid_of(recorded.broken)}")
    assert reply.status == 200
    assert '<p class="muted" id="conformance">Not validated: the validation did not finish ' \
           "within 0 s</p>" in reply.text
    assert "<h2>Answer</h2>" in reply.text


def test_seed_entities_link_to_their_edges_in_this_kg_page_by_page(
    reader: ServeProcess, recorded: Recorded
) -> None:
    page = page_of(reader, recorded.committee)
    link = f'<a class="entity" href="/entity?iri={quote(EX + "Hub", safe="")}"'
    assert link in page
    first = reader.get(f"/entity?iri={quote(EX + 'Hub', safe='')}")
    assert first.status == 200 and '<h1 id="entity">Hub</h1>' in first.text
    rows = re.findall(r"<tr><td>", first.text)
    assert len(rows) == pages.ENTITY_PAGE_EDGES
    assert re.search(r'<a rel="next" href="/entity\?iri=[^"]+page=2">', first.text)
    total = FILLERS + 4 + 1  # every relatesTo edge and its own label
    last_page = -(-total // pages.ENTITY_PAGE_EDGES)
    last = reader.get("/entity?" + urlencode({"iri": EX + "Hub", "page": last_page})).text
    assert len(re.findall(r"<tr><td>", last)) == total - (last_page - 1) * pages.ENTITY_PAGE_EDGES
    assert 'rel="next"' not in last and 'rel="prev"' in last
    assert "&lt;script&gt;alert(1)" in first.text + last and "<script" not in first.text + last
    item = reader.get("/entity?" + urlencode({"iri": EX + "item7"})).text
    assert re.search(r'<a href="/entity\?iri=[^"]*Hub" title="[^"]*Hub">Hub</a>', item)
    assert "filler item 7" in item


@pytest.mark.parametrize("query", ["", "iri=no%20iri", "iri=a:b&page=0", "iri=a:b&page=x",
                                   "iri=a:b&page=1001", "iri=a:b&iri=c:d", "iri=a:b&other=1"])
def test_an_entity_page_asked_for_wrongly_is_400(reader: ServeProcess, query: str) -> None:
    reply = reader.get(f"/entity?{query}")
    assert reply.status == 400 and reply.headers["Content-Type"].startswith("text/html")


def test_in_chromium_the_citations_link_both_ways_and_nothing_is_blocked(
    reader: ServeProcess, recorded: Recorded, tmp_path: Path
) -> None:
    with browser(installed_chromium(), tmp_path / "profile") as chrome:
        tab = chrome.open()
        tab.go(f"{reader.url}/sessions/{uuid_of(recorded.committee)}")
        links = tab.evaluate(
            "[...document.querySelectorAll('#answer sup.cites a')].map(a => [a.id, "
            "a.getAttribute('href'), !!document.querySelector(a.getAttribute('href'))])")
        assert len(links) == 4 and all(found for _, _, found in links)
        backs = tab.evaluate(
            "[...document.querySelectorAll('.edge .citation a')].map(a => "
            "[a.closest('.edge').id, a.getAttribute('href')])")
        assert sorted((edge, back) for edge, back in backs) == sorted(
            (href[1:], f"#{cite}") for cite, href, _ in links)

        citation, edge, _ = links[1]
        follow(chrome, tab, f"#{citation}")
        assert tab.evaluate("location.hash") == edge
        assert tab.evaluate("document.querySelector(':target').id") == edge[1:]
        follow(chrome, tab, f"{edge} .citation a")
        assert tab.evaluate("location.hash") == f"#{citation}"
        assert tab.evaluate("document.querySelector(':target').closest('#answer') !== null")
        assert tab.evaluate("document.querySelector('details#unselected').open") is False
        lines = tab.evaluate("[...document.querySelectorAll('.node-edge text.label')]"
                             ".map(t => t.querySelectorAll('tspan').length)")
        assert lines == [len(box) for box in edge_nodes(page_of(reader, recorded.committee))]
        assert lines[1] == MAX_LINES and min(lines) >= 2
        ARTIFACTS.mkdir(exist_ok=True)
        tab.screenshot(ARTIFACTS / "session_page_reader.png")
        blocked = [entry for entry in tab.log()
                   if "Content Security Policy" in json.dumps(entry)
                   or entry.get("entry", {}).get("source") == "security"]
        assert blocked == []


def follow(chrome: Browser, tab: Tab, selector: str) -> None:
    """Click a same-page link and wait for Chromium to say the page moved to its anchor."""
    tab.evaluate(f"document.querySelector({json.dumps(selector)}).click()")
    chrome.wait_for("Page.navigatedWithinDocument", tab.session)

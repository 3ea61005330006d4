"""The SPARQL page at /sparql: for a browser, a query box and results as a table, with no
script; protocol clients see the endpoint they always did."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import time
import urllib.parse
from pathlib import Path

import pytest

from tgsparql.rdf import vocab
from tgsparql.serve import editor
from tgsparql.serve.sparql import NO_SERVICE, READ_ONLY

from .browser import browser, installed_chromium
from .conftest import FAILED_QUESTION, Served
from .test_pages import ARTIFACTS

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
SESSIONS = ("PREFIX tg: <https://trustgraph.ai/ns/> SELECT ?session ?question WHERE { GRAPH "
            "<urn:graph:explainability> { ?session tg:query ?question } } ORDER BY ?question")


def on_page(query: str, **params: str) -> str:
    return "/sparql?" + urllib.parse.urlencode({"query": query, "format": "html", **params})


def box(page: str) -> str:
    """The query in the page's box, as the browser shows it."""
    found = re.search(r'<textarea name="query"[^>]*>(.*?)</textarea>', page, re.DOTALL)
    assert found is not None
    return html.unescape(found.group(1))


def table(page: str) -> list[list[str]]:
    body = page.split('<table id="results-table">', 1)[1].split("</table>", 1)[0]
    return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)
            if "<td>" in row]


def test_a_browser_gets_the_page_with_the_prefixes_and_the_saved_queries(served: Served) -> None:
    reply = served.get("/sparql", BROWSER)
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/html")
    page = reply.text
    assert box(page).startswith(editor.prefixes())
    assert "PREFIX tg: <https://trustgraph.ai/ns/>" in box(page) and "LIMIT 20" in box(page)
    assert '<form method="get" action="/sparql"' in page
    assert '<input type="hidden" name="format" value="html">' in page
    for example in editor.examples("rdf12", vocab.DEFAULT_COLLECTION):
        assert f'href="{html.escape(example.url)}"' in page
    assert 'id="bi-sessions_per_day"' in page and 'id="trace-session_trace"' in page
    assert "<script" not in page and reply.headers["Content-Security-Policy"].startswith(
        "default-src 'none'")


@pytest.mark.parametrize("headers", [{"Accept": "application/sparql-results+json"},
                                     {"Accept": "text/html;q=0"}])
def test_clients_that_accept_no_description_without_a_query_get_the_400(
        served: Served, headers: dict[str, str]) -> None:
    reply = served.get("/sparql", headers)
    assert reply.status == 400 and reply.headers["Content-Type"].startswith("text/plain")


@pytest.mark.parametrize("accept", ["", "*/*", "text/html;q=0.2, text/turtle;q=0.6"])
def test_other_clients_without_a_query_get_the_service_description(served: Served,
                                                                    accept: str) -> None:
    reply = served.get("/sparql", {"Accept": accept})
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/turtle")


def test_protocol_answers_are_unchanged_for_a_browser_accept(served: Served) -> None:
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": SESSIONS}), BROWSER)
    assert reply.headers["Content-Type"].startswith("application/sparql-results+json")
    assert len(json.loads(reply.text)["results"]["bindings"]) == 3


def test_a_query_runs_into_a_table_with_session_links(served: Served) -> None:
    reply = served.get(on_page(SESSIONS))
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/html")
    page = reply.text
    assert box(page) == SESSIONS
    assert '<span id="row-count">3</span> rows' in page
    assert re.findall(r"<th>(\w+)</th>", page) == ["session", "question"]
    rows = table(page)
    assert len(rows) == 3
    for session in served.sessions + [served.failed]:
        uuid = session.rsplit(":", 1)[1]
        assert f'<a href="/sessions/{uuid}" title="{session}">{session}</a>' in page
        assert served.get(f"/sessions/{uuid}").status == 200
    assert "What did &lt;b&gt;Pierre&lt;/b&gt; &amp; &#34;Marie&#34; discover?" in page
    assert FAILED_QUESTION not in page


def test_downloads_carry_the_whole_result(served: Served) -> None:
    page = served.get(on_page(SESSIONS)).text
    links = dict(re.findall(r'<a href="([^"]+)" download="(results\.\w+)">', page))
    by_name = {name: html.unescape(url) for url, name in links.items()}
    assert set(by_name) == {"results.csv", "results.json"}
    rows = list(csv.DictReader(io.StringIO(served.get(by_name["results.csv"]).text)))
    assert len(rows) == 3 and rows[0]["session"].startswith("urn:trustgraph:session:")
    data = json.loads(served.get(by_name["results.json"]).text)
    assert len(data["results"]["bindings"]) == 3


def test_ask_and_construct(served: Served) -> None:
    assert '<strong id="boolean">true</strong>' in served.get(on_page(
        "ASK { GRAPH ?g { ?s ?p ?o } }")).text
    construct = served.get(on_page(
        "PREFIX tg: <https://trustgraph.ai/ns/> CONSTRUCT { ?s tg:query ?q } WHERE { GRAPH "
        "<urn:graph:explainability> { ?s tg:query ?q } }")).text
    assert re.findall(r"<th>(\w+)</th>", construct) == ["subject", "predicate", "object"]
    assert len(table(construct)) == 3
    assert ('<a href="https://trustgraph.ai/ns/query" title="https://trustgraph.ai/ns/query">'
            "tg:query</a>") in construct  # shortened to the project's prefix, linked in full
    assert 'download="results.ttl"' in construct and 'download="results.nt"' in construct


def test_only_http_iris_become_links(served: Served) -> None:
    page = served.get(on_page(
        'SELECT ?iri WHERE { VALUES ?iri { <javascript:alert(1)> <https://example.org/x> } }')
    ).text
    assert '<a href="https://example.org/x">https://example.org/x</a>' in page
    assert "<td>javascript:alert(1)</td>" in page and 'href="javascript' not in page


def test_the_table_stops_at_the_page_rows_the_count_does_not(served: Served) -> None:
    many = "SELECT ?n WHERE { VALUES ?a { 0 1 2 3 4 5 6 7 8 9 } VALUES ?b { 0 1 2 3 4 5 6 7 8 9 } " \
           "VALUES ?c { 0 1 2 3 4 5 6 7 8 9 } VALUES ?d { 0 1 } BIND(?a + 10 * ?b AS ?n) }"
    page = served.get(on_page(many)).text
    assert '<span id="row-count">2000</span> rows, the first 1000 shown' in page
    assert len(table(page)) == editor.PAGE_ROWS


@pytest.mark.parametrize(("query", "status", "message"), [
    ("SELEKT * WHERE {}", 400, "not a SPARQL query: error at 1:1"),
    ("SELECT * WHERE { SERVICE <http://127.0.0.1:1/> { ?s ?p ?o } }", 400, NO_SERVICE),
    ("INSERT DATA { <urn:a> <urn:b> <urn:c> }", 400, READ_ONLY),
    ("", 400, "give exactly one non-empty query"),
])
def test_errors_show_in_place_with_the_query_kept(served: Served, query: str, status: int,
                                                  message: str) -> None:
    reply = served.get(on_page(query))
    assert reply.status == status and reply.headers["Content-Type"].startswith("text/html")
    assert box(reply.text) == query
    found = re.search(r'<p class="error" id="error" role="alert"><strong>(\d+)</strong> (.*?)</p>',
                      reply.text, re.DOTALL)
    assert found is not None and found.group(1) == str(status)
    assert html.unescape(found.group(2)).startswith(message)
    assert 'id="results-table"' not in reply.text


def test_the_page_answers_a_post_form_too(served: Served) -> None:
    body = urllib.parse.urlencode({"query": SESSIONS, "format": "html"}).encode()
    reply = served.post("/sparql", body, "application/x-www-form-urlencoded")
    assert reply.status == 200 and len(table(reply.text)) == 3


def test_the_page_is_held_to_the_servers_limits(strict: Served) -> None:
    auth = {"Authorization": "Bearer s3cret"}
    capped = strict.get(on_page("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }"), auth)
    assert capped.status == 503 and "more than 5 results" in capped.text
    assert 'id="error"' in capped.text and capped.headers["Retry-After"]
    slow = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
    started = time.monotonic()
    stopped = strict.get(on_page(slow), auth)
    assert stopped.status == 503 and "1 s timeout" in stopped.text and box(stopped.text) == slow
    assert time.monotonic() - started < 5
    assert strict.get("/sparql", {**BROWSER}).status == 401  # the token is asked for the page too


@pytest.mark.parametrize("example", editor.examples("rdf12", vocab.DEFAULT_COLLECTION),
                         ids=lambda example: example.name)
def test_every_saved_query_runs_from_its_link(served: Served, example: editor.Example) -> None:
    reply = served.get(example.url)
    assert reply.status == 200, reply.text[-500:]
    assert box(reply.text) == example.query and 'id="results-table"' in reply.text


def test_in_chromium_a_query_typed_and_run_shows_its_table_and_an_error_shows_in_place(
    served: Served, tmp_path: Path
) -> None:
    with browser(installed_chromium(), tmp_path / "profile") as chrome:
        tab = chrome.open()
        tab.go(served.url + "/sparql")
        assert tab.evaluate("document.querySelector('#query').value").startswith(
            editor.prefixes())
        assert tab.evaluate("document.querySelectorAll('#examples a').length") == len(
            editor.examples("rdf12", vocab.DEFAULT_COLLECTION))

        tab.evaluate(f"document.querySelector('#query').value = {json.dumps(SESSIONS)}")
        tab.click("#run")
        assert tab.evaluate("location.pathname + '|' + new URLSearchParams(location.search)"
                            ".get('format')") == "/sparql|html"
        assert tab.evaluate("document.querySelectorAll('#results-table tbody tr').length") == 3
        assert tab.evaluate("document.querySelector('#query').value") == SESSIONS
        links = tab.evaluate("[...document.querySelectorAll('#results-table a')]"
                             ".map(a => a.pathname)")
        assert sorted(links) == sorted(f"/sessions/{s.rsplit(':', 1)[1]}"
                                       for s in served.sessions + [served.failed])
        ARTIFACTS.mkdir(exist_ok=True)
        tab.screenshot(ARTIFACTS / "sparql_page.png")
        assert (ARTIFACTS / "sparql_page.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

        tab.click("#results-table a")  # a session IRI opens its page
        assert tab.evaluate("location.pathname").startswith("/sessions/")
        tab.go(served.url + "/sparql")

        tab.evaluate("document.querySelector('#query').value = 'SELECT ?x WHERE { ?x }'")
        tab.click("#run")
        assert "not a SPARQL query" in tab.evaluate("document.querySelector('#error').textContent")
        assert tab.evaluate("document.querySelector('#query').value") == "SELECT ?x WHERE { ?x }"
        assert tab.evaluate("document.querySelector('#results-table')") is None

        tab.click("#bi-edges_per_session")
        assert tab.evaluate("document.querySelectorAll('#results-table tbody tr').length") == 3
        assert "BI: retrieved vs selected" in tab.evaluate(
            "document.querySelector('#query').value")
        blocked = [entry for entry in tab.log()
                   if "Content Security Policy" in json.dumps(entry)
                   or entry.get("entry", {}).get("source") == "security"]
        assert blocked == []

"""Trace pages, `explain --format html|dot|mermaid`, a writer beside the server, Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
import urllib.parse
from pathlib import Path

import pyoxigraph as ox
import pytest
from click.testing import CliRunner

from tgsparql.cli import main
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.serve import ServerConfig

from .conftest import QUESTIONS, Served, running, serve_process

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"


def uuid_of(session: str) -> str:
    return session.rsplit(":", 1)[1]


def test_sessions_newest_first_and_searchable(served: Served) -> None:
    page = served.get("/sessions").text
    order = [page.index(uuid_of(s)) for s in served.sessions[::-1] + [served.failed]]
    assert order == sorted(order)
    assert "What did &lt;b&gt;Pierre&lt;/b&gt; &amp; &#34;Marie&#34; discover?" in page
    found = served.get("/sessions?" + urllib.parse.urlencode({"q": "BORN"})).text
    assert QUESTIONS[1] in found and QUESTIONS[0] not in found
    none = served.get("/sessions?" + urllib.parse.urlencode({"q": '") } #'})).text
    assert "0 sessions" in none
    assert served.get("/sessions?limit=0").status == 400


def test_session_page_shows_question_edges_reasons_sources_answer_and_svg(served: Served) -> None:
    reply = served.get(f"/sessions/{uuid_of(served.sessions[0])}")
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/html")
    page = reply.text
    assert f'<h1 id="question">{QUESTIONS[0]}</h1>' in page
    assert '<span id="retrieved-count">35</span> edges retrieved' in page
    assert "Marie Curie — married — Pierre Curie" in page
    assert "why: offline selector: this edge matches" in page
    assert "Marie Curie: From Warsaw to Paris" in page and ", page 1, chunk 1" in page
    assert "<mark>In Paris she met the physicist Pierre Curie, and the two married in 1895.</mark>" \
        in page
    answer = re.search(r'<div class="answer" id="answer">(.*?)</div>', page, re.DOTALL)
    assert answer is not None and "Marie Curie married Pierre Curie" in answer.group(1)
    assert "<svg" in page and page.count('class="node node-document"') == 2
    assert "<script" not in page


def test_failed_session_page_and_unknown_session(served: Served) -> None:
    page = served.get(f"/sessions/{uuid_of(served.failed)}").text
    assert "the LLM timed out after 30 s" in page and "&lt;b&gt;Pierre" in page
    missing = served.get("/sessions/00000000-0000-4000-8000-000000000000")
    assert missing.status == 404 and "no session" in missing.text
    assert served.get("/sessions/not-a-uuid").status == 404


@pytest.mark.parametrize(("fmt", "expected"), [
    ("html", "<svg"), ("dot", "digraph trace {"), ("mermaid", "flowchart LR")])
def test_explain_writes_the_picture(served: Served, tmp_path: Path, fmt: str,
                                    expected: str) -> None:
    copy = tmp_path / "store"
    shutil.copytree(served.store, copy, ignore=shutil.ignore_patterns("LOCK"))
    out = tmp_path / f"trace.{fmt}"
    result = CliRunner().invoke(main, ["explain", "--store", str(copy), served.sessions[0],
                                       "--format", fmt, "--output", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert expected in text and "Pierre Curie" in text
    if fmt == "dot":
        assert text.count(" -> ") >= 3 + 3  # question → 3 edges, each edge → a chunk
    if fmt == "mermaid":
        assert text.count(" --> ") >= 6


WRITER = textwrap.dedent("""
    import sys
    from tgsparql.asking.llm.offline import OfflineBackend
    from tgsparql.asking.pipeline import GraphRag
    from tgsparql.stores.store import open_store
    store = open_store(sys.argv[1])  # holds the store's exclusive lock until it exits
    rag = GraphRag(store, OfflineBackend())
    print("open", flush=True)
    for n in range(int(sys.argv[2])):
        sys.stdin.readline()  # one session each time the test asks for one
        list(rag.query(f"Where was Marie Curie born? (writer {n})"))
        print(n, flush=True)
    sys.stdin.readline()
""")


def test_serves_while_another_process_records_sessions(served: Served, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(served.store, store, ignore=shutil.ignore_patterns("LOCK"))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store), "4"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        with running(ServerConfig(store=store, port=0, timeout=20)) as server:
            seen = []
            assert writer.stdout is not None and writer.stdin is not None
            assert writer.stdout.readline().strip() == "open"
            for n in range(4):
                writer.stdin.write("\n")
                writer.stdin.flush()
                assert writer.stdout.readline().split()[0] == str(n)
                page = Served(server.url, store, [], "").get("/sessions?q=writer").text
                seen.append(page.count("(writer "))
            assert seen == [1, 2, 3, 4]  # every committed session, at once, lock still held
            assert writer.poll() is None
    finally:
        writer.communicate("\n", timeout=30)
    assert writer.returncode == 0


SCRIPT_IRI = "javascript:alert(document.domain)"
SCRIPT_LABEL = "Click for the full record"


@pytest.fixture(scope="module")
def hostile(built: tuple[Path, list[str], str],
            tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], str]:
    """The served store, but the first session's retrieval also names a seed entity whose IRI
    is a `javascript:` URL, labelled to be clicked: what a hostile KG can put there."""
    path, sessions, failed = built
    copy = tmp_path_factory.mktemp("hostile") / "store"
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("LOCK"))
    store = ox.Store(str(copy))
    entity = ox.NamedNode(SCRIPT_IRI)
    retrieval = SessionIds.from_session_iri(sessions[0]).retrieval
    store.add(ox.Quad(retrieval, ox.NamedNode(vocab.TG + "entity"), entity,
                      vocab.DEFAULT_COLLECTION.graph))
    store.add(ox.Quad(entity, ox.NamedNode(vocab.RDFS + "label"), ox.Literal(SCRIPT_LABEL)))
    store.flush()
    del store
    return copy, sessions, failed


def test_only_http_iris_become_links(hostile: tuple[Path, list[str], str]) -> None:
    with serve_process(hostile) as served:
        page = served.get(f"/sessions/{uuid_of(served.sessions[0])}").text
        entity = served.get("/entity?" + urllib.parse.urlencode({"iri": SCRIPT_IRI})).text
        web = served.get("/entity?" + urllib.parse.urlencode(
            {"iri": "https://example.org/demo/entity/Marie_Curie"})).text
    assert SCRIPT_LABEL in page and "javascript:" in page  # shown, as text
    assert not re.search(r"href=\s*[\"']?\s*javascript:", page + entity, re.IGNORECASE)
    # a seed entity links to its page here, the IRI a parameter of it
    seed = urllib.parse.quote(SCRIPT_IRI, safe="")
    assert f'<a class="entity" href="/entity?iri={seed}" title="{SCRIPT_IRI}">{SCRIPT_LABEL}</a>' \
        in page
    assert f"<code>{SCRIPT_IRI}</code>" in entity and SCRIPT_LABEL in entity
    assert '<a href="https://example.org/demo/entity/Marie_Curie" rel="nofollow">' in web
    standalone = CliRunner().invoke(main, ["explain", "--store", str(hostile[0]), "--format",
                                           "html", hostile[1][0]])
    assert standalone.exit_code == 0, standalone.output
    assert f'<span class="iri" title="{SCRIPT_IRI}">{SCRIPT_LABEL}</span>' in standalone.output
    assert not re.search(r"href=\s*[\"']?\s*javascript:", standalone.output, re.IGNORECASE)


def chromium_flags() -> list[str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--hide-scrollbars", "--window-size=1280,1600"]


def test_chromium_renders_every_page_under_the_content_security_policy(
    hostile: tuple[Path, list[str], str]
) -> None:
    """Chromium reports each thing the policy blocks on its console; there is none, and the
    pages are all there: the policy lets the pages' stylesheet in and nothing else."""
    with serve_process(hostile) as served:
        session = f"{served.url}/sessions/{uuid_of(served.sessions[0])}"
        for url, expected in ((session, SCRIPT_LABEL), (f"{served.url}/sessions", QUESTIONS[1]),
                              (f"{served.url}/queries", "Failed sessions"),
                              (f"{served.url}/sparql", "PREFIX tg: &lt;https://trustgraph"),
                              (f"{served.url}/sparql?format=html&query=ASK%7B%7D",
                               '<strong id="boolean">true</strong>'),
                              (f"{served.url}/sparql?format=html&query=ASK", "not a SPARQL"),
                              (f"{served.url}/entity?" + urllib.parse.urlencode(
                                  {"iri": SCRIPT_IRI}), SCRIPT_LABEL),
                              (f"{served.url}/sessions/nope", "no session")):
            dom = subprocess.run(chromium_flags() + ["--enable-logging=stderr", "--v=0",
                                                     "--dump-dom", url],
                                 capture_output=True, text=True, timeout=50)
            assert dom.returncode == 0, dom.stderr[-500:]
            assert expected in dom.stdout
            console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
            assert console == [], console
            assert "Content Security Policy" not in dom.stderr


def test_chromium_renders_the_session_page(served: Served) -> None:
    url = f"{served.url}/sessions/{uuid_of(served.sessions[0])}"
    flags = chromium_flags()
    dom = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True,
                         timeout=50)
    assert dom.returncode == 0, dom.stderr[-500:]
    assert f'<h1 id="question">{QUESTIONS[0]}</h1>' in dom.stdout
    assert "Marie Curie — married — Pierre Curie" in dom.stdout
    assert "Pierre Curie, Physicist of Paris" in dom.stdout and "<mark>" in dom.stdout
    assert re.search(r"<svg[^>]*id=\"trace-picture\"", dom.stdout)
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "session_page.png"
    shot.unlink(missing_ok=True)
    done = subprocess.run(flags + [f"--screenshot={shot}", url], capture_output=True,
                          text=True, timeout=50)
    assert done.returncode == 0, done.stderr[-500:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_session_page_shows_each_citation_with_its_sentence(served: Served) -> None:
    page = served.get(f"/sessions/{uuid_of(served.sessions[0])}").text
    citations = re.findall(
        r'<p class="citation">cited in the answer: <a href="#citation-\d+"><q>([^<]*)</q></a></p>',
        page)
    assert citations and any("Marie Curie married Pierre Curie [" in c for c in citations)
    assert re.search(r"cites \d+ of \d+ selected edges", page)

"""`serve --ask`: POST /ask streams a session's messages as they happen — as Server-Sent Events,
NDJSON, or the ask page — while the server holds the store as its one writer and its query
processes read on. Every wait is on the stream, the fake LLM or the browser; none sleeps."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.asking.llm.fake_openai import (  # noqa: F401  (fixture)
    FakeOpenAI, Reply, fake_openai, prompt_facts,
)
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.llm.openai_backend import OpenAIBackend
from tgsparql.record.conformance import validate_session
from tgsparql.serve import ServerConfig, TgsparqlServer
from tgsparql.serve.ask import AskLimits, RateLimiter, negotiate
from tgsparql.serve.readonly import ReadOnlyStore
from tgsparql.serve.sparql import ProtocolError
from tgsparql.stores.store import StoreError

from .browser import browser
from .conftest import Served, build_store, running, serve_process
from .test_pages import ARTIFACTS

QUESTION = "Where was Marie Curie born?"
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
NDJSON = {"Accept": "application/x-ndjson", "Content-Type": "application/json"}
SSE = {"Accept": "text/event-stream", "Content-Type": "application/json"}
KINDS = ("session", "retrieval", "selection", "answer")


def kind(explain_id: str) -> str:
    """Which stage an explain message announces, by its IRI."""
    return "session" if explain_id.startswith("urn:trustgraph:session:") \
        else explain_id.split(":")[3]


def body(question: str = QUESTION) -> bytes:
    return json.dumps({"question": question}).encode("utf-8")


@dataclass
class AskServer:
    server: TgsparqlServer
    served: Served

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server.server_address[:2]
        return str(host), int(port)


@contextmanager
def ask_server(tmp: Path, backend: Any, **limits: Any) -> Iterator[AskServer]:
    path = tmp / "store"
    sessions, failed = build_store(path)
    config = ServerConfig(store=path, port=0, timeout=20, workers=1,
                          ask=AskLimits(**{"per_minute": 1000, **limits}), token=None)
    with running(config, backend) as server:
        yield AskServer(server, Served(server.url, path, sessions, failed))


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AskServer]:
    with ask_server(tmp_path_factory.mktemp("ask"), OfflineBackend()) as running_server:
        yield running_server


class Stream:
    """One POST /ask read as it comes, over http.client (which undoes the chunking)."""

    def __init__(self, address: tuple[str, int], headers: dict[str, str],
                 payload: bytes) -> None:
        self.connection = http.client.HTTPConnection(*address, timeout=60)
        self.connection.request("POST", "/ask", payload, headers)
        self.response = self.connection.getresponse()

    def line(self) -> bytes:
        return self.response.readline()

    def message(self) -> dict[str, Any]:
        """The next NDJSON message."""
        line = self.line()
        assert line.endswith(b"\n"), line
        return json.loads(line)

    def rest(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.response.read().splitlines()]

    def close(self) -> None:
        self.connection.close()


def status_of(served: Served, session: str) -> tuple[str, str | None]:
    """The session's status and error, read through the server's query processes."""
    query = ("PREFIX tg: <https://trustgraph.ai/ns/> SELECT ?status ?error WHERE { GRAPH "
             f"<urn:graph:explainability> {{ <{session}> tg:status ?status OPTIONAL "
             f"{{ <{session}> tg:error ?error }} }} }}")
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": query}))
    [row] = json.loads(reply.text)["results"]["bindings"]
    return row["status"]["value"], row.get("error", {}).get("value")


def sessions_listed(served: Served) -> int:
    return served.get("/sessions?limit=10000").text.count('href="/sessions/')


# --- the streams --------------------------------------------------------------------------


def test_ndjson_carries_the_messages_in_the_order_of_the_spec(offline: AskServer) -> None:
    reply = offline.served.post("/ask", body(), "application/json",
                                {"Accept": "application/x-ndjson"})
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert reply.headers["Transfer-Encoding"] == "chunked"
    assert reply.headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert reply.headers["X-Frame-Options"] == "DENY" and reply.headers["Cache-Control"] == \
        "no-store"
    messages = [json.loads(line) for line in reply.text.splitlines()]
    types = [m["message_type"] for m in messages]
    explains = [kind(m["explain_id"]) for m in messages if m["message_type"] == "explain"]
    assert explains == list(KINDS)
    assert types[:3] == ["explain"] * 3 and types[-2:] == ["explain", "chunk"]
    chunks = messages[3:-2]
    assert chunks and all(m["message_type"] == "chunk" for m in chunks)
    assert [m["end_of_stream"] for m in chunks] == [False] * (len(chunks) - 1) + [True]
    assert "Warsaw" in "".join(m["response"] for m in chunks)
    for message in messages:
        if message["message_type"] == "explain":
            assert message["explain_collection"] == "explainability"
            assert message["explain_triples"] and all(
                t["s"] == f"<{message['explain_id']}>" or t["s"].startswith("<urn:trustgraph:")
                for t in message["explain_triples"])
    final = messages[-1]
    assert final["end_of_session"] and final["error"] is None
    assert any("Warsaw" in source["text"] for source in final["sources"])
    session = messages[0]["explain_id"]
    assert status_of(offline.served, session) == ("complete", None)


def test_sse_frames_each_message_as_one_event_in_one_http_chunk(offline: AskServer) -> None:
    with socket.create_connection(offline.address, timeout=60) as raw:
        payload = body()
        raw.sendall(b"POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                    b"Content-Type: application/json\r\nConnection: close\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload))
        reader = raw.makefile("rb")
        head = []
        while (line := reader.readline()) != b"\r\n":
            head.append(line.decode("latin-1").strip())
        assert head[0] == "HTTP/1.1 200 OK"
        assert "Content-Type: text/event-stream; charset=utf-8" in head
        assert "Transfer-Encoding: chunked" in head
        chunks = []
        while (size := int(reader.readline().strip(), 16)) != 0:
            chunks.append(reader.read(size))
            assert reader.readline() == b"\r\n"
        assert reader.readline() == b"\r\n" and reader.read() == b""
    events = []
    for chunk in chunks:  # each chunk is exactly one event, ended by its blank line
        text = chunk.decode("utf-8")
        assert text.endswith("\n\n") and text.count("\n\n") == 1
        fields = dict(line.split(": ", 1) for line in text.strip("\n").split("\n"))
        assert set(fields) == {"event", "id", "data"}
        events.append((fields["event"], int(fields["id"]), json.loads(fields["data"])))
    assert [number for _, number, _ in events] == list(range(1, len(events) + 1))
    names = [name for name, _, _ in events]
    assert names[:3] == ["explain"] * 3 and names[-2:] == ["explain", "end"]
    assert set(names[3:-2]) == {"chunk"}
    assert [kind(data["explain_id"]) for name, _, data in events if name == "explain"] == \
        list(KINDS)
    assert events[-1][2]["end_of_session"] and events[-1][2]["sources"]


def test_a_form_post_and_any_accept_give_ndjson(offline: AskServer) -> None:
    reply = offline.served.post("/ask", urllib.parse.urlencode({"question": QUESTION}).encode(),
                                "application/x-www-form-urlencoded", {"Accept": "*/*"})
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("application/x-ndjson")
    assert json.loads(reply.text.splitlines()[-1])["end_of_session"]


@pytest.mark.parametrize("accept,chosen", [
    ("text/event-stream", "sse"), ("application/x-ndjson", "ndjson"), ("", "ndjson"),
    ("*/*", "ndjson"), (BROWSER["Accept"], "html"),
    ("application/x-ndjson;q=0.5, text/event-stream", "sse"),
    ("text/html;q=0, */*;q=0.1", "ndjson"),
])
def test_accept_chooses_the_stream(accept: str, chosen: str) -> None:
    assert negotiate(accept) == chosen


def test_an_accept_the_stream_cannot_meet_is_406(offline: AskServer) -> None:
    reply = offline.served.post("/ask", body(), "application/json",
                                {"Accept": "application/sparql-results+xml"})
    assert reply.status == 406 and "text/event-stream" in reply.text


def test_what_the_ask_records_is_read_by_the_query_processes_at_once(offline: AskServer) -> None:
    reply = offline.served.post("/ask", body("Who did Marie Curie marry?"), "application/json",
                                {"Accept": "application/x-ndjson"})
    session = json.loads(reply.text.splitlines()[0])["explain_id"]
    page = offline.served.get("/sessions/" + session.rsplit(":", 1)[1])
    assert page.status == 200 and "Who did Marie Curie marry?" in page.text
    assert status_of(offline.served, session)[0] == "complete"


# --- the ask page --------------------------------------------------------------------------


def test_the_ask_page_has_its_box_and_every_page_links_to_it(offline: AskServer) -> None:
    page = offline.served.get("/ask", BROWSER)
    assert page.status == 200 and page.headers["Content-Type"].startswith("text/html")
    assert '<form method="post" action="/ask"' in page.text and 'name="question"' in page.text
    assert "<script" not in page.text
    for path in ("/sessions", "/queries", "/sparql", "/sessions/" + offline.served.sessions[
            0].rsplit(":", 1)[1]):
        assert '<a href="/ask">Ask</a>' in offline.served.get(path, BROWSER).text, path


def test_the_ask_page_streams_the_events_then_the_answer_then_the_sources(
    offline: AskServer,
) -> None:
    reply = offline.served.post("/ask", urllib.parse.urlencode({"question": QUESTION}).encode(),
                                "application/x-www-form-urlencoded", BROWSER)
    assert reply.status == 200 and reply.headers["Content-Type"] == "text/html; charset=utf-8"
    page = reply.text
    order = [page.index(f'id="{name}"') for name in (
        "explain-session", "explain-retrieval", "explain-selection", "answer",
        "explain-answer", "sources", "session-link")]
    assert order == sorted(order)
    assert re.search(r'<strong id="edge-count">[1-9][0-9]*</strong>', page)
    # Edges read as people say them: by their labels, with the IRIs a tooltip away.
    assert '<strong class="edge-text">Marie Curie born in Warsaw</strong>' in page
    assert "&lt;https://example.org/demo/entity/Marie_Curie&gt;" in page
    assert "offline selector" in page and "Seed entities: Marie Curie</p>" in page
    assert "Marie Curie was born Maria Skłodowska in Warsaw in 1867." in page
    assert "<script" not in page and page.rstrip().endswith("</html>")


def test_the_ask_page_shows_the_answer_sentences_that_cite_each_source(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    def answer_citing(request: dict[str, Any]) -> Reply:
        prompt = next(m["content"] for m in request["messages"] if m["role"] == "user")
        [fact] = prompt_facts(prompt)
        return Reply(["She was born in Warsaw ", f"[{fact['id']}]."])

    fake_openai.script(selecting_where_she_was_born(), answer_citing)
    with ask_server(tmp_path, fake_backend(fake_openai)) as asking:
        page = asking.served.post("/ask", urllib.parse.urlencode({"question": QUESTION})
                                  .encode(), "application/x-www-form-urlencoded", BROWSER).text
    sources = page[page.index('id="sources"'):]
    assert "Marie Curie was born Maria Skłodowska in Warsaw in 1867." in sources
    assert re.search(r'<p class="citation">cited in the answer: <q>She was born in Warsaw '
                     r'\[[0-9a-f]{8}\]\.</q></p>', sources), sources


def test_a_question_the_page_cannot_ask_comes_back_in_its_box_with_the_reason(
    offline: AskServer,
) -> None:
    question = "<b>" + "x" * 10_001
    reply = offline.served.post("/ask", urllib.parse.urlencode({"question": question}).encode(),
                                "application/x-www-form-urlencoded", BROWSER)
    assert reply.status == 400 and reply.headers["Content-Type"].startswith("text/html")
    assert '<p class="error" id="error">the question is 10004 characters long' in reply.text
    assert f">&lt;b&gt;{'x' * 9_997}</textarea>" in reply.text and "<b>" not in reply.text
    assert 'id="events"' not in reply.text


def test_without_ask_there_is_no_asking(served: Served) -> None:
    reply = served.post("/ask", body(), "application/json", {"Accept": "application/x-ndjson"})
    assert reply.status == 404 and "--ask" in reply.text
    assert served.get("/ask", BROWSER).status == 404
    assert 'href="/ask"' not in served.get("/sessions", BROWSER).text


# --- hostile clients -----------------------------------------------------------------------


@pytest.mark.parametrize("payload,content_type,status,said", [
    (b"question=" + b"x" * (64 * 1024), "application/x-www-form-urlencoded", 413, "larger than"),
    (json.dumps({"question": "x" * 10_001}).encode(), "application/json", 400,
     "the limit is 10000"),
    (b'{"question": "   "}', "application/json", 400, "empty"),
    (b'{"question": 7}', "application/json", 400, "must be text"),
    (b'{"question": "a", "limit": 1}', "application/json", 400, "nothing else"),
    (b'{"question": ', "application/json", 400, "not JSON"),
    (b"[" * 30_000 + b"]" * 30_000, "application/json", 400, "nested too deeply"),
    (b"question=a&question=b", "application/x-www-form-urlencoded", 400, "once"),
    (b"\xff\xfe", "application/json", 400, "UTF-8"),
    (b"Where?", "text/plain", 415, "application/json"),
])
def test_a_bad_ask_is_refused_before_anything_is_recorded(
    offline: AskServer, payload: bytes, content_type: str, status: int, said: str
) -> None:
    before = sessions_listed(offline.served)
    reply = offline.served.post("/ask", payload, content_type, {"Accept": "application/x-ndjson"})
    assert reply.status == status and said in reply.text, reply.text
    assert sessions_listed(offline.served) == before


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(question=st.text(max_size=60))
def test_any_question_is_recorded_as_asked_or_refused_with_nothing_recorded(
    offline: AskServer, question: str
) -> None:
    before = sessions_listed(offline.served)
    reply = offline.served.post("/ask", body(question), "application/json", NDJSON)
    assert reply.status in (200, 400), reply.text
    if reply.status == 400:
        assert reply.text.count("\n") == 1  # one line saying why
        assert sessions_listed(offline.served) == before
        return
    messages = [json.loads(line) for line in reply.text.splitlines()]
    assert messages[-1]["end_of_session"]
    recorded = [t["o"] for t in messages[0]["explain_triples"] if t["p"].endswith("/ns/query>")]
    assert recorded == [str(ox.Literal(question))]


def test_a_form_from_another_site_is_refused(offline: AskServer) -> None:
    form = urllib.parse.urlencode({"question": QUESTION}).encode()
    host, port = offline.address
    for headers in ({"Origin": "https://evil.example"}, {"Origin": "null"},
                    {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                    {"Origin": f"http://{host}:{port + 1}"}):
        reply = offline.served.post("/ask", form, "application/x-www-form-urlencoded",
                                    {**BROWSER, **headers})
        assert reply.status == 403 and "another site" in reply.text, headers
    for headers in ({"Origin": f"http://{host}:{port}"},
                    {"Origin": "null", "Sec-Fetch-Site": "same-origin"}):  # as Chromium sends
        same = offline.served.post("/ask", form, "application/x-www-form-urlencoded",
                                   {**BROWSER, **headers})
        assert same.status == 200, headers


def test_a_host_the_server_was_not_started_under_is_400(offline: AskServer) -> None:
    reply = offline.served.post("/ask", body(), "application/json",
                                {"Accept": "application/x-ndjson", "Host": "rebound.example"})
    assert reply.status == 400 and "--allowed-host" in reply.text
    assert reply.headers["Content-Security-Policy"].startswith("default-src 'none'")


def test_asking_needs_the_token_when_there_is_one(tmp_path: Path) -> None:
    path = tmp_path / "store"
    build_store(path)
    config = ServerConfig(store=path, port=0, workers=1, token="s3cret", ask=AskLimits())
    with running(config, OfflineBackend()) as server:
        served = Served(server.url, path, [], "")
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            reply = served.post("/ask", body(), "application/json", {**NDJSON, **headers})
            assert reply.status == 401 and reply.headers["WWW-Authenticate"].startswith("Bearer")
        reply = served.post("/ask", body(), "application/json",
                            {**NDJSON, "Authorization": "Bearer s3cret"})
        assert reply.status == 200 and json.loads(reply.text.splitlines()[-1])["end_of_session"]


def test_more_asks_a_minute_than_the_rate_are_429_with_retry_after(tmp_path: Path) -> None:
    with ask_server(tmp_path, OfflineBackend(), per_minute=2) as asking:
        for _ in range(2):
            assert asking.served.post("/ask", body(), "application/json", NDJSON).status == 200
        refused = asking.served.post("/ask", body(), "application/json", NDJSON)
        assert refused.status == 429 and "--ask-rate" in refused.text
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        page = asking.served.post("/ask", urllib.parse.urlencode({"question": "q?"}).encode(),
                                  "application/x-www-form-urlencoded", BROWSER)
        assert page.status == 429 and page.headers["Content-Type"].startswith("text/html")
        assert "--ask-rate" in page.text and ">q?</textarea>" in page.text
        assert 1 <= int(page.headers["Retry-After"]) <= 60


def test_the_rate_is_per_client_and_forgets_after_a_minute() -> None:
    now = [0.0]
    limiter = RateLimiter(AskLimits(in_flight=5, per_minute=2), clock=lambda: now[0])
    for _ in range(2):
        with limiter.admitted("10.0.0.1"):
            pass
    with pytest.raises(ProtocolError) as refused:
        with limiter.admitted("10.0.0.1"):
            pass
    assert refused.value.status == 429 and refused.value.retry_after == 60
    with limiter.admitted("10.0.0.2"):  # another client is not held to the first one's count
        pass
    now[0] = 59.5
    with pytest.raises(ProtocolError) as soon:
        with limiter.admitted("10.0.0.1"):
            pass
    assert soon.value.retry_after == 1
    now[0] = 60.0
    with limiter.admitted("10.0.0.1"):
        pass


@pytest.mark.parametrize("first,second,same", [
    ("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe", True),  # one /64: one client
    ("2001:db8:1:2::1", "2001:db8:1:3::1", False),
    ("::ffff:10.0.0.1", "10.0.0.1", True),  # an IPv4 address mapped into IPv6 is that address
    ("10.0.0.1", "10.0.0.2", False),
    ("fe80::1%eth0", "fe80::2%eth1", True),
])
def test_a_client_is_an_ipv4_address_or_an_ipv6_slash_64(first: str, second: str,
                                                          same: bool) -> None:
    limiter = RateLimiter(AskLimits(in_flight=5, per_minute=1), clock=lambda: 0.0)
    with limiter.admitted(first):
        pass
    if same:
        with pytest.raises(ProtocolError, match="--ask-rate"):
            with limiter.admitted(second):
                pass
    else:
        with limiter.admitted(second):
            pass


def selecting_where_she_was_born(held: threading.Event | None = None,
                                 reason: str = "it names where she was born") -> Any:
    """A selection reply choosing Marie Curie's birthplace by the id the prompt gave it."""

    def reply(request: dict[str, Any]) -> Reply:
        prompt = next(m["content"] for m in request["messages"] if m["role"] == "user")
        chosen = prompt_facts(prompt)
        lines = [json.dumps({"id": edge["id"], "reasoning": reason})
                 for edge in chosen if (edge["s"], edge["p"]) == ("Marie Curie", "born in")]
        return Reply("\n".join(lines), held=held)

    return reply


def test_what_the_llm_writes_reaches_the_page_as_text_only(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    hostile = '</span></li></ol><script>alert(1)</script><img src=x onerror="alert(2)">'
    fake_openai.script(selecting_where_she_was_born(reason=hostile),
                       Reply(["</div><script>alert(3)", "</script> & <b>Warsaw</b>"]))
    with ask_server(tmp_path, fake_backend(fake_openai)) as asking:
        reply = asking.served.post(
            "/ask", urllib.parse.urlencode({"question": "<i>Where</i> was Marie Curie born?"})
            .encode(), "application/x-www-form-urlencoded", BROWSER)
    page = reply.text
    assert reply.status == 200 and "<script" not in page and "<img" not in page
    assert "<i>" not in page and "&lt;i&gt;Where&lt;/i&gt;" in page
    assert '<span class="reasoning">&lt;/span&gt;&lt;/li&gt;&lt;/ol&gt;&lt;script&gt;' in page
    assert ('<div class="answer" id="answer">&lt;/div&gt;&lt;script&gt;alert(3)&lt;/script&gt; '
            '&amp; &lt;b&gt;Warsaw&lt;/b&gt;</div>') in page


def test_a_bidi_override_from_the_llm_turns_no_text_of_the_ask_page_around_it(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(selecting_where_she_was_born(reason="\u202eplaced after the override"),
                       Reply(["\u202ewasraW", " is where\u2069 she was born."]))
    with ask_server(tmp_path, fake_backend(fake_openai)) as asking:
        page = asking.served.post(
            "/ask", urllib.parse.urlencode({"question": "Where was Marie Curie born?"}).encode(),
            "application/x-www-form-urlencoded", BROWSER).text
    assert page.count("\u202e") == 2
    assert "<span class=\"reasoning\">\u2068\u202eplaced after the override\u2069</span>" in page
    assert "\u2068\u202ewasraW\u2069\u2068 is where she was born.\u2069" in page


def test_an_llm_that_breaks_off_mid_answer_shows_as_an_error_after_what_came(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(selecting_where_she_was_born(),
                       Reply(["Warsaw", " is", " where"], cut_after=2))
    with ask_server(tmp_path, fake_backend(fake_openai)) as asking:
        reply = asking.served.post("/ask", urllib.parse.urlencode({"question": QUESTION})
                                   .encode(), "application/x-www-form-urlencoded", BROWSER)
        page = reply.text
        session = re.search(r'href="/sessions/([0-9a-f-]{36})"', page)
        assert session is not None
        status = status_of(asking.served, "urn:trustgraph:session:" + session.group(1))
    assert '<div class="answer" id="answer">Warsaw</div>\n</section>\n<p class="error" ' \
        'id="error">answer failed: ' in page
    assert 'id="sources"' not in page and "The session, as recorded" in page
    assert status[0] == "failed" and status[1] is not None and "answer failed" in status[1]


def fake_backend(fake: FakeOpenAI) -> OpenAIBackend:
    return OpenAIBackend(base_url=fake.base_url, model="fake-model", max_retries=0)


@contextmanager
def driven(fake: FakeOpenAI, deltas: list[str]) -> Iterator[tuple[threading.Event,
                                                                   threading.Semaphore]]:
    """The fake LLM scripted to hold its selection until the test sets the event, then to send
    the answer delta by delta as the test releases the semaphore; let go at the end."""
    held, paced = threading.Event(), threading.Semaphore(0)
    fake.script(selecting_where_she_was_born(held), Reply(deltas, paced=paced))
    try:
        yield held, paced
    finally:
        held.set()
        paced.release(len(deltas))


def test_more_asks_at_once_than_the_limit_are_429(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    with ask_server(tmp_path, fake_backend(fake_openai), in_flight=1) as asking, \
            driven(fake_openai, ["Warsaw."]) as (held, _):
        first = Stream(asking.address, NDJSON, body())
        try:
            assert kind(first.message()["explain_id"]) == "session"  # under way
            refused = asking.served.post("/ask", body(), "application/json", NDJSON)
            assert refused.status == 429 and "--ask-limit" in refused.text
            assert int(refused.headers["Retry-After"]) >= 1
            held.set()
        finally:
            first.close()


# --- live: the explanation arrives before the answer is done ------------------------------


def test_explain_events_arrive_while_the_llm_is_still_at_work(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    with ask_server(tmp_path, fake_backend(fake_openai)) as asking, \
            driven(fake_openai, ["Warsaw", ", in Poland", "."]) as (held, paced):
        stream = Stream(asking.address, NDJSON, body())
        try:
            session, retrieval = stream.message(), stream.message()
            assert [kind(m["explain_id"]) for m in (session, retrieval)] == ["session",
                                                                              "retrieval"]
            assert not held.is_set()  # the LLM has not selected yet: these came first
            held.set()
            selection = stream.message()
            assert kind(selection["explain_id"]) == "selection"
            reasons = [t["o"] for t in selection["explain_triples"] if t["p"].endswith("reasoning>")]
            assert reasons == ['"it names where she was born"']
            paced.release(2)  # two of three deltas sent: the answer is not complete
            first = stream.message()
            assert first["message_type"] == "chunk" and first["response"] == "Warsaw"
            assert not first["end_of_stream"]
            paced.release(1)
            rest = stream.rest()
        finally:
            stream.close()
    assert "".join(m["response"] for m in [first, *rest]) == "Warsaw, in Poland."
    assert [m["message_type"] for m in rest][-2:] == ["explain", "chunk"]
    assert rest[-1]["end_of_session"] and rest[-1]["error"] is None


def test_a_client_that_hangs_up_mid_stream_leaves_its_session_closed_and_valid(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    with ask_server(tmp_path, fake_backend(fake_openai)) as asking, \
            driven(fake_openai, ["Warsaw", " is", " where", " she", " was", " born."]) as (
                held, paced):
        raw = socket.create_connection(asking.address, timeout=60)
        payload = body()
        raw.sendall(b"POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/x-ndjson\r\n"
                    b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                    % (len(payload), payload))
        reader = raw.makefile("rb")
        held.set()
        seen = b""
        while b"urn:trustgraph:prov:selection:" not in seen:  # read up to the selection
            line = reader.readline()
            assert line, seen
            seen += line
        session = re.search(rb'"explain_id": "(urn:trustgraph:session:[^"]+)"', seen)
        assert session is not None
        # Hang up with a reset, as a closed tab does, while the answer is still to come.
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        reader.close()
        raw.close()
        paced.release(6)
        assert asking.server.asker is not None and asking.server.asker.wait_idle(60)
        iri = session.group(1).decode()
        status, error = status_of(asking.served, iri)
        assert status == "failed" and error is not None and "the client stopped reading" in error
        report = validate_session(ReadOnlyStore(asking.served.store), iri)
        assert not report.violations, report.to_text()


def test_a_stopping_server_lets_the_ask_under_way_end_recorded_as_failed(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    with ask_server(tmp_path, fake_backend(fake_openai)) as asking, \
            driven(fake_openai, ["Warsaw."]) as (held, _):
        asker = asking.server.asker
        assert asker is not None
        stream = Stream(asking.address, NDJSON, body())
        try:
            session = stream.message()["explain_id"]
            assert kind(stream.message()["explain_id"]) == "retrieval"
            closing = threading.Thread(target=asker.close)  # what stopping the server does
            closing.start()
            assert asker.stopping.wait(60)
            refused = asking.served.post("/ask", body(), "application/json", NDJSON)
            assert refused.status == 503 and "stopping" in refused.text
            held.set()  # the LLM may answer; at its next message, the ask ends
            *before, error = stream.rest()
            closing.join(60)
            assert not closing.is_alive()
        finally:
            stream.close()
    # The ask stops after the message under way when the server began to stop: the retrieval,
    # or (had its check come first) the selection.
    assert [kind(m["explain_id"]) for m in before] in ([], ["selection"])
    assert error["message_type"] == "error" and error["end_of_session"]
    assert "the server stopped while the session ran" in error["error"]["message"]
    store = ReadOnlyStore(asking.served.store)
    report = validate_session(store, session)
    assert not report.violations, report.to_text()
    [row] = store.select("PREFIX tg: <https://trustgraph.ai/ns/> SELECT ?status WHERE { GRAPH "
                         f"<urn:graph:explainability> {{ <{session}> tg:status ?status }} }}")
    assert row["status"].value == "failed"


# --- in Chromium ---------------------------------------------------------------------------


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return found


def blocked(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in entries if "Content Security Policy" in json.dumps(entry)
            or entry.get("entry", {}).get("source") == "security"]


def test_in_chromium_a_question_asked_offline_shows_its_explanation_and_sources(
    offline: AskServer, tmp_path: Path
) -> None:
    with browser(chromium(), tmp_path / "profile") as chrome:
        tab = chrome.open()
        tab.go(offline.served.url + "/sessions")
        tab.click('nav a[href="/ask"]')
        tab.evaluate(f"document.querySelector('#question').value = {json.dumps(QUESTION)}")
        tab.click("#ask")
        assert tab.evaluate("location.pathname") == "/ask"
        assert tab.evaluate("document.querySelector('#question').value") == QUESTION
        assert tab.evaluate("document.querySelector('#explain-session code').textContent"
                            ).startswith("urn:trustgraph:session:")
        assert int(tab.evaluate("document.querySelector('#edge-count').textContent")) > 0
        edges = tab.evaluate("[...document.querySelectorAll('#selected-edges li')].map("
                             "li => [li.querySelector('.edge-text').textContent, "
                             "li.querySelector('.reasoning').textContent])")
        assert "Marie Curie born in Warsaw" in [edge for edge, _ in edges]
        assert all(reason.startswith("offline selector") for _, reason in edges)
        assert "Warsaw" in tab.evaluate("document.querySelector('#answer').textContent")
        assert tab.evaluate("document.querySelector('#explain-answer code').textContent"
                            ).startswith("urn:trustgraph:prov:answer:")
        sources = tab.evaluate("[...document.querySelectorAll('#sources .chunk')]"
                               ".map(c => c.textContent)")
        assert "Marie Curie was born Maria Skłodowska in Warsaw in 1867." in sources
        ARTIFACTS.mkdir(exist_ok=True)
        tab.screenshot(ARTIFACTS / "ask_page.png")
        tab.click("#session-link a")
        assert tab.evaluate("location.pathname").startswith("/sessions/")
        assert QUESTION in tab.evaluate("document.body.textContent")
        assert blocked(tab.log()) == []


def test_in_chromium_the_events_appear_as_the_llm_gets_to_them(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    with ask_server(tmp_path, fake_backend(fake_openai)) as asking, \
            driven(fake_openai, ["Warsaw", ", in Poland", "."]) as (held, paced), \
            browser(chromium(), tmp_path / "profile") as chrome:
        tab = chrome.open()
        tab.go(asking.served.url + "/ask")
        tab.evaluate(f"document.querySelector('#question').value = {json.dumps(QUESTION)}")
        tab.submit("#ask")
        tab.wait_until("document.querySelector('#explain-retrieval')")
        assert int(tab.evaluate("document.querySelector('#edge-count').textContent")) > 0
        assert tab.evaluate("document.querySelector('#explain-selection')") is None
        assert tab.evaluate("document.readyState") == "loading"

        held.set()
        tab.wait_until("document.querySelector('#explain-selection')")
        assert tab.evaluate("[...document.querySelectorAll('#selected-edges .reasoning')]"
                            ".map(r => r.textContent)") == ["it names where she was born"]
        assert tab.evaluate("document.querySelector('#answer')") is None

        paced.release(2)
        tab.wait_until("(document.querySelector('#answer') || {}).textContent === 'Warsaw'")
        assert tab.evaluate("document.querySelector('#sources')") is None
        assert tab.evaluate("document.readyState") == "loading"

        paced.release(1)
        tab.loaded()
        assert tab.evaluate("document.querySelector('#answer').textContent") == \
            "Warsaw, in Poland."
        assert tab.evaluate("document.querySelector('#session-link a').pathname").startswith(
            "/sessions/")
        assert blocked(tab.log()) == []


# --- the command ---------------------------------------------------------------------------


def tgsparql(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).with_name("tgsparql")), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args,said", [
    (("--host", "0.0.0.0"), "--ask on 0.0.0.0 needs --serve-token"),
    (("--endpoint", "http://127.0.0.1:9/query"), "--ask needs --store PATH"),
])
def test_the_command_refuses_asking_it_cannot_do_safely(tmp_path: Path, args: tuple[str, ...],
                                                        said: str) -> None:
    path = tmp_path / "store"
    path.mkdir()
    store_args = () if "--endpoint" in args else ("--store", str(path))
    done = tgsparql("serve", *store_args, "--ask", "--port", "0", *args)
    assert done.returncode == 2 and done.stderr.splitlines() == [f"error: {done.stderr[7:-1]}"]
    assert said in done.stderr


@pytest.mark.parametrize("token,said", [
    ("", "the serve token is empty"),
    ("   ", "the serve token is empty"),
    ("two words", "spaces or control characters"),
])
def test_an_empty_or_blank_serve_token_is_refused(tmp_path: Path, token: str, said: str) -> None:
    path = tmp_path / "store"
    path.mkdir()
    # click reads an empty variable as unset: no token, which --ask off loopback refuses too
    from_env = "needs --serve-token" if token == "" else said
    for args, env, expected in ((("--serve-token", token), {}, said),
                                ((), {"TGSPARQL_SERVE_TOKEN": token}, from_env)):
        done = subprocess.run(
            [str(Path(sys.executable).with_name("tgsparql")), "serve", "--store", str(path),
             "--ask", "--host", "0.0.0.0", "--port", "0", *args],
            capture_output=True, text=True, timeout=120, env={**os.environ, **env})
        assert done.returncode == 2 and expected in done.stderr, (args, env, done.stderr)
    with pytest.raises(StoreError, match=said):
        ServerConfig(store=path, token=token)


def test_the_command_asks_and_holds_the_store_as_its_one_writer(tmp_path: Path) -> None:
    path = tmp_path / "store"
    built = (path, *build_store(path))
    with serve_process(built, "--ask", "--llm", "offline", "--log") as serving:
        assert serving.started["ask"] == {"in_flight": 2, "per_minute": 10}
        reply = serving.post("/ask", body(), "application/json", NDJSON)
        session = json.loads(reply.text.splitlines()[0])["explain_id"]
        assert json.loads(reply.text.splitlines()[-1])["end_of_session"]
        busy = tgsparql("query", "--store", str(path), "--lock-timeout", "0", QUESTION)
        assert busy.returncode == 1 and "busy" in busy.stderr
        assert status_of(serving, session)[0] == "complete"
    assert any(line.endswith(f"ask {session} complete") for line in serving.stderr)

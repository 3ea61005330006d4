"""Asking over HTTP (`serve --ask`): POST /ask streams one session's messages as they happen.

The writer. pyoxigraph's on-disk store has one writer at a time, so with `--ask` the server's
main process becomes that writer: it opens the store under the writer lock (`exclusive_store`)
for as long as it serves, and each ask runs the pipeline in the thread of its request, writing
there. The query processes keep reading through their read-only handles, which reopen after
each commit (app.py), so a page or a SPARQL query sees every session committed before it
started, never half a write: the link to the session page at the end of an ask already works.
Other writer processes wait for the lock until the server stops (`--lock-timeout`).

The streams. Each message the pipeline yields (docs/spec.md §6: explain(session),
explain(retrieval), explain(selection), the answer's chunks, explain(answer), the final message
with the sources, or an error) is written and flushed as one HTTP chunk at once, as Server-Sent
Events, NDJSON (the objects of `query --format jsonl`), or, for a browser's form, as HTML the
browser renders as it arrives: the page needs no script. A client that goes away is found out at
the next write (or by the socket's timeout, if it stops reading): the pipeline is closed there,
which records the session as failed unless it had already completed, so no session is left open.

The limits. At most `in_flight` asks run at once and each client starts at most `per_minute` in
any minute (a client is an IPv4 address or an IPv6 /64, since one host is given a whole /64);
beyond either, 429 with Retry-After. A body is at most `body` bytes (413), and the question is
checked as the pipeline checks it (400) before anything is recorded. A form posted from another
site's page is refused (403): the Host check cannot see that, and an ask writes to the store and
spends the LLM's tokens.
"""

from __future__ import annotations

import ipaddress
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyoxigraph as ox
from markupsafe import Markup, escape

from tgsparql.asking.labels import fetch_labels, label_of, label_terms
from tgsparql.asking.llm.base import Backend
from tgsparql.asking.messages import GraphRagResponse, Source
from tgsparql.asking.pipeline import MAX_QUESTION_CHARS, GraphRag, QuestionError, check_question
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds, trailing_index
from tgsparql.record.page import isolated
from tgsparql.serve.pages import _environment
from tgsparql.serve.records import _json as json_line
from tgsparql.serve.sparql import ProtocolError, _accept_ranges, _text
from tgsparql.stores.locking import exclusive_store
from tgsparql.stores.store import StoreError

WINDOW = 60.0
"""Seconds over which `per_minute` counts a client's asks."""
BUSY_RETRY_AFTER = 2
"""Seconds a client refused for asks in flight is told to wait (when one ends is not known)."""
MAX_CLIENTS = 10_000
"""Clients remembered at once; beyond, new clients are refused until the window forgets some."""
STREAMS = {
    "text/event-stream": "sse",
    "application/x-ndjson": "ndjson",
    "text/html": "html",
    "application/xhtml+xml": "html",
}
"""What POST /ask answers in, by Accept; `*/*` or no Accept is NDJSON."""
CONTENT_TYPES = {
    "sse": "text/event-stream; charset=utf-8",
    "ndjson": "application/x-ndjson; charset=utf-8",
    "html": "text/html; charset=utf-8",
}
Labels = Mapping[ox.NamedNode, str]
STREAM_MARK = "<!--stream-->"
"""Where, in the rendered ask page, the streamed events go."""


@dataclass(frozen=True)
class AskLimits:
    in_flight: int = 2
    """Asks running at once (`--ask-limit`)."""
    per_minute: int = 10
    """Asks one client may start in any minute (`--ask-rate`)."""
    body: int = 64 * 1024
    """Bytes of request body at most (413 beyond)."""
    stop_wait: float = 60.0
    """Seconds a stopping server waits for the asks under way to end: at least the LLM's
    longest wait, so each ends by itself, recorded as failed, rather than left open."""


def client_of(address: str) -> str:
    """Who the rate limit counts: an IPv4 address as it is, an IPv6 address by its /64 (one
    host is given a whole /64 and may take any address in it); an IPv4 address mapped into
    IPv6 counts as the IPv4 address."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class RateLimiter:
    """Admits an ask when fewer than `in_flight` run and its client started fewer than
    `per_minute` in the last minute; else refuses it with a 429 that says when to retry."""

    def __init__(self, limits: AskLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self._lock = threading.Lock()
        self._running = 0
        self._started: dict[str, deque[float]] = {}

    @contextmanager
    def admitted(self, address: str) -> Iterator[None]:
        """`address`: the peer's IP address; one client is one IPv4 address or one IPv6 /64."""
        client = client_of(address)
        with self._lock:
            now = self.clock()
            recent = self._recent(client, now)
            if len(recent) >= self.limits.per_minute:
                wait = math.ceil(recent[0] + WINDOW - now)
                raise ProtocolError(429, f"more than {self.limits.per_minute} asks a minute from "
                                         f"this client (--ask-rate); retry in {wait} s",
                                    retry_after=max(1, wait))
            if self._running >= self.limits.in_flight:
                raise ProtocolError(429, f"{self._running} asks are under way, the most this "
                                         "server runs at once (--ask-limit); retry shortly",
                                    retry_after=BUSY_RETRY_AFTER)
            if client not in self._started and len(self._started) >= MAX_CLIENTS:
                raise ProtocolError(429, "too many clients asked in the last minute; retry "
                                         "shortly", retry_after=BUSY_RETRY_AFTER)
            self._started.setdefault(client, recent).append(now)
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1

    def _recent(self, client: str, now: float) -> deque[float]:
        """The client's starts within the window; clients with none are forgotten."""
        if len(self._started) >= MAX_CLIENTS // 2:
            for name in [name for name, starts in self._started.items()
                         if starts[-1] <= now - WINDOW]:
                del self._started[name]
        recent = self._started.get(client, deque())
        while recent and recent[0] <= now - WINDOW:
            recent.popleft()
        return recent


class Asker:
    """The server's writer: the store held under its writer lock, the pipeline over it, and
    the asks in flight, which stopping waits for (each ends as failed, not open)."""

    def __init__(self, path: Path, backend: Backend, *, collection: vocab.Collection,
                 limits: AskLimits, lock_timeout: float) -> None:
        self.limits = limits
        self.limiter = RateLimiter(limits)
        self._held = ExitStack()
        store = self._held.enter_context(exclusive_store(path, timeout=lock_timeout))
        try:
            self.rag = GraphRag(store, backend, collection=collection)
        except BaseException:
            self._held.close()
            raise
        self.stopping = threading.Event()
        self._running = 0
        self._idle = threading.Condition()

    @contextmanager
    def running(self) -> Iterator[None]:
        """One ask under way; refused once the server is stopping."""
        with self._idle:
            if self.stopping.is_set():
                raise ProtocolError(503, "the server is stopping", retry_after=BUSY_RETRY_AFTER)
            self._running += 1
        try:
            yield
        finally:
            with self._idle:
                self._running -= 1
                self._idle.notify_all()

    def labels(self, terms: Sequence[ox.NamedNode]) -> Labels:
        """The terms' labels, for people; none when they cannot be read."""
        try:
            return fetch_labels(self.rag.store, terms)
        except StoreError:
            return {}

    def wait_idle(self, timeout: float) -> bool:
        """Whether every ask under way ended (its session closed) within `timeout` seconds."""
        with self._idle:
            return self._idle.wait_for(lambda: self._running == 0, timeout=timeout)

    def close(self) -> None:
        """Stop taking asks, let those under way end (each stops at its next message, its
        session closed as failed) for up to `stop_wait` seconds, then release the store."""
        self.stopping.set()
        self.wait_idle(self.limits.stop_wait)
        self._held.close()


def read_question(content_type: str, body: bytes) -> str:
    """The question of a POST /ask: the form field `question`, or `{"question": …}` in JSON."""
    kind = content_type.split(";", 1)[0].strip().lower()
    text = _text(body)
    if kind == "application/x-www-form-urlencoded":
        fields = parse_qs(text, keep_blank_values=True)
        unknown = sorted(set(fields) - {"question"})
        if unknown or len(fields.get("question", [])) != 1:
            raise ProtocolError(400, "give the question once, in the form field 'question'"
                                + (f" (unknown field {unknown[0]!r:.40})" if unknown else ""))
        question = fields["question"][0].replace("\r\n", "\n")
    elif kind == "application/json":
        try:
            data = json.loads(text)
        except ValueError as error:
            raise ProtocolError(400, f"the body is not JSON: {error}") from None
        except RecursionError:
            raise ProtocolError(400, "the body is not JSON this server reads: nested too "
                                "deeply") from None
        if not isinstance(data, dict) or set(data) != {"question"}:
            raise ProtocolError(400, 'the JSON body must be {"question": "…"} and nothing else')
        question = data["question"]
    else:
        raise ProtocolError(415, "send the question as application/x-www-form-urlencoded "
                                 "(question=…) or application/json ({\"question\": …})")
    try:
        return check_question(question)
    except QuestionError as error:
        raise ProtocolError(400, str(error)) from None


def negotiate(accept: str) -> str:
    """`sse`, `ndjson` or `html`: the best of Accept; NDJSON when any will do."""
    best: tuple[float, int, str] | None = None
    for order, (media, q) in enumerate(_accept_ranges(accept) or [("*/*", 1.0)]):
        key = STREAMS.get(media) or ("ndjson" if media in ("*/*", "application/*") else None)
        if q > 0 and key is not None and (best is None or (q, -order) > best[:2]):
            best = (q, -order, key)
    if best is None:
        raise ProtocolError(406, "/ask streams text/event-stream, application/x-ndjson or "
                                 "text/html; none of them is acceptable")
    return best[2]


def same_origin(origin: str | None, fetch_site: str | None, host: str | None) -> bool:
    """Whether a POST comes from this server's own pages (or from no browser page at all).

    Browsers say where a request comes from in Sec-Fetch-Site; one that does not says it in
    Origin, which under the pages' `Referrer-Policy: no-referrer` is `null` even for our own
    form, so that browser is refused: it cannot be told from a sandboxed page elsewhere."""
    if fetch_site is not None:
        return fetch_site.strip().lower() in ("same-origin", "none")
    if origin is None:
        return True  # not a browser's cross-site request: those always carry Origin
    return origin.strip() != "null" and host is not None and \
        urlsplit(origin.strip()).netloc.lower() == host.strip().lower()


class Framing:
    """How a stream's messages are written: a head, each message, a tail."""

    content_type: str

    def head(self) -> bytes:
        return b""

    def message(self, message: GraphRagResponse) -> bytes:
        raise NotImplementedError

    def tail(self) -> bytes:
        return b""


class EventStream(Framing):
    """Server-Sent Events: `event:` the message type (`end` for the final message), `id:` its
    place in the stream, `data:` the message as one line of JSON."""

    content_type = CONTENT_TYPES["sse"]

    def __init__(self) -> None:
        self.sent = 0

    def message(self, message: GraphRagResponse) -> bytes:
        self.sent += 1
        event = message.message_type
        if message.end_of_session and message.error is None:
            event = "end"
        return (f"event: {event}\nid: {self.sent}\ndata: {json_line(message.to_json())}\n\n"
                ).encode("utf-8")


class JsonLines(Framing):
    """NDJSON: each message as one JSON object a line, as `query --format jsonl` prints it."""

    content_type = CONTENT_TYPES["ndjson"]

    def message(self, message: GraphRagResponse) -> bytes:
        return (json_line(message.to_json()) + "\n").encode("utf-8")


class AskPage(Framing):
    """The ask page with the answer streaming into it: each event a piece of HTML appended as
    it comes, which the browser shows at once."""

    content_type = CONTENT_TYPES["html"]

    def __init__(self, question: str, labels: Callable[[Sequence[ox.NamedNode]], Labels]) -> None:
        """`labels`: the labels of some IRIs, so edges read as people say them."""
        page = render_page(question, streaming=True)
        self.labels = labels
        self._head, _, self._tail = page.partition(STREAM_MARK)
        self.ids: SessionIds | None = None
        self.answering = False

    def head(self) -> bytes:
        return self._head.encode("utf-8")

    def tail(self) -> bytes:
        return (str(self._close_answer()) + self._tail).encode("utf-8")

    def message(self, message: GraphRagResponse) -> bytes:
        return str(self._html(message)).encode("utf-8")

    def _html(self, message: GraphRagResponse) -> Markup:
        """The message's piece of the page: markup from the templates, every text escaped
        (a Markup joined to a str escapes the str, so all of it stays Markup)."""
        parts = _parts()
        if message.error is not None:
            link = self.ids.uuid if self.ids is not None else None
            return self._close_answer() + parts.failed(message.error.message, link)
        if message.message_type == "explain":
            return self._explain(message)
        if message.end_of_session:
            labels = self.labels(label_terms([source.edge for source in message.sources]))
            return self._close_answer() + parts.sources(
                [_source(source, labels) for source in message.sources],
                self.ids.uuid if self.ids is not None else None)
        opening = Markup("") if self.answering else parts.answer_open()
        self.answering = not message.end_of_stream
        return opening + escape(isolated(message.response)) + (
            Markup("") if self.answering else parts.answer_close())

    def _explain(self, message: GraphRagResponse) -> Markup:
        parts, iri = _parts(), message.explain_id or ""
        triples = message.explain_triples
        if self.ids is None:
            self.ids = SessionIds.from_session_iri(iri)
            return parts.session(iri, _first(triples, "query"), _first(triples, "startedAtTime",
                                                                       namespace=vocab.PROV))
        if iri == self.ids.retrieval.value:
            seeds = _objects(triples, "entity")
            labels = self.labels(seeds)
            return parts.retrieval(iri, _first(triples, "edgeCount"), sorted(
                term.value for term in _objects(triples, "concept")), sorted(
                label_of(seed, labels) for seed in seeds))
        if iri == self.ids.selection.value:
            edges = [t.object for t in triples if isinstance(t.object, ox.Triple)]
            return parts.selection(iri, _edges(triples, self.labels(label_terms(edges))),
                                   _first(triples, "invalidIdCount"))
        return self._close_answer() + parts.answer_recorded(iri, _first(triples, "document"))

    def _close_answer(self) -> Markup:
        if not self.answering:
            return Markup("")
        self.answering = False
        return _parts().answer_close()


def offer_in_nav() -> None:
    """Link the ask page from every page's navigation (this process serves asks)."""
    _environment().globals["asking"] = True


def render_page(question: str = "", *, streaming: bool = False, error: str | None = None) -> str:
    """The ask page: the question box, and (streaming) the place the events go, or why the
    question was refused."""
    return _environment().get_template("ask.html").render(
        question=question, streaming=streaming, mark=STREAM_MARK, limit=MAX_QUESTION_CHARS,
        error=error)


def refused_page(body: bytes, error: ProtocolError) -> str:
    """The ask page for a form that was refused: the reason above the box, the question (as
    much of it as the box holds) still in it."""
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    question = (fields.get("question") or [""])[0][:MAX_QUESTION_CHARS]
    return render_page(question, error=error.message)


@cache
def _parts() -> Any:
    """The macros of ask_events.html, one per piece of the streamed page."""
    return _environment().get_template("ask_events.html").module


@dataclass(frozen=True)
class EdgeShown:
    index: int
    iri: str
    edge: tuple[str, str, str]
    full: str
    reasoning: str
    truncated: bool


def _edges(triples: Sequence[ox.Triple], labels: Labels) -> list[EdgeShown]:
    """The selection's edges with their reasons, in the order the LLM chose them."""
    by_item: dict[str, dict[str, Any]] = {}
    for triple in triples:
        name = triple.predicate.value.removeprefix(vocab.TG)
        if name in ("edge", "reasoning", "truncated"):
            by_item.setdefault(triple.subject.value, {})[name] = triple.object
    shown = []
    for iri, fields in by_item.items():
        edge = fields.get("edge")
        if not isinstance(edge, ox.Triple):
            continue
        reasoning = fields.get("reasoning")
        truncated = fields.get("truncated")
        index = trailing_index(iri)
        shown.append(EdgeShown(
            index if index >= 0 else len(shown), iri,
            _labelled(edge, labels),
            f"<<( {edge} )>>", reasoning.value if reasoning is not None else "",
            truncated is not None and truncated.value == "true"))
    return sorted(shown, key=lambda edge: edge.index)


def _source(source: Source, labels: Labels) -> dict[str, Any]:
    return {
        "edge": _labelled(source.edge, labels),
        "title": source.title or source.document, "document": source.document,
        "page": source.page_number, "chunk": source.chunk_index, "text": source.text or "",
        "citations": source.citations,
    }


def _labelled(edge: ox.Triple, labels: Labels) -> tuple[str, str, str]:
    return (label_of(edge.subject, labels), label_of(edge.predicate, labels),
            label_of(edge.object, labels))


def _objects(triples: Sequence[ox.Triple], name: str, namespace: str = vocab.TG) -> list[Any]:
    wanted = namespace + name
    return [t.object for t in triples if t.predicate.value == wanted]


def _first(triples: Sequence[ox.Triple], name: str, namespace: str = vocab.TG) -> str:
    found = _objects(triples, name, namespace)
    return str(getattr(found[0], "value", found[0])) if found else ""

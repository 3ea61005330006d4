"""What a query worker does: one typed job per kind of request, each run on the worker's store.

A job crosses the pipe to a worker process, so it holds only plain data; it knows how to answer
itself there (`answer`) and how its failure reads on its route (`failure`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tgsparql.record.conformance import Conformance, validate_session
from tgsparql.record.explain import SessionNotFound, list_sessions
from tgsparql.record.session_view import session_view
from tgsparql.serve import editor, pages
from tgsparql.serve.config import ServerConfig
from tgsparql.serve.readonly import Served
from tgsparql.serve.records import SHAPES, serialize_records
from tgsparql.serve.saved import saved_queries
from tgsparql.serve.sparql import (
    PAGE, Answer, ProtocolError, QueryRequest, execute, refuse_service, serialize,
)
from tgsparql.stores.remote import RemoteStore
from tgsparql.stores.store import StoreError

HTML = editor.HTML
TEXT = "text/plain; charset=utf-8"
JSON = "application/json"


def error_answer(status: int, message: str, *, html: bool = False) -> Answer:
    """An error as a page, or as one plain-text line."""
    if html:
        return Answer(status, HTML, pages.render_error(status, message).encode("utf-8"))
    return Answer(status, TEXT, (message + "\n").encode("utf-8"))


@dataclass(frozen=True)
class Job:
    """A request for a worker; its errors are plain text unless its route is a page."""

    html = False

    def answer(self, store: Served, config: ServerConfig) -> Answer:
        raise NotImplementedError

    def failure(self, config: ServerConfig, status: int, message: str) -> Answer:
        return error_answer(status, message, html=self.html)


@dataclass(frozen=True)
class PageJob(Job):
    """A request for a page: its errors are pages too."""

    html = True


@dataclass(frozen=True)
class SparqlJob(Job):
    """A query sent to /sparql; one from the SPARQL page is answered as the page."""

    request: QueryRequest

    @property
    def on_page(self) -> bool:
        return [value.lower() for value in self.request.formats[-1:]] == [PAGE]

    def answer(self, store: Served, config: ServerConfig) -> Answer:
        if self.on_page:
            return editor.results_page(store, self.request, config.max_results,
                                       store.templates.dialect, config.collection)
        return execute(store, self.request, config.max_results, csv_raw=config.csv_raw)

    def failure(self, config: ServerConfig, status: int, message: str) -> Answer:
        """In place on the SPARQL page for a query from it."""
        if self.on_page:
            return editor.page(self.request.query, config.dialect, config.collection,
                               error=message, status=status)
        return super().failure(config, status, message)


@dataclass(frozen=True)
class SavedJob(Job):
    """A saved BI query, its parameters as given, in `format` (an extension or a shape)."""

    name: str
    params: dict[str, list[str]]
    format: str

    def answer(self, store: Served, config: ServerConfig) -> Answer:
        saved = saved_queries()[self.name]
        text = store.templates.render(saved.template, **saved.bind(self.params))
        refuse_service(text)
        if self.format in SHAPES:
            return serialize_records(store.query(text), self.format, config.max_results)
        return serialize(store.query(text), self.format, config.max_results,
                         csv_raw=config.csv_raw)


@dataclass(frozen=True)
class SessionsJob(PageJob):
    """The /sessions page: the newest sessions whose question contains `text`."""

    text: str
    limit: int

    def answer(self, store: Served, config: ServerConfig) -> Answer:
        found = list_sessions(store, config.collection, self.limit, self.text)
        return Answer(200, HTML, pages.render_sessions(found, self.text, self.limit)
                      .encode("utf-8"))


@dataclass(frozen=True)
class SessionJob(PageJob):
    """A session's page, with its validation as found by a ValidateJob (or why it is not)."""

    uuid: str
    conformance: dict[str, Any] | None = None

    def answer(self, store: Served, config: ServerConfig) -> Answer:
        conformance = Conformance.from_json(self.conformance) if self.conformance \
            else None
        try:
            view = session_view(store, config.collection, self.uuid, conformance)
        except (SessionNotFound, ValueError):
            raise ProtocolError(404, f"no session {self.uuid} in collection "
                                     f"{config.collection!r}") from None
        return Answer(200, HTML, pages.render_session(view).encode("utf-8"))


@dataclass(frozen=True)
class ValidateJob(Job):
    """The session against the bundled shapes, as `validate --session` checks it: only queries,
    nothing written. A session it cannot find is reported as such, not raised: the page says."""

    uuid: str

    def answer(self, store: Served, config: ServerConfig) -> Answer:
        try:
            report = validate_session(store, self.uuid)
        except (SessionNotFound, ValueError) as error:
            found = Conformance.not_checked(str(error))
        else:
            found = Conformance.of(report)
        return Answer(200, JSON, json.dumps(found.to_json()).encode("utf-8"))


@dataclass(frozen=True)
class EntityJob(PageJob):
    """An entity's page: the edges that name it, `page` by page."""

    iri: str
    page: int

    def answer(self, store: Served, config: ServerConfig) -> Answer:
        try:
            view = pages.entity_view(store, self.iri, self.page)
        except ValueError:
            raise ProtocolError(400, f"iri={self.iri!r:.200} is not an IRI") from None
        return Answer(200, HTML, pages.render_entity(view).encode("utf-8"))


def run(store: Served, config: ServerConfig, job: Job) -> Answer:
    """The job's answer; a read that fails on a compacted-away file is retried once on a fresh
    handle, and a failing endpoint is answered 502 (the remote store has retried already)."""
    for attempt in (1, 2):
        try:
            return job.answer(store, config)
        except (OSError, StoreError) as error:
            if isinstance(store, RemoteStore):
                raise ProtocolError(502, str(error)) from None
            if attempt == 2:
                raise
            store.refresh()
    raise AssertionError("unreachable")

"""A run over a few focus nodes on the embedded store shares its requests between the reader's
thread and one helper (validator._shared): the answers come back in the order asked whatever
order they finish in, an error is raised in its request's turn, and no thread outlives the run.
Synchronised by events and barriers, never by sleeping."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tgsparql.validation.validator import AHEAD, _shared

WAIT_S = 30.0
"""Longest any test waits for another thread: far beyond a loaded machine's worst, so a
failure to meet means a thread never came."""


class Store:
    """Answers each request with its own text as the one row; `hold` runs before answering."""

    def __init__(self, hold: dict[str, threading.Event | threading.Barrier] | None = None,
                 fail: str | None = None) -> None:
        self.hold = hold or {}
        self.fail = fail
        self.threads: set[int] = set()
        self.answered: list[str] = []
        self.changed = threading.Condition()

    def select(self, text: str, default_graph: object = None) -> list[dict[str, str]]:
        self.threads.add(threading.get_ident())
        held = self.hold.get(text)
        if isinstance(held, threading.Barrier):
            held.wait(WAIT_S)
        elif held is not None:
            assert held.wait(WAIT_S), f"{text} was held for good"
        if text == self.fail:
            raise RuntimeError(f"{text} failed")
        with self.changed:
            self.answered.append(text)
            self.changed.notify_all()
        return [{"row": text}]


def requests(count: int) -> Iterator[tuple[str, list[str]]]:
    for number in range(count):
        yield f"q{number}", [f"query {number}"]


def helpers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "tgsparql-validate"]


def test_two_requests_are_answered_at_once_by_two_threads() -> None:
    both = threading.Barrier(2)
    store = Store({"q0": both, "q1": both})
    answered = list(_shared(store, requests(6), None))  # type: ignore[arg-type]
    assert [query for query, _ in answered] == [f"query {n}" for n in range(6)]
    assert len(store.threads) == 2 and not both.broken


def test_answers_come_back_in_the_order_asked_whatever_order_they_finish_in() -> None:
    last_done = threading.Event()

    class Late(Store):
        def select(self, text: str, default_graph: object = None) -> list[dict[str, str]]:
            rows = super().select(text, default_graph)
            if text == f"q{AHEAD - 1}":
                last_done.set()
            return rows

    store = Late({"q0": last_done})  # the first finishes only after the one AHEAD - 1 later
    answered = list(_shared(store, requests(AHEAD + 2), None))  # type: ignore[arg-type]
    assert store.answered.index("q0") > store.answered.index(f"q{AHEAD - 1}")
    assert answered == [(f"query {n}", [{"row": f"q{n}"}]) for n in range(AHEAD + 2)]


def test_a_failing_request_is_raised_in_its_turn_and_the_helper_ends() -> None:
    store = Store(fail="q2")
    seen = []
    with pytest.raises(RuntimeError, match="q2 failed"):
        for query, _ in _shared(store, requests(8), None):  # type: ignore[arg-type]
            seen.append(query)
    assert seen == ["query 0", "query 1"]
    assert helpers() == []


def test_a_request_that_cannot_be_made_is_raised_in_its_turn() -> None:
    def broken() -> Iterator[tuple[str, list[str]]]:
        yield from requests(3)
        raise ValueError("no text for the fourth")

    seen = []
    with pytest.raises(ValueError, match="no text for the fourth"):
        for query, _ in _shared(Store(), broken(), None):  # type: ignore[arg-type]
            seen.append(query)
    assert seen == ["query 0", "query 1", "query 2"]
    assert helpers() == []


def test_a_reader_that_stops_early_leaves_no_thread_and_takes_no_more() -> None:
    store = Store()
    answers = _shared(store, requests(50), None)  # type: ignore[arg-type]
    assert next(answers)[0] == "query 0"
    answers.close()
    assert helpers() == []
    assert len(store.answered) <= 1 + AHEAD


def test_no_more_than_ahead_requests_are_taken_beyond_the_one_awaited() -> None:
    """While the first request is held, the others run, but no further than AHEAD past it."""
    release = threading.Event()
    taken: list[int] = []

    def counted() -> Iterator[tuple[str, list[str]]]:
        for number, request in enumerate(requests(4 * AHEAD)):
            taken.append(number)
            yield request

    store = Store({"q0": release})
    answers = _shared(store, counted(), None)  # type: ignore[arg-type]
    reader = threading.Thread(target=lambda: list(answers))
    reader.start()
    with store.changed:  # q1 .. q(AHEAD-1) answered while q0 is held
        assert store.changed.wait_for(lambda: len(store.answered) == AHEAD - 1, WAIT_S)
    assert taken == list(range(AHEAD))  # and nothing taken beyond them
    release.set()
    reader.join(WAIT_S)
    assert not reader.is_alive()
    assert len(taken) == 4 * AHEAD and len(store.answered) == 4 * AHEAD and helpers() == []

"""Retention (`sessions delete`) removes sessions with all they own and nothing else; `export`
writes what `load` reads back to an identical store."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.data.export import export
from tgsparql.data.loader import load_files
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.record.retention import (
    RetentionError, delete_sessions, parse_duration, select_sessions,
)
from tgsparql.stores.store import EmbeddedStore, open_store
from tgsparql.testing import assert_conforms
from tgsparql.testing.strategies import SessionRecord, provenanced_graphs, session_lists

UTC = dt.timezone.utc
NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
QUESTIONS = [
    "Where was the scientist who discovered polonium born?",
    "Which prize did the daughter of Pierre Curie win?",
    "Who married Marie Curie?",
]


def dump(store: EmbeddedStore) -> list[str]:
    """The store as sorted N-Quads lines: equal lists mean byte-identical stores."""
    text = store.oxigraph.dump(format=ox.RdfFormat.N_QUADS).decode("utf-8")
    return sorted(line for line in text.split("\n") if line)  # U+2028 is not a line end


def day_line(day: dt.date) -> str:
    """The N-Quads line of a day that holds sessions (docs/spec.md §2)."""
    return (f"<urn:trustgraph:day:{day}> <{vocab.TG}date> \"{day}\"^^<{vocab.XSD}date> "
            f"<{vocab.DEFAULT_COLLECTION.graph.value}> .")


FORMAT_LINE = (f"<{vocab.DEFAULT_COLLECTION.graph.value}> <{vocab.TG}recordFormat> "
               f"\"{vocab.RECORD_FORMAT}\"^^<{vocab.XSD}integer> "
               f"<{vocab.DEFAULT_COLLECTION.graph.value}> .")
"""The N-Quads line by which a collection says its record format, while it holds sessions."""


def owned_lines(lines: list[str], uuid: str) -> list[str]:
    """The N-Quads lines a session owns, found by its UUID in the subject."""
    subject = re.compile(r"^<urn:trustgraph:(session|prov:\w+|answer):" + re.escape(uuid)
                         + r"(:\d+)?> ")
    return [line for line in lines if subject.match(line)]


@pytest.fixture
def demo_with_sessions(tgsparql_demo_store: EmbeddedStore) -> tuple[EmbeddedStore, list[str]]:
    rag = GraphRag(tgsparql_demo_store, OfflineBackend())
    sessions = [rag.ask(question)[1][0].explain_id for question in QUESTIONS]
    failed = rag.query("x" * 10_001)  # refused before a session starts: records nothing
    assert next(failed).error is not None
    return tgsparql_demo_store, sessions


# ---- durations -------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("30d", dt.timedelta(days=30)), ("12h", dt.timedelta(hours=12)),
    ("90m", dt.timedelta(minutes=90)), ("45s", dt.timedelta(seconds=45)),
    ("2w", dt.timedelta(weeks=2)), ("1d12h", dt.timedelta(days=1, hours=12)),
    (" 7D ", dt.timedelta(days=7)),
])
def test_durations_parse(text: str, expected: dt.timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("30", "invalid duration '30': use a number and a unit"),
    ("d", "invalid duration 'd'"), ("-3d", "invalid duration '-3d'"),
    ("3 days", "invalid duration '3 days'"), ("1.5h", "invalid duration '1.5h'"),
    ("0d", "duration '0d' is zero: it would select every session"),
    ("9999999999999d", "duration '9999999999999d' is too long"),
])
def test_bad_durations_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(RetentionError, match=re.escape(message)):
        parse_duration(text)


# ---- delete -----------------------------------------------------------------------------------


def test_deleting_a_session_removes_what_it_owns_and_leaves_everything_else_byte_identical(
    demo_with_sessions: tuple[EmbeddedStore, list[str]],
) -> None:
    store, sessions = demo_with_sessions
    before = dump(store)
    gone = SessionIds.from_session_iri(sessions[1])
    owned = owned_lines(before, gone.uuid)
    assert any(line.startswith(f"<{gone.answer_document.value}> ") for line in owned)
    assert any(":0> <https://trustgraph.ai/ns/edge> <<( " in line for line in owned)

    (chosen,) = select_sessions(store, vocab.DEFAULT_COLLECTION, sessions=[sessions[1]])
    assert chosen.quads == len(owned)
    assert delete_sessions(store, vocab.DEFAULT_COLLECTION, [chosen]) == len(owned)

    after = dump(store)
    assert after == sorted(set(before) - set(owned))
    assert not any(gone.uuid in line for line in after)
    for kept in (sessions[0], sessions[2]):
        assert_conforms(store, session=kept)
    assert_conforms(store)


def test_a_failed_session_goes_with_its_failure_fields(tgsparql_demo_store: EmbeddedStore) -> None:
    before = dump(tgsparql_demo_store)
    failed = demo_session(0xF1, NOW, "failed-selection")
    failed.record(tgsparql_demo_store)
    assert any(line.startswith(f"<{failed.ids.session.value}> <{vocab.TG}error> ")
               for line in dump(tgsparql_demo_store))
    chosen = select_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION,
                             sessions=[failed.ids.uuid])
    delete_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, chosen)
    # its day held no other session, so it no longer says it holds some
    assert dump(tgsparql_demo_store) == before


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(provenanced_graphs(max_facts=6).flatmap(
    lambda g: st.tuples(st.just(g), session_lists(g.kg, min_size=2, max_size=6))),
       st.integers(1, 400))
def test_older_than_deletes_exactly_the_sessions_started_before_the_cutoff(data, days: int) -> None:
    graph, sessions = data
    store = open_store()
    graph.load_into(store)
    for session in sessions:
        session.record(store)
    graph = vocab.DEFAULT_COLLECTION.graph  # as a pipeline's first session says it:
    store.oxigraph.add(ox.Quad(graph, ox.NamedNode(vocab.TG + "recordFormat"), ox.Literal(
        str(vocab.RECORD_FORMAT), datatype=vocab.XSD_INTEGER), graph))
    before = dump(store)
    cutoff = NOW - dt.timedelta(days=days)
    old = [s for s in sessions if s.started < cutoff]
    chosen = select_sessions(store, vocab.DEFAULT_COLLECTION,
                             older_than=dt.timedelta(days=days), at=NOW)
    assert {c.ids for c in chosen} == {s.ids for s in old}
    delete_sessions(store, vocab.DEFAULT_COLLECTION, chosen)
    removed = {line for s in old for line in owned_lines(before, s.ids.uuid)}
    kept_days = {s.started.astimezone(UTC).date() for s in sessions if s not in old}
    emptied = {day_line(s.started.astimezone(UTC).date()) for s in old} - {
        day_line(day) for day in kept_days}
    if len(old) == len(sessions):  # the collection is left without sessions
        emptied.add(FORMAT_LINE)
    assert dump(store) == sorted(set(before) - removed - emptied)
    assert_conforms(store)


def test_sessions_of_another_collection_are_untouched(tgsparql_demo_store: EmbeddedStore) -> None:
    rag = GraphRag(tgsparql_demo_store, OfflineBackend(), collection=vocab.Collection("other"))
    session = rag.ask(QUESTIONS[0])[1][0].explain_id
    assert select_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION,
                           older_than=dt.timedelta(seconds=1),
                           at=dt.datetime.now(UTC) + dt.timedelta(days=1)) == []
    with pytest.raises(RetentionError, match=f"no session {session} in collection "
                                             "'explainability'"):
        select_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, sessions=[session])


def test_reified_edges_go_when_no_session_refers_to_them_any_more(
    tgsparql_demo_file: Path,
) -> None:
    store = open_store()
    store.dialect = "reification"  # type: ignore[misc]
    load_files(store, [tgsparql_demo_file])
    base = dump(store)
    rag = GraphRag(store, OfflineBackend())
    first = rag.ask(QUESTIONS[0])[1][0].explain_id
    with_first = dump(store)
    second = rag.ask(QUESTIONS[0])[1][0].explain_id  # the same edges, shared statements
    delete_sessions(store, vocab.DEFAULT_COLLECTION,
                    select_sessions(store, vocab.DEFAULT_COLLECTION, sessions=[second]))
    assert dump(store) == with_first
    delete_sessions(store, vocab.DEFAULT_COLLECTION,
                    select_sessions(store, vocab.DEFAULT_COLLECTION, sessions=[first]))
    assert dump(store) == base


# ---- the command ------------------------------------------------------------------------------


BORN_IN = ox.Triple(ox.NamedNode("https://example.org/demo/entity/Marie_Curie"),
                    ox.NamedNode("https://example.org/demo/rel/bornIn"),
                    ox.NamedNode("https://example.org/demo/entity/Warsaw"))


def demo_session(number: int, started: dt.datetime, outcome: str = "complete") -> SessionRecord:
    """A session over the demo KG that selected its birthplace fact, started at `started`."""
    return SessionRecord(
        ids=SessionIds(f"00000000-0000-4000-8000-{number:012x}"), question=QUESTIONS[0],
        started=started, ended=started + dt.timedelta(seconds=2),
        outcome=outcome,  # type: ignore[arg-type]
        concepts=("polonium",), seeds=(BORN_IN.subject,), retrieved=(BORN_IN,),
        selected=((BORN_IN, "the birthplace"),), answer="Warsaw.",
    )


@pytest.fixture
def disk_store(tmp_path: Path, tgsparql_demo_file: Path) -> tuple[Path, list[SessionIds]]:
    """An on-disk demo store with sessions started 40, 10 and 0 days ago."""
    path = tmp_path / "kg"
    today = dt.datetime.now(UTC)
    with open_store(path) as store:
        load_files(store, [tgsparql_demo_file])
        sessions = [demo_session(n, today - dt.timedelta(days=days))
                    for n, days in enumerate((40, 10, 0), 1)]
        for session in sessions:
            session.record(store)
    return path, [session.ids for session in sessions]


def test_cli_dry_run_lists_and_changes_nothing_then_delete_removes(
    disk_store: tuple[Path, list[SessionIds]],
) -> None:
    path, (old, mid, new) = disk_store
    code, out, err = cli("sessions", "delete", "--store", str(path), "--older-than", "30d",
                         "--dry-run")
    assert code == 0, err
    assert re.fullmatch(rf"would delete {old.session.value} \(\d+ quads\)\n", out)
    assert re.fullmatch(r"dry run: 1 sessions \(\d+ quads\) would be deleted\n", err)
    code, out, err = cli("sessions", "delete", "--store", str(path), "--older-than", "1w")
    assert code == 0, err
    assert [line.split()[1] for line in out.splitlines()] == [old.session.value, mid.session.value]
    assert err.startswith("deleted 2 sessions (")
    code, out, _ = cli("sessions", "--store", str(path), "--format", "json")
    assert [s["session"] for s in json.loads(out)] == [new.session.value]


@pytest.mark.parametrize(("args", "code", "message"), [
    ([], 2, "give either --older-than DURATION or --session IRI"),
    (["--older-than", "3d", "--session", "urn:x"], 2,
     "give either --older-than DURATION or --session IRI"),
    (["--older-than", "soon"], 2, "Invalid value for --older-than: invalid duration 'soon'"),
    (["--session", "urn:nope"], 1, "error: not a session IRI: 'urn:nope'"),
    (["--session", "urn:trustgraph:session:00000000-0000-4000-8000-000000000000"], 1,
     "error: no session urn:trustgraph:session:00000000-0000-4000-8000-000000000000 in "
     "collection 'explainability'"),
    (["--older-than", "3d", "--collection", "bad name"], 1, "error: invalid collection name"),
])
def test_cli_delete_bad_input_is_a_clear_error(
    disk_store: tuple[Path, list[SessionIds]], args: list[str], code: int, message: str
) -> None:
    path, _ = disk_store
    got, _, err = cli("sessions", "delete", "--store", str(path), *args)
    assert got == code
    assert message in err


# ---- export and load ---------------------------------------------------------------------------


def reload(data: bytes, suffix: str, tmp_path: Path) -> EmbeddedStore:
    file = tmp_path / f"export{suffix}"
    file.write_bytes(data)
    store = open_store()
    report = load_files(store, [file])
    assert not report.failed, report.failed
    return store


@pytest.mark.parametrize(("fmt", "suffix"), [("nquads", ".nq"), ("trig", ".trig")])
def test_cli_export_then_load_gives_an_identical_store(
    demo_with_sessions: tuple[EmbeddedStore, list[str]], tmp_path: Path, fmt: str, suffix: str,
) -> None:
    store, _ = demo_with_sessions
    path = tmp_path / "kg"
    with open_store(path) as disk:
        disk.oxigraph.extend(store.oxigraph)
    out = tmp_path / f"all{suffix}"
    code, stdout, err = cli("export", "--store", str(path), "--format", fmt, "--output", str(out))
    assert code == 0 and stdout == "" and err == ""
    data = out.read_bytes()
    assert b"<<( " in data and b"urn:graph:explainability" in data
    assert dump(reload(data, suffix, tmp_path)) == dump(store)
    code, stdout, _ = cli("export", "--store", str(path), "--format", fmt)
    assert code == 0 and stdout.encode("utf-8") == data


def graph_of(line: str) -> ox.NamedNode | ox.DefaultGraph:
    (quad,) = ox.parse(line, ox.RdfFormat.N_QUADS)
    return quad.graph_name


def test_cli_export_of_some_graphs_keeps_their_names(
    demo_with_sessions: tuple[EmbeddedStore, list[str]], tmp_path: Path,
) -> None:
    store, _ = demo_with_sessions
    path = tmp_path / "kg"
    with open_store(path) as disk:
        disk.oxigraph.extend(store.oxigraph)
    code, out, _ = cli("export", "--store", str(path), "--format", "nquads",
                       "--graph", "urn:graph:library", "--graph", "default")
    assert code == 0
    wanted = (vocab.GRAPH_LIBRARY, ox.DefaultGraph())
    exported = sorted(line for line in out.split("\n") if line)
    assert exported == [line for line in dump(store) if graph_of(line) in wanted]
    code, _, err = cli("export", "--store", str(path), "--format", "trig", "--graph", "not an iri")
    assert code == 2 and "Invalid value for --graph: --graph 'not an iri' is neither" in err


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=provenanced_graphs(max_facts=8).flatmap(
    lambda g: st.tuples(st.just(g), session_lists(g.kg, max_size=4))),
       fmt=st.sampled_from([("nquads", ".nq"), ("trig", ".trig")]))
def test_any_store_survives_export_and_load(data, fmt, tmp_path_factory) -> None:
    graph, sessions = data
    store = open_store()
    files_dir = tmp_path_factory.mktemp("export")
    source = files_dir / "source.nq"
    source.write_bytes(ox.serialize(graph.quads(), format=ox.RdfFormat.N_QUADS))
    load_files(store, [source])
    for session in sessions:
        session.record(store)
    buffer = io.BytesIO()
    export(store, buffer, fmt[0])  # type: ignore[arg-type]
    assert dump(reload(buffer.getvalue(), fmt[1], files_dir)) == dump(store)

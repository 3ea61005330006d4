"""The embedded store: in memory and on disk, the four verbs, their errors, and persistence."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox
import pytest

from tgsparql.rdf import vocab
from tgsparql.rdf.templates import templates_for
from tgsparql.rdf.terms import DEFAULT_DIALECT, DIALECTS, Dialect
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.locking import TurnTakingStore
from tgsparql.stores.remote import RemoteStore
from tgsparql.stores.store import EmbeddedStore, Store, StoreError, open_store, query_form

EX = "http://example.org/"
MARIE = ox.NamedNode(EX + "Marie_Curie")
PIERRE = ox.NamedNode(EX + "Pierre_Curie")
MARRIED = ox.NamedNode(EX + "married")
BORN = ox.NamedNode(EX + "birthYear")
SAID = ox.NamedNode(EX + "said")
EDGE = ox.Triple(MARIE, MARRIED, PIERRE)

DATA = f"""
PREFIX ex: <{EX}>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
INSERT DATA {{
  ex:Marie_Curie ex:married ex:Pierre_Curie ;
      ex:birthYear 1867 ;
      rdfs:label "Marie Curie"@en .
  ex:Pierre_Curie rdfs:label "Pierre Curie" .
  GRAPH <urn:graph:g> {{ ex:source ex:said <<( ex:Marie_Curie ex:married ex:Pierre_Curie )>> }}
}}
"""


@pytest.fixture(params=["memory", "disk"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> EmbeddedStore:
    store = open_store(None if request.param == "memory" else tmp_path / "db")
    store.update(DATA)
    return store


def test_open_store_gives_an_embedded_store_that_implements_the_protocol(tmp_path: Path) -> None:
    memory = open_store()
    disk = open_store(tmp_path / "db")
    assert isinstance(memory, EmbeddedStore) and memory.path is None
    assert isinstance(disk, EmbeddedStore) and disk.path == tmp_path / "db"
    assert isinstance(memory, Store) and isinstance(disk, Store)
    assert memory.dialect == disk.dialect == DEFAULT_DIALECT == "rdf12"
    assert (tmp_path / "db").is_dir()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_store_carries_the_templates_of_its_dialect(dialect: Dialect, tmp_path: Path) -> None:
    """Code that runs a template is given the store alone: the store knows how to render."""
    embedded = open_store()
    embedded.dialect = dialect  # type: ignore[misc]
    turns = TurnTakingStore(tmp_path / "db")
    turns.dialect = dialect  # type: ignore[misc]
    remote = RemoteStore(Endpoint("http://localhost:1/sparql", dialect=dialect))
    for store in (embedded, turns, remote):
        assert store.templates.dialect == dialect
        assert store.templates is templates_for(dialect)  # one renderer per dialect


def test_select_returns_one_dict_of_terms_per_row(any_store: EmbeddedStore) -> None:
    rows = any_store.select(
        f"SELECT ?s ?year WHERE {{ ?s <{MARRIED.value}> ?o OPTIONAL {{ ?s <{BORN.value}> ?year }} }}"
    )
    assert rows == [{"s": MARIE, "year": ox.Literal("1867", datatype=vocab.XSD_INTEGER)}]


def test_select_leaves_unbound_variables_out_of_the_row(any_store: EmbeddedStore) -> None:
    rows = any_store.select(
        "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
        f"SELECT ?s ?label ?year WHERE {{ ?s rdfs:label ?label OPTIONAL {{ ?s <{BORN.value}> ?year }} }}"
        " ORDER BY ?s"
    )
    assert rows == [
        {"s": MARIE, "label": ox.Literal("Marie Curie", language="en"),
         "year": ox.Literal("1867", datatype=vocab.XSD_INTEGER)},
        {"s": PIERRE, "label": ox.Literal("Pierre Curie")},
    ]


def test_select_with_no_match_returns_an_empty_list(any_store: EmbeddedStore) -> None:
    assert any_store.select("SELECT ?s WHERE { ?s <urn:none> ?o }") == []


def test_ask_returns_a_bool(any_store: EmbeddedStore) -> None:
    yes = any_store.ask(f"ASK {{ <{MARIE.value}> <{MARRIED.value}> <{PIERRE.value}> }}")
    no = any_store.ask(f"ASK {{ <{PIERRE.value}> <{MARRIED.value}> <{MARIE.value}> }}")
    assert yes is True
    assert no is False


def test_construct_returns_a_list_of_triples(any_store: EmbeddedStore) -> None:
    triples = any_store.construct(
        f"CONSTRUCT {{ ?o <{EX}spouseOf> ?s }} WHERE {{ ?s <{MARRIED.value}> ?o }}"
    )
    assert triples == [ox.Triple(PIERRE, ox.NamedNode(EX + "spouseOf"), MARIE)]
    assert all(type(t) is ox.Triple for t in triples)


def test_update_returns_none_and_changes_the_store(any_store: EmbeddedStore) -> None:
    assert any_store.update(f"DELETE DATA {{ <{MARIE.value}> <{MARRIED.value}> <{PIERRE.value}> }}") is None
    assert any_store.ask(f"ASK {{ <{MARIE.value}> <{MARRIED.value}> ?o }}") is False


def test_triple_terms_survive_the_store(any_store: EmbeddedStore) -> None:
    rows = any_store.select(f"SELECT ?edge WHERE {{ GRAPH <urn:graph:g> {{ ?x <{SAID.value}> ?edge }} }}")
    assert rows == [{"edge": EDGE}]
    assert isinstance(rows[0]["edge"], ox.Triple)
    assert any_store.ask(
        f"ASK {{ GRAPH <urn:graph:g> {{ ?x <{SAID.value}> <<( <{MARIE.value}> <{MARRIED.value}> "
        f"<{PIERRE.value}> )>> }} }}"
    ) is True
    built = any_store.construct(
        f"CONSTRUCT {{ ?x <{SAID.value}> ?edge }} WHERE {{ GRAPH ?g {{ ?x <{SAID.value}> ?edge }} }}"
    )
    assert built == [ox.Triple(ox.NamedNode(EX + "source"), SAID, EDGE)]


@pytest.mark.parametrize(
    ("method", "query", "expected"),
    [
        ("select", "ASK {}", "expected a SELECT query"),
        ("select", "CONSTRUCT WHERE { ?s ?p ?o }", "expected a SELECT query"),
        ("ask", "SELECT * WHERE { ?s ?p ?o }", "expected an ASK query"),
        ("ask", "CONSTRUCT WHERE { ?s ?p ?o }", "expected an ASK query"),
        ("construct", "SELECT * WHERE { ?s ?p ?o }", "expected a CONSTRUCT query"),
        ("construct", "ASK {}", "expected a CONSTRUCT query"),
    ],
)
def test_wrong_query_kind_is_a_store_error(method: str, query: str, expected: str) -> None:
    store = open_store()
    with pytest.raises(StoreError, match=expected):
        getattr(store, method)(query)


@pytest.mark.parametrize("method", ["select", "ask", "construct"])
def test_a_query_syntax_error_is_a_store_error_with_the_parser_message(method: str) -> None:
    store = open_store()
    with pytest.raises(StoreError, match=r"the store rejected a query: error at 1:\d+"):
        getattr(store, method)("SELECT * WHERE { ?s ?p }")


def test_an_update_given_to_a_query_verb_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="the store rejected a query"):
        open_store().select("INSERT DATA { <urn:a> <urn:b> <urn:c> }")


def test_an_update_syntax_error_is_a_store_error_with_the_parser_message() -> None:
    store = open_store()
    with pytest.raises(StoreError, match="the store rejected an update: .*INSERT DATA"):
        store.update("INSERT DATA { ?s <urn:p> <urn:o> }")
    with pytest.raises(StoreError, match="the store rejected an update"):
        store.update("SELECT * WHERE { ?s ?p ?o }")
    assert len(store.oxigraph) == 0


def test_an_update_with_a_syntax_error_anywhere_changes_nothing() -> None:
    store = open_store()
    store.update("INSERT DATA { <urn:a> <urn:b> <urn:c> }")
    with pytest.raises(StoreError):
        store.update("INSERT DATA { <urn:x> <urn:y> <urn:z> } ; INSERT DATA { <urn:bad> }")
    assert [str(q) for q in store.oxigraph] == ["<urn:a> <urn:b> <urn:c>"]


def test_opening_a_store_on_a_regular_file_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "not-a-dir"
    path.write_text("x", encoding="utf-8")
    with pytest.raises(StoreError, match="cannot open store at .*not-a-dir"):
        open_store(path)


def test_data_persists_across_reopen_of_an_on_disk_store(tmp_path: Path) -> None:
    path = tmp_path / "db"
    store = open_store(path)
    store.update(DATA)
    store.close()
    with open_store(path) as reopened:
        assert reopened.ask(f"ASK {{ <{MARIE.value}> <{MARRIED.value}> <{PIERRE.value}> }}")
        assert reopened.select(
            f"SELECT ?edge WHERE {{ GRAPH <urn:graph:g> {{ ?x <{SAID.value}> ?edge }} }}"
        ) == [{"edge": EDGE}]
        assert len(reopened.oxigraph) == 5


def test_a_closed_store_releases_its_directory_and_refuses_work(tmp_path: Path) -> None:
    store = open_store(tmp_path / "db")
    store.close()
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.select("SELECT * WHERE { ?s ?p ?o }")
    open_store(tmp_path / "db").close()


def test_a_full_disk_at_close_is_a_store_error_and_the_store_closed(
    small_disk: Path, fill_disk: Callable[[Path], None]
) -> None:
    """Not an OSError with a traceback: every command says a StoreError in one line."""
    store = EmbeddedStore(small_disk / "kg")
    store.update("INSERT DATA { " + " ".join(
        f'<urn:s{i}> <urn:p> "{"y" * 50}{i}" .' for i in range(20_000)) + " }")
    fill_disk(small_disk)
    with pytest.raises(StoreError, match="failed to write as it closed.*No space left"):
        store.close()
    store.close()  # closed: closing again is harmless
    with pytest.raises(StoreError, match="is closed"):
        store.select("SELECT * WHERE { ?s ?p ?o }")


def test_dropping_caches_reopens_an_on_disk_store_with_all_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What reads cached goes with the handle that cached it; nothing written goes with it."""
    opened: list[str] = []

    def opening(path: str) -> ox.Store:
        opened.append(path)
        return real_store(path)

    real_store = ox.Store
    with open_store(tmp_path / "db") as store:
        store.update(DATA)
        monkeypatch.setattr(ox, "Store", opening)
        store.drop_caches()
        monkeypatch.undo()
        assert opened == [str(tmp_path / "db")]
        assert len(store.oxigraph) == 5
        store.update(f"INSERT DATA {{ <{PIERRE.value}> <{BORN.value}> 1859 }}")
    with open_store(tmp_path / "db") as reopened:
        assert len(reopened.oxigraph) == 6


def test_dropping_caches_of_a_store_in_memory_keeps_it() -> None:
    store = open_store()
    store.update(DATA)
    before = store.oxigraph
    store.drop_caches()
    assert store.oxigraph is before


def test_dropping_caches_of_a_read_only_store_takes_a_fresh_snapshot(tmp_path: Path) -> None:
    with open_store(tmp_path / "db") as writer:
        reader = EmbeddedStore(tmp_path / "db", read_only=True)
        writer.update(DATA)
        writer.oxigraph.flush()
        assert len(reader.oxigraph) == 0
        reader.drop_caches()
        assert len(reader.oxigraph) == 5


def test_dropping_caches_while_rows_are_read_is_a_store_error_naming_the_store(
    tmp_path: Path,
) -> None:
    """Rows still being read hold the store open, so it cannot open again; the error says so,
    and what was written stays on disk."""
    path = tmp_path / "db"
    store = open_store(path)
    store.update(DATA)
    rows = store.select_iter("SELECT * WHERE { ?s ?p ?o }")
    next(rows)
    with pytest.raises(StoreError, match=f"cannot open the store at {path} again.*lock"):
        store.drop_caches()
    rows.close()
    with open_store(path) as reopened:
        assert len(reopened.oxigraph) == 5


def test_a_store_opened_elsewhere_starts_empty(tmp_path: Path) -> None:
    first = open_store(tmp_path / "a")
    first.update(DATA)
    other = open_store(tmp_path / "b")
    assert other.select("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }") == []
    assert len(other.oxigraph) == 0


def test_in_memory_stores_are_independent() -> None:
    first, second = open_store(), open_store()
    first.update(DATA)
    assert len(first.oxigraph) == 5
    assert len(second.oxigraph) == 0


def test_bulk_load_into_the_default_graph_and_a_named_graph() -> None:
    store = open_store()
    data = b"<urn:a> <urn:b> <<( <urn:c> <urn:d> \"e\" )>> .\n<urn:a> <urn:b> <urn:f> .\n"
    store.bulk_load(io.BytesIO(data), ox.RdfFormat.N_TRIPLES)
    store.bulk_load(io.BytesIO(data), ox.RdfFormat.N_TRIPLES, graph=ox.NamedNode("urn:graph:x"))
    default = store.select("SELECT ?o WHERE { <urn:a> <urn:b> ?o } ORDER BY ?o")
    named = store.select("SELECT ?o WHERE { GRAPH <urn:graph:x> { <urn:a> <urn:b> ?o } }")
    inner = ox.Triple(ox.NamedNode("urn:c"), ox.NamedNode("urn:d"), ox.Literal("e"))
    assert {row["o"] for row in default} == {inner, ox.NamedNode("urn:f")}
    assert {row["o"] for row in named} == {inner, ox.NamedNode("urn:f")}
    assert len(store.oxigraph) == 4


def test_bulk_load_streams_in_batches_and_loses_nothing_at_their_edges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tgsparql.stores.store.BULK_BATCH", 3)
    lines = [f"<urn:s{i}> <urn:p> _:b{i % 4} .\n" for i in range(10)]
    quads = "".join(f"<urn:s{i}> <urn:p> \"{i}\" <urn:graph:q> .\n" for i in range(4))
    store = open_store()
    store.bulk_load(io.BytesIO("".join(lines).encode()), ox.RdfFormat.N_TRIPLES,
                    graph=ox.NamedNode("urn:graph:x"))
    store.bulk_load(io.BytesIO(quads.encode()), ox.RdfFormat.N_QUADS)
    named = store.select("SELECT ?s ?o WHERE { GRAPH <urn:graph:x> { ?s <urn:p> ?o } }")
    assert len(named) == 10
    assert len({row["o"] for row in named}) == 4  # one blank node per label, across batches
    assert len(store.select("SELECT ?s WHERE { GRAPH <urn:graph:q> { ?s ?p ?o } }")) == 4


def test_select_iter_streams_rows_from_a_snapshot_while_the_store_is_written(
    tmp_path: Path,
) -> None:
    with open_store(tmp_path / "db") as store:
        facts = " ".join(f"<urn:s{i}> <urn:p> {i} ." for i in range(5))
        store.update(f"INSERT DATA {{ {facts} }}")
        seen = []
        for row in store.select_iter("SELECT ?s WHERE { ?s <urn:p> ?o }"):
            seen.append(row["s"])
            store.update(f"INSERT DATA {{ <urn:new{len(seen)}> <urn:p> 0 }}")
        assert len(seen) == 5
        assert len(store.select("SELECT ?s WHERE { ?s <urn:p> ?o }")) == 10


def test_bulk_load_of_broken_data_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="bulk load failed: .*line 1"):
        open_store().bulk_load(io.BytesIO(b"<urn:a> <urn:b> .\n"), ox.RdfFormat.N_TRIPLES)


def test_the_store_is_a_context_manager(tmp_path: Path) -> None:
    with open_store(tmp_path / "db") as store:
        store.update("INSERT DATA { <urn:a> <urn:b> <urn:c> }")
        assert store.ask("ASK { <urn:a> <urn:b> <urn:c> }") is True


def test_reads_see_the_store_default_graph_unless_told_otherwise(any_store: EmbeddedStore) -> None:
    query = f"SELECT ?s WHERE {{ ?s <{SAID.value}> ?o }}"
    assert any_store.select(query) == []
    assert any_store.select(query, default_graph="union") == [{"s": ox.NamedNode(EX + "source")}]
    assert any_store.ask(f"ASK {{ ?s <{SAID.value}> ?o }}", default_graph="union")


def test_reads_can_merge_the_graphs_they_are_given(any_store: EmbeddedStore) -> None:
    query = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    named = [ox.NamedNode("urn:graph:g")]
    both = [ox.DefaultGraph(), ox.NamedNode("urn:graph:g")]
    counts = [int(any_store.select(query, default_graph=g)[0]["n"].value) for g in (named, both)]
    assert counts == [1, 5]
    assert not any_store.ask(f"ASK {{ ?s <{MARRIED.value}> ?o }}", default_graph=named)


@pytest.mark.parametrize("query, form", [
    ("SELECT * WHERE { ?s ?p ?o }", "select"),
    ("PREFIX ex: <http://example.org/> ASK { ex:a ex:b ex:c }", "ask"),
    ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", "graph"),
    ("DESCRIBE <http://example.org/a>", "graph"),
])
def test_query_form_is_learnt_from_the_text_alone(query: str, form: str) -> None:
    assert query_form(query) == form


@pytest.mark.parametrize("text", ["INSERT DATA { <urn:a> <urn:b> <urn:c> }", "SELECT WHERE", ""])
def test_query_form_refuses_what_is_not_a_query(text: str) -> None:
    with pytest.raises(SyntaxError):
        query_form(text)



def test_a_missing_store_opened_read_only_is_named_as_missing(tmp_path: Path) -> None:
    """A read-only open takes a fresh snapshot when a writer compacted a table file away; a
    store that is not there at all is no such case, and says so at once."""
    with pytest.raises(StoreError, match=r"cannot open store at .*nowhere.*CURRENT"):
        EmbeddedStore(tmp_path / "nowhere", read_only=True)

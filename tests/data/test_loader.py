"""Loading RDF files: every format, all of a file or none of it, progress, and the label index."""

from __future__ import annotations

import re
from pathlib import Path

import pyoxigraph as ox
import pytest

from tgsparql.asking.grounding import ground
from tgsparql.data.loader import LoadError, check_file, format_of, load_file, load_files
from tgsparql.rdf import vocab
from tgsparql.stores.store import EmbeddedStore

EX = "http://example.org/"
ADA = ox.NamedNode(EX + "Ada_Lovelace")
BABBAGE = ox.NamedNode(EX + "Charles_Babbage")
ENGINE = ox.NamedNode(EX + "Analytical_Engine")
WORKED = ox.NamedNode(EX + "workedWith")
WROTE = ox.NamedNode(EX + "wroteAbout")
SAID = ox.NamedNode(EX + "said")
GRAPH_A = ox.NamedNode("urn:graph:a")
DEFAULT = ox.DefaultGraph()

TURTLE = f"""@prefix ex: <{EX}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Ada_Lovelace ex:workedWith ex:Charles_Babbage ;
    rdfs:label "Ada Lovelace"@en .
ex:Charles_Babbage rdfs:label "Charles Babbage" .
"""

NTRIPLES = (
    f"<{EX}Ada_Lovelace> <{EX}wroteAbout> <{EX}Analytical_Engine> .\n"
    f'<{EX}Analytical_Engine> <{EX}year> "1837"^^<{vocab.XSD}integer> .\n'
)

NQUADS = (
    f"<{EX}Ada_Lovelace> <{EX}wroteAbout> <{EX}Analytical_Engine> <urn:graph:a> .\n"
    f"<{EX}Charles_Babbage> <{EX}workedWith> <{EX}Ada_Lovelace> .\n"
)

TRIG = f"""PREFIX ex: <{EX}>
ex:Ada_Lovelace ex:workedWith ex:Charles_Babbage .
GRAPH <urn:graph:a> {{ ex:Ada_Lovelace ex:wroteAbout ex:Analytical_Engine . }}
GRAPH <urn:graph:b> {{ ex:Charles_Babbage ex:wroteAbout ex:Analytical_Engine . }}
"""

RDF12 = f"""VERSION "1.2"
PREFIX ex: <{EX}>
ex:source ex:said <<( ex:Ada_Lovelace ex:workedWith ex:Charles_Babbage )>> .
ex:source ex:said <<( ex:Ada_Lovelace ex:wroteAbout "notes on the \\"engine\\""@en )>> .
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def quads(store: EmbeddedStore) -> set[ox.Quad]:
    """Every quad outside the label index graph: what the files put in."""
    return {
        q for q in store.oxigraph.quads_for_pattern(None, None, None, None)
        if q.graph_name != vocab.GRAPH_LABEL_INDEX
    }


def test_turtle_loads_into_the_default_graph(tgsparql_store: EmbeddedStore, tmp_path: Path) -> None:
    path = write(tmp_path, "kg.ttl", TURTLE)
    report = load_files(tgsparql_store, [path])
    assert report.loaded == {path: 3}
    assert report.failed == {}
    assert quads(tgsparql_store) == {
        ox.Quad(ADA, WORKED, BABBAGE, DEFAULT),
        ox.Quad(ADA, vocab.RDFS_LABEL, ox.Literal("Ada Lovelace", language="en"), DEFAULT),
        ox.Quad(BABBAGE, vocab.RDFS_LABEL, ox.Literal("Charles Babbage"), DEFAULT),
    }


def test_ntriples_load_with_typed_literals(tgsparql_store: EmbeddedStore, tmp_path: Path) -> None:
    path = write(tmp_path, "kg.nt", NTRIPLES)
    report = load_files(tgsparql_store, [path])
    assert report.loaded == {path: 2}
    assert quads(tgsparql_store) == {
        ox.Quad(ADA, WROTE, ENGINE, DEFAULT),
        ox.Quad(ENGINE, ox.NamedNode(EX + "year"),
                ox.Literal("1837", datatype=vocab.XSD_INTEGER), DEFAULT),
    }


def test_nquads_keep_their_graphs(tgsparql_store: EmbeddedStore, tmp_path: Path) -> None:
    path = write(tmp_path, "kg.nq", NQUADS)
    assert load_files(tgsparql_store, [path]).loaded == {path: 2}
    assert quads(tgsparql_store) == {
        ox.Quad(ADA, WROTE, ENGINE, GRAPH_A),
        ox.Quad(BABBAGE, WORKED, ADA, DEFAULT),
    }


def test_trig_keeps_named_graphs(tgsparql_store: EmbeddedStore, tmp_path: Path) -> None:
    path = write(tmp_path, "kg.trig", TRIG)
    assert load_files(tgsparql_store, [path]).loaded == {path: 3}
    assert quads(tgsparql_store) == {
        ox.Quad(ADA, WORKED, BABBAGE, DEFAULT),
        ox.Quad(ADA, WROTE, ENGINE, GRAPH_A),
        ox.Quad(BABBAGE, WROTE, ENGINE, ox.NamedNode("urn:graph:b")),
    }


def test_rdf12_triple_terms_load_as_triples(tgsparql_store: EmbeddedStore, tmp_path: Path) -> None:
    path = write(tmp_path, "kg.ttl", RDF12)
    assert load_files(tgsparql_store, [path]).loaded == {path: 2}
    source = ox.NamedNode(EX + "source")
    assert quads(tgsparql_store) == {
        ox.Quad(source, SAID, ox.Triple(ADA, WORKED, BABBAGE), DEFAULT),
        ox.Quad(source, SAID,
                ox.Triple(ADA, WROTE, ox.Literal('notes on the "engine"', language="en")),
                DEFAULT),
    }


def test_an_rdf12_reifier_loads_without_asserting_the_triple(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    path = write(tmp_path, "kg.ttl", f"PREFIX ex: <{EX}>\n"
                                     "<< ex:Ada_Lovelace ex:workedWith ex:Charles_Babbage >> "
                                     "ex:said ex:source .\n")
    assert load_files(tgsparql_store, [path]).loaded == {path: 2}
    assert not tgsparql_store.ask(f"ASK {{ <{ADA.value}> <{WORKED.value}> <{BABBAGE.value}> }}")
    assert tgsparql_store.ask(
        "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"
        f"ASK {{ ?r rdf:reifies <<( <{ADA.value}> <{WORKED.value}> <{BABBAGE.value}> )>> ;"
        f" <{SAID.value}> <{EX}source> }}"
    )


@pytest.mark.parametrize(
    ("suffix", "fmt"),
    [(".ttl", ox.RdfFormat.TURTLE), (".turtle", ox.RdfFormat.TURTLE),
     (".TTL", ox.RdfFormat.TURTLE), (".trig", ox.RdfFormat.TRIG),
     (".nt", ox.RdfFormat.N_TRIPLES), (".ntriples", ox.RdfFormat.N_TRIPLES),
     (".nq", ox.RdfFormat.N_QUADS), (".nquads", ox.RdfFormat.N_QUADS)],
)
def test_the_format_follows_the_extension(suffix: str, fmt: ox.RdfFormat) -> None:
    assert format_of(Path("data" + suffix)) == fmt


def test_the_demo_sample_loads_whole(
    tgsparql_store: EmbeddedStore, tgsparql_demo_file: Path
) -> None:
    report = load_files(tgsparql_store, [tgsparql_demo_file])
    assert report.failed == {}
    assert report.loaded[tgsparql_demo_file] == len(quads(tgsparql_store))
    assert report.labels_indexed > 0
    graphs = {q.graph_name for q in quads(tgsparql_store)}
    assert {DEFAULT, vocab.GRAPH_SOURCE, vocab.GRAPH_LIBRARY} <= graphs


# ---------------------------------------------------------------------------------------------
# errors: a broken file loads nothing of itself, the others load regardless


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("broken.ttl", TURTLE + "\n\nex:Ada_Lovelace ex:workedWith ex:x ex:y .\n", 8),
        ("broken.nt", NTRIPLES + f"<{EX}a> <{EX}b> .\n", 3),
        ("broken.nq", NQUADS + f'<{EX}a> <{EX}b> "unterminated .\n' + NQUADS, 3),
        ("broken.trig", TRIG + "GRAPH <urn:graph:c> { ex:a ex:b ex:c \n", 6),
        ("broken2.ttl", "@prefix ex: <http://example.org/> .\nex:a ex:b undeclared:c .\n", 2),
    ],
)
def test_a_syntax_error_loads_nothing_of_that_file_and_names_file_and_line(
    tgsparql_store: EmbeddedStore, tmp_path: Path, name: str, text: str, line: int
) -> None:
    good = write(tmp_path, "good.nt", NTRIPLES)
    broken = write(tmp_path, name, text)
    report = load_files(tgsparql_store, [broken, good])
    assert report.loaded == {good: 2}
    assert list(report.failed) == [broken]
    assert report.failed[broken].startswith(f"{broken}:{line}: ")
    assert quads(tgsparql_store) == {
        ox.Quad(ADA, WROTE, ENGINE, DEFAULT),
        ox.Quad(ENGINE, ox.NamedNode(EX + "year"),
                ox.Literal("1837", datatype=vocab.XSD_INTEGER), DEFAULT),
    }


def test_load_file_raises_load_error_and_leaves_the_store_untouched(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    broken = write(tmp_path, "broken.nt",
                   NTRIPLES * 50 + '<urn:a> <urn:b> "x" <urn:c> .\n' + NTRIPLES)
    with pytest.raises(LoadError, match="^" + re.escape(f"{broken}:101: ")):
        load_file(tgsparql_store, broken)
    assert len(tgsparql_store.oxigraph) == 0


def test_an_unknown_extension_is_an_error_listing_the_known_ones(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    path = write(tmp_path, "kg.rdf", "<rdf:RDF/>")
    report = load_files(tgsparql_store, [path])
    assert report.loaded == {}
    assert report.failed == {
        path: f"{path}: unknown RDF format '.rdf' "
              "(known: .nq, .nquads, .nt, .ntriples, .trig, .ttl, .turtle)"
    }
    assert report.labels_indexed == 0
    assert len(tgsparql_store.oxigraph) == 0


def test_a_missing_file_is_an_error_naming_it(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    missing = tmp_path / "absent.ttl"
    good = write(tmp_path, "good.ttl", TURTLE)
    report = load_files(tgsparql_store, [missing, good])
    assert list(report.failed) == [missing]
    assert report.failed[missing].startswith(f"{missing}: cannot read: ")
    assert report.loaded == {good: 3}


def test_a_directory_is_an_error_not_a_crash(tgsparql_store: EmbeddedStore, tmp_path: Path) -> None:
    folder = tmp_path / "dir.ttl"
    folder.mkdir()
    report = load_files(tgsparql_store, [folder])
    assert list(report.failed) == [folder]
    assert report.failed[folder].startswith(f"{folder}: cannot read: ")


def test_check_file_counts_quads_without_storing(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    path = write(tmp_path, "kg.trig", TRIG)
    assert check_file(path) == 3
    assert len(tgsparql_store.oxigraph) == 0


# ---------------------------------------------------------------------------------------------
# progress


def test_progress_receives_twice_the_file_size(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    small = write(tmp_path, "small.ttl", TURTLE)
    big = write(tmp_path, "big.nt", "".join(
        f"<{EX}e{i}> <{EX}p> \"value {i} — ünïcødé\" .\n" for i in range(20_000)))
    seen: dict[Path, list[int]] = {}

    def progress(path: Path):
        seen[path] = []
        return seen[path].append

    report = load_files(tgsparql_store, [small, big], progress=progress)
    assert report.loaded == {small: 3, big: 20_000}
    assert sum(seen[small]) == 2 * small.stat().st_size
    assert sum(seen[big]) == 2 * big.stat().st_size
    assert len(seen[big]) > 2
    assert all(n > 0 for n in seen[big])


def test_progress_may_be_declined_per_file(tgsparql_store: EmbeddedStore, tmp_path: Path) -> None:
    path = write(tmp_path, "kg.ttl", TURTLE)
    report = load_files(tgsparql_store, [path], progress=lambda _: None)
    assert report.loaded == {path: 3}


# ---------------------------------------------------------------------------------------------
# labels and set semantics


def test_loaded_labels_are_indexed_and_grounding_finds_them(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    path = write(tmp_path, "kg.ttl", TURTLE)
    report = load_files(tgsparql_store, [path])
    assert report.labels_indexed == 2
    grounding = ground(tgsparql_store, "Who worked with ADA LOVELACE, and Charles-Babbage?", 50)
    assert grounding.seeds == [ADA, BABBAGE]
    assert "ada lovelace" in grounding.concepts and "charles babbage" in grounding.concepts


def test_labels_of_a_later_file_are_indexed_by_that_load(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    first = write(tmp_path, "first.ttl", TURTLE)
    second = write(tmp_path, "second.ttl",
                   f'<{ENGINE.value}> <{vocab.RDFS}label> "Analytical Engine" .\n')
    assert load_files(tgsparql_store, [first]).labels_indexed == 2
    assert load_files(tgsparql_store, [second]).labels_indexed == 1
    assert ground(tgsparql_store, "What is the analytical engine?", 50).seeds == [ENGINE]


def test_loading_the_same_file_twice_changes_nothing(
    tgsparql_store: EmbeddedStore, tmp_path: Path
) -> None:
    paths = [write(tmp_path, "kg.ttl", TURTLE), write(tmp_path, "kg.trig", TRIG),
             write(tmp_path, "kg12.ttl", RDF12)]
    first = load_files(tgsparql_store, paths)
    after_first = set(tgsparql_store.oxigraph.quads_for_pattern(None, None, None, None))
    second = load_files(tgsparql_store, paths)
    after_second = set(tgsparql_store.oxigraph.quads_for_pattern(None, None, None, None))
    assert first.loaded == second.loaded == {paths[0]: 3, paths[1]: 3, paths[2]: 2}
    assert first.labels_indexed == 2
    assert second.labels_indexed == 0
    assert after_second == after_first
    assert len(tgsparql_store.oxigraph) == len(after_first)


def test_a_failed_file_alone_indexes_nothing(tgsparql_store: EmbeddedStore, tmp_path: Path) -> None:
    broken = write(tmp_path, "broken.ttl", TURTLE + "ex:a ex:b .\n")
    report = load_files(tgsparql_store, [broken])
    assert report.loaded == {}
    assert report.labels_indexed == 0
    assert len(tgsparql_store.oxigraph) == 0

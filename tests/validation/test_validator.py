"""The SPARQL-compiled validator, component by component, on tiny graphs with exact results."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tgsparql.record.conformance import Judgement
from tgsparql.stores.store import EmbeddedStore
from tgsparql.validation import Shapes, ShapesError, ValidationReport, Validator

PREFIXES = """
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix ex: <http://example.org/> .
"""
EX = "http://example.org/"
SH = "http://www.w3.org/ns/shacl#"


def ex(name: str) -> ox.NamedNode:
    return ox.NamedNode(EX + name)


def validate(shapes: str, data: str, **kwargs: object) -> ValidationReport:
    """Loaded as `tgsparql load` loads, with the records of literals the store rewrites."""
    store = EmbeddedStore()
    store.bulk_load(io.BytesIO((PREFIXES + data).encode()), ox.RdfFormat.TURTLE)
    return Validator(Shapes.from_text(PREFIXES + shapes)).validate(store, **kwargs)  # type: ignore[arg-type]


def rows(report: ValidationReport) -> list[tuple[object, ...]]:
    """(focus, path, value, component local name, severity local name) per result."""
    return [
        (
            r.focus_node, r.result_path, r.value,
            r.source_constraint_component.value[len(SH):].removesuffix("ConstraintComponent"),
            r.severity.value[len(SH):],
        )
        for r in report.results
    ]


def test_class_violation_names_focus_path_value_and_follows_subclasses() -> None:
    report = validate(
        "ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:p ; sh:class ex:C ] .",
        "ex:a a ex:A ; ex:p ex:ok , ex:bad . ex:ok a ex:D . ex:D rdfs:subClassOf ex:C .",
    )
    assert rows(report) == [(ex("a"), ex("p"), ex("bad"), "Class", "Violation")]
    assert not report.conforms


def test_min_count_message_is_written_for_a_person() -> None:
    report = validate(
        "ex:S a sh:NodeShape ; sh:targetClass ex:Session ; sh:property [ sh:path ex:query ; sh:minCount 1 ] .",
        "ex:s1 a ex:Session .",
    )
    assert [r.message for r in report.results] == [
        "Session <http://example.org/s1> has no <http://example.org/query> (at least 1 required)"
    ]
    assert rows(report) == [(ex("s1"), ex("query"), None, "MinCount", "Violation")]


def test_max_count_counts_distinct_values() -> None:
    report = validate(
        "ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:maxCount 1 .",
        "ex:a ex:p 1, 2 .",
    )
    assert rows(report) == [(ex("a"), ex("p"), None, "MaxCount", "Violation")]


def test_counts_over_a_nullable_path_include_the_focus_node_even_absent_from_the_data() -> None:
    """`ex:p*` reaches the focus node itself in zero steps, whether or not the data mentions it
    (the store finds zero-length solutions only for nodes of the graph)."""
    shapes = """ex:S sh:targetNode ex:absent, ex:a ; sh:property [ sh:path [ sh:zeroOrMorePath ex:p ] ;
        sh:minCount 1 ; sh:maxCount 2 ] ."""
    assert rows(validate(shapes, "ex:a ex:p ex:b .")) == []
    over = rows(validate(shapes, "ex:a ex:p ex:b . ex:b ex:p ex:c ."))
    assert [(focus, component) for focus, _, _, component, _ in over] == [(ex("a"), "MaxCount")]
    qualified = """ex:S sh:targetNode ex:absent ; sh:property [ sh:path [ sh:zeroOrOnePath ex:p ] ;
        sh:qualifiedValueShape [ sh:hasValue ex:absent ] ; sh:qualifiedMinCount 1 ] ."""
    assert rows(validate(qualified, "")) == []


def test_datatype_fails_ill_formed_literals_of_the_datatype() -> None:
    report = validate(
        "ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:datatype xsd:integer .",
        'ex:a ex:p 1, "x"^^xsd:integer, "1" .',
    )
    values = sorted(str(r[2]) for r in rows(report))
    assert values == ['"1"', '"x"^^<http://www.w3.org/2001/XMLSchema#integer>']


def xsd(lexical: str, datatype: str) -> ox.Literal:
    return ox.Literal(lexical, datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#" + datatype))


def values(report: ValidationReport) -> list[str]:
    return sorted(str(r[2]) for r in rows(report))


def literals(*pairs: tuple[str, str]) -> list[str]:
    return sorted(str(xsd(lexical, datatype)) for lexical, datatype in pairs)


def test_datatype_judges_the_datatype_the_data_wrote_not_the_one_the_store_keeps() -> None:
    """The store keeps every xsd:integer subtype as xsd:integer; a valid byte is still a byte."""
    shapes = "ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:datatype xsd:byte ."
    assert rows(validate(shapes, 'ex:a ex:p "3"^^xsd:byte, "-128"^^xsd:byte, "+7"^^xsd:byte .')) == []
    report = validate(shapes, 'ex:a ex:p "300"^^xsd:byte, "c"^^xsd:byte, "55"^^xsd:integer, "3"^^xsd:int .')
    assert values(report) == literals(("300", "byte"), ("c", "byte"), ("55", "integer"), ("3", "int"))


def test_an_ill_typed_literal_is_flagged_and_reported_as_written() -> None:
    report = validate(
        "ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:datatype xsd:integer .",
        'ex:a ex:p "abc"^^xsd:integer, "007"^^xsd:integer, "8"^^xsd:short .',
    )
    assert values(report) == literals(("abc", "integer"), ("8", "short"))


def test_values_of_other_components_are_reported_as_the_data_wrote_them() -> None:
    report = validate(
        "ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:maxExclusive 4 .",
        'ex:a ex:p "4.0"^^xsd:decimal, "04"^^xsd:integer, 3 .',
    )
    assert values(report) == literals(("4.0", "decimal"), ("04", "integer"))


def test_over_a_path_that_is_no_predicate_the_value_alone_finds_its_written_form() -> None:
    report = validate(
        "ex:S sh:targetNode ex:a ; sh:path ( ex:p ex:q ) ; sh:datatype xsd:integer .",
        'ex:a ex:p ex:b . ex:b ex:q "9"^^xsd:byte .',
    )
    assert [r[2] for r in rows(report)] == [xsd("9", "byte")]


def test_target_node_literals_of_the_shapes_are_reported_as_the_shapes_wrote_them() -> None:
    report = validate("ex:S a sh:NodeShape ; sh:targetNode 4.0, 3.0 ; sh:maxExclusive 4 .", "")
    assert [(r[0], r[2]) for r in rows(report)] == [(xsd("4.0", "decimal"), xsd("4.0", "decimal"))]


def test_node_kind_treats_triple_terms_as_none_of_the_kinds() -> None:
    report = validate(
        "ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:nodeKind sh:BlankNodeOrIRI .",
        "ex:a ex:p ex:b, <<( ex:s ex:q ex:o )>> .",
    )
    triple = ox.Triple(ex("s"), ex("q"), ex("o"))
    assert rows(report) == [(ex("a"), ex("p"), triple, "NodeKind", "Violation")]


def test_in_and_has_value_accept_triple_terms() -> None:
    report = validate(
        """ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:in ( <<( ex:s ex:q ex:o )>> ) ;
             sh:hasValue <<( ex:s ex:q ex:o )>> .
           ex:T sh:targetNode ex:b ; sh:path ex:p ; sh:hasValue <<( ex:s ex:q ex:o )>> .""",
        "ex:a ex:p <<( ex:s ex:q ex:o )>>, ex:x . ex:b ex:p ex:x .",
    )
    assert rows(report) == [
        (ex("a"), ex("p"), ex("x"), "In", "Violation"),
        (ex("b"), ex("p"), None, "HasValue", "Violation"),
    ]


def test_value_ranges_fail_incomparable_values() -> None:
    report = validate(
        "ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:minInclusive 2 ; sh:maxExclusive 5 .",
        'ex:a ex:p 1, 2, 5, "two" .',
    )
    got = sorted((r[2].value, r[3]) for r in rows(report))  # type: ignore[union-attr]
    assert got == [
        ("1", "MinInclusive"), ("5", "MaxExclusive"), ("two", "MaxExclusive"), ("two", "MinInclusive"),
    ]


def test_string_components_lengths_pattern_flags_languages() -> None:
    report = validate(
        """ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:minLength 2 ; sh:maxLength 3 ;
             sh:pattern "^a" ; sh:flags "i" ; sh:languageIn ( "en" ) .""",
        'ex:a ex:p "Ab"@en, "a"@en, "abcd"@en-GB, "ab"@fr .',
    )
    got = sorted((r[2].value, r[3]) for r in rows(report))  # type: ignore[union-attr]
    assert got == [("a", "MinLength"), ("ab", "LanguageIn"), ("abcd", "MaxLength")]


def test_unique_lang_reports_each_duplicated_language_once() -> None:
    report = validate(
        "ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:uniqueLang true .",
        'ex:a ex:p "x"@en, "y"@EN, "z"@de, "w" .',
    )
    assert rows(report) == [(ex("a"), ex("p"), None, "UniqueLang", "Violation")]


def test_property_pairs() -> None:
    report = validate(
        """ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:equals ex:q ; sh:disjoint ex:r ;
             sh:lessThan ex:s .""",
        "ex:a ex:p 1, 2 ; ex:q 1, 3 ; ex:r 2 ; ex:s 2 .",
    )
    got = sorted((r[3], r[2].value) for r in rows(report))  # type: ignore[union-attr]
    assert got == [("Disjoint", "2"), ("Equals", "2"), ("Equals", "3"), ("LessThan", "2")]


def test_logical_and_shape_based_components() -> None:
    report = validate(
        """ex:HasP sh:property [ sh:path ex:p ; sh:minCount 1 ] .
           ex:HasQ sh:property [ sh:path ex:q ; sh:minCount 1 ] .
           ex:S sh:targetNode ex:a, ex:b, ex:c, ex:d ;
             sh:not ex:HasQ ; sh:or ( ex:HasP ex:HasQ ) ; sh:xone ( ex:HasP ex:HasQ ) ;
             sh:and ( ex:HasP ) ; sh:node ex:HasP .""",
        "ex:a ex:p 1 . ex:b ex:p 1 ; ex:q 1 . ex:c ex:q 1 . ex:d ex:r 1 .",
    )
    got = sorted((r[0].value[len(EX):], r[3]) for r in rows(report))  # type: ignore[union-attr]
    assert got == sorted([
        ("b", "Not"), ("b", "Xone"),
        ("c", "Not"), ("c", "And"), ("c", "Node"),
        ("d", "Or"), ("d", "Xone"), ("d", "And"), ("d", "Node"),
    ])


def test_nested_property_shapes_report_their_own_results() -> None:
    report = validate(
        """ex:S sh:targetClass ex:A ; sh:property ex:P .
           ex:P sh:path ex:p ; sh:property [ sh:path ex:q ; sh:datatype xsd:string ] .""",
        'ex:a a ex:A ; ex:p ex:b . ex:b ex:q 1, "ok" .',
    )
    assert [(r[0], r[1], r[3]) for r in rows(report)] == [(ex("b"), ex("q"), "Datatype")]


def test_qualified_value_shapes_with_disjoint_siblings() -> None:
    report = validate(
        """ex:S sh:targetNode ex:hand ;
             sh:property [ sh:path ex:digit ; sh:qualifiedValueShape [ sh:class ex:Thumb ] ;
                           sh:qualifiedMinCount 1 ; sh:qualifiedMaxCount 1 ;
                           sh:qualifiedValueShapesDisjoint true ] ;
             sh:property [ sh:path ex:digit ; sh:qualifiedValueShape [ sh:class ex:Finger ] ;
                           sh:qualifiedMinCount 4 ; sh:qualifiedValueShapesDisjoint true ] .""",
        """ex:hand ex:digit ex:t, ex:f1, ex:f2, ex:f3, ex:f4 .
           ex:t a ex:Thumb, ex:Finger . ex:f1 a ex:Finger . ex:f2 a ex:Finger .
           ex:f3 a ex:Finger . ex:f4 a ex:Finger .""",
    )
    # ex:t is a Thumb and a Finger, so disjointness keeps it out of both counts: no thumb left.
    assert rows(report) == [(ex("hand"), ex("digit"), None, "QualifiedMinCount", "Violation")]


def test_closed_reports_each_unexpected_triple() -> None:
    report = validate(
        """ex:S sh:targetNode ex:a ; sh:closed true ; sh:ignoredProperties ( rdf:type ) ;
             sh:property [ sh:path ex:p ] .""",
        "ex:a a ex:A ; ex:p 1 ; ex:z ex:b .",
    )
    assert rows(report) == [(ex("a"), ex("z"), ex("b"), "Closed", "Violation")]


def test_deactivated_severity_and_custom_message() -> None:
    report = validate(
        """ex:Off sh:targetNode ex:a ; sh:deactivated true ; sh:class ex:C .
           ex:Soft sh:targetNode ex:a ; sh:severity sh:Warning ; sh:class ex:C ;
             sh:message "a is not a C"@en .""",
        "ex:a ex:p 1 .",
    )
    assert rows(report) == [(ex("a"), None, ex("a"), "Class", "Warning")]
    assert report.results[0].message == "a is not a C"
    assert not report.conforms and report.violations == []


def test_targets_combine_class_subjects_objects_nodes_and_implicit_classes() -> None:
    report = validate(
        """ex:S sh:targetSubjectsOf ex:s ; sh:targetObjectsOf ex:o ; sh:targetNode ex:n ;
             sh:nodeKind sh:Literal .
           ex:K a rdfs:Class, sh:NodeShape ; sh:nodeKind sh:Literal .""",
        "ex:x ex:s 1 . ex:y ex:o ex:z . ex:k a ex:Sub . ex:Sub rdfs:subClassOf ex:K .",
    )
    assert sorted(r[0].value for r in rows(report)) == [EX + "k", EX + "n", EX + "x", EX + "z"]  # type: ignore[union-attr]


def test_sparql_constraint_binds_this_for_all_focus_nodes_with_path_and_message() -> None:
    report = validate(
        """ex:S sh:targetClass ex:A ; sh:path ex:p ;
             sh:sparql [ sh:prefixes ex:decl ;
               sh:message "{$this} has {?value} via $PATH"@en ;
               sh:select "SELECT $this ?value WHERE { $this $PATH ?value . FILTER(?value > 1) }" ] .
           ex:decl sh:declare [ sh:prefix "e" ; sh:namespace "http://example.org/"^^xsd:anyURI ] .""",
        "ex:a a ex:A ; ex:p 1, 2 . ex:b a ex:A ; ex:p 3 .",
    )
    assert [(r[0], r[1], r[3]) for r in rows(report)] == [
        (ex("a"), ex("p"), "SPARQL"), (ex("b"), ex("p"), "SPARQL"),
    ]
    assert report.results[0].message == "http://example.org/a has 2 via $PATH"
    assert report.results[0].source_constraint is not None
    assert report.queries_run == 1


def test_queries_run_does_not_depend_on_the_number_of_focus_nodes() -> None:
    shapes = """ex:S sh:targetClass ex:A ; sh:property [ sh:path ex:p ; sh:minCount 1 ; sh:class ex:C ;
                  sh:node [ sh:nodeKind sh:IRI ] ] ."""
    few = validate(shapes, "ex:a a ex:A .")
    many = validate(shapes, " ".join(f"ex:a{i} a ex:A ; ex:p ex:x{i} ." for i in range(200)))
    assert few.queries_run == many.queries_run == 1  # the property shape's Core constraints, one query
    assert len(many.results) == 200


def test_a_few_focus_nodes_without_a_value_skip_only_the_shapes_that_need_one() -> None:
    """For a few focus nodes, a property shape with a one-predicate path is not asked when none
    of them has a value and none of its constraints can fail without one; sh:minCount and
    sh:hasValue can, and the shape with a value is asked: the results stay those of every node,
    and the skipped shape still counts as checked."""
    shapes = """ex:S sh:targetClass ex:A ;
        sh:property [ sh:path ex:p ; sh:maxCount 1 ; sh:datatype xsd:integer ] ,
                    [ sh:path [ sh:inversePath ex:q ] ; sh:class ex:C ] ,
                    [ sh:path ex:r ; sh:minCount 1 ] ,
                    [ sh:path ex:s ; sh:hasValue 1 ] ,
                    [ sh:path ex:t ; sh:maxCount 0 ] ."""
    data = "ex:a a ex:A ; ex:t 1 . ex:b a ex:A ; ex:p 1, 2 . ex:x ex:q ex:b ."
    whole = validate(shapes, data)
    few = validate(shapes, data, focus=[EX + "a"])
    assert sorted(map(str, rows(few))) == sorted(str(r) for r in rows(whole) if r[0] == ex("a"))
    assert sorted(r[3] for r in rows(few)) == ["HasValue", "MaxCount", "MinCount"]
    assert few.queries_run == 3 and len(few.shapes) == len(whole.shapes) == 5
    assert validate(shapes, data, focus=[EX + "b"]).queries_run == 4  # b has no ex:t


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_a_few_focus_nodes_have_core_queries_sent_together_with_each_row_read_as_its_own(
    batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Core queries for a few focus nodes go BATCH to a request (a SHACL-SPARQL one alone): the
    results are those of each query sent alone, every shape's rows its own."""
    shapes = """ex:S sh:targetClass ex:A ;
        sh:property [ sh:path ex:p ; sh:maxCount 1 ] , [ sh:path ex:q ; sh:datatype xsd:integer ] ,
                    [ sh:path ex:r ; sh:minCount 1 ] , [ sh:path ex:s ; sh:class ex:C ] ,
                    [ sh:path ex:t ; sh:in ( 1 2 ) ] ;
        sh:sparql [ sh:select "SELECT $this ?value WHERE { $this <http://example.org/u> ?value }" ] ."""
    data = """ex:a a ex:A ; ex:p 1, 2 ; ex:q "x" ; ex:s ex:d ; ex:t 3 ; ex:u 4 .
              ex:b a ex:A ; ex:r 1 ; ex:q 5 ; ex:t 1 ."""
    whole = validate(shapes, data)
    store = EmbeddedStore()
    store.bulk_load(io.BytesIO((PREFIXES + data).encode()), ox.RdfFormat.TURTLE)
    requests: list[str] = []
    select = store.select
    store.select = lambda text, **kwargs: requests.append(text) or select(text, **kwargs)  # type: ignore[method-assign]
    monkeypatch.setattr("tgsparql.validation.validator.BATCH", batch)
    few = Validator(Shapes.from_text(PREFIXES + shapes)).validate(store, focus=[EX + "a", EX + "b"])
    assert sorted(map(str, rows(few))) == sorted(map(str, rows(whole)))
    assert len({r[3] for r in rows(few)}) == 6 and few.queries_run == 6
    core = few.queries_run - 1
    assert len(requests) == 1 + -(-core // batch) + 1  # the targets, the Core queries, SHACL-SPARQL


def test_focus_restricts_the_targeted_nodes() -> None:
    report = validate(
        "ex:S sh:targetClass ex:A ; sh:class ex:C .",
        "ex:a a ex:A . ex:b a ex:A .",
        focus=[EX + "b"],
    )
    assert [r[0] for r in rows(report)] == [ex("b")]


@pytest.mark.parametrize(
    ("shapes", "feature"),
    [
        ("ex:S sh:target [ a ex:Custom ] .", "sh:target"),
        ("ex:S sh:targetNode ex:a ; sh:rule [ ] .", "sh:rule"),
        ("ex:S sh:targetNode ex:a ; sh:frobnicate 1 .", "sh:frobnicate"),
        ("ex:S sh:targetNode ex:a ; sh:in ( ex:x [] ) .", "blank node"),
        ("ex:S sh:targetNode ex:a ; sh:in ex:notAList .", "well-formed RDF list"),
        ("ex:S sh:targetNode ex:a ; sh:node ex:T . ex:T sh:node ex:S .", "recursive"),
        ("ex:S sh:targetNode ex:a ; sh:sparql [ sh:ask \"ASK {}\" ] .", "sh:ask"),
        ('[] sh:targetNode ex:a ; '
         'sh:sparql [ sh:select "SELECT $this WHERE { $this ?p $currentShape }" ] .',
         "$currentShape of a blank-node shape cannot be pre-bound"),
        ('ex:S sh:targetNode ex:a ; sh:sparql [ sh:select "SELECT $this WHERE { $this ?p }" ] .',
         "does not parse"),
        ("ex:S sh:targetNode ex:a ; sh:nodeKind ex:Other .", "node kind"),
        ('ex:S sh:targetNode ex:a ; sh:pattern "(" .', "invalid sh:pattern"),
    ],
)
def test_unsupported_or_malformed_shapes_raise_shapes_error_naming_the_feature(shapes: str, feature: str) -> None:
    with pytest.raises(ShapesError) as error:
        Validator(Shapes.from_text(PREFIXES + shapes))
    assert feature in str(error.value)
    assert "\n" not in str(error.value)


def test_parse_errors_name_file_and_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.ttl"
    broken.write_text("@prefix ex: <http://example.org/> .\n\nex:a ex:b .\n")
    with pytest.raises(ShapesError) as error:
        Shapes.from_files([broken])
    assert str(broken) in str(error.value) and "line 3" in str(error.value)


def test_data_in_the_shapes_graph_is_not_a_shape() -> None:
    shapes = Shapes.from_text(PREFIXES + "ex:x ex:p [ sh:inversePath ( 1 ) ] . ex:S sh:targetNode ex:a .")
    assert [s.node for s in shapes] == [ex("S")]


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=20))
def test_hostile_strings_in_shapes_render_safely(text: str) -> None:
    literal = ox.Literal(text)
    shapes = Shapes.from_text(
        PREFIXES + f"ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:in ( {literal} ) ; sh:hasValue {literal} ."
    )
    store = EmbeddedStore()
    store.oxigraph.add(ox.Quad(ex("a"), ex("p"), literal))
    store.oxigraph.add(ox.Quad(ex("a"), ex("p"), ox.Literal(text + "'\"\\\n}")))
    report = Validator(shapes).validate(store)
    assert rows(report) == [(ex("a"), ex("p"), ox.Literal(text + "'\"\\\n}"), "In", "Violation")]


def test_default_graph_selects_the_data_graph() -> None:
    store = EmbeddedStore()
    graph = ox.NamedNode("urn:graph:g")
    store.oxigraph.add(ox.Quad(ex("a"), ex("p"), ex("b"), graph))
    validator = Validator(Shapes.from_text(PREFIXES + "ex:S sh:targetNode ex:a ; sh:path ex:p ; sh:minCount 1 ."))
    assert validator.validate(store).conforms
    assert not validator.validate(store, default_graph=None).conforms


def test_report_forms_turtle_json_text_junit() -> None:
    report = validate(
        """ex:S sh:targetNode ex:a ; sh:property [ sh:path ( ex:p [ sh:inversePath ex:q ] ) ; sh:class ex:C ] .
           ex:W sh:targetNode ex:a ; sh:severity sh:Warning ; sh:class ex:C .""",
        "ex:a ex:p ex:b . ex:c ex:q ex:b .",
    )
    graph = list(ox.parse(report.to_turtle(), format=ox.RdfFormat.TURTLE))
    assert any(q.predicate.value == SH + "inversePath" for q in graph)
    assert sum(q.predicate.value == SH + "result" for q in graph) == 2
    data = json.loads(json.dumps(report.to_json()))
    assert data["conforms"] is False and data["violations"] == 1 and len(data["results"]) == 2
    assert report.to_text().startswith("Does not conform: 1 violation, 1 warning.")
    suites = ET.fromstring(Judgement(report).to_junit())
    shapes = {s.get("name"): s for s in suites.iter("testsuite")}
    assert suites.get("failures") == "1"
    assert shapes["http://example.org/W"].find("testcase/failure") is None
    assert len(shapes) == 2


def test_conforming_data_gives_a_conforming_report() -> None:
    report = validate("ex:S sh:targetClass ex:A ; sh:class ex:A .", "ex:a a ex:A .")
    assert report.conforms and report.results == []
    assert "sh:conforms true" in report.to_turtle()


NESTED_DATATYPES = """
ex:Direct sh:targetSubjectsOf ex:p ; sh:property [ sh:path ex:p ; sh:datatype xsd:integer ] .
ex:Nested sh:targetSubjectsOf ex:p ;
    sh:property [ sh:path ex:p ; sh:or ( [ sh:datatype xsd:integer ] [ sh:datatype xsd:boolean ] ) ] .
"""
WRITTEN_FORMS = """
ex:a ex:p "+01"^^xsd:integer .
ex:b ex:p "1.5"^^xsd:integer .
ex:c ex:p "2"^^xsd:decimal .
"""


@pytest.mark.parametrize("focus", [None, [EX + "a", EX + "b", EX + "c"]])
def test_a_datatype_inside_sh_or_judges_the_written_form_as_a_direct_one_does(
    focus: list[str] | None,
) -> None:
    """A nested shape's value is its focus: its datatype is judged on the form the data wrote
    (the lexical records), over every focus node and over a few named ones alike."""
    report = validate(NESTED_DATATYPES, WRITTEN_FORMS, focus=focus)
    failing = {(component, focus) for focus, _, _, component, _ in rows(report)}
    assert failing == {(component, node) for component in ("Datatype", "Or")
                       for node in (ex("b"), ex("c"))}


def test_a_property_shape_reports_once_for_each_way_a_focus_node_reaches_it() -> None:
    """Reached by one node shape, a focus node is validated once; by two, once per node shape
    (the queries of a shape reached one way keep no ancestors apart)."""
    shapes = """
        ex:P a sh:PropertyShape ; sh:path ex:p ; sh:maxCount 1 ; sh:datatype xsd:integer .
        ex:A a sh:NodeShape ; sh:targetClass ex:A ; sh:property ex:P .
        ex:B a sh:NodeShape ; sh:targetClass ex:B ; sh:property ex:P .
    """
    data = 'ex:a a ex:A ; ex:p 1, 2 . ex:b a ex:B ; ex:p "x" . ex:ab a ex:A, ex:B ; ex:p 3, 4 .'
    report = validate(shapes, data)
    assert sorted(map(str, rows(report))) == sorted(map(str, [
        (ex("a"), ex("p"), None, "MaxCount", "Violation"),
        (ex("b"), ex("p"), ox.Literal("x"), "Datatype", "Violation"),
        (ex("ab"), ex("p"), None, "MaxCount", "Violation"),
        (ex("ab"), ex("p"), None, "MaxCount", "Violation"),
    ]))
    one_way = Shapes.from_text(PREFIXES + shapes.replace("sh:targetClass ex:B ;", ""))
    assert [s.reached_one_way for s in one_way if s.path is not None] == [True]


def test_a_whole_store_run_queues_every_query_at_once_shacl_sparql_first() -> None:
    """Both CPUs stay busy to the end: the SHACL-SPARQL queries (the longest, as a rule) start
    first, and the report lists the results in the shapes' order whatever ran first."""
    from tgsparql.validation.validator import QUERIES_AT_ONCE

    SPARQL_COMPONENT = ox.NamedNode(SH + "SPARQLConstraintComponent")
    shapes = """
        ex:A a sh:NodeShape ; sh:targetClass ex:A ; sh:property ex:P , ex:Q , ex:R .
        ex:P sh:path ex:p ; sh:minCount 1 .
        ex:Q sh:path ex:q ; sh:minCount 1 .
        ex:R sh:path ex:r ; sh:minCount 1 .
        ex:Z a sh:NodeShape ; sh:targetClass ex:A ; sh:sparql [
            sh:select "SELECT $this WHERE { $this <http://example.org/s> 1 }" ] .
    """
    store = EmbeddedStore()
    store.bulk_load(io.BytesIO((PREFIXES + "ex:a a ex:A ; ex:s 1 .").encode()), ox.RdfFormat.TURTLE)
    asked: list[str] = []
    answer = store.select

    def select(text: str, **kwargs: object) -> object:
        asked.append(text)
        return answer(text, **kwargs)  # type: ignore[arg-type]

    store.select = select  # type: ignore[method-assign]
    validator = Validator(Shapes.from_text(PREFIXES + shapes))
    report = validator.validate(store)
    assert len(asked) == 4
    assert any("example.org/s" in text for text in asked[:QUERIES_AT_ONCE])
    in_order = [query.constraints[0].component_iri for query in validator.queries]
    assert in_order.index(SPARQL_COMPONENT) >= QUERIES_AT_ONCE  # queued ahead of its turn
    assert [r.source_constraint_component for r in report.results] == in_order

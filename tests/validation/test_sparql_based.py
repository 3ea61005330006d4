"""SHACL-SPARQL as the SHACL recommendation defines it: SPARQL-based constraints (§5) with their
variables pre-bound (appendix A), the query forms it rules out, SPARQL-based constraint
components (§6), prefix declarations and owl:imports."""

from __future__ import annotations

import socket
from pathlib import Path

import pyoxigraph as ox
import pytest
from click.testing import CliRunner

from tgsparql.cli import main
from tgsparql.stores.store import open_store
from tgsparql.validation import (
    Shapes, ShapesError, ValidationFailure, ValidationReport, Validator,
)

EX = "http://example.org/"
SH = "http://www.w3.org/ns/shacl#"
PREFIXES = f"""@prefix ex: <{EX}> .
@prefix sh: <{SH}> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
"""
DECLARE = 'ex:decl sh:declare [ sh:prefix "ex" ; sh:namespace "http://example.org/"^^xsd:anyURI ] .\n'


def ex(name: str) -> ox.NamedNode:
    return ox.NamedNode(EX + name)


def validate(shapes: str, data: str, focus: list[str] | None = None) -> ValidationReport:
    store = open_store()
    store.oxigraph.load(PREFIXES + data, format=ox.RdfFormat.TURTLE)
    validator = Validator(Shapes.from_text(PREFIXES + DECLARE + shapes))
    return validator.validate(store, default_graph=None, focus=focus)


def sparql_shape(select: str, target: str = "sh:targetClass ex:A") -> str:
    return f'ex:S a sh:NodeShape ; {target} ; sh:sparql [ sh:prefixes ex:decl ; sh:select """{select}""" ] .'


def focus_nodes(report: ValidationReport) -> list[str]:
    return sorted(str(r.focus_node.value) for r in report.results)  # type: ignore[union-attr]


# --- pre-binding: $this is the focus node wherever the query says it --------------------------

DATA = "ex:a a ex:A ; ex:p ex:x . ex:b a ex:A . ex:c a ex:A ; ex:p ex:c ."


@pytest.mark.parametrize(
    ("where", "select", "violating"),
    [
        ("the outermost group", "SELECT $this WHERE { $this ex:p ?o }", ["a", "c"]),
        ("a UNION branch that filters on it",
         "SELECT $this WHERE { { $this ex:p ex:none } UNION { ?s ex:p ?o FILTER(?s = $this) } }",
         ["a", "c"]),
        ("a filter in an inner group",
         "SELECT $this ?o WHERE { ?s a ex:A . { ?s ex:p ?o FILTER(?o = $this) } }", ["c"]),
        ("a filter in an inner group where nothing binds its other variable",
         "SELECT $this WHERE { ?s ex:p ?o . { FILTER(?o = $this) } }", []),
        ("a BIND in an inner group",
         "SELECT $this ?v WHERE { { BIND($this AS ?v) } FILTER(?v = ex:b) }", ["b"]),
        ("a nested SELECT that projects it",
         "SELECT $this ?n WHERE { { SELECT $this (COUNT(?o) AS ?n) WHERE { $this ex:p ?o } "
         "GROUP BY $this } FILTER(?n > 0) }", ["a", "c"]),
        ("a nested SELECT with an aggregate over nothing",
         "SELECT $this WHERE { { SELECT $this (COUNT(?o) AS ?n) WHERE { OPTIONAL { $this ex:p ?o } } "
         "GROUP BY $this } FILTER(?n = 0) }", ["b"]),
        ("an OPTIONAL inside an inner group",
         "SELECT $this ?s WHERE { ?s a ex:A . { ?s a ex:A OPTIONAL { ?s ex:p $this } } "
         "FILTER(?s = ex:c) }", ["a", "b", "c"]),
        ("FILTER NOT EXISTS", "SELECT $this WHERE { FILTER NOT EXISTS { $this ex:p ?o } }", ["b"]),
        ("an aggregate grouped by it",
         "SELECT $this (COUNT(?o) AS ?n) WHERE { $this ex:p ?o } GROUP BY $this "
         "HAVING (COUNT(?o) = 1)", ["a", "c"]),
        ("LIMIT, per focus node", "SELECT $this ?o WHERE { ?s ex:p ?o } LIMIT 1", ["a", "b", "c"]),
        ("ORDER BY", "SELECT $this ?o WHERE { $this ex:p ?o } ORDER BY $this", ["a", "c"]),
        ("a nested SELECT whose group only filters, with the optional dots",
         "SELECT $this WHERE { { SELECT $this WHERE { FILTER ($this = ex:b) . } } . }", ["b"]),
        ("FILTER (...) . in an OPTIONAL",
         "SELECT $this WHERE { $this a ex:A OPTIONAL { $this ex:p ?o . FILTER (?o != ex:x) . } "
         "FILTER (!bound(?o)) . }", ["a", "b"]),
        ("bound() of it, in a group of filters alone",
         "SELECT $this WHERE { { FILTER (bound($this)) . } FILTER (BOUND ( ?this )) }",
         ["a", "b", "c"]),
        ("a subquery 'SELECT *' whose WHERE clause binds it",
         "SELECT $this WHERE { { SELECT * WHERE { $this ex:p ?o } } }", ["a", "c"]),
        ("a property path", "SELECT $this WHERE { $this ex:p/ex:p ?o }", ["c"]),
        ("comments and strings that hold it and braces",
         'SELECT $this WHERE { # $this { }\n $this ex:p ?o FILTER (STR(?o) != "$this }") }',
         ["a", "c"]),
        ("no WHERE keyword, an IRI written in full",
         "SELECT $this { $this <http://example.org/p> ex:c }", ["c"]),
    ],
)
@pytest.mark.parametrize("focus", [None, [EX + "a", EX + "b", EX + "c"]], ids=["all", "focused"])
def test_this_is_pre_bound_in_every_position(
    where: str, select: str, violating: list[str], focus: list[str] | None
) -> None:
    """Alike over every focus node and over a few named ones (`validate --session`)."""
    report = validate(sparql_shape(select), DATA, focus)
    assert focus_nodes(report) == [EX + name for name in violating], where


def test_a_blank_node_focus_node_is_pre_bound_too() -> None:
    report = validate(
        sparql_shape("SELECT $this ?value WHERE { { BIND(1 AS ?one) FILTER(isBlank($this)) } "
                     "$this ex:q ?value }", target="sh:targetObjectsOf ex:r"),
        "ex:a ex:r [ ex:q 1 ], ex:n . ex:n ex:q 2 .",
    )
    assert [(r.focus_node.__class__, r.value) for r in report.results] == [
        (ox.BlankNode, ox.Literal(1))
    ]


@pytest.mark.parametrize(
    "select",
    ["SELECT $this WHERE { FILTER NOT EXISTS { ?s $this ?o } }",
     "SELECT $this WHERE { { OPTIONAL { ?s $this ?o } } FILTER (!bound(?s)) }",
     "SELECT $this WHERE { { OPTIONAL { GRAPH $this { ?s ?p ?o } } } FILTER (!bound(?s)) }"],
)
def test_a_literal_focus_node_where_only_an_iri_fits_matches_nothing(select: str) -> None:
    """Pre-binding joins the value with the pattern (appendix A), it does not write it there:
    a literal as predicate or graph name is no syntax error, it matches no triple."""
    store = open_store()
    store.oxigraph.extend([ox.Quad(ex("s"), ex("p"), ex("o")),
                           ox.Quad(ex("s"), ex("p"), ex("o"), ex("g"))])
    shapes = Shapes.from_text(PREFIXES + DECLARE + sparql_shape(
        select, target='sh:targetNode ex:p, ex:g, "lit"'))
    report = Validator(shapes).validate(store, default_graph=None)
    unmatched = "p" if "GRAPH" in select else "g"
    assert sorted(str(r.focus_node) for r in report.results) == ['"lit"', f"<{EX}{unmatched}>"]


def test_a_constraint_without_this_in_inner_scopes_is_one_query_for_all_focus_nodes() -> None:
    shapes = Shapes.from_text(PREFIXES + DECLARE + sparql_shape(
        "SELECT $this WHERE { $this ex:p ?o FILTER NOT EXISTS { $this ex:q ?o } }"))
    assert Validator(shapes).queries[0].per_focus_node is None
    shapes = Shapes.from_text(PREFIXES + DECLARE + sparql_shape(
        "SELECT $this WHERE { { ?s ex:p ?o FILTER(?s = $this) } }"))
    assert Validator(shapes).queries[0].per_focus_node is not None
    shapes = Shapes.from_text(PREFIXES + DECLARE + sparql_shape(
        "SELECT $this WHERE { $this ex:n ?n { SELECT $this (COUNT(?o) AS ?c) WHERE { $this ex:p ?o } "
        "GROUP BY $this } FILTER(?c != ?n) }"))
    assert Validator(shapes).queries[0].per_focus_node is None


def test_path_is_the_shapes_path_wherever_it_is() -> None:
    report = validate(
        'ex:S a sh:PropertyShape ; sh:targetClass ex:A ; sh:path ( ex:p ex:p ) ; sh:sparql [ '
        'sh:select """SELECT $this ?value WHERE { { $this $PATH ?value FILTER(?value != $this) } }""" ] .',
        "ex:a a ex:A ; ex:p ex:m . ex:m ex:p ex:z . ex:c a ex:A ; ex:p ex:c .",
    )
    assert [(r.focus_node, r.value, r.result_path) for r in report.results] == [
        (ex("a"), ex("z"), report.results[0].result_path)
    ]


# --- forms the spec rules out: refused, never run ----------------------------------------------


@pytest.mark.parametrize(
    ("select", "rule"),
    [
        ("SELECT $this WHERE { $this ex:p ?o MINUS { $this ex:q ?o } }", "MINUS"),
        ("SELECT $this WHERE { VALUES ?o { 1 } $this ex:p ?o }", "VALUES"),
        ("SELECT $this WHERE { SERVICE <http://127.0.0.1:9/sparql> { $this ex:p ?o } }", "SERVICE"),
        ("SELECT $this WHERE { $this ex:p ?o { SELECT ?o WHERE { ?o ex:q ?z } } }",
         "a subquery does not project the pre-bound variable $this"),
        ("SELECT $this WHERE { ?s ex:p ?o BIND(?s AS ?this) }", "'AS ?this' rebinds"),
        ("SELECT ($this AS ?x) (ex:a AS $this) WHERE { }", "'AS $this' rebinds"),
        ("SELECT $this WHERE { { SELECT * WHERE { ?s ex:p ?o } } }",
         "a subquery 'SELECT *' does not return the pre-bound variable $this"),
        ("SELECT $this WHERE { ?s ex:p ?o { SELECT * WHERE { ?s ex:p ?o FILTER(?o = $this) } } }",
         "a subquery 'SELECT *' does not return the pre-bound variable $this"),
        ("SELECT $this WHERE { { SELECT * WHERE { FILTER EXISTS { $this ex:p ?o } } } }",
         "a subquery 'SELECT *' does not return the pre-bound variable $this"),
        ("SELECT $this WHERE { ?s ex:p ?o BIND(?s AS ?currentShape) }",
         "'AS ?currentShape' rebinds"),
        ("SELECT * WHERE { ?s ex:p ?o }", "sh:select must project $this"),
        ("SELECT ?o WHERE { $this ex:p ?o }", "sh:select must project $this"),
        ("SELECT $this (COUNT(?o) AS ?n) WHERE { $this ex:p ?o }",
         "sh:sparql query does not parse"),
        ("SELECT $this WHERE { $this ex:p ?o ", "sh:sparql query does not parse"),
    ],
)
def test_forbidden_forms_are_refused_naming_shape_and_rule(select: str, rule: str) -> None:
    with pytest.raises(ShapesError) as error:
        Validator(Shapes.from_text(PREFIXES + DECLARE + sparql_shape(select)))
    assert rule in str(error.value) and EX + "S" in str(error.value)
    assert "\n" not in str(error.value)


def test_a_shapes_file_with_service_exits_2_and_nothing_connects(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    shapes = tmp_path / "service.ttl"
    shapes.write_text(PREFIXES + DECLARE + sparql_shape(
        f"SELECT $this WHERE {{ SERVICE <http://127.0.0.1:{port}/sparql> {{ ?s ?p ?o }} }}",
        target="sh:targetNode ex:a"))
    store = tmp_path / "store"
    opened = open_store(store)
    opened.oxigraph.add(ox.Quad(ex("a"), ex("p"), ex("b")))
    opened.close()
    try:
        run = CliRunner().invoke(main, ["validate", "--store", str(store), "--shapes", str(shapes)])
        assert run.exit_code == 2
        assert run.stderr.count("\n") == 1 and "SERVICE" in run.stderr and EX + "S" in run.stderr
        with pytest.raises(BlockingIOError):
            listener.accept()  # no connection is waiting: none was ever made
    finally:
        listener.close()


# --- SPARQL-based constraint components (§6) -----------------------------------------------------

COMPONENT = """
ex:MaxWordsComponent a sh:ConstraintComponent ;
    sh:parameter [ sh:path ex:maxWords ] ;
    sh:parameter [ sh:path ex:separator ; sh:optional true ] ;
    sh:validator ex:MaxWordsAsk ;
    sh:nodeValidator ex:MaxWordsNode .
ex:MaxWordsAsk a sh:SPARQLAskValidator ;
    sh:message "{$value} has more than {$maxWords} words" ;
    sh:ask \"\"\"ASK { FILTER(!isLiteral($value) ||
        STRLEN(REPLACE(STR($value), "[^ ]", "")) < $maxWords) }\"\"\" .
ex:MaxWordsNode a sh:SPARQLSelectValidator ;
    sh:prefixes ex:decl ;
    sh:message "{$this} has a label with more than {$maxWords} words: {?value}" ;
    sh:select \"\"\"SELECT $this ?value WHERE { $this ex:label ?value .
        FILTER(STRLEN(REPLACE(STR(?value), "[^ ]", "")) >= $maxWords) }\"\"\" .
"""
COMPONENT_IRI = ox.NamedNode(EX + "MaxWordsComponent")


def test_an_ask_validator_checks_each_value_node_of_a_property_shape() -> None:
    report = validate(
        COMPONENT + "ex:S a sh:NodeShape ; sh:targetClass ex:A ; "
        "sh:property [ sh:path ex:label ; ex:maxWords 2 ] .",
        'ex:a a ex:A ; ex:label "one", "one two", "one two three" . ex:b a ex:A ; ex:label "x y z w" .',
    )
    assert [(r.focus_node, r.value) for r in report.results] == [
        (ex("a"), ox.Literal("one two three")), (ex("b"), ox.Literal("x y z w")),
    ]
    assert {r.source_constraint_component for r in report.results} == {COMPONENT_IRI}
    assert all(r.source_constraint is None for r in report.results)
    assert report.results[0].message == "one two three has more than 2 words"
    assert report.results[0].result_path == ex("label")


def test_a_node_validator_is_chosen_for_a_node_shape() -> None:
    report = validate(
        COMPONENT + "ex:S a sh:NodeShape ; sh:targetClass ex:A ; ex:maxWords 2 .",
        'ex:a a ex:A ; ex:label "one two three" . ex:b a ex:A ; ex:label "one" .',
    )
    assert [(r.focus_node, r.value) for r in report.results] == [(ex("a"), ox.Literal("one two three"))]
    assert report.results[0].message == f"{EX}a has a label with more than 2 words: one two three"


def test_a_shape_without_a_mandatory_parameter_does_not_use_the_component() -> None:
    report = validate(COMPONENT + "ex:S a sh:NodeShape ; sh:targetClass ex:A ; ex:separator \"-\" .",
                      'ex:a a ex:A ; ex:label "one two three" .')
    assert report.results == []


def test_each_parameter_value_is_its_own_constraint() -> None:
    report = validate(
        COMPONENT + "ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:label ; "
        "ex:maxWords 2, 3 ] .",
        'ex:a a ex:A ; ex:label "a b c d" .',
    )
    assert sorted(r.message for r in report.results) == [
        "a b c d has more than 2 words", "a b c d has more than 3 words",
    ]


def test_a_property_validator_gets_path_and_the_shape_message_wins() -> None:
    report = validate(
        """ex:OnlyComponent a sh:ConstraintComponent ;
             sh:parameter [ sh:path ex:only ] ;
             sh:propertyValidator [ sh:message "not this one" ; sh:prefixes ex:decl ; sh:select
               "SELECT $this ?value WHERE { $this $PATH ?value FILTER(?value != $only) }" ] .
           ex:S a sh:PropertyShape ; sh:targetClass ex:A ; sh:path ex:p ; ex:only ex:x ;
             sh:message "{$this} has {?value}, not only {$only}" .""",
        "ex:a a ex:A ; ex:p ex:x, ex:y . ex:b a ex:A ; ex:p ex:x .",
    )
    assert [(r.focus_node, r.value, r.result_path) for r in report.results] == [(ex("a"), ex("y"), ex("p"))]
    assert report.results[0].message == f"{EX}a has {EX}y, not only {EX}x"


def test_a_component_with_no_validator_for_the_kind_of_shape_is_ignored() -> None:
    report = validate(
        """ex:C a sh:ConstraintComponent ; sh:parameter [ sh:path ex:k ] ;
             sh:propertyValidator [ sh:select "SELECT $this WHERE { $this $PATH ?v }" ] .
           ex:S a sh:NodeShape ; sh:targetClass ex:A ; ex:k 1 .""",
        "ex:a a ex:A .",
    )
    assert report.results == [] and report.queries_run == 0


@pytest.mark.parametrize(
    ("component", "rule"),
    [
        ('sh:parameter [ sh:path ex:k ] ; sh:validator [ sh:ask "ASK { MINUS { $value ex:p $k } }" ]',
         "MINUS"),
        ('sh:parameter [ sh:path ex:k ] ; sh:validator [ sh:ask "ASK { BIND(1 AS $k) }" ]',
         "'AS $k' rebinds"),
        ('sh:parameter [ sh:path ex:k ] ; sh:nodeValidator [ sh:select '
         '"SELECT $this WHERE { { SELECT $this WHERE { $this ex:p ?o } } }" ]',
         "does not project the pre-bound variable $k"),
        ('sh:parameter [ sh:path ex:this ] ; sh:validator [ sh:ask "ASK {}" ]', "variable name"),
        ('sh:parameter [ sh:path ex:k ] ; sh:validator [ sh:select "SELECT $this WHERE {}" ]',
         "sh:ask"),
        ('sh:parameter [ sh:path ex:path ] ; sh:validator [ sh:ask "ASK {}" ]', "variable name"),
        ('sh:parameter [ sh:path ex:k ] ; sh:validator [ sh:ask '
         '"ASK { { SELECT $value $k WHERE { $value ex:p $k } } }" ]',
         "does not project the pre-bound variable $this"),
        ('sh:parameter [ sh:path ex:k ], [ sh:path ex:j ; sh:optional true ] ; sh:validator [ '
         'sh:ask "ASK { { SELECT $this $value $k WHERE { $value ex:p $k } } }" ]',
         "does not project the pre-bound variable $j"),
        ('sh:parameter [ sh:path ex:k ] ; '
         'sh:validator [ sh:ask "ASK { BIND(1 AS ?shapesGraph) }" ]',
         "'AS ?shapesGraph' rebinds"),
        ('sh:parameter [ sh:path ex:k ] ; sh:validator [ a sh:SPARQLSelectValidator ; '
         'sh:ask "ASK {}" ]', "not as a SHACL instance of sh:SPARQLAskValidator"),
        ('sh:parameter [ sh:path ex:k ] ; sh:nodeValidator [ sh:select "SELECT ?x WHERE { }" ]',
         "sh:select must project $this"),
    ],
)
def test_malformed_components_are_refused(component: str, rule: str) -> None:
    shapes = f"ex:C a sh:ConstraintComponent ; {component} .\nex:S a sh:NodeShape ; sh:targetNode ex:a ; ex:k 1 ."
    with pytest.raises(ShapesError) as error:
        Validator(Shapes.from_text(PREFIXES + DECLARE + shapes))
    assert rule in str(error.value)


# --- prefixes, owl:imports, $currentShape --------------------------------------------------------


def test_prefixes_come_from_sh_declare_and_what_the_holder_imports() -> None:
    report = validate(
        """ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:sparql [ sh:prefixes ex:mine ;
             sh:select "SELECT $this WHERE { $this e:p ?o . ?o f:q ?z }" ] .
           ex:mine owl:imports ex:theirs ;
             sh:declare [ sh:prefix "e" ; sh:namespace "http://example.org/"^^xsd:anyURI ] .
           ex:theirs sh:declare [ sh:prefix "f" ; sh:namespace "http://example.org/"^^xsd:anyURI ] .""",
        "ex:a a ex:A ; ex:p ex:m . ex:m ex:q 1 . ex:b a ex:A .",
    )
    assert focus_nodes(report) == [EX + "a"]


def test_owl_imports_of_local_files_are_followed(tmp_path: Path) -> None:
    (tmp_path / "prefixes.ttl").write_text(
        PREFIXES + 'ex:decl sh:declare [ sh:prefix "e" ; sh:namespace "http://example.org/"^^xsd:anyURI ] .')
    main_file = tmp_path / "shapes.ttl"
    main_file.write_text(PREFIXES + """<> owl:imports <prefixes.ttl>, <http://127.0.0.1:9/never> .
        ex:S a sh:NodeShape ; sh:targetNode ex:a ;
          sh:sparql [ sh:prefixes ex:decl ; sh:select "SELECT $this WHERE { $this e:p ?o }" ] .""")
    store = open_store()
    store.oxigraph.add(ox.Quad(ex("a"), ex("p"), ex("b")))
    report = Validator(Shapes.from_files([main_file])).validate(store)
    assert focus_nodes(report) == [EX + "a"]
    (tmp_path / "prefixes.ttl").unlink()
    with pytest.raises(ShapesError, match="prefixes.ttl"):
        Shapes.from_files([main_file])


def test_current_shape_is_the_shape() -> None:
    report = validate(
        sparql_shape("SELECT $this ?value WHERE { BIND($currentShape AS ?value) }",
                     target="sh:targetNode ex:a"),
        "ex:a ex:p 1 .",
    )
    assert [r.value for r in report.results] == [ex("S")]


def test_components_give_the_same_results_for_a_few_named_focus_nodes() -> None:
    shapes = COMPONENT + """ex:S a sh:NodeShape ; sh:targetClass ex:A ; ex:maxWords 2 ;
        sh:property [ sh:path ex:label ; ex:maxWords 3 ] ."""
    data = 'ex:a a ex:A ; ex:label "one two three", "a b c d" . ex:b a ex:A ; ex:label "one" .'
    def seen(report: ValidationReport) -> list[tuple[object, ...]]:
        return [(r.focus_node, r.result_path, r.value, r.source_constraint_component, r.message)
                for r in report.results]

    whole = seen(validate(shapes, data))
    assert len(whole) == 3
    assert seen(validate(shapes, data, focus=[EX + "a", EX + "b"])) == whole
    assert seen(validate(shapes, data, focus=[EX + "b"])) == []


@pytest.mark.parametrize("focus", [None, [EX + "a"]], ids=["all", "focused"])
def test_value_and_parameters_are_pre_bound_in_inner_scopes_of_an_ask_validator(focus) -> None:
    report = validate(
        """ex:OkComponent a sh:ConstraintComponent ; sh:parameter [ sh:path ex:okFlag ] ;
             sh:validator [ sh:prefixes ex:decl ; sh:ask \"\"\"ASK {
               { FILTER(isLiteral($value)) } UNION { $value ex:ok ?flag FILTER(?flag = $okFlag) }
               FILTER NOT EXISTS { { SELECT $this $value $okFlag WHERE {
                 $value ex:banned $okFlag } } } }\"\"\" ] .
           ex:S a sh:NodeShape ; sh:targetNode ex:a ;
             sh:property [ sh:path ex:p ; ex:okFlag true ] .""",
        """ex:a ex:p "lit", ex:good, ex:bad, ex:banned .
           ex:good ex:ok true . ex:bad ex:ok false . ex:banned ex:ok true ; ex:banned true .""",
        focus,
    )
    assert sorted(str(r.value) for r in report.results) == [f"<{EX}bad>", f"<{EX}banned>"]


def test_an_optional_parameter_without_a_value_is_unbound() -> None:
    """SHACL §6's example: sh:pattern as an ASK validator whose optional $flags is tested with
    bound(); a shape without flags leaves it unbound, one with flags has it bound."""
    report = validate(
        """ex:PatternComponent a sh:ConstraintComponent ;
             sh:parameter [ sh:path ex:pattern ] ;
             sh:parameter [ sh:path ex:flags ; sh:optional true ] ;
             sh:validator ex:hasPattern .
           ex:hasPattern a sh:SPARQLAskValidator ;
             sh:message "Value does not match pattern {$pattern}" ;
             sh:ask \"\"\"ASK { FILTER (!isBlank($value) &&
               IF(bound($flags), regex(str($value), $pattern, $flags),
                  regex(str($value), $pattern)))
             }\"\"\" .
           ex:S a sh:NodeShape ; sh:targetClass ex:A ;
             sh:property [ sh:path ex:label ; ex:pattern "^a" ] ;
             sh:property [ sh:path ex:name ; ex:pattern "^a" ; ex:flags "i" ] .""",
        'ex:a a ex:A ; ex:label "Abc", "abc", "xyz" ; ex:name "Abc", "abc", "xyz" .',
    )
    assert sorted((r.result_path.value, r.value.value) for r in report.results) == [
        (EX + "label", "Abc"), (EX + "label", "xyz"), (EX + "name", "xyz"),
    ]


# --- a shape that is its own SPARQL-based constraint ----------------------------------------------


@pytest.mark.parametrize("focus", [None, [EX + "a", EX + "b"]], ids=["all", "focused"])
def test_a_shape_is_its_own_sparql_constraint(focus: list[str] | None) -> None:
    """sh:select, sh:prefixes and sh:message on the shape, which names itself with sh:sparql:
    its results name it as both source shape and source constraint, in its severity."""
    report = validate(
        """ex:LanguageShape a sh:NodeShape, sh:SPARQLConstraint ;
             sh:targetClass ex:A ;
             sh:severity sh:Warning ;
             sh:message "Values are literals with German language tag." ;
             sh:prefixes ex:decl ;
             sh:select \"\"\"SELECT $this (ex:label AS ?path) WHERE { $this ex:label ?value .
               FILTER (!isLiteral(?value) || !langMatches(lang(?value), "de")) }\"\"\" ;
             sh:sparql ex:LanguageShape .""",
        'ex:a a ex:A ; ex:label "Spain"@en . ex:b a ex:A ; ex:label "Spanien"@de .',
        focus,
    )
    assert [(r.focus_node, r.result_path, r.value, r.source_shape, r.source_constraint,
             r.severity, r.message) for r in report.results] == [
        (ex("a"), ex("label"), ex("a"), ex("LanguageShape"), ex("LanguageShape"),
         ox.NamedNode(SH + "Warning"), "Values are literals with German language tag."),
    ]


def test_a_constraint_that_is_another_shape_keeps_its_shape_properties_to_itself() -> None:
    report = validate(
        """ex:S a sh:NodeShape ; sh:targetNode ex:a ; sh:sparql ex:T .
           ex:T a sh:NodeShape ; sh:targetNode ex:b ; sh:datatype xsd:string ;
             sh:prefixes ex:decl ; sh:select "SELECT $this WHERE { $this ex:p ?o }" .""",
        "ex:a ex:p 1 . ex:b ex:p 2 .",
    )
    assert sorted((r.focus_node.value, r.source_shape.value) for r in report.results) == [
        (EX + "a", EX + "S"), (EX + "b", EX + "T"),
    ]
    assert {r.source_constraint_component.value.rsplit("#")[-1] for r in report.results} == {
        "SPARQLConstraintComponent", "DatatypeConstraintComponent"}


# --- SHACL types through rdfs:subClassOf in the shapes graph --------------------------------------

SUBCLASSES = """
ex:MyComponentKind rdfs:subClassOf ex:ComponentKind .
ex:ComponentKind rdfs:subClassOf sh:ConstraintComponent .
ex:MyAskKind rdfs:subClassOf sh:SPARQLAskValidator .
ex:MySelectKind rdfs:subClassOf ex:SelectKind .
ex:SelectKind rdfs:subClassOf sh:SPARQLSelectValidator .
ex:MyShapeKind rdfs:subClassOf ex:ShapeKind . ex:ShapeKind rdfs:subClassOf sh:NodeShape .
"""


def test_components_validators_and_shapes_are_shacl_instances_of_subclasses() -> None:
    report = validate(
        SUBCLASSES + """
        ex:NotComponent a ex:MyComponentKind ;
          sh:parameter [ sh:path ex:not ] ;
          sh:validator [ a ex:MyAskKind ; sh:ask "ASK { FILTER ($value != $not) }" ] ;
          sh:nodeValidator [ a ex:MySelectKind ; sh:select
            "SELECT $this WHERE { FILTER ($this = $not) }" ] .
        ex:S a ex:MyShapeKind ; sh:targetNode ex:a, ex:b ; ex:not ex:a ;
          sh:property [ sh:path ex:p ; ex:not ex:x ] .""",
        "ex:a ex:p ex:x . ex:b ex:p ex:y .",
    )
    assert sorted((r.focus_node.value, r.value.value) for r in report.results) == [
        (EX + "a", EX + "a"), (EX + "a", EX + "x"),
    ]
    assert {r.source_constraint_component for r in report.results} == {ex("NotComponent")}


def test_a_class_typed_as_a_subclass_of_rdfs_class_and_of_a_shape_kind_is_a_class_target() -> None:
    report = validate(
        SUBCLASSES + """ex:MyClassKind rdfs:subClassOf rdfs:Class .
        ex:Person a ex:MyClassKind, ex:MyShapeKind ;
          sh:property [ sh:path ex:name ; sh:minCount 1 ] .""",
        "ex:a a ex:Person . ex:b a ex:Person ; ex:name 'b' .",
    )
    assert focus_nodes(report) == [EX + "a"]


def test_parameter_declarations_are_not_read_as_shapes() -> None:
    """sh:Parameter is a subclass of sh:PropertyShape in the SHACL vocabulary: a shapes graph
    that imports it does not turn declarations (with sh:optional) into shapes."""
    report = validate(
        """sh:Parameter rdfs:subClassOf sh:PropertyShape .
        ex:C a sh:ConstraintComponent ;
          sh:parameter [ a sh:Parameter ; sh:path ex:k ; sh:optional false ] ;
          sh:validator [ sh:ask "ASK { FILTER ($value != $k) }" ] .
        ex:S a sh:NodeShape ; sh:targetNode ex:a ; ex:k ex:a .""",
        "ex:a ex:p 1 .",
    )
    assert focus_nodes(report) == [EX + "a"]


# --- $shapesGraph: the shapes graph in the data's dataset for the run ----------------------------

SHAPES_GRAPH = """
ex:S a sh:NodeShape ; sh:targetNode ex:a ; ex:property 42 ;
  sh:sparql [ sh:message "Test message" ; sh:prefixes ex:decl ; sh:select \"\"\"
    SELECT $this WHERE {
      FILTER bound($shapesGraph) .
      GRAPH $shapesGraph { FILTER bound($currentShape) . $currentShape ex:property 42 . }
    }\"\"\" ] .
ex:Leak a sh:NodeShape ; sh:targetSubjectsOf ex:property ; sh:maxCount 0 ; sh:path ex:property .
"""


@pytest.mark.parametrize("default_graph", [None, "union"])
@pytest.mark.parametrize("focus", [None, [EX + "a"]], ids=["all", "focused"])
def test_shapes_graph_is_a_named_graph_of_the_run(default_graph, focus) -> None:
    """The W3C test shapesGraph-001: the query reads the shapes graph through $shapesGraph; the
    data graph (the union of graphs too) does not hold it, and the store is as it was after."""
    store = open_store()
    store.oxigraph.load(PREFIXES + "ex:a ex:p 1 .", format=ox.RdfFormat.TURTLE)
    before = set(store.oxigraph)
    report = Validator(Shapes.from_text(PREFIXES + DECLARE + SHAPES_GRAPH)).validate(
        store, default_graph=default_graph, focus=focus)
    assert [(r.focus_node, r.message) for r in report.results] == [(ex("a"), "Test message")]
    assert set(store.oxigraph) == before


def test_shapes_graph_on_a_read_only_store_validates_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "store"
    disk = open_store(path)
    disk.oxigraph.add(ox.Quad(ex("a"), ex("p"), ex("b")))
    disk.close()
    shapes = tmp_path / "shapes.ttl"
    shapes.write_text(PREFIXES + DECLARE + SHAPES_GRAPH)
    run = CliRunner().invoke(main, ["validate", "--store", str(path), "--shapes", str(shapes),
                                    "--format", "json"])
    assert run.exit_code == 1, run.stderr
    assert "Test message" in run.stdout
    reopened = open_store(path)
    assert list(reopened.oxigraph) == [ox.Quad(ex("a"), ex("p"), ex("b"))]
    reopened.close()


def test_shapes_graph_is_refused_on_an_endpoint_before_any_request() -> None:
    """An endpoint's dataset cannot take the shapes graph (validation writes nothing there):
    the run stops with the reason, it never passes what it could not check."""
    from tgsparql.stores.endpoint import Endpoint
    from tgsparql.stores.remote import RemoteStore

    validator = Validator(Shapes.from_text(PREFIXES + DECLARE + SHAPES_GRAPH))
    with pytest.raises(ShapesError, match=r"\$shapesGraph.*endpoint"):
        validator.validate(RemoteStore(Endpoint("http://127.0.0.1:9/sparql")))


# --- ?failure: a failure, not a result (§5.3) ------------------------------------------------------


@pytest.mark.parametrize("focus", [None, [EX + "a", EX + "b", EX + "c"]], ids=["all", "focused"])
def test_a_solution_with_failure_true_is_a_failure_not_a_result(focus: list[str] | None) -> None:
    with pytest.raises(ValidationFailure, match=f"shape {EX}S: .*failure at focus node <{EX}c>"):
        validate(sparql_shape("SELECT $this ((?o = $this) AS ?failure) WHERE { $this ex:p ?o }"),
                 DATA, focus)
    report = validate(sparql_shape("SELECT $this (false AS ?failure) WHERE { $this ex:p ?o }"),
                      DATA, focus)
    assert focus_nodes(report) == [EX + "a", EX + "c"]


def test_a_failure_exits_2_and_reports_nothing(tmp_path: Path) -> None:
    shapes = tmp_path / "failing.ttl"
    shapes.write_text(PREFIXES + DECLARE + sparql_shape(
        "SELECT $this (true AS ?failure) WHERE { }", target="sh:targetNode ex:a"))
    store = tmp_path / "store"
    open_store(store).close()
    run = CliRunner().invoke(main, ["validate", "--store", str(store), "--shapes", str(shapes)])
    assert run.exit_code == 2 and run.stdout == ""
    assert "reported a failure" in run.stderr and run.stderr.count("\n") == 1


def test_results_read_only_the_variables_the_spec_names() -> None:
    """§5.3.2: ?this, ?path (when an IRI), ?value, ?message; a query's own ?k, ?lexical or a
    literal ?path are its business, and a component's parameter may be named k."""
    report = validate(
        sparql_shape('SELECT $this ?k ("x" AS ?path) ("1" AS ?lexical) '
                     '(<http://www.w3.org/2001/XMLSchema#integer> AS ?lexicalDatatype) '
                     'WHERE { $this ex:p ?k }'),
        DATA,
    )
    assert [(r.focus_node, r.result_path, r.value) for r in report.results] == [
        (ex("a"), None, ex("a")), (ex("c"), None, ex("c")),
    ]
    report = validate(
        """ex:KComponent a sh:ConstraintComponent ; sh:parameter [ sh:path ex:k ] ;
             sh:nodeValidator [ sh:select "SELECT $this WHERE { $this ?p $k }" ] .
           ex:T a sh:NodeShape ; sh:targetClass ex:A ; ex:k ex:x .""",
        DATA,
    )
    assert [(r.focus_node, r.value) for r in report.results] == [(ex("a"), ex("a"))]

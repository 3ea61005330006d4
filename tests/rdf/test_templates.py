"""SPARQL templates: escaping filters, dialects of edge references, and every shipped template."""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import pyoxigraph as ox
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tgsparql.asking.grounding import IndexEntry, Probe, RunQuery
from tgsparql.asking.provenance import EdgeSelectionRecord, NameGrounding, SeedCut, call_usage
from tgsparql.asking.retrieval import RANKING_RULE
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import (
    ROLLUP,
    SessionIds,
    day_iri,
    rollup_day_iri,
    rollup_document_iri,
    rollup_fact_iri,
    rollup_usage_iri,
)
from tgsparql.rdf.headers import header, parse_type, split_header
from tgsparql.rdf.templates import (
    STAND_IN,
    Sparql,
    TemplateError,
    Templates,
    _environment,
    stand_in,
)
from tgsparql.rdf.terms import DIALECTS, Dialect
from tgsparql.serve.saved import saved_queries
from tgsparql.stores.store import (
    Answer, EmbeddedStore, Solution, WithTemplates, open_store, query_form, result_form,
)
from tgsparql.validation.compiler import compile_shapes
from tgsparql.validation.shapes import Shapes

XSD = vocab.XSD
S = ox.NamedNode("http://example.org/s")
P = ox.NamedNode("http://example.org/p")
O = ox.NamedNode("http://example.org/o")
LIT_TRIPLE = ox.Triple(S, P, ox.Literal('say "hi"'))
IRI_TRIPLE = ox.Triple(S, P, O)
NESTED = ox.Triple(ox.NamedNode("http://example.org/a"), ox.NamedNode("http://example.org/b"),
                   IRI_TRIPLE)
IDS = SessionIds("00000000-0000-4000-8000-000000000001")
GRAPH = ox.NamedNode("urn:graph:explainability")
DOCUMENT = ox.NamedNode("urn:trustgraph:doc:test")


def snippet(source: str, dialect: str = "rdf12", **params: Any) -> str:
    return _environment().from_string(source).render(dialect=dialect, **params)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------
# union


@pytest.mark.parametrize(("count", "expected"), [
    (1, "{ ?s0 ?p ?o }"),
    (2, "{ { ?s0 ?p ?o } UNION { ?s1 ?p ?o } }"),
    (3, "{ { ?s0 ?p ?o } UNION { { ?s1 ?p ?o } UNION { ?s2 ?p ?o } } }"),
])
def test_union_filter_nests_the_blocks_a_template_built_as_a_balanced_tree(
    count: int, expected: str
) -> None:
    source = ('{% set blocks = namespace(items=[]) %}{% for i in range(n) %}{% set block %}'
              '{ {{ ("s" ~ i)|var }} ?p ?o }{% endset %}'
              '{% set blocks.items = blocks.items + [block] %}{% endfor %}{{ blocks.items|union }}')
    assert snippet(source, n=count) == expected


def test_union_filter_rejects_text_no_filter_made() -> None:
    with pytest.raises(TemplateError, match="unescaped value"):
        snippet("{{ blocks|union }}", blocks=["{ ?s ?p ?o } } DROP ALL {"])


# ---------------------------------------------------------------------------------------------
# iri


def test_iri_filter_renders_a_string_in_angle_brackets() -> None:
    assert snippet("{{ x|iri }}", x="http://example.org/Marie_Curie") == (
        "<http://example.org/Marie_Curie>"
    )


def test_iri_filter_renders_a_named_node() -> None:
    assert snippet("{{ x|iri }}", x=ox.NamedNode("urn:a:b")) == "<urn:a:b>"


@pytest.mark.parametrize(
    "bad",
    ["http://example.org/a b", "urn:a> <urn:b> <urn:c", "not an iri", "relative/path",
     'urn:a"b', "urn:a{b}", ""],
)
def test_iri_filter_rejects_an_invalid_iri_naming_it(bad: str) -> None:
    with pytest.raises(TemplateError, match=re.escape(f"invalid IRI {bad!r}")):
        snippet("{{ x|iri }}", x=bad)


def test_iri_filter_rejects_a_non_string() -> None:
    with pytest.raises(TemplateError, match="an IRI must be a string or NamedNode, not int"):
        snippet("{{ x|iri }}", x=5)


def test_iri_filter_rejects_a_lone_surrogate_naming_code_point_and_position() -> None:
    with pytest.raises(TemplateError, match=re.escape("IRI contains an unpaired surrogate "
                                                      "U+DC00 at position 6")):
        snippet("{{ x|iri }}", x="urn:a:\udc00b")


# ---------------------------------------------------------------------------------------------
# literal


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Marie Curie", '"Marie Curie"'),
        ('a "quoted"\\ line\nnext', '"a \\"quoted\\"\\\\ line\\nnext"'),
        ("", '""'),
        (42, f'"42"^^<{XSD}integer>'),
        (-7, f'"-7"^^<{XSD}integer>'),
        (10**30, f'"{10**30}"^^<{XSD}integer>'),
        (0, f'"0"^^<{XSD}integer>'),
        (1.5, f'"1.5"^^<{XSD}double>'),
        (-0.25, f'"-0.25"^^<{XSD}double>'),
        (True, f'"true"^^<{XSD}boolean>'),
        (False, f'"false"^^<{XSD}boolean>'),
        (
            dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc),
            f'"2024-01-02T03:04:05Z"^^<{XSD}dateTime>',
        ),
        (
            dt.datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
            f'"2024-01-02T03:04:05.12-05:00"^^<{XSD}dateTime>',
        ),
        (
            dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            f'"2024-01-02T03:04:05.123456+02:00"^^<{XSD}dateTime>',
        ),
        (
            ox.Literal("3.14", datatype=ox.NamedNode(XSD + "decimal")),
            f'"3.14"^^<{XSD}decimal>',
        ),
        (ox.Literal("chat", language="fr"), '"chat"@fr'),
    ],
)
def test_literal_filter_renders_typed_literals(value: Any, expected: str) -> None:
    assert snippet("{{ x|literal }}", x=value) == expected


def test_literal_filter_with_a_language_tag() -> None:
    assert snippet('{{ x|literal("en") }}', x="colour") == '"colour"@en'
    assert snippet("{{ x|literal(lang) }}", x="Farbe", lang="de-CH") == '"Farbe"@de-ch'


@pytest.mark.parametrize("tag", ["", "en gb", "en_GB", "123456789", "en-", "e\"n", "AA-00"])
def test_literal_filter_rejects_an_invalid_language_tag(tag: str) -> None:
    with pytest.raises(TemplateError, match=re.escape(f"invalid language tag {tag!r}")):
        snippet("{{ x|literal(lang) }}", x="text", lang=tag)


def test_literal_filter_rejects_a_naive_datetime() -> None:
    with pytest.raises(TemplateError, match="a dateTime must carry a time zone"):
        snippet("{{ x|literal }}", x=dt.datetime(2024, 1, 2, 3, 4, 5))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_literal_filter_rejects_non_finite_numbers(value: float) -> None:
    with pytest.raises(TemplateError, match="refusing non-finite number"):
        snippet("{{ x|literal }}", x=value)


@pytest.mark.parametrize("value", [None, [1], {"a": 1}, b"bytes", dt.date(2024, 1, 2)])
def test_literal_filter_rejects_values_without_a_literal_form(value: Any) -> None:
    with pytest.raises(TemplateError, match="no literal form for a value of type"):
        snippet("{{ x|literal }}", x=value)


def test_literal_filter_rejects_a_lone_surrogate_naming_code_point_and_position() -> None:
    with pytest.raises(TemplateError, match=re.escape("text contains an unpaired surrogate "
                                                      "U+D83D at position 3")):
        snippet("{{ x|literal }}", x="abc\ud83ddef")


def test_literal_filter_rejects_a_lone_surrogate_in_a_language_tagged_literal() -> None:
    with pytest.raises(TemplateError, match=re.escape("U+DFFF at position 0")):
        snippet('{{ x|literal("en") }}', x="\udfffabc")


def test_typed_literals_keep_their_datatypes_in_the_store(tgsparql_store: EmbeddedStore) -> None:
    values = {
        "urn:p:int": 1867,
        "urn:p:float": 0.1,
        "urn:p:bool": True,
        "urn:p:time": dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc),
        "urn:p:text": "plain",
    }
    source = (
        "INSERT DATA { {% for p, v in values.items() %}<urn:s> {{ p|iri }} {{ v|literal }} .\n"
        "{% endfor %} }"
    )
    tgsparql_store.update(snippet(source, values=values))
    stored = {q.predicate.value: q.object
              for q in tgsparql_store.oxigraph.quads_for_pattern(None, None, None, None)}
    assert stored == {
        "urn:p:int": ox.Literal("1867", datatype=vocab.XSD_INTEGER),
        "urn:p:float": ox.Literal("0.1", datatype=vocab.XSD_DOUBLE),
        "urn:p:bool": ox.Literal("true", datatype=vocab.XSD_BOOLEAN),
        "urn:p:time": ox.Literal("2024-05-06T07:08:09Z", datatype=vocab.XSD_DATETIME),
        "urn:p:text": ox.Literal("plain", datatype=vocab.XSD_STRING),
    }


# ---------------------------------------------------------------------------------------------
# integer, var


@pytest.mark.parametrize(("value", "expected"), [(5, "5"), (0, "0"), (-3, "-3"), (10**20, str(10**20))])
def test_integer_filter_renders_a_bare_integer(value: int, expected: str) -> None:
    assert snippet("LIMIT {{ x|integer }}", x=value) == f"LIMIT {expected}"


@pytest.mark.parametrize("value", [True, False, "5", 5.0, None, "1 } DROP ALL"])
def test_integer_filter_rejects_anything_but_an_int(value: Any) -> None:
    with pytest.raises(TemplateError, match="expected an integer"):
        snippet("{{ x|integer }}", x=value)


@pytest.mark.parametrize("name", ["x", "entity", "_private", "a1_b2"])
def test_var_filter_renders_a_question_mark_variable(name: str) -> None:
    assert snippet("{{ x|var }}", x=name) == f"?{name}"


@pytest.mark.parametrize("name", ["", "1a", "a b", "a}", "?x", "x-y", "é", 7])
def test_var_filter_rejects_an_invalid_variable_name(name: Any) -> None:
    with pytest.raises(TemplateError, match="invalid SPARQL variable name"):
        snippet("{{ x|var }}", x=name)


# ---------------------------------------------------------------------------------------------
# term, triple, statement


@pytest.mark.parametrize("dialect", DIALECTS)
def test_term_filter_renders_iris_and_literals_alike_in_every_dialect(dialect: str) -> None:
    assert snippet("{{ x|term }}", dialect, x=S) == "<http://example.org/s>"
    assert snippet("{{ x|term }}", dialect, x=ox.Literal("1867", datatype=vocab.XSD_INTEGER)) == (
        f'"1867"^^<{XSD}integer>'
    )
    assert snippet("{{ x|term }}", dialect, x=ox.Literal("Marie", language="en")) == '"Marie"@en'


def test_term_filter_renders_a_triple_in_the_dialect_form() -> None:
    assert snippet("{{ x|term }}", "rdf12", x=IRI_TRIPLE) == (
        "<<( <http://example.org/s> <http://example.org/p> <http://example.org/o> )>>"
    )
    assert snippet("{{ x|term }}", "rdfstar", x=IRI_TRIPLE) == (
        "<< <http://example.org/s> <http://example.org/p> <http://example.org/o> >>"
    )
    expected = sha256("<http://example.org/s> <http://example.org/p> <http://example.org/o> .")
    assert snippet("{{ x|term }}", "reification", x=IRI_TRIPLE) == (
        f"<urn:trustgraph:stmt:{expected}>"
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_term_filter_rejects_a_blank_node(dialect: str) -> None:
    with pytest.raises(TemplateError, match="a blank node cannot be referenced"):
        snippet("{{ x|term }}", dialect, x=ox.BlankNode("b0"))


@pytest.mark.parametrize("value", ["http://example.org/s", 3, None])
def test_term_filter_rejects_what_is_not_an_rdf_term(value: Any) -> None:
    with pytest.raises(TemplateError, match="not an RDF term"):
        snippet("{{ x|term }}", x=value)


@pytest.mark.parametrize(
    ("dialect", "triple", "expected"),
    [
        ("rdf12", IRI_TRIPLE,
         "<<( <http://example.org/s> <http://example.org/p> <http://example.org/o> )>>"),
        ("rdf12", LIT_TRIPLE,
         '<<( <http://example.org/s> <http://example.org/p> "say \\"hi\\"" )>>'),
        ("rdf12", NESTED,
         "<<( <http://example.org/a> <http://example.org/b> "
         "<<( <http://example.org/s> <http://example.org/p> <http://example.org/o> )>> )>>"),
        ("rdfstar", IRI_TRIPLE,
         "<< <http://example.org/s> <http://example.org/p> <http://example.org/o> >>"),
        ("rdfstar", LIT_TRIPLE,
         '<< <http://example.org/s> <http://example.org/p> "say \\"hi\\"" >>'),
        ("rdfstar", NESTED,
         "<< <http://example.org/a> <http://example.org/b> "
         "<< <http://example.org/s> <http://example.org/p> <http://example.org/o> >> >>"),
    ],
)
def test_triple_filter_renders_the_dialect_form(dialect: str, triple: ox.Triple,
                                                expected: str) -> None:
    assert snippet("{{ t|triple }}", dialect, t=triple) == expected


@pytest.mark.parametrize(
    ("triple", "canonical"),
    [
        (IRI_TRIPLE, "<http://example.org/s> <http://example.org/p> <http://example.org/o> ."),
        (LIT_TRIPLE, '<http://example.org/s> <http://example.org/p> "say \\"hi\\"" .'),
        (ox.Triple(S, P, ox.Literal("1867", datatype=vocab.XSD_INTEGER)),
         f'<http://example.org/s> <http://example.org/p> "1867"^^<{XSD}integer> .'),
        (ox.Triple(S, P, ox.Literal("Marie", language="en")),
         '<http://example.org/s> <http://example.org/p> "Marie"@en .'),
        (NESTED,
         "<http://example.org/a> <http://example.org/b> "
         "<<( <http://example.org/s> <http://example.org/p> <http://example.org/o> )>> ."),
    ],
)
def test_reification_references_a_triple_by_the_sha256_of_its_canonical_ntriples(
    triple: ox.Triple, canonical: str
) -> None:
    expected = f"<urn:trustgraph:stmt:{sha256(canonical)}>"
    assert snippet("{{ t|triple }}", "reification", t=triple) == expected
    for dialect in DIALECTS:
        assert snippet("{{ t|statement }}", dialect, t=triple) == expected


@pytest.mark.parametrize("dialect", DIALECTS)
def test_triple_filter_rejects_what_is_not_a_triple(dialect: str) -> None:
    with pytest.raises(TemplateError, match="expected a Triple, not NamedNode"):
        snippet("{{ t|triple }}", dialect, t=S)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_edge_with_a_blank_node_cannot_be_recorded(dialect: str) -> None:
    edge = ox.Triple(ox.BlankNode("b1"), P, O)
    with pytest.raises(TemplateError, match="a blank node cannot be referenced"):
        Templates(dialect).render("record_selection", **selection_params([edge]))


# ---------------------------------------------------------------------------------------------
# unescaped and undefined values


def test_an_unfiltered_value_is_an_error_at_render_time() -> None:
    with pytest.raises(TemplateError, match=re.escape("unescaped value 'Marie' in a template")):
        snippet("SELECT * WHERE { ?s ?p {{ value }} }", value="Marie")


def test_an_unfiltered_named_node_is_an_error_at_render_time() -> None:
    with pytest.raises(TemplateError, match="unescaped value"):
        snippet("{{ value }}", value=S)


def test_an_undefined_variable_is_an_error_at_render_time() -> None:
    with pytest.raises(TemplateError, match="unescaped value Undefined"):
        snippet("{{ missing }}")
    with pytest.raises(jinja2.UndefinedError, match="'missing' is undefined"):
        snippet("{{ missing|iri }}")


def test_a_real_query_missing_a_value_parameter_names_it() -> None:
    with pytest.raises(TemplateError,
                       match=re.escape("record_session: missing parameter 'question' (text)")):
        Templates().render(
            "record_session",
            graph=ox.NamedNode("urn:graph:explainability"),
            session=ox.NamedNode("urn:trustgraph:session:x"),
            started=dt.datetime.now(dt.timezone.utc),
        )


def test_a_real_query_missing_a_loop_parameter_names_it() -> None:
    params = retrieval_params([IRI_TRIPLE])
    del params["concepts"]
    with pytest.raises(TemplateError, match=re.escape(
            "record_retrieval: missing parameter 'concepts' (list of texts)")):
        Templates().render("record_retrieval", **params)


@pytest.mark.parametrize("missing", ["question", "started", "session", "graph"])
def test_a_real_query_missing_a_value_parameter_is_a_template_error(missing: str) -> None:
    params = {"graph": GRAPH, "session": IDS.session, "question": "Who?",
              "started": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)}
    del params[missing]
    with pytest.raises(TemplateError):
        Templates().render("record_session", **params)


def test_a_real_block_missing_a_parameter_is_a_template_error() -> None:
    with pytest.raises(TemplateError):
        Templates().render_block("record_failure", "quads", graph=GRAPH, session=IDS.session,
                                 ended=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))


def test_unknown_dialect_template_and_block_are_errors() -> None:
    with pytest.raises(TemplateError, match="unknown dialect 'sparql99'"):
        Templates("sparql99")  # type: ignore[arg-type]
    with pytest.raises(TemplateError, match="no query template named 'nope'"):
        Templates().render("nope")
    with pytest.raises(TemplateError, match="record_session has no block 'body'"):
        Templates().render_block("record_session", "body")


TEMPLATES = [name for name in Templates().names() if not name.startswith("trace/")]
"""Every template; queries/trace/ holds the saved trace queries as rendered for RDF 1.2."""

def test_names_lists_the_shipped_templates_without_private_includes() -> None:
    names = Templates().names()
    assert names == sorted(names)
    assert {"record_session", "record_retrieval", "record_selection", "record_answer",
            "record_failure", "ground", "retrieve_subgraph", "retrieve_degrees",
            "retrieve_ranked", "fetch_labels",
            "library_put", "library_get", "list_sessions", "explain_session",
            "_trace/session_sources"} <= set(names)
    assert not any(name.rsplit("/", 1)[-1].startswith("_") for name in names)


# ---------------------------------------------------------------------------------------------
# the reification description of edge references


def retrieval_params(edges: list[ox.Triple]) -> dict[str, Any]:
    return {
        "graph": GRAPH, "session": IDS.session, "retrieval": IDS.retrieval,
        "edge_count": len(edges), "concepts": ["radium"],
        "entities": [ox.NamedNode("http://example.org/Radium")], "retrieved_edges": edges,
        "ranking_rule": RANKING_RULE,
        "seed_cuts": [SeedCut(IDS.seed_cut(0), ox.NamedNode("http://example.org/Radium"), 7,
                              False)],
        "name_groundings": [NameGrounding(IDS.name_grounding(0), "Radium",
                                          ox.NamedNode("http://example.org/Radium"), 1, 2)],
    }


def selection_params(edges: list[ox.Triple], **usage: Any) -> dict[str, Any]:
    items = [EdgeSelectionRecord(IDS.edge_selection(i), edge, f"reason {i}", documents=(DOCUMENT,))
             for i, edge in enumerate(edges)]
    return {
        "graph": GRAPH, "session": IDS.session, "retrieval": IDS.retrieval,
        "selection": IDS.selection, "items": items, "invalid_ids": 0,
        "documents": [DOCUMENT] if items else [],
        "model": usage.get("model"), "in_tokens": usage.get("in_tokens"),
        "out_tokens": usage.get("out_tokens"),
        "call": call_usage(usage.get("model"), usage.get("in_tokens"), usage.get("out_tokens")),
    }


def description(triple: ox.Triple, subject: str, predicate: str, obj: str) -> str:
    canonical = f"{subject} {predicate} {obj} ."
    return (
        f"  <urn:trustgraph:stmt:{sha256(canonical)}> a rdf:Statement ;\n"
        f"      rdf:subject {subject} ;\n"
        f"      rdf:predicate {predicate} ;\n"
        f"      rdf:object {obj} .\n"
    )


@pytest.mark.parametrize("template", ["record_retrieval", "record_selection"])
def test_reification_dialect_describes_each_edge_as_an_rdf_statement(template: str) -> None:
    params = (retrieval_params if template == "record_retrieval" else selection_params)(
        [LIT_TRIPLE]
    )
    text = Templates("reification").render(template, **params)
    assert description(LIT_TRIPLE, "<http://example.org/s>", "<http://example.org/p>",
                       '"say \\"hi\\""') in text
    assert text.count("a rdf:Statement") == 1


@pytest.mark.parametrize("template", ["record_retrieval", "record_selection"])
@pytest.mark.parametrize("dialect", ["rdf12", "rdfstar"])
def test_other_dialects_write_no_rdf_statement(template: str, dialect: str) -> None:
    params = (retrieval_params if template == "record_retrieval" else selection_params)(
        [LIT_TRIPLE, IRI_TRIPLE]
    )
    text = Templates(dialect).render(template, **params)
    assert "rdf:Statement" not in text
    assert "rdf:subject" not in text
    assert "urn:trustgraph:stmt:" not in text


def test_reification_without_edges_writes_no_description() -> None:
    text = Templates("reification").render("record_retrieval", **retrieval_params([]))
    assert "rdf:Statement" not in text
    assert "tg:retrievedEdge" not in text


def statements_in(store: EmbeddedStore) -> dict[ox.NamedNode, dict[str, Any]]:
    rows = store.select(
        "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"
        "SELECT ?st ?s ?p ?o WHERE { GRAPH ?g { ?st a rdf:Statement ; rdf:subject ?s ;"
        " rdf:predicate ?p ; rdf:object ?o } }"
    )
    return {row["st"]: {"s": row["s"], "p": row["p"], "o": row["o"]} for row in rows}


def test_reification_records_are_content_addressed_across_stages(
    tgsparql_store: EmbeddedStore
) -> None:
    templates = Templates("reification")
    tgsparql_store.update(templates.render("record_retrieval",
                                           **retrieval_params([LIT_TRIPLE, IRI_TRIPLE])))
    tgsparql_store.update(templates.render("record_selection", **selection_params([LIT_TRIPLE])))
    lit_iri = ox.NamedNode(
        "urn:trustgraph:stmt:"
        + sha256('<http://example.org/s> <http://example.org/p> "say \\"hi\\"" .')
    )
    iri_iri = ox.NamedNode(
        "urn:trustgraph:stmt:"
        + sha256("<http://example.org/s> <http://example.org/p> <http://example.org/o> .")
    )
    assert statements_in(tgsparql_store) == {
        lit_iri: {"s": S, "p": P, "o": ox.Literal('say "hi"')},
        iri_iri: {"s": S, "p": P, "o": O},
    }
    retrieved = {q.object for q in tgsparql_store.oxigraph.quads_for_pattern(
        IDS.retrieval, ox.NamedNode(vocab.TG + "retrievedEdge"), None, GRAPH)}
    selected = {q.object for q in tgsparql_store.oxigraph.quads_for_pattern(
        IDS.edge_selection(0), ox.NamedNode(vocab.TG + "edge"), None, GRAPH)}
    assert retrieved == {lit_iri, iri_iri}
    assert selected == {lit_iri}


def test_reification_of_a_nested_triple_references_the_inner_statement(
    tgsparql_store: EmbeddedStore,
) -> None:
    inner = ox.NamedNode("urn:trustgraph:stmt:" + sha256(
        "<http://example.org/s> <http://example.org/p> <http://example.org/o> ."))
    outer = ox.NamedNode("urn:trustgraph:stmt:" + sha256(
        "<http://example.org/a> <http://example.org/b> "
        "<<( <http://example.org/s> <http://example.org/p> <http://example.org/o> )>> ."))
    tgsparql_store.update(Templates("reification").render("record_retrieval",
                                                          **retrieval_params([NESTED])))
    retrieved = {q.object for q in tgsparql_store.oxigraph.quads_for_pattern(
        IDS.retrieval, ox.NamedNode(vocab.TG + "retrievedEdge"), None, GRAPH)}
    assert retrieved == {outer}
    assert statements_in(tgsparql_store)[outer] == {"s": NESTED.subject, "p": NESTED.predicate,
                                                    "o": inner}


def test_rdf12_records_the_original_triple_term(tgsparql_store: EmbeddedStore) -> None:
    edges = [LIT_TRIPLE, NESTED, ox.Triple(S, P, ox.Literal("1867", datatype=vocab.XSD_INTEGER))]
    tgsparql_store.update(Templates("rdf12").render("record_selection", **selection_params(edges)))
    stored = [
        next(iter(tgsparql_store.oxigraph.quads_for_pattern(
            IDS.edge_selection(i), ox.NamedNode(vocab.TG + "edge"), None, GRAPH))).object
        for i in range(len(edges))
    ]
    assert stored == edges


def test_rdfstar_record_uses_quoted_triples_only() -> None:
    text = Templates("rdfstar").render("record_retrieval", **retrieval_params([LIT_TRIPLE, NESTED]))
    assert '<< <http://example.org/s> <http://example.org/p> "say \\"hi\\"" >>' in text
    assert (
        "<< <http://example.org/a> <http://example.org/b> "
        "<< <http://example.org/s> <http://example.org/p> <http://example.org/o> >> >>" in text
    )
    assert "<<(" not in text
    assert "tg:retrievedEdge" in text


# ---------------------------------------------------------------------------------------------
# every shipped template renders and parses in every dialect

EVERY_PARAM: dict[str, Any] = {
    "graph": GRAPH,
    "collection": vocab.DEFAULT_COLLECTION,
    "prologue": Sparql("PREFIX tg: <https://trustgraph.ai/ns/>"),
    "quads": Sparql("<urn:s> tg:p <urn:o> ."),
    "before": Sparql(""),
    "lexical": False,
    "session": IDS.session,
    "edge_selection": IDS.edge_selection(0),
    "fact": LIT_TRIPLE,
    "retrieval": IDS.retrieval,
    "selection": IDS.selection,
    "answer": IDS.answer,
    "document": IDS.answer_document,
    "terms": [S, O],
    "keys": ["marie curie", "radium"],
    "content": "The answer.",
    "mime_type": "text/plain",
    "sha256": sha256("The answer."),
    "title": "Answer",
    "limit": 10,
    "started": dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.timezone.utc),
    "ended": dt.datetime(2024, 1, 1, 12, 1, tzinfo=dt.timezone.utc),
    "question": "Who discovered radium?",
    "error": "the LLM failed",
    "error_contains": "timeout",
    "since": ox.Literal("2024-01-01", datatype=ox.NamedNode(XSD + "date")),
    "until": ox.Literal("2024-12-31", datatype=ox.NamedNode(XSD + "date")),
    "model": "test-model",
    "in_tokens": 812,
    "out_tokens": 95,
    "call": call_usage("test-model", 812, 95),
    "truncated": True,
    "edge_count": 2,
    "concepts": ["radium"],
    "entities": [S],
    "retrieved_edges": [LIT_TRIPLE, IRI_TRIPLE],
    "items": selection_params([LIT_TRIPLE])["items"],
    "documents": [DOCUMENT],
    "invalid_ids": 1,
    "unselected": True,
    "nodes": [S, O],
    "focus_nodes": [S, O],
    "classes": [O],
    "subjects_of": [P],
    "objects_of": [P],
    "literals": [ox.Literal("4", datatype=ox.NamedNode(XSD + "decimal"))],
    "texts": [Sparql("SELECT DISTINCT ?this ?k WHERE { ?this ?p ?o BIND(0 AS ?k) }"),
              Sparql("SELECT DISTINCT ?this ?value WHERE { ?this ?value ?o }")],
    "triple_limit": 30,
    "stems": ["radium", "birth"],
    "predicates": {P: ["birth"]},
    "seeds": [S, O],
    "neighbours": [O],
    "hubs": [O],
    "rank_whole_up_to": 100,
    "whole": True,
    "count_up_to": 2000,
    "up_to": 2000,
    "rare_uses": 10,
    "matches_up_to": 1000,
    "common_stem": 1000,
    "ranking_rule": RANKING_RULE,
    "seed_cuts": [],
    "name_groundings": [],
    "excluded": [vocab.RDFS_LABEL, ox.NamedNode(vocab.OWL + "sameAs")],
    "schema_candidates": list(vocab.WELL_KNOWN_SCHEMA_PREDICATES),
    "runs": [RunQuery(0, "edsel ford", [Probe(["edsel", "ford"])], ["work"]),
             RunQuery(1, "gwen graham", [Probe(["graham"], prefix="gwen")], [])],
    "per_probe": 50,
    "word_scan": 1001,
    "edges_up_to": 1000,
    "version": 2,
    "activity": ox.NamedNode("urn:activity:1"),
    "agent": ox.NamedNode("urn:agent:1"),
    "agent_label": "agent",
    "pages": [{"iri": ox.NamedNode("urn:page:1"), "number": 1}],
    "chunks": [{"iri": ox.NamedNode("urn:chunk:1"), "page": ox.NamedNode("urn:page:1"),
                "index": 0, "offset": 0, "length": 5}],
    "subgraphs": [{"iri": ox.NamedNode("urn:subgraph:1"), "chunk": ox.NamedNode("urn:chunk:1"),
                   "span": {"text": "hi", "offset": 0, "length": 2},
                   "triples": [LIT_TRIPLE, IRI_TRIPLE], "unsupported": None},
                  {"iri": ox.NamedNode("urn:subgraph:2"), "chunk": ox.NamedNode("urn:chunk:1"),
                   "span": None, "triples": [IRI_TRIPLE],
                   "unsupported": ox.NamedNode(vocab.TG + "EvidenceNotFound")}],
    "mentions": [{"iri": ox.NamedNode("urn:mention:1"), "chunk": ox.NamedNode("urn:chunk:1"),
                  "name": "s", "entity": S, "method": ox.NamedNode(vocab.TG + "LinkedByName"),
                  "candidates": 1}],
    "link_mode": "names",
    "candidates": [S, O],
    "anchors": [P],
    "facts": [LIT_TRIPLE, IRI_TRIPLE],
    "index_entries": [LIT_TRIPLE, IRI_TRIPLE],
    "labels": [{"term": S, "label": "s"}],
    "groups": [{"graph": None, "triples": [ox.Triple(S, P, LIT_TRIPLE), IRI_TRIPLE]},
               {"graph": GRAPH, "triples": [LIT_TRIPLE]}],
    "probe": ox.NamedNode("urn:tgsparql:doctor:probe"),
    "value": "probe",
    "subject": S,
    "predicate": P,
    "object": ox.Literal("probe"),
    "sessions": [IDS],
    "cutoff": dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.timezone.utc),
    "named": [GRAPH],
    "include_default": True,
    "cited": [IDS.edge_selection(0)],
    "citations": [{"iri": IDS.citation(0), "edge_selection": IDS.edge_selection(0),
                   "sentence": "The answer.", "offset": 0, "length": 11}],
    "invalid_citations": 0,
    "uncited_sentences": 0,
    "selected": 1,
    "entity": S,
    "offset": 100,
    "dated_sessions": [{"graph": GRAPH, "session": IDS.session, "status": "complete",
                        "started": dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.timezone.utc)}],
    "counted_selections": [{"graph": GRAPH, "selection": IDS.selection, "selected": 2}],
    "used_models": [{"graph": GRAPH, "session": IDS.session, "stage": "answer",
                     "call": call_usage("test-model", None, 95)}],
    "drifted": [{"iri": DOCUMENT, "since": None},
                {"iri": ox.NamedNode("urn:trustgraph:doc:other"),
                 "since": ox.Literal("2024-01-01T12:00:00Z", datatype=vocab.XSD_DATETIME)}],
    "session_days": [{"graph": GRAPH,
                      "started": dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.timezone.utc)}],
    "checked_answers": [{"graph": GRAPH, "answer": IDS.answer, "cited": 1, "uncited": None}],
    "uncited_sessions": [{"graph": GRAPH, "session": IDS.session,
                          "started": dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.timezone.utc)}],
    "rollup": ROLLUP,
    "format": 1,
    "through": ox.Literal("2024-01-01", datatype=ox.NamedNode(XSD + "date")),
    "computed": dt.datetime(2024, 1, 2, 1, 0, tzinfo=dt.timezone.utc),
    "day_figures": [{"iri": rollup_day_iri(dt.date(2024, 1, 1)),
                     "day": ox.Literal("2024-01-01", datatype=ox.NamedNode(XSD + "date")),
                     "sessions": 2, "complete": 1, "failed": 1, "uncited": 0}],
    "usage_figures": [{"iri": rollup_usage_iri("answer", ox.NamedNode("urn:trustgraph:llm:m")),
                       "llm": ox.NamedNode("urn:trustgraph:llm:m"), "stage": "answer",
                       "calls": 2, "in_tokens": 812, "out_tokens": 95}],
    "document_figures": [{"iri": rollup_document_iri(DOCUMENT), "document": DOCUMENT,
                          "citations": 3, "sessions": 2}],
    "fact_figures": [{"iri": rollup_fact_iri(LIT_TRIPLE), "edge": LIT_TRIPLE, "selections": 2,
                      "sessions": 1, "rank": 1}],
    "sourced_selections": [{"graph": GRAPH, "selection": IDS.selection,
                            "edges": [{"iri": IDS.edge_selection(0), "documents": [DOCUMENT]}],
                            "documents": [DOCUMENT]}],
}

def every_param(name: str, **changed: Any) -> dict[str, Any]:
    """The parameters template `name` declares, from EVERY_PARAM, some `changed`."""
    return {key: {**EVERY_PARAM, **changed}[key] for key in header(name).parameters}


def is_query(name: str) -> bool:
    return header(name).form != "update"


@pytest.mark.parametrize("dialect", ["rdf12", "reification"])
@pytest.mark.parametrize("name", TEMPLATES)
def test_every_template_renders_to_sparql_that_pyoxigraph_runs(name: str, dialect: str) -> None:
    text = Templates(dialect).render(name, **every_param(name))
    store = ox.Store()
    if is_query(name):
        result = store.query(text)
        assert isinstance(result, (ox.QuerySolutions, ox.QueryBoolean, ox.QueryTriples))
    else:
        store.update(text)


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_template_renders_in_the_rdfstar_dialect(name: str) -> None:
    text = Templates("rdfstar").render(name, **every_param(name))
    assert "<<(" not in text
    if "<<" in text:  # a quoted triple given (an edge, a model's usage), or a pattern of variables
        assert ("<< <http://example.org/s> <http://example.org/p>" in text or "<< ?" in text
                or "<< <urn:trustgraph:llm:test-model> " in text)
    else:
        store = ox.Store()
        if is_query(name):
            store.query(text)
        else:
            store.update(text)


@pytest.mark.parametrize("template", ["record_selection", "record_answer"])
def test_usage_is_optional_in_records(template: str) -> None:
    params = every_param(template, model=None, in_tokens=None, out_tokens=None, call=None)
    text = Templates().render(template, **params)
    assert "tg:llmModel" not in text and "tg:inToken" not in text and "tg:modelName" not in text
    ox.Store().update(text)


def test_rendered_updates_store_exactly_the_quads_of_their_block(
    tgsparql_store: EmbeddedStore
) -> None:
    templates = Templates()
    for name in ["record_session", "record_retrieval", "record_selection", "record_answer"]:
        tgsparql_store.update(templates.render(name, **every_param(name)))
    expected = set()
    for name in ["record_session", "record_retrieval", "record_selection", "record_answer"]:
        prologue = templates.render_block(name, "prologue", **every_param(name))
        quads = templates.render_block(name, "quads", **every_param(name))
        expected |= set(ox.parse(prologue + quads, ox.RdfFormat.TRIG))
    assert set(tgsparql_store.oxigraph.quads_for_pattern(None, None, None, None)) == expected
    edge = ox.NamedNode(vocab.TG + "retrievedEdge")
    assert {q.object for q in expected if q.predicate == edge} == {LIT_TRIPLE, IRI_TRIPLE}
    assert ox.Quad(IDS.session, ox.NamedNode(vocab.TG + "query"),
                   ox.Literal("Who discovered radium?"), GRAPH) in expected


# ---------------------------------------------------------------------------------------------
# property tests: hostile text through the filters into the store

FRAGMENTS = [
    '"', '"""', "'", "'''", "\\", "\\\\", "\\u0022", "\\n", "\\\"", "\n", "\r", "\t", "}", "{",
    ">", "<", "<<(", ")>>", "#", " . ", ";", "\x00", "\x01", "\x08", "\x0b", "\x0c", "\x1f",
    "\x7f", "\x85", "\u2028", "\u2029", "\ufeff", "😀", "👩‍🔬", "é", "e\u0301", "\U0010fffd",
    '" . } ; INSERT DATA { <urn:evil> <urn:evil> <urn:evil> } #',
    '"} ; DROP ALL ; INSERT DATA { GRAPH <urn:g> { <urn:x> <urn:y> "',
    "> <urn:evil> <urn:evil",
]
NO_SURROGATES = st.characters(exclude_categories=("Cs",))
HOSTILE = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(NO_SURROGATES, max_size=20)), max_size=12
).map("".join)
SETTINGS = settings(max_examples=150, deadline=None)

INSERT_LITERAL = "INSERT DATA { GRAPH <urn:g> { <urn:s> <urn:p> {{ x|literal }} } }"
INSERT_LANG = "INSERT DATA { GRAPH <urn:g> { <urn:s> <urn:p> {{ x|literal(lang) }} } }"
INSERT_IRI = "INSERT DATA { GRAPH <urn:g> { <urn:s> <urn:p> {{ x|iri }} } }"


def all_quads(store: EmbeddedStore) -> list[ox.Quad]:
    return list(store.oxigraph.quads_for_pattern(None, None, None, None))


@SETTINGS
@given(HOSTILE)
@example('"""\\"}>\n\x00😀')
@example("\\u0022 } INSERT DATA { <urn:a> <urn:b> <urn:c> }")
def test_any_text_literal_round_trips_byte_exactly_as_the_only_quad(text: str) -> None:
    store = open_store()
    store.update(snippet(INSERT_LITERAL, x=text))
    quads = all_quads(store)
    assert len(quads) == 1
    (quad,) = quads
    assert (quad.subject, quad.predicate, quad.graph_name) == (
        ox.NamedNode("urn:s"), ox.NamedNode("urn:p"), ox.NamedNode("urn:g"))
    assert isinstance(quad.object, ox.Literal)
    assert quad.object.datatype == vocab.XSD_STRING
    assert quad.object.value.encode("utf-8") == text.encode("utf-8")


LANGUAGE_TAGS = st.from_regex(r"[a-z]{2,3}(-[A-Z]{2})?", fullmatch=True) | st.sampled_from(
    ["en-GB", "zh-Hant-TW", "sr-Latn", "de-CH-1996", "x-private", "EN-us"]
)


@SETTINGS
@given(HOSTILE, LANGUAGE_TAGS)
def test_any_language_tagged_literal_round_trips_byte_exactly(text: str, tag: str) -> None:
    store = open_store()
    store.update(snippet(INSERT_LANG, x=text, lang=tag))
    (quad,) = all_quads(store)
    assert quad.object.value.encode("utf-8") == text.encode("utf-8")
    assert quad.object.language == tag.lower()


@st.composite
def with_surrogate(draw: st.DrawFn) -> tuple[str, int, int]:
    prefix = draw(HOSTILE)
    surrogate = draw(st.characters(categories=("Cs",)))
    suffix = draw(st.text(max_size=20))
    return prefix + surrogate + suffix, len(prefix), ord(surrogate)


@SETTINGS
@given(with_surrogate())
def test_text_with_a_surrogate_is_always_rejected_and_never_stored(
    case: tuple[str, int, int]
) -> None:
    text, position, code = case
    store = open_store()
    for source, params in [(INSERT_LITERAL, {}), (INSERT_LANG, {"lang": "en"})]:
        with pytest.raises(TemplateError) as raised:
            store.update(snippet(source, x=text, **params))
        assert f"U+{code:04X} at position {position}" in str(raised.value)
    with pytest.raises(TemplateError, match=re.escape(f"U+{code:04X} at position {position + 6}")):
        store.update(snippet(INSERT_IRI, x="urn:x:" + text))
    with pytest.raises(TemplateError, match=re.escape(f"U+{code:04X} at position {position}")):
        store.update(Templates().render("record_failure", graph=GRAPH, session=IDS.session,
                                        error=text, ended=EVERY_PARAM["ended"],
                                        started=EVERY_PARAM["started"]))
    assert all_quads(store) == []


SAFE_IRI_CHARS = st.characters(
    categories=("Lu", "Ll", "Lo", "Nd"), include_characters="-._~!$&'()*+,;=:@/"
)


@SETTINGS
@given(st.text(SAFE_IRI_CHARS, min_size=1, max_size=60))
def test_iris_of_safe_characters_round_trip_exactly(tail: str) -> None:
    iri = "urn:x:" + tail
    store = open_store()
    store.update(snippet(INSERT_IRI, x=iri))
    (quad,) = all_quads(store)
    assert quad.object == ox.NamedNode(iri)
    assert quad.object.value.encode("utf-8") == iri.encode("utf-8")


@SETTINGS
@given(HOSTILE)
@example("a> <urn:evil> <urn:evil")
@example("a> } ; DROP ALL ; INSERT DATA { <urn:e> <urn:e> <urn:e")
def test_a_hostile_iri_is_either_rejected_or_stored_as_exactly_itself(tail: str) -> None:
    iri = "urn:x:" + tail
    store = open_store()
    try:
        text = snippet(INSERT_IRI, x=iri)
    except TemplateError as error:
        assert str(error).startswith(f"invalid IRI {iri!r}")
        return
    store.update(text)
    (quad,) = all_quads(store)
    assert quad.object == ox.NamedNode(iri)


@SETTINGS
@given(question=HOSTILE, error=HOSTILE)
def test_hostile_text_in_real_records_adds_only_the_intended_triples(
    question: str, error: str
) -> None:
    store = open_store()
    templates = Templates()
    started = EVERY_PARAM["started"]
    store.update(templates.render("record_session", graph=GRAPH, session=IDS.session,
                                  question=question, started=started))
    store.update(templates.render("record_failure", graph=GRAPH, session=IDS.session,
                                  error=error, ended=EVERY_PARAM["ended"], started=started))
    tg = vocab.TG
    expected = {
        (vocab.RDF_TYPE, ox.NamedNode(vocab.PROV + "Activity")),
        (vocab.RDFS_LABEL, ox.Literal("GraphRAG query session")),
        (ox.NamedNode(vocab.PROV + "startedAtTime"),
         ox.Literal("2024-01-01T12:00:00Z", datatype=vocab.XSD_DATETIME)),
        (ox.NamedNode(tg + "query"), ox.Literal(question)),
        (ox.NamedNode(tg + "status"), ox.Literal("failed")),
        (ox.NamedNode(tg + "error"), ox.Literal(error)),
        (ox.NamedNode(vocab.PROV + "endedAtTime"),
         ox.Literal("2024-01-01T12:01:00Z", datatype=vocab.XSD_DATETIME)),
        (ox.NamedNode(tg + "day"), ox.Literal("2024-01-01", datatype=vocab.XSD_DATE)),
        (ox.NamedNode(tg + "failedDay"), ox.Literal("2024-01-01", datatype=vocab.XSD_DATE)),
    }
    day = ox.Quad(day_iri(started.date()), ox.NamedNode(tg + "date"),
                  ox.Literal("2024-01-01", datatype=vocab.XSD_DATE), GRAPH)
    quads = all_quads(store)
    assert day in quads
    session_quads = [q for q in quads if q != day]
    assert len(session_quads) == 9
    assert all(q.subject == IDS.session and q.graph_name == GRAPH for q in session_quads)
    assert {(q.predicate, q.object) for q in session_quads} == expected


def test_the_day_of_a_session_is_the_utc_date_of_its_start() -> None:
    late_west = dt.datetime(2024, 3, 1, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-2)))
    assert snippet("{{ x|utc_day }}", x=late_west) == '"2024-03-02"^^<http://www.w3.org/2001/XMLSchema#date>'
    with pytest.raises(TemplateError, match="a day is taken from a dateTime with a time zone"):
        snippet("{{ x|utc_day }}", x=dt.datetime(2024, 3, 1, 23, 30))


# ---------------------------------------------------------------------------------------------
# every template the code names exists, and every template is named


QUERIES = Path(str(files("tgsparql.queries")))
FOLDERS = {p.name for p in QUERIES.iterdir() if p.is_dir() and p.name != "__pycache__"}
RENDERING = {"render", "render_block", "insert_data", "_render", "prepare", "kept_prepared"}
"""Calls whose first argument, given as a string, names a template; and `run`'s and `stream`'s,
given as a string alone."""


def template_files() -> set[str]:
    """Every template in `queries/`, private includes too, as the code names it."""
    return {path.relative_to(QUERIES).with_suffix("").as_posix() for path in QUERIES.rglob("*.rq")}


def names_in_code(source: str) -> set[str]:
    """The template names a module's code writes: a string under one of `queries/`' folders
    (`"validation/batch"`), the first argument of a rendering call, an `insert_update` that
    runs another template `before`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            folder, _, rest = node.value.partition("/")
            if folder in FOLDERS and re.fullmatch(r"_?[a-z][a-z0-9_]*", rest):
                found.add(node.value)
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
            node.func, "id", "")
        named = node.args[:1] if callee in RENDERING else []
        if _named(node, {"run", "stream"}) is not None:  # store.run("name"), not pool.run(job)
            named = node.args[:1]
        named += [k.value for k in node.keywords if callee == "insert_update" and k.arg == "before"]
        found |= {c.value for value in named if not isinstance(value, ast.JoinedStr)
                  for c in ast.walk(value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return found


def names_in_templates() -> set[str]:
    """The templates other templates include, import or extend."""
    env = jinja2.Environment()
    return {
        referenced.removesuffix(".rq")
        for path in QUERIES.rglob("*.rq")
        for referenced in jinja2.meta.find_referenced_templates(env.parse(path.read_text()))
        if referenced is not None
    }


def test_the_scanner_finds_the_names_a_module_writes() -> None:
    source = '''
store.templates.render("ground", x=1)
templates.render_block(name, "quads")
Templates().render(f"_trace/{name}")
templates.insert_update(parts, before="remove" if replaced else None)
store.run("label_index_clear", version=2)
pool.run(saved_job("/queries/"))
rows = _session_rows(store, ids, "_trace/session_trace")
plain = ["text/plain", "bi/", "trace/x.rq", "ground"]
'''
    assert names_in_code(source) == {"ground", "remove", "_trace/session_trace",
                                     "label_index_clear"}


def test_every_template_the_code_names_exists_and_every_template_is_named() -> None:
    package = Path(str(files("tgsparql")))
    named = set().union(*(names_in_code(path.read_text()) for path in package.rglob("*.py")))
    shipped = template_files()
    assert sorted(named - shipped) == []
    used = named | names_in_templates()
    # bi/: each saved query is served by its name (tgsparql.serve.saved); trace/: the saved
    # form of the _trace/ template of the same name (trace.saved_form), served as a folder.
    used |= {f"bi/{name}" for name in saved_queries()}
    used |= {f"trace/{name.removeprefix('_trace/')}" for name in used if name.startswith("_trace/")}
    assert sorted(shipped - used) == []


# ---------------------------------------------------------------------------------------------
# every template is taken as the form its header declares


ANSWERS = {"rows": "select", "boolean": "ask", "triples": "construct"}
"""What a caller reads of `run`'s answer, and the form that answers it."""
VERBS = {"select": "select", "ask": "ask", "construct": "construct", "update": "update"}
"""A store's verbs, and the form each runs."""


def _named(node: ast.AST, callees: set[str]) -> str | None:
    """The template a call names as a string first argument, when it calls one of `callees`."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in callees and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


def forms_in_code(source: str) -> set[tuple[str, str]]:
    """(template, form) for each caller that takes a template's answer as one form: the answer
    of `run` read as rows, a boolean or triples, or a rendering given straight to a store's
    verb. A bare `run` takes no answer, so any form serves it."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ANSWERS:
            name = _named(node.value, {"run"})
            if name is not None:
                found.add((name, ANSWERS[node.attr]))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in VERBS and node.args):
            name = _named(node.args[0], {"render"})
            if name is not None:
                found.add((name, VERBS[node.func.attr]))
    return found


def test_the_form_scanner_finds_how_callers_take_answers() -> None:
    source = '''
rows = store.run("fetch_labels", terms=unique).rows
if store.run("ingest_document_exists", document=d).boolean: pass
triples = store.run("explain_session", graph=g).triples
store.run("label_index_clear", version=2)
store.update(store.templates.render("testing_clear"))
store.ask(self.templates.render("validation/any_lexical"), default_graph="union")
store.select(query)
'''
    assert forms_in_code(source) == {
        ("fetch_labels", "select"), ("ingest_document_exists", "ask"),
        ("explain_session", "construct"), ("testing_clear", "update"),
        ("validation/any_lexical", "ask")}


def test_every_template_is_taken_as_the_form_its_header_declares() -> None:
    roots = [Path(str(files("tgsparql"))), Path(__file__).parents[2] / "benchmarks"]
    used = set().union(*(forms_in_code(path.read_text())
                         for root in roots for path in root.rglob("*.py")))
    assert len(used) > 30  # the scanner sees the callers
    assert sorted((name, form, header(name).form) for name, form in used
                  if header(name).form != form) == []


def test_an_answer_read_as_another_form_names_the_template_and_its_form(
    tgsparql_store: EmbeddedStore
) -> None:
    assert tgsparql_store.run("testing_clear") == Answer("testing_clear", "update", None)
    with pytest.raises(TypeError, match="'testing_clear' is an update, which answers nothing, "
                                        "not rows"):
        tgsparql_store.run("testing_clear").rows
    assert tgsparql_store.run("serve/endpoint_reachable").boolean is True
    with pytest.raises(TypeError, match="'serve/endpoint_reachable' is an ASK, which answers a "
                                        "boolean, not triples"):
        tgsparql_store.run("serve/endpoint_reachable").triples


class _VerbLog(WithTemplates):
    """A store of a dialect pyoxigraph cannot parse, noting which verb each text was sent to."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.verbs: list[str] = []

    def select(self, query: str, **_: Any) -> list[Solution]:
        self.verbs.append("select")
        return []

    def update(self, update: str) -> None:
        self.verbs.append("update")


def test_a_template_runs_as_its_form_in_a_dialect_pyoxigraph_cannot_parse() -> None:
    """An RDF-star quoted triple in a pattern is no RDF 1.2, which pyoxigraph parses: the form
    is the header's, so the SELECT goes to the store's select, not to its update endpoint."""
    fact = ox.Triple(ox.NamedNode("http://example.org/s"), ox.NamedNode("http://example.org/p"),
                     ox.Literal("o"))
    rendered = Templates("rdfstar").render("_trace/fact_sources", facts=[fact])
    with pytest.raises(SyntaxError):
        query_form(rendered)
    store = _VerbLog("rdfstar")
    assert store.run("_trace/fact_sources", facts=[fact]).rows == []
    assert store.run("_trace/fact_sources", facts=[fact]).rows == []
    assert store.verbs == ["select", "select"]


# ---------------------------------------------------------------------------------------------
# headers: each template declares its form and parameters, and they are what its text has


GLOBALS = {"graphs", "dialect"} | set(_environment().globals)
"""What every rendering is given besides a template's parameters."""


def used_variables(name: str, seen: set[str] | None = None) -> set[str]:
    """The variables template `name` reads from its caller: those its text and the templates it
    includes or imports use without setting them (a name set anywhere, a loop's or a macro's,
    is its own)."""
    seen = set() if seen is None else seen
    if name in seen:
        return set()
    seen.add(name)
    tree = _environment().parse(split_header((QUERIES / name).read_text(encoding="utf-8"))[1])
    own = {node.name for node in tree.find_all(jinja2.nodes.Name)
           if node.ctx in ("store", "param")}
    own |= {node.target for node in tree.find_all(jinja2.nodes.Import)}
    own |= {alias if isinstance(alias, str) else alias[1]
            for node in tree.find_all(jinja2.nodes.FromImport) for alias in node.names}
    used = set(jinja2.meta.find_undeclared_variables(tree)) - own
    for referenced in jinja2.meta.find_referenced_templates(tree):
        assert referenced is not None, f"{name} includes a template it computes"
        used |= used_variables(referenced, seen)
    return used - GLOBALS


ALL_TEMPLATES = sorted(template_files())
"""Every `.rq` of queries/, partials and saved trace queries too."""


def test_used_variables_follow_includes_and_leave_out_what_a_template_sets() -> None:
    assert used_variables("_trace/session_sources.rq") == {"graph", "session"}
    assert used_variables("retrieve_subgraph.rq") == {
        "nodes", "hubs", "excluded", "stems", "predicates", "neighbours", "matches_up_to"}
    assert used_variables("_union.rq") == set()


@pytest.mark.parametrize("name", ALL_TEMPLATES)
def test_each_header_declares_the_parameters_the_template_uses(name: str) -> None:
    assert set(header(name).parameters) == used_variables(f"{name}.rq")


def test_every_template_has_a_header_and_the_text_below_it_has_none() -> None:
    for name in ALL_TEMPLATES:
        lines, body = split_header((QUERIES / f"{name}.rq").read_text(encoding="utf-8"))
        assert lines and lines[0].startswith("# form: "), name
        assert not re.search(r"^# (form|param|title|description)\b", body, re.MULTILINE), name


class _Recording(Templates):
    """Templates that note each rendering's parameters, by template."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, dict[str, Any]] = {}

    def render(self, name: str, /, **params: Any) -> str:
        self.calls.setdefault(name, params)
        return super().render(name, **params)


ASK_VALIDATOR = """
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ex: <http://example.org/> .
ex:C a sh:ConstraintComponent ; sh:parameter [ sh:path ex:k ] ;
    sh:validator [ sh:ask "ASK { FILTER($value != $k) }" ] .
ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:p ; ex:k 1 ] .
"""
"""A SPARQL-based constraint component with an ASK validator, which no bundled shape has."""


def compiler_params() -> dict[str, dict[str, Any]]:
    """Parameters the validation compiler renders its templates with, from the bundled shapes
    and an ASK validator, over every focus node and a few, with and without records of
    literals."""
    recording = _Recording()
    for shapes in (Shapes.bundled("rdf12"), Shapes.from_text(ASK_VALIDATOR)):
        for scoped in (False, True):
            for lexical in (False, True):
                list(compile_shapes(shapes, recording, scoped=scoped, lexical=lexical))
    return recording.calls


COMPILED = compiler_params()


def sample_params(name: str) -> dict[str, Any]:
    """Parameters to render template `name` with: EVERY_PARAM's, or the validation compiler's."""
    declared = header(name).parameters
    if set(declared) <= set(EVERY_PARAM):
        return every_param(name)
    assert name in COMPILED, f"no parameters to render {name} with: add them to EVERY_PARAM"
    return COMPILED[name]


def rendered_form(text: str) -> str:
    """The form of a rendering, as pyoxigraph parses it on an empty store: a query's, or an
    update's, which then runs (and so parses) there."""
    try:
        result = ox.Store().query(text)
    except SyntaxError:
        ox.Store().update(text)
        return "update"
    form = result_form(result)
    return "construct" if form == "graph" else form


@pytest.mark.parametrize("name", [name for name in ALL_TEMPLATES
                                  if header(name).form != "partial"])
def test_each_header_declares_the_form_of_its_rendering(name: str) -> None:
    assert rendered_form(Templates().render(name, **sample_params(name))) == header(name).form


def test_the_compiler_renders_its_templates_through_their_headers() -> None:
    assert {"validation/_constraint", "validation/_focus_nodes", "validation/_sparql_ask",
            "validation/_sparql_prefixes", "validation/_path"} <= set(COMPILED)


NO_TYPE_TAKES = 1.5
"""A value no parameter type accepts."""


@pytest.mark.parametrize("name", [name for name in ALL_TEMPLATES if header(name).parameters])
def test_a_call_missing_a_parameter_adding_one_or_of_another_type_fails_naming_it(
    name: str
) -> None:
    params = sample_params(name)
    templates = Templates()
    for parameter in header(name).parameters.values():
        missing = {k: v for k, v in params.items() if k != parameter.name}
        with pytest.raises(TemplateError, match=re.escape(
                f"{name}: missing parameter {parameter.name!r} ({parameter.type})")):
            templates.render(name, **missing)
        with pytest.raises(TemplateError, match=re.escape(
                f"{name}: parameter {parameter.name!r} must be of type {parameter.type}, not")):
            templates.render(name, **{**params, parameter.name: NO_TYPE_TAKES})
    with pytest.raises(TemplateError, match=re.escape(f"{name}: unknown parameter 'colour'")):
        templates.render(name, **params, colour="red")


def test_a_template_without_parameters_refuses_any() -> None:
    with pytest.raises(TemplateError, match="testing_clear: unknown parameter 'graph'; it takes "
                                            "no parameters"):
        Templates().render("testing_clear", graph=GRAPH)


@pytest.mark.parametrize(("spelling", "good", "bad"), [
    ("iri", [S, "urn:x"], [None, 1, ox.Literal("x")]),
    ("text", ["", "x"], [None, 1, S]),
    ("integer", [0, -3], [True, 1.0, "1", None]),
    ("boolean", [True, False], [0, None]),
    ("datetime", [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)],
     [dt.datetime(2024, 1, 1), dt.date(2024, 1, 1)]),
    ("date", [ox.Literal("2024-01-01", datatype=vocab.XSD_DATE)], ["2024-01-01", ox.Literal("x")]),
    ("triple", [IRI_TRIPLE], [S]),
    ("term", [S, ox.Literal("x"), IRI_TRIPLE], ["urn:x", ox.BlankNode()]),
    ("collection", [vocab.DEFAULT_COLLECTION, vocab.Collection("a.b-c")],
     ["explainability", "a.b-c", 1]),
    ("fragment", [Sparql("?x")], ["?x"]),
    ("record", [{"iri": S}, (1, 2), IDS], ["x", 1, None]),
    ("list of iris", [[], [S, "urn:x"], (S,)], ["urn:x", [1], None, iter([S])]),
    ("list of iris or none", [None, [S]], [[None]]),
    ("map of iris to lists of texts", [{}, {P: ["birth"]}], [{P: "birth"}, {1: []}, [P]]),
    ("integer or none", [None, 1], ["1"]),
])
def test_a_parameter_type_accepts_its_values_alone(spelling: str, good: list[Any],
                                                    bad: list[Any]) -> None:
    kind = parse_type(spelling)
    assert str(kind) == spelling
    assert all(kind.accepts(value) for value in good)
    assert not any(kind.accepts(value) for value in bad)


@pytest.mark.parametrize("spelling", ["iris", "list of iri", "uri", "map of iris", "list of",
                                      "integer or none or none"])
def test_an_unknown_parameter_type_is_refused(spelling: str) -> None:
    with pytest.raises(TemplateError, match="unknown parameter type"):
        parse_type(spelling)


def test_a_store_runs_a_template_by_the_verb_its_header_declares_checking_the_call_first(
    tgsparql_store: EmbeddedStore
) -> None:
    log = _VerbLog("rdf12")
    with pytest.raises(TemplateError, match="fetch_labels: missing parameter 'terms'"):
        log.run("fetch_labels")
    with pytest.raises(TemplateError, match="_prefixes is a partial"):
        log.run("_prefixes")
    with pytest.raises(TemplateError, match="testing_clear is an update: it takes no data graph"):
        log.run("testing_clear", default_graph="union")
    assert log.verbs == []
    assert tgsparql_store.run("validation/any_triple", default_graph="union").boolean is False
    with pytest.raises(TemplateError, match="testing_clear is no SELECT"):
        tgsparql_store.stream("testing_clear")
    assert list(tgsparql_store.stream("label_index_pending")) == []


# ---------------------------------------------------------------------------------------------
# prepared texts: rendered once with stand-ins, filled in for each run


SESSION_VALUES = ("session", "retrieval", "selection", "answer", "document")


def tokens(text: str) -> list[str]:
    return text.split()


def session_values(ids: SessionIds) -> dict[str, ox.NamedNode]:
    return dict(zip(SESSION_VALUES, (ids.session, ids.retrieval, ids.selection, ids.answer,
                                     ids.answer_document)))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_prepared_text_filled_in_is_the_text_rendered_with_the_values(dialect: Dialect) -> None:
    templates = Templates(dialect)
    values = session_values(SessionIds.new())
    prepared = templates.prepare("session_nodes", **{name: stand_in(name) for name in values})
    assert prepared.fill(**values) == templates.render("session_nodes", **values)

    edge = ox.Triple(ox.NamedNode("http://example.org/a"), ox.NamedNode("http://example.org/p"),
                     ox.Literal("x"))
    nodes = [ox.NamedNode("http://example.org/a"), edge, ox.Literal("2", datatype=vocab.XSD_DATE)]
    targets: dict[str, Any] = {"classes": [ox.NamedNode("http://example.org/C")],
                               "subjects_of": None,
                               "objects_of": [ox.NamedNode("http://example.org/p")]}
    prepared = templates.prepare("validation/_targeted", focus_nodes=[stand_in("focus_nodes")],
                                 **targets)
    for chosen in (nodes, nodes[:1], []):  # the same text, but for the blanks of an empty list
        assert tokens(prepared.fill(focus_nodes=chosen)) == tokens(templates.render(
            "validation/_targeted", focus_nodes=chosen, **targets))

    texts = [Sparql("SELECT ?this WHERE { ?this ?p ?o }"), Sparql('SELECT ?this { BIND("}" AS ?x) }')]
    prepared = templates.prepare("validation/batch",
                                 texts=[Sparql(str(stand_in(f"text{i}"))) for i in range(2)])
    assert prepared.fill(text0=texts[0], text1=texts[1]) == templates.render(
        "validation/batch", texts=texts)


def test_a_prepared_text_takes_terms_only_and_each_stand_in_once() -> None:
    templates = Templates("rdf12")
    values = session_values(SessionIds.new())
    prepared = templates.prepare("session_nodes", **{name: stand_in(name) for name in values})
    with pytest.raises(TemplateError, match="not an RDF term: str"):
        prepared.fill(**{**values, "session": "urn:trustgraph:session:x> } DROP ALL #"})
    with pytest.raises(TemplateError, match="no value for the stand-in 'answer'"):
        prepared.fill(**{name: value for name, value in values.items() if name != "answer"})
    # a value that looks like a stand-in is written as it is, never filled in again
    text = prepared.fill(**{**values, "session": stand_in("answer")})
    assert f"<{STAND_IN}answer>" in text and str(values["answer"]) in text

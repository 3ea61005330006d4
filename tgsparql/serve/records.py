"""Query solutions as records: one JSON object per row, with typed values.

SPARQL JSON results nest each value in a term object (`{"type": "literal", "value": "3",
"datatype": "…#integer"}`), which pandas and BI tools read as a column of dictionaries. Records
are what they read directly: `{"day": "2024-05-01", "sessions": 3}`. Numbers are JSON numbers,
booleans JSON booleans, dates and times their ISO 8601 lexical forms (as RDF writes them), IRIs
their text, an unbound variable null; every row has every variable, so the columns are stable.
A literal whose lexical form is not of its datatype (`"x"^^xsd:integer`) stays a string, and a
double with no JSON number (NaN, INF) becomes null.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.serve.sparql import Answer, ProtocolError, Result, capped

INTEGERS = frozenset(vocab.XSD + name for name in (
    "integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
    "negativeInteger", "nonPositiveInteger", "unsignedInt", "unsignedLong", "unsignedShort",
    "unsignedByte"))
REALS = frozenset(vocab.XSD + name for name in ("decimal", "double", "float"))
BOOLEAN = vocab.XSD + "boolean"
SHAPES = {
    "ndjson": "application/x-ndjson; charset=utf-8",
    "objects": "application/json; charset=utf-8",
}
"""`ndjson`: one object a line (`pd.read_json(url, lines=True)`); `objects`: one JSON array."""


def serialize_records(result: Result, shape: str, max_results: int) -> Answer:
    """A SELECT result as records, refusing (503) more than `max_results` rows."""
    if not isinstance(result, ox.QuerySolutions):
        raise ProtocolError(406, "records are for SELECT results; ask for json, csv or tsv")
    variables = [variable.value for variable in result.variables]
    rows = [record(variables, row) for row in capped(result, max_results, "results")]
    if shape == "ndjson":
        body = "".join(_json(row) + "\n" for row in rows)
    else:
        body = "[" + ",\n".join(_json(row) for row in rows) + "]\n"
    return Answer(200, SHAPES[shape], body.encode("utf-8"))


def record(variables: list[str], row: ox.QuerySolution) -> dict[str, Any]:
    return {name: typed(row[name]) for name in variables}


def typed(term: Any) -> Any:
    """The JSON value of one RDF term."""
    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return term.value
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    if isinstance(term, ox.Triple):
        return f"<<( {term.subject} {term.predicate} {term.object} )>>"
    datatype = term.datatype.value
    text = term.value
    try:
        if datatype in INTEGERS:
            return int(text.strip())
        if datatype in REALS:
            number = float(text.strip())
            if not math.isfinite(number):
                return None
            return int(number) if datatype == vocab.XSD + "decimal" and number.is_integer() \
                and "." not in text else number
    except ValueError:
        return text
    if datatype == BOOLEAN and text.strip() in ("true", "1", "false", "0"):
        return text.strip() in ("true", "1")
    return text


def _json(value: Any) -> str:
    """One line of JSON, whatever line splitter reads it: U+0085, U+2028 and U+2029, which
    some split lines at, are escaped like the control characters."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    return text.translate(_LINE_BREAKS)


_LINE_BREAKS = {ord(char): f"\\u{ord(char):04x}" for char in "\x85\u2028\u2029"}

"""What each query template declares of itself in its first lines, SPARQL comments any tool
skips: its form and its typed parameters (`Header`), read once per template, so that a call is
checked before anything renders and a store knows which of its verbs runs a template.

Kept apart from the rendering (tgsparql.rdf.templates), which loads it when it first renders: a
process that only fills texts kept on disk (a validator read back by `validate --session`)
reads no header.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, cast, get_args

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.templates import Sparql, package_folder
from tgsparql.rdf.terms import TemplateError

Form = Literal["select", "ask", "construct", "update", "partial"]
"""What a template is: a query of one of three forms, an update, or a partial that other
templates include or import (or that code renders to compose a text) and nothing runs."""

FORMS: tuple[Form, ...] = get_args(Form)


_BASES: dict[str, Callable[[Any], bool]] = {
    "iri": lambda value: isinstance(value, (str, ox.NamedNode)),
    "text": lambda value: isinstance(value, str),
    "literal": lambda value: isinstance(value, ox.Literal),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "boolean": lambda value: isinstance(value, bool),
    "datetime": lambda value: isinstance(value, dt.datetime) and value.tzinfo is not None,
    "date": lambda value: isinstance(value, ox.Literal) and value.datatype == vocab.XSD_DATE,
    "triple": lambda value: isinstance(value, ox.Triple),
    "term": lambda value: isinstance(value, (ox.NamedNode, ox.Literal, ox.Triple)),
    "collection": lambda value: isinstance(value, vocab.Collection),
    "fragment": lambda value: isinstance(value, Sparql),
    "record": lambda value: not isinstance(value, (str, bytes, int, float)),
}
"""The types a parameter may have, each with what it accepts: `iri`, a string or NamedNode the
`iri` filter renders; `text`, a string the `literal` filter renders; `literal`, an RDF literal;
`integer`, `boolean`; `datetime`, with a time zone; `date`, an xsd:date literal; `triple`, a
triple the `triple` and `term` filters render in the dialect; `term`, an IRI, literal or triple
the `term` filter renders; `collection`, a `Collection` (the `explainability_graph` filter
gives its graph); `fragment`, SPARQL text a template or filter made (`Sparql`); `record`, an
object whose fields the template reads, each through a filter."""


@dataclass(frozen=True)
class ParameterType:
    """A base type, a list of a type, or a map of a type to a type; any of them `or none`."""

    spelling: str = field(compare=False)
    base: str
    items: ParameterType | None = None
    keys: ParameterType | None = None
    or_none: bool = False

    def accepts(self, value: Any) -> bool:
        if value is None:
            return self.or_none
        if self.base == "list":
            assert self.items is not None
            return (isinstance(value, (Sequence, frozenset, set))
                    and not isinstance(value, (str, bytes))
                    and all(self.items.accepts(item) for item in value))
        if self.base == "map":
            assert self.items is not None and self.keys is not None
            return isinstance(value, Mapping) and all(
                self.keys.accepts(key) and self.items.accepts(item) for key, item in value.items())
        return _BASES[self.base](value)

    def __str__(self) -> str:
        return self.spelling


def parse_type(text: str, *, plural: bool = False) -> ParameterType:
    """`iri`, `list of iris`, `map of iris to lists of texts`, `integer or none` ..."""
    spelling = text
    or_none = text.endswith(" or none")
    text = text.removesuffix(" or none")
    for word in ("list", "map"):
        prefix = f"{word}s of " if plural else f"{word} of "
        if text.startswith(prefix):
            rest = text[len(prefix):]
            if word == "list":
                return ParameterType(spelling, "list", parse_type(rest, plural=True),
                                     or_none=or_none)
            keys, to, values = rest.partition(" to ")
            if not to:
                break
            return ParameterType(spelling, "map", parse_type(values, plural=True),
                                 parse_type(keys, plural=True), or_none)
    base = text.removesuffix("s") if plural else text
    if base not in _BASES or (plural and not text.endswith("s")):
        raise TemplateError(f"unknown parameter type {spelling!r}: a type is one of "
                            f"{', '.join(_BASES)}, a list or map of them, or one `or none`")
    return ParameterType(spelling, base, or_none=or_none)


@dataclass(frozen=True)
class Parameter:
    """One parameter a template declares. `default`, `minimum` and `maximum` are for the saved
    queries, whose parameters come from a URL (tgsparql.serve.saved)."""

    name: str
    type: ParameterType
    description: str = ""
    default: Any = None
    minimum: int | None = None
    maximum: int | None = None


@dataclass(frozen=True)
class Header:
    """What a template declares in its first lines, SPARQL comments any tool skips:

        # form: select
        # title: Failed sessions              (a saved query's; optional)
        # description: Sessions that ...      (a saved query's; optional)
        # param graph: iri — the explainability graph
        # param limit: integer, default 100, minimum 1, maximum 1000000 — sessions at most;
        #   a line indented under an entry goes on with its text

    A rendering leaves the header out."""

    name: str
    form: Form
    parameters: Mapping[str, Parameter]
    title: str = ""
    description: str = ""

    def check(self, params: Mapping[str, Any]) -> None:
        """Refuse a call that is not the one declared: a parameter missing, unknown, or of
        another type."""
        for given in params:
            if given not in self.parameters:
                raise TemplateError(
                    f"{self.name}: unknown parameter {given!r}; it takes "
                    + (", ".join(self.parameters) or "no parameters"))
        for parameter in self.parameters.values():
            if parameter.name not in params:
                raise TemplateError(
                    f"{self.name}: missing parameter {parameter.name!r} ({parameter.type})")
            value = params[parameter.name]
            if not parameter.type.accepts(value):
                raise TemplateError(f"{self.name}: parameter {parameter.name!r} must be of type "
                                    f"{parameter.type}, not {value!r:.80}")


_HEADER_LINE = re.compile(r"# (?:form|title|description): \S.*|# param [a-z_][a-z0-9_]*: \S.*"
                          r"|#   \S.*")
_OPTION = re.compile(r"(default|minimum|maximum) (.+)")


def split_header(source: str) -> tuple[list[str], str]:
    """The header's lines, and the rest of the text."""
    lines = source.splitlines(keepends=True)
    count = 0
    for line in lines:
        text = line.rstrip("\n")
        if not _HEADER_LINE.fullmatch(text) or (count == 0 and not text.startswith("# form: ")):
            break
        count += 1
    return [line.rstrip("\n") for line in lines[:count]], "".join(lines[count:])


@cache
def header(name: str) -> Header:
    """The header of `queries/{name}.rq`, read once."""
    source = template_source(f"{name}.rq")
    if source is None:
        raise TemplateError(f"no query template named {name!r}")
    lines, _ = split_header(source)
    entries: list[list[str]] = []
    for line in lines:
        if line.startswith("#   "):
            entries[-1][1] += " " + line[4:].strip()
        else:
            entries.append(line[2:].split(": ", 1))
    fields: dict[str, str] = {}
    parameters: dict[str, Parameter] = {}
    for key, text in entries:
        if key.startswith("param "):
            parameter = _parameter(name, key.removeprefix("param "), text)
            if parameter.name in parameters:
                raise TemplateError(f"{name}: parameter {parameter.name!r} declared twice")
            parameters[parameter.name] = parameter
        elif key in fields:
            raise TemplateError(f"{name}: {key} declared twice")
        else:
            fields[key] = text
    form = fields.get("form")
    if form not in FORMS:
        raise TemplateError(f"{name}: its first line must declare its form, '# form: ' and one of "
                            f"{', '.join(FORMS)}")
    return Header(name, cast(Form, form), parameters, fields.get("title", ""),
                  fields.get("description", ""))


def _parameter(template: str, name: str, text: str) -> Parameter:
    import json  # a template's header is read once, when its file is; not by every command

    spec, _, description = text.partition(" — ")
    kind, *options = spec.split(", ")
    found: dict[str, Any] = {}
    for option in options:
        matched = _OPTION.fullmatch(option)
        if matched is None:
            raise TemplateError(f"{template}: parameter {name!r} has an unknown option {option!r}")
        found[matched[1]] = json.loads(matched[2])
    return Parameter(name, parse_type(kind), description, **found)


def template_source(name: str) -> str | None:
    """The text of `queries/{name}` (header and all), or None when there is no such file."""
    path = package_folder("tgsparql.queries").joinpath(*name.split("/"))
    return path.read_text(encoding="utf-8") if path.is_file() else None

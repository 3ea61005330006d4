"""Saved BI queries: `queries/bi/NAME.rq`, whose header (tgsparql.rdf.headers.Header) gives
its title, description and parameters.

A URL's query string becomes template parameters only after each value is checked against its
declared type; the template then renders it through the escaping filters. Unknown parameters
and values of the wrong type are refused, so no request can change a saved query's shape.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlencode

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.headers import header
from tgsparql.rdf.templates import Templates
from tgsparql.serve.sparql import ProtocolError

PUBLIC_TYPES = {"integer": "integer", "text": "string", "date": "date", "collection": "collection"}
"""The types a URL can give, by their names in a header, and as the listing of saved queries
names them."""


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    default: Any
    description: str
    minimum: int | None = None
    maximum: int | None = None

    def parse(self, text: str) -> Any:
        """The template value of one query-string value, or a 400 naming the parameter."""
        if self.type == "integer":
            try:
                value = int(text, 10)
            except ValueError:
                raise self._bad(text, "an integer") from None
            if (self.minimum is not None and value < self.minimum) or (
                self.maximum is not None and value > self.maximum
            ):
                raise self._bad(text, f"an integer from {self.minimum} to {self.maximum}")
            return value
        if self.type == "date":
            try:
                day = dt.date.fromisoformat(text)
            except ValueError:
                raise self._bad(text, "a date YYYY-MM-DD") from None
            return ox.Literal(day.isoformat(), datatype=vocab.XSD_DATE)
        if self.type == "collection":
            try:
                return vocab.Collection(text)
            except vocab.CollectionError:
                raise self._bad(text, "a collection name (letters, digits, _ . -)") from None
        if "\x00" in text or any(0xD800 <= ord(c) <= 0xDFFF for c in text):
            raise self._bad(text, "text")
        return text

    def _bad(self, text: str, expected: str) -> ProtocolError:
        return ProtocolError(400, f"parameter {self.name}={text!r:.80} is not {expected}")


@dataclass(frozen=True)
class SavedQuery:
    name: str
    title: str
    description: str
    parameters: tuple[Parameter, ...]

    @property
    def template(self) -> str:
        return f"bi/{self.name}"

    def bind(self, query: Mapping[str, list[str]]) -> dict[str, Any]:
        """Template parameters from a parsed query string: every value checked, defaults filled."""
        known = {p.name: p for p in self.parameters}
        unknown = sorted(set(query) - set(known))
        if unknown:
            raise ProtocolError(
                400, f"unknown parameter {unknown[0]!r} for {self.name}; it takes "
                     + (", ".join(known) or "no parameters")
            )
        bound: dict[str, Any] = {}
        for parameter in self.parameters:
            values = query.get(parameter.name)
            if values is not None and len(values) != 1:
                raise ProtocolError(400, f"parameter {parameter.name} given more than once")
            text = values[0] if values is not None else str(parameter.default)
            bound[parameter.name] = parameter.parse(text)
        return bound

    def example_url(self, extension: str = "csv") -> str:
        defaults = {p.name: p.default for p in self.parameters}
        suffix = f"?{urlencode(defaults)}" if defaults else ""
        return f"/queries/{self.name}.{extension}{suffix}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "parameters": [
                {k: PUBLIC_TYPES[v] if k == "type" else v for k, v in p.__dict__.items()
                 if v is not None}
                for p in self.parameters
            ],
            "example": self.example_url(),
        }


@cache
def saved_queries() -> dict[str, SavedQuery]:
    """Every saved BI query, by name, from the package's `queries/bi/`."""
    out = {}
    for template in Templates().names():
        folder, _, name = template.partition("/")
        if folder != "bi":
            continue
        declared = header(template)
        parameters = []
        for p in declared.parameters.values():
            if p.type.spelling not in PUBLIC_TYPES:
                raise ValueError(f"{template}: parameter {p.name} has a type a URL cannot give, "
                                 f"{p.type}")
            parameters.append(Parameter(p.name, p.type.spelling, p.default, p.description,
                                        p.minimum, p.maximum))
        out[name] = SavedQuery(name, declared.title, declared.description, tuple(parameters))
    return out

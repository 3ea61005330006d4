"""Pre-bound variables of SHACL-SPARQL queries (SHACL §5.2.1, appendix "Pre-binding"): the
syntax the spec forbids, whether one query can serve every focus node at once, and the text of
the query with a variable replaced by its value.

The query text is lexed (strings, IRIs and comments kept whole), never parsed: the engine parses
what we build from it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from tgsparql.validation.errors import ShapesError

_TOKEN = re.compile(
    r'(?P<string>"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*')"
    r"|(?P<iri><[^<>\"{}|^`\\\x00-\x20]*>)"
    r"|(?P<comment>#[^\n]*)"
    r"|(?P<var>[?$][A-Za-z0-9_\u00b7\u00c0-\uffff]+)"
    r"|(?P<pname>(?:[A-Za-z][\w.-]*)?:[\w.:%-]*)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<punct>[{}()*])",
    re.DOTALL,
)
FORBIDDEN = {
    "MINUS": "MINUS",
    "VALUES": "VALUES",
    "SERVICE": "SERVICE (federated query)",
}
AGGREGATES = frozenset({"COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT", "GROUP", "HAVING"})
PER_SOLUTION_MODIFIERS = frozenset({"LIMIT", "OFFSET"})


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int
    end: int

    @property
    def word(self) -> str:
        return self.text.upper() if self.kind == "word" else ""

    @property
    def variable(self) -> str | None:
        return self.text[1:] if self.kind == "var" else None


def tokens(text: str) -> list[Token]:
    return [
        Token(m.lastgroup or "", m.group(0), m.start(), m.end())
        for m in _TOKEN.finditer(text)
        if m.lastgroup != "comment"
    ]


def refuse_forbidden(text: str, prebound: Collection[str], where: str) -> None:
    """ShapesError for what SHACL's appendix on pre-binding rules out: MINUS, VALUES, SERVICE
    (never sent anywhere), `AS ?v` of a pre-bound variable, a subquery that does not project
    every pre-bound variable."""
    found = tokens(text)
    for index, token in enumerate(found):
        if token.word in FORBIDDEN:
            raise ShapesError(f"{where}: {FORBIDDEN[token.word]} is not allowed in a SHACL-SPARQL "
                              "query (SHACL appendix A, pre-binding)")
        if token.word == "AS" and index + 1 < len(found) and found[index + 1].variable in prebound:
            raise ShapesError(f"{where}: 'AS {found[index + 1].text}' rebinds a pre-bound variable "
                              "(SHACL appendix A, pre-binding)")
    for index, (projection, star) in enumerate(zip(_projections(found), _stars(found))):
        if index == 0 or star:
            continue
        projected = {t.variable for t in projection}
        missing = sorted(set(prebound) - projected)
        if missing:
            raise ShapesError(f"{where}: a subquery does not project the pre-bound variable "
                              f"${missing[0]} (SHACL appendix A, pre-binding)")


def _stars(found: list[Token]) -> Iterator[bool]:
    """Whether each SELECT projects `*`."""
    for start in (i for i, t in enumerate(found) if t.word == "SELECT"):
        following = [t.text for t in found[start + 1:start + 3]]
        yield "*" in following


def _bare(projection: list[Token]) -> Iterator[Token]:
    """Variables of a projection outside `( expression AS ?v )`, and the `?v` of each such."""
    depth = 0
    previous = ""
    for token in projection:
        if token.text == "(":
            depth += 1
        elif token.text == ")":
            depth -= 1
        elif token.kind == "var" and (depth == 0 or previous == "AS"):
            yield token
        previous = token.word


def one_query_for_all(text: str, names: Collection[str]) -> bool:
    """Whether joining every focus node at the start of the outermost group gives what
    pre-binding each in turn gives: each use of the variables is joined with it (`_joined`),
    no LIMIT or OFFSET, and every query level that aggregates groups by the variables."""
    found = tokens(text)
    first = next((i for i, t in enumerate(found) if t.text == "{"), None)
    if first is None or {t.word for t in found} & PER_SOLUTION_MODIFIERS:
        return False
    levels: list[list[Token]] = [found[:first]]
    open_levels: list[tuple[int, list[Token]]] = [(0, levels[0])]
    groups: list[str] = []
    parens: list[int] = [0]
    previous = ""
    for token in found[first:]:
        if token.word == "SELECT":
            levels.append([])
            open_levels.append((len(groups), levels[-1]))
        open_levels[-1][1].append(token)
        if token.text == "{":
            groups.append({"EXISTS": "exists", "OPTIONAL": "optional"}.get(previous, "group"))
            parens.append(0)
        elif token.text == "}":
            if groups:
                groups.pop()
            if len(parens) > 1:
                parens.pop()
            if len(open_levels) > 1 and len(groups) < open_levels[-1][0]:
                open_levels.pop()
        elif token.text == "(":
            parens[-1] += 1
        elif token.text == ")":
            parens[-1] -= 1
        elif token.variable in names and groups and not _joined(groups[1:], parens[-1] > 0):
            return False
        previous = token.word
    return all(_grouped_by(level, names) for level in levels if {t.word for t in level} & AGGREGATES)


def _joined(inner: list[str], in_expression: bool) -> bool:
    """Whether a use of a variable, inside the groups `inner` of the outermost group, sees the
    focus node joined there: inside an EXISTS everything is substituted; a triple pattern of
    plain, GRAPH, UNION groups and subqueries (grouped by it) is joined on the variable; so is
    one of an OPTIONAL directly under the outermost group, the focus pattern being on its left."""
    if not inner or inner[0] == "exists":
        return True
    if in_expression:
        return False
    return inner == ["optional"] or all(kind == "group" for kind in inner)


def _grouped_by(level: list[Token], names: Collection[str]) -> bool:
    for index, token in enumerate(level):
        if token.word == "GROUP" and index + 1 < len(level) and level[index + 1].word == "BY":
            return all(any(t.variable == name for t in level[index + 2:]) for name in names)
    return False


def substitute(text: str, values: Mapping[str, str]) -> str:
    """The query with each named variable replaced by its value (SPARQL text of a constant), as
    the appendix on pre-binding defines. In the outermost projection it stays a column,
    `(value AS ?v)`; a subquery's projection drops it (the outer query no longer has the
    variable to join on); in GROUP BY and ORDER BY it becomes the expression `(value)`."""
    out: list[str] = []
    position = 0
    for start, end, name, form in _places(text, frozenset(values)):
        out.append(text[position:start])
        out.append(form.replace(_VALUE, values[name]))
        position = end
    out.append(text[position:])
    return "".join(out)


_VALUE = "\x00"
"""Where the value goes in the text of a place of `_places` (no variable name holds it)."""


@lru_cache(maxsize=256)
def _places(text: str, names: frozenset[str]) -> tuple[tuple[int, int, str, str], ...]:
    """Where `substitute` writes each of `names` into `text`: (start, end, name, the text there
    with _VALUE for the value). Cached: a query run once per focus node is lexed once."""
    found = tokens(text)
    places: list[tuple[int, int, str, str]] = []
    clause = ""
    depth = 0
    selects = 0
    dropped_all: set[int] = set()
    for index, projection in enumerate(_projections(found)):
        if index and projection and all(t.variable in names for t in projection):
            dropped_all.add(index)
    for token in found:
        if token.word in ("SELECT", "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "OFFSET") or token.text == "{":
            clause = token.word or "{"
            depth = 0
            selects += token.word == "SELECT"
        elif token.text == "(":
            depth += 1
        elif token.text == ")":
            depth -= 1
        name = token.variable
        if name is None or name not in names:
            continue
        if clause == "SELECT" and depth == 0 and selects == 1:
            form = f"({_VALUE} AS ?{name})"
        elif clause == "SELECT" and depth == 0:
            form = "(true AS ?prebound)" if selects - 1 in dropped_all else ""
            dropped_all.discard(selects - 1)
        elif clause in ("GROUP", "ORDER") and depth == 0:
            form = f"({_VALUE})"
        else:
            form = _VALUE
        places.append((token.start, token.end, name, form))
    return tuple(places)


def _projections(found: list[Token]) -> Iterator[list[Token]]:
    """The bare variables of each SELECT's projection, in order."""
    for start in (i for i, t in enumerate(found) if t.word == "SELECT"):
        items: list[Token] = []
        for token in found[start + 1:]:
            if token.word == "WHERE" or token.text == "{":
                break
            items.append(token)
        yield list(_bare(items))


def uses(text: str, name: str) -> bool:
    return any(t.variable == name for t in tokens(text))

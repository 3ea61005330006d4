"""Pre-bound variables of SHACL-SPARQL queries (SHACL §5.3.1, appendix A "Pre-binding"): the
syntax the spec forbids, whether one query can serve every focus node at once, and the text of
the query with values pre-bound as the appendix defines it (values insertion).

The query text is lexed (strings, IRIs and comments kept whole), never parsed: the engine parses
what we build from it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from functools import cache, lru_cache
from typing import NamedTuple

from tgsparql.validation.errors import ShapesError

_TOKEN = (
    r'(?P<string>"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*')"
    r"|(?P<iri><[^<>\"{}|^`\\\x00-\x20]*>)"
    r"|(?P<comment>#[^\n]*)"
    r"|(?P<var>[?$][A-Za-z0-9_\u00b7\u00c0-\uffff]+)"
    r"|(?P<pname>(?:[A-Za-z][\w.-]*)?:[\w.:%-]*)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<punct>[{}()*])"
)
FORBIDDEN = {
    "MINUS": "MINUS",
    "VALUES": "VALUES",
    "SERVICE": "SERVICE (federated query)",
}
AGGREGATES = frozenset({"COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT", "GROUP", "HAVING"})
PER_SOLUTION_MODIFIERS = frozenset({"LIMIT", "OFFSET"})


class Token(NamedTuple):
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


@cache
def _lexer() -> re.Pattern[str]:
    """The lexer, compiled on first use (a few milliseconds): a run whose queries were lexed
    before (a validator kept on disk, `group_starts`) never compiles it."""
    return re.compile(_TOKEN, re.DOTALL)


def tokens(text: str) -> list[Token]:
    return [
        Token(m.lastgroup or "", m.group(0), m.start(), m.end())
        for m in _lexer().finditer(text)
        if m.lastgroup != "comment"
    ]


OPTIONAL_IN_SUBQUERIES = frozenset({"shapesGraph", "currentShape"})
"""The pre-bound variables a subquery need not return (SHACL appendix A)."""


def refuse_forbidden(text: str, prebound: Collection[str], where: str) -> None:
    """ShapesError for what SHACL's appendix on pre-binding rules out: MINUS, VALUES, SERVICE
    (never sent anywhere), `AS ?v` of a pre-bound variable, a subquery that does not return
    every pre-bound variable ($shapesGraph and $currentShape aside)."""
    found = tokens(text)
    for index, token in enumerate(found):
        if token.word in FORBIDDEN:
            raise ShapesError(f"{where}: {FORBIDDEN[token.word]} is not allowed in a SHACL-SPARQL "
                              "query (SHACL appendix A, pre-binding)")
        if token.word == "AS" and index + 1 < len(found) and found[index + 1].variable in prebound:
            raise ShapesError(f"{where}: 'AS {found[index + 1].text}' rebinds a pre-bound variable "
                              "(SHACL appendix A, pre-binding)")
    selects = [i for i, t in enumerate(found) if t.word == "SELECT"]
    outer = next((t.word for t in found if t.word in ("SELECT", "ASK")), "")
    for start in selects[1:] if outer == "SELECT" else selects:
        star, returned = _returned(found, start)
        missing = sorted(set(prebound) - OPTIONAL_IN_SUBQUERIES - returned)
        if missing and star:
            raise ShapesError(f"{where}: a subquery 'SELECT *' does not return the pre-bound "
                              f"variable ${missing[0]}, as nothing in its WHERE clause binds it "
                              "(SHACL appendix A: subqueries return every pre-bound variable)")
        if missing:
            raise ShapesError(f"{where}: a subquery does not project the pre-bound variable "
                              f"${missing[0]} (SHACL appendix A, pre-binding)")


def projects(text: str, name: str) -> bool:
    """Whether the outermost SELECT of the query returns the variable, by name or by `*`."""
    found = tokens(text)
    start = next((i for i, t in enumerate(found) if t.word == "SELECT"), None)
    return start is not None and name in _returned(found, start)[1]


def _returned(found: list[Token], start: int) -> tuple[bool, set[str]]:
    """(whether it projects `*`, the variables it returns) of the SELECT at `found[start]`:
    those its projection names, or with `*` those in scope of its WHERE group."""
    projection: list[Token] = []
    index = start + 1
    while index < len(found) and found[index].word != "WHERE" and found[index].text != "{":
        projection.append(found[index])
        index += 1
    if any(t.text == "*" for t in projection[:2]):
        return True, _in_scope(found, index)
    return False, {t.variable for t in _bare(projection) if t.variable}


def _in_scope(found: list[Token], index: int) -> set[str]:
    """The variables in scope of the group at or after `found[index]` (SPARQL 1.1 §18.2.1):
    those of its triple patterns and GRAPH clauses, not those only filters or expressions use
    (in parentheses after a keyword or function name, or in an EXISTS group). A subquery's are
    all counted: it returns the pre-bound ones, as refuse_forbidden checks."""
    while index < len(found) and found[index].text != "{":
        index += 1
    scope: set[str] = set()
    depth = 0
    expressions: list[bool] = []
    exists: int | None = None
    previous: Token | None = None
    for token in found[index:]:
        if token.text == "{":
            depth += 1
            if exists is None and previous is not None and previous.word == "EXISTS":
                exists = depth
        elif token.text == "}":
            exists = None if exists == depth else exists
            depth -= 1
            if depth == 0:
                break
        elif token.text == "(":
            keyword = previous is not None and previous.kind == "word" and previous.text != "a"
            expressions.append(keyword or bool(expressions and expressions[-1]))
        elif token.text == ")":
            if expressions:
                expressions.pop()
        elif token.variable and exists is None and not (expressions and expressions[-1]):
            scope.add(token.variable)
        previous = token
    return scope


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


def insert_values(
    text: str, values: Mapping[str, str], starts: Sequence[int] | None = None
) -> str:
    """The query with `values` (SPARQL text of constants, by variable name) pre-bound as the
    appendix on pre-binding defines it, "values insertion": every basic graph pattern, path and
    GRAPH pattern joined with the one solution of those values. Binding them at the start of
    every group graph pattern does just that (a group's patterns join them; a group of filters
    alone, whose empty pattern the appendix joins too, gets them as well). BIND rather than a
    one-row VALUES: Oxigraph evaluates `GRAPH ?g { VALUES ... }` as if the GRAPH were not
    there. The variables stay variables: `bound($this)`, a projection or `GROUP BY $this`, a
    literal where only an IRI fits (a predicate, a graph name) keep parsing and mean what they
    meant. `starts`: the text's `group_starts`, when known already."""
    if not values:
        return text
    inserted = "".join(f" BIND({value} AS ?{name})" for name, value in values.items()) + " "
    out: list[str] = []
    position = 0
    for start in group_starts(text) if starts is None else starts:
        out.append(text[position:start])
        out.append(inserted)
        position = start
    out.append(text[position:])
    return "".join(out)


@lru_cache(maxsize=256)
def group_starts(text: str) -> tuple[int, ...]:
    """Just after the `{` of each group graph pattern: every `{` but a subquery's own (whose
    group is the `{` after its SELECT clause); VALUES, whose block is no group, is refused
    before. Cached: a query run once per focus node is lexed once."""
    found = tokens(text)
    return tuple(
        token.end for index, token in enumerate(found)
        if token.text == "{" and (index + 1 == len(found) or found[index + 1].word != "SELECT")
    )


def uses(text: str, name: str) -> bool:
    return any(t.variable == name for t in tokens(text))

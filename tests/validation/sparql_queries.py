"""Hypothesis strategies for SHACL-SPARQL queries drawn from the SPARQL 1.1 grammar, each with
the query SHACL means once its variables are pre-bound.

A drawn query holds two markers: GROUP right after the `{` of every group graph pattern (never
the braces around a subquery), PATH where `$PATH` stands. `shapes_text` writes the query as a
shapes graph holds it; `meant` writes SHACL's definition of pre-binding (appendix A, "values
insertion": every basic graph pattern, path and GRAPH pattern joined with the pre-bound values)
as plain SPARQL: the values bound (BIND, which is a join with the one solution at the start of a
group) at the start of every group, the path written in. The two are written from one tree, so
the validator's rewriting of the first is checked against the second.

Queries are drawn within the class the appendix allows (no MINUS, SERVICE, VALUES, `AS` of a
pre-bound variable; every subquery returns the pre-bound variables), with what makes text
rewriting hard: `FILTER (...) .` with and without the optional dot, nested, OPTIONAL, UNION,
GRAPH and EXISTS groups, subqueries (`SELECT *` among them), BIND, property paths, `bound()`,
comments and strings that hold `$this` and braces, prefixed names, `WHERE` left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyoxigraph as ox
from hypothesis import strategies as st

EX = "http://example.org/"
GROUP = "\x01"
PATH = "\x02"
PREFIXES = f"PREFIX ex: <{EX}>\n"
PATH_TEXT = "ex:p"
"""The path the property shapes of the drawn queries have."""


@dataclass(frozen=True)
class Part:
    """Query text with markers, and the variables in scope of it (SPARQL 1.1 §18.2.1)."""

    text: str
    scope: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Context:
    prebound: tuple[str, ...]
    """The potentially pre-bound variables the query may use."""
    path: bool
    """Whether the query is a property shape's, so may use $PATH."""


def spelled(name: str) -> st.SearchStrategy[str]:
    return st.sampled_from([f"?{name}", f"${name}"])


PLAIN = ("o", "x")
IRIS = ("ex:a", "ex:b", f"<{EX}c>", "q:a")
LITERALS = ('"s"', "'lit'", '"$this { } #"', "1")
PREDICATES = ("ex:p", "ex:q", "a", "q:p")
PATHS = ("ex:p/ex:q", "^ex:p", "ex:p*", "(ex:p|ex:q)+", "ex:q?", "!ex:q", "ex:p/^ex:p")


def variables(ctx: Context) -> st.SearchStrategy[Part]:
    return st.sampled_from(ctx.prebound + PLAIN).flatmap(
        lambda name: spelled(name).map(lambda text: Part(text, frozenset({name}))))


def term(ctx: Context) -> st.SearchStrategy[Part]:
    return st.one_of(variables(ctx), st.sampled_from(IRIS + LITERALS).map(Part))


def node(ctx: Context) -> st.SearchStrategy[Part]:
    """A subject: literals are allowed there by the grammar, so some are drawn."""
    return st.one_of(variables(ctx), variables(ctx), st.sampled_from(IRIS + ('"s"',)).map(Part))


def verb(ctx: Context) -> st.SearchStrategy[Part]:
    options = [st.sampled_from(PREDICATES + PATHS).map(Part), variables(ctx)]
    if ctx.path:
        options.append(st.just(Part(PATH)))
    return st.one_of(*options)


@st.composite
def triples(draw: st.DrawFn, ctx: Context) -> Part:
    subject, first, obj = draw(node(ctx)), draw(verb(ctx)), draw(term(ctx))
    parts = [subject, first, obj]
    text = f"{subject.text} {first.text} {obj.text}"
    more = draw(st.sampled_from(["", ";", ","]))
    if more == ";":
        second, other = draw(verb(ctx)), draw(term(ctx))
        parts += [second, other]
        text += f" ; {second.text} {other.text}"
    elif more == ",":
        other = draw(term(ctx))
        parts.append(other)
        text += f" , {other.text}"
    scope = frozenset().union(*(p.scope for p in parts if p.text != PATH))
    return Part(text, scope)


def expression(ctx: Context, depth: int) -> st.SearchStrategy[Part]:
    v = variables(ctx)
    leaves = st.one_of(
        st.tuples(v, term(ctx)).map(lambda p: Part(f"{p[0].text} = {p[1].text}")),
        st.tuples(v, v).map(lambda p: Part(f"{p[0].text} != {p[1].text}")),
        st.tuples(v, term(ctx)).map(lambda p: Part(f"sameTerm({p[0].text}, {p[1].text})")),
        v.map(lambda p: Part(f"bound({p.text})")),
        v.map(lambda p: Part(f"BOUND ( {p.text} )")),
        v.map(lambda p: Part(f"isIRI({p.text})")),
        v.map(lambda p: Part(f'STR({p.text}) != "$this"')),
        v.map(lambda p: Part(f"{p.text} IN (ex:a, 'lit', ex:b)")),
        st.tuples(v, term(ctx)).map(lambda p: Part(f"COALESCE({p[0].text}, {p[1].text}) = ex:a")),
    )
    if depth <= 0:
        return leaves
    inner = expression(ctx, depth - 1)
    return st.one_of(
        leaves,
        inner.map(lambda p: Part(f"!({p.text})")),
        st.tuples(inner, inner, st.sampled_from(["&&", "||"])).map(
            lambda p: Part(f"({p[0].text} {p[2]} {p[1].text})")),
        st.tuples(st.sampled_from(["EXISTS", "NOT EXISTS"]), group(ctx, depth - 1)).map(
            lambda p: Part(f"{p[0]} {p[1].text}")),
    )


def filter_(ctx: Context, depth: int) -> st.SearchStrategy[Part]:
    bare = st.one_of(
        variables(ctx).map(lambda p: Part(f"bound({p.text})")),
        st.tuples(st.sampled_from(["EXISTS", "NOT EXISTS"]), group(ctx, depth - 1)).map(
            lambda p: Part(f"{p[0]} {p[1].text}")) if depth > 0 else st.nothing(),
    )
    return st.one_of(
        expression(ctx, min(depth, 1)).map(lambda p: Part(f"FILTER ({p.text})")),
        bare.map(lambda p: Part(f"FILTER {p.text}")),
    )


@st.composite
def subquery(draw: st.DrawFn, ctx: Context, depth: int) -> Part:
    """`{ SELECT ... }` returning every pre-bound variable (the appendix requires it)."""
    where = draw(group(ctx, depth - 1))
    star = set(ctx.prebound) <= where.scope and draw(st.booleans())
    plain = sorted(where.scope & set(PLAIN))
    grouped = not star and draw(st.booleans())
    if star:
        projection, scope = "*", where.scope
    elif grouped:  # an aggregate, grouped by the pre-bound variables as SPARQL requires
        names = list(ctx.prebound)
        projection = " ".join([*(draw(spelled(name)) for name in names), "(COUNT(*) AS ?n)"])
        scope = frozenset([*names, "n"])
    else:
        extra = draw(st.lists(st.sampled_from(plain), unique=True)) if plain else []
        names = [*ctx.prebound, *extra]
        projection = " ".join(draw(spelled(name)) for name in names)
        scope = frozenset(names)
    distinct = draw(st.sampled_from(["", "DISTINCT "]))
    keyword = draw(st.sampled_from(["WHERE ", ""]))
    tail = ""
    if grouped:
        tail = " GROUP BY " + " ".join(draw(spelled(name)) for name in ctx.prebound)
        tail += draw(st.sampled_from(["", " HAVING (COUNT(*) > 1)"]))
    return Part(f"{{ SELECT {distinct}{projection} {keyword}{where.text}{tail} }}", scope)


@st.composite
def bind(draw: st.DrawFn, ctx: Context) -> Part:
    name = draw(st.sampled_from(["b1", "b2"]))
    value = draw(st.one_of(term(ctx), variables(ctx).map(lambda p: Part(f"COALESCE({p.text}, 0)"))))
    return Part(f"BIND({value.text} AS ?{name})", frozenset({name}))


NOT_TRIPLES = ("FILTER", "BIND", "OPTIONAL", "{", "GRAPH", "#")
"""How the elements of a group that are not triples begin."""


def comment() -> st.SearchStrategy[Part]:
    return st.sampled_from(["# $this { not code\n", "#}\n", "# ?value . FILTER(\n"]).map(Part)


def element(ctx: Context, depth: int) -> st.SearchStrategy[Part]:
    options = [triples(ctx), triples(ctx), filter_(ctx, depth), bind(ctx), comment()]
    if depth > 0:
        inner = group(ctx, depth - 1)
        options += [
            inner.map(lambda p: Part(f"OPTIONAL {p.text}", p.scope)),
            st.tuples(inner, inner).map(
                lambda p: Part(f"{p[0].text} UNION {p[1].text}", p[0].scope | p[1].scope)),
            inner,
            st.tuples(st.sampled_from(["?g", "ex:g"]), inner).map(
                lambda p: Part(f"GRAPH {p[0]} {p[1].text}",
                               p[1].scope | ({"g"} if p[0] == "?g" else set()))),
            subquery(ctx, depth),
        ]
    return st.one_of(*options)


@st.composite
def group(draw: st.DrawFn, ctx: Context, depth: int) -> Part:
    elements = draw(st.lists(element(ctx, depth), max_size=3))
    text = "{" + GROUP
    scope: frozenset[str] = frozenset()
    previous_triples = False
    for index, part in enumerate(elements):
        if index and not part.text.startswith("#"):
            text += " . " if previous_triples or draw(st.booleans()) else " "
        text += part.text
        previous_triples = not part.text.startswith(NOT_TRIPLES)
        scope |= part.scope
    if elements and draw(st.booleans()):
        text += " ."
    return Part(text + " }", scope)


def prologue() -> st.SearchStrategy[str]:
    return st.sampled_from(["", f"PREFIX q: <{EX}>\n", f"# $this {{\nPREFIX q: <{EX}>\n"])


@st.composite
def select_queries(draw: st.DrawFn, path: bool = False, parameters: tuple[str, ...] = ()) -> str:
    """A SELECT query of a SPARQL-based constraint, or with `parameters` of a SELECT validator:
    it projects $this (and maybe ?value)."""
    ctx = Context(("this", "currentShape", *parameters), path)
    where = draw(group(ctx, 2))
    heads = ["$this ?value", "?this", "DISTINCT $this ?value", "?value $this",
             "$this (COUNT(*) AS ?value)"]
    head = draw(st.sampled_from(heads + (["*"] if "this" in where.scope else [])))
    tail = " GROUP BY $this" if "COUNT" in head else draw(st.sampled_from(
        ["", " ORDER BY ?value", " ORDER BY DESC($this)", " LIMIT 2", " OFFSET 1"]))
    text = where.text
    if "value" not in where.scope and "value" in head and "COUNT" not in head:
        text = text.replace(GROUP, GROUP + f" OPTIONAL {{{GROUP} $this ex:q ?value }} .", 1)
    keyword = draw(st.sampled_from(["WHERE ", ""]))
    return f"{draw(prologue())}SELECT {head} {keyword}{text}{tail}"


@st.composite
def ask_queries(draw: st.DrawFn) -> str:
    """The ASK query of a validator with the parameter $k; $value is pre-bound too."""
    ctx = Context(("this", "value", "k"), False)
    where = draw(group(ctx, 2))
    return f"{draw(prologue())}ASK {draw(st.sampled_from(['WHERE ', '']))}{where.text}"


def shapes_text(query: str) -> str:
    """The query as a shapes graph holds it."""
    return query.replace(GROUP, "").replace(PATH, "$PATH")


def meant(query: str, values: dict[str, ox.NamedNode | ox.Literal]) -> str:
    """The query SHACL evaluates with `values` pre-bound, in plain SPARQL."""
    inserted = "".join(f" BIND({value} AS ?{name}) ." for name, value in values.items())
    return PREFIXES + query.replace(GROUP, inserted).replace(PATH, PATH_TEXT)

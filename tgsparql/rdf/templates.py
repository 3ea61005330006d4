"""SPARQL templates: the only way text reaches the store.

Every SPARQL text lives in `queries/` as a jinja2 template. Values enter only through the filters
below, which build real pyoxigraph terms (so IRIs and literals are validated) and render them in
the syntax of the store's dialect. Anything printed without a filter, or any undefined variable,
is an error at render time: an unescaped value can never reach a query.

Each template declares itself in a header of SPARQL comments (tgsparql.rdf.headers): its form
and its parameters with their types, so a call is checked before anything renders and a store
knows which of its verbs runs it without reading the text.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache, lru_cache
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import pyoxigraph as ox
from markupsafe import Markup

from tgsparql.rdf import vocab
from tgsparql.rdf.iris import day_iri, statement_iri
from tgsparql.rdf.terms import (
    DEFAULT_DIALECT, DIALECTS, Dialect, TemplateError, Term, check_text,
)

if TYPE_CHECKING:
    import jinja2

_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LANGUAGE = re.compile(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*")


class Sparql(Markup):
    """Text that a filter or a template produced, and so is safe to place in a query."""


def to_iri(value: str | ox.NamedNode) -> ox.NamedNode:
    if isinstance(value, ox.NamedNode):
        return value
    if not isinstance(value, str):
        raise TemplateError(f"an IRI must be a string or NamedNode, not {type(value).__name__}")
    check_text(value, "IRI")
    try:
        return ox.NamedNode(value)
    except ValueError as error:
        raise TemplateError(f"invalid IRI {value!r}: {error}") from None


def utc_day(moment: Any) -> ox.Literal:
    """The day a session is counted under (tg:day): the UTC date of its start, an xsd:date."""
    if not isinstance(moment, dt.datetime) or moment.tzinfo is None:
        raise TemplateError(f"a day is taken from a dateTime with a time zone, not {moment!r:.40}")
    day = moment.astimezone(dt.timezone.utc).date()
    return ox.Literal(day.isoformat(), datatype=vocab.XSD_DATE)


def to_literal(value: Any, language: str | None = None) -> ox.Literal:
    """A typed literal for a Python value (docs/spec.md §1: every literal is typed)."""
    if isinstance(value, ox.Literal):
        return value
    if language is not None:
        if not _LANGUAGE.fullmatch(language or ""):
            raise TemplateError(f"invalid language tag {language!r}")
        text = check_text(value)
        try:
            return ox.Literal(text, language=language)
        except ValueError as error:
            raise TemplateError(f"invalid language tag {language!r}: {error}") from None
    if isinstance(value, bool):
        return ox.Literal(value)
    if isinstance(value, int):
        return ox.Literal(str(value), datatype=vocab.XSD_INTEGER)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise TemplateError(f"refusing non-finite number {value!r}")
        return ox.Literal(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise TemplateError("a dateTime must carry a time zone")
        # The canonical XSD form (no trailing fraction zeros, "Z" for UTC), which is what
        # stores keep, so a recorded literal reads back exactly as it was written.
        text = value.isoformat(timespec="seconds")
        stamp, offset = text[:19], text[19:]
        if value.microsecond:
            stamp += "." + f"{value.microsecond:06d}".rstrip("0")
        if value.utcoffset() == dt.timedelta(0):
            offset = "Z"
        return ox.Literal(stamp + offset, datatype=vocab.XSD_DATETIME)
    if isinstance(value, str):
        return ox.Literal(check_text(value))
    raise TemplateError(f"no literal form for a value of type {type(value).__name__}")


def render_term(term: Any, dialect: Dialect) -> str:
    if isinstance(term, ox.NamedNode):
        return str(term)
    if isinstance(term, ox.Literal):
        return str(term)  # pyoxigraph built it, so it is valid text already
    if isinstance(term, ox.Triple):
        return render_triple(term, dialect)
    if isinstance(term, ox.BlankNode):
        raise TemplateError(
            "a blank node cannot be referenced from another request; edges with blank nodes "
            "cannot be recorded"
        )
    raise TemplateError(f"not an RDF term: {type(term).__name__}")


def render_triple(triple: Any, dialect: Dialect) -> str:
    if not isinstance(triple, ox.Triple):
        raise TemplateError(f"expected a Triple, not {type(triple).__name__}")
    if dialect == "reification":
        return str(statement_iri(triple))
    if isinstance(triple.subject, ox.BlankNode) or isinstance(triple.object, ox.BlankNode):
        render_term(ox.BlankNode(), dialect)  # raises: blank nodes cannot be referenced
    if dialect == "rdf12":
        return f"<<( {triple} )>>"  # pyoxigraph writes nested triple terms as <<( )>> too
    s, p, o = (render_term(t, dialect) for t in (triple.subject, triple.predicate, triple.object))
    return f"<< {s} {p} {o} >>"


def _finalize(value: Any) -> Any:
    if isinstance(value, Markup):
        return value
    raise TemplateError(
        f"unescaped value {value!r:.80} in a template: pass it through iri, literal, term, "
        "triple, integer or var"
    )


@lru_cache(maxsize=1 << 16)
def _known_iri(value: str | ox.NamedNode) -> Sparql:
    return Sparql(str(to_iri(value)))


def _iri(value: Any) -> Sparql:
    """Remembered per IRI: a retrieval writes each of a few dozen nodes into several requests,
    and into one several times."""
    if isinstance(value, (str, ox.NamedNode)):
        return _known_iri(value)
    return Sparql(str(to_iri(value)))


def _integer(value: Any) -> Sparql:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TemplateError(f"expected an integer, not {value!r:.80}")
    return Sparql(str(value))


def _var(name: Any) -> Sparql:
    if not isinstance(name, str) or not _VARIABLE.fullmatch(name):
        raise TemplateError(f"invalid SPARQL variable name {name!r:.80}")
    return Sparql("?" + name)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    import jinja2

    class BytecodeCache(jinja2.FileSystemBytecodeCache):
        """Templates compiled once for every process: compiling the validation macros costs
        each `tgsparql validate` about 0.4 s. jinja2 keeps the cache in a directory of the
        user's own (mode 0700, refused otherwise); one that cannot be read or written is no
        cache, not an error. Each template's entry is keyed by its text too, so versions
        installed side by side (two environments, or a new version while an old one runs) keep
        their own entries rather than each compiling again over the other's."""

        def get_bucket(self, environment: jinja2.Environment, name: str, filename: str | None,
                       source: str) -> jinja2.bccache.Bucket:
            return super().get_bucket(environment, name, self.get_source_checksum(source), source)

        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except (OSError, ValueError, EOFError):
                bucket.reset()

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:
                pass

    try:
        return BytecodeCache()
    except (OSError, RuntimeError):
        return None


@cache
def _environment() -> jinja2.Environment:
    """The template engine, imported on the first rendering: a process that runs only texts
    prepared before (`Prepared`) never loads it."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_load_query_source),
        bytecode_cache=_bytecode_cache(),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    filters: dict[str, Callable[..., Sparql]] = {
        "iri": _iri,
        "literal": lambda value, lang=None: Sparql(str(to_literal(value, lang))),
        "utc_day": lambda value: Sparql(str(utc_day(value))),
        "day_iri": lambda value: Sparql(str(day_iri(dt.date.fromisoformat(utc_day(value).value)))),
        "integer": _integer,
        "var": _var,
        "statement": lambda value: Sparql(str(statement_iri(value))),
    }
    for name, function in filters.items():
        env.filters[name] = _defined(function)
    env.filters["term"] = jinja2.pass_context(
        lambda context, value: Sparql(render_term(_required(value), context["dialect"]))
    )
    env.filters["triple"] = jinja2.pass_context(
        lambda context, value: Sparql(render_triple(_required(value), context["dialect"]))
    )
    # Many edge references as one object list (`a , b , c`): one call instead of one per edge.
    env.filters["triples"] = jinja2.pass_context(
        lambda context, values: Sparql(
            " ,\n            ".join(render_triple(v, context["dialect"]) for v in _required(values))
        )
    )
    # Group patterns the template built, nested as a balanced tree of UNIONs in one call (a
    # macro recursing over the blocks cost a jinja call per node of the tree).
    env.filters["union"] = lambda blocks: Sparql(_union([_finalize(block) for block in blocks]))
    # A saved query's collection, by name, as the graph that holds it, for `{% set %}`: the
    # public parameter stays the name a URL gives.
    env.filters["explainability_graph"] = lambda value: _required(value).graph
    env.tests["triple"] = lambda value: isinstance(value, ox.Triple)
    return env


def _union(blocks: list[str]) -> str:
    if len(blocks) <= 1:
        return "".join(blocks)
    half = len(blocks) // 2
    return f"{{ {_union(blocks[:half])} UNION {_union(blocks[half:])} }}"


def _required(value: Any) -> Any:
    """A missing parameter fails under its own name, not as an odd value."""
    import jinja2

    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()
    return value


def _defined(function: Callable[..., Sparql]) -> Callable[..., Sparql]:
    return lambda value, *args: function(_required(value), *args)


def _load_query_source(name: str) -> str:
    """A template's text without its header: a rendering is the body alone."""
    import jinja2

    from tgsparql.rdf.headers import split_header, template_source

    source = template_source(name)
    if source is None:
        raise jinja2.TemplateNotFound(name)
    return split_header(source)[1]


class InsertData(NamedTuple):
    """The `prologue` and `quads` blocks of an INSERT DATA template, rendered.

    Kept apart so that several writes that belong together can go to the store as one
    INSERT DATA (`Templates.insert_update`): one request and one transaction, all or nothing.
    """

    prologue: str
    quads: str


STAND_IN = "urn:x-tgsparql:stand-in:"
"""The namespace of stand-ins (`stand_in`), which no data or shapes graph may use."""
_STAND_IN = re.compile(f"<{re.escape(STAND_IN)}([A-Za-z0-9_]+)>")


def stand_in(name: str) -> ox.NamedNode:
    """What a prepared text (`Templates.prepare`) holds in place of the value `name`."""
    return ox.NamedNode(STAND_IN + name)


class Prepared(NamedTuple):
    """A template rendered once with stand-ins (`stand_in`) for some of its values, filled in
    for each run by writing the values where the stand-ins are: for a text run many times, which
    a process that reads it back from disk (a validator kept there) fills without loading the
    template engine. A stand-in goes only where the template writes a value whole: through
    `iri` or `term`, or in a list it writes space-separated (a VALUES block)."""

    text: str
    dialect: Dialect

    def fill(self, **values: Term | Sequence[Term] | Sparql) -> str:
        """The text with each stand-in replaced by its value: a term as the `term` filter
        writes it, a list of terms space-separated, a fragment (`Sparql`) as it is."""

        def written(match: re.Match[str]) -> str:
            if match[1] not in values:
                raise TemplateError(f"no value for the stand-in {match[1]!r}")
            value = values[match[1]]
            if isinstance(value, Sparql):
                return str(value)
            if isinstance(value, (list, tuple)):
                return " ".join(render_term(term, self.dialect) for term in value)
            return render_term(value, self.dialect)

        return _STAND_IN.sub(written, self.text)


class Templates:
    """The query templates of `queries/`, rendered for one store dialect."""

    def __init__(self, dialect: Dialect = DEFAULT_DIALECT) -> None:
        if dialect not in DIALECTS:
            raise TemplateError(f"unknown dialect {dialect!r}; choose one of {', '.join(DIALECTS)}")
        self.dialect: Dialect = dialect
        self._globals = {
            "dialect": dialect,
            "graphs": {
                "source": vocab.GRAPH_SOURCE,
                "library": vocab.GRAPH_LIBRARY,
                "label_index": vocab.GRAPH_LABEL_INDEX,
                "lexical": vocab.GRAPH_LEXICAL,
            },
        }

    def __reduce__(self) -> tuple[Callable[[Dialect], Templates], tuple[Dialect]]:
        """Pickled as its dialect (an object holding templates, such as a validator kept on
        disk, finds this process's own templates when read back)."""
        return templates_for, (self.dialect,)

    def render(self, name: str, /, **params: Any) -> str:
        """The text of `queries/{name}.rq` with `params` bound, which its header declares."""
        import jinja2

        from tgsparql.rdf.headers import header

        header(name).check(params)
        template = self._template(name)
        try:
            return template.render(self._context(params))
        except TemplateError:
            raise
        except jinja2.UndefinedError as error:
            raise TemplateError(f"{name}: {error}") from None

    def prepare(self, name: str, /, **params: Any) -> Prepared:
        """`queries/{name}.rq` rendered with `params`, some of them stand-ins, to be filled in
        for each run (`Prepared`)."""
        return Prepared(self.render(name, **params), self.dialect)

    def render_source(self, source: str, /, **params: Any) -> str:
        """A template text from elsewhere (an older revision of a saved query, to compare with)
        rendered as `render` renders the bundled ones."""
        import jinja2

        try:
            return _environment().from_string(source).render(self._context(params))
        except TemplateError:
            raise
        except jinja2.UndefinedError as error:
            raise TemplateError(str(error)) from None

    def render_block(self, name: str, block: str, /, **params: Any) -> str:
        """One named block of a template, e.g. the quads of an INSERT DATA, as its own text."""
        import jinja2

        from tgsparql.rdf.headers import header

        template = self._template(name)
        if block not in template.blocks:
            raise TemplateError(f"{name} has no block {block!r}")
        header(name).check(params)
        context = template.new_context(self._context(params))
        try:
            return "".join(template.blocks[block](context))
        except jinja2.UndefinedError as error:
            raise TemplateError(f"{name}: {error}") from None

    def insert_data(self, name: str, /, **params: Any) -> InsertData:
        """The blocks of an INSERT DATA template (one with `prologue` and `quads` blocks)."""
        prologue = self.render_block(name, "prologue", **params)
        return InsertData(prologue, self.render_block(name, "quads", **params))

    def insert_update(self, parts: Sequence[InsertData], *, before: str | None = None,
                      **params: Any) -> str:
        """One INSERT DATA update holding the quads of every part, under their prologues;
        `before` names a template whose `operations` block (rendered with `params`, under the
        same prologue) runs first in the same update."""
        if not parts:
            raise TemplateError("an INSERT DATA needs at least one part")
        prologue = "".join(dict.fromkeys(part.prologue for part in parts))
        quads = "".join(part.quads for part in parts)
        first = "" if before is None else self.render_block(before, "operations", **params) + " ;"
        return self.render("_insert_data", prologue=Sparql(prologue), quads=Sparql(quads),
                           before=Sparql(first))

    def names(self) -> list[str]:
        """Every template that runs (not the partials, whose names begin with `_`)."""
        found = _walk(package_folder("tgsparql.queries"), "")
        return sorted(name[: -len(".rq")] for name, entry in found if not entry.name.startswith("_"))

    def _template(self, name: str) -> jinja2.Template:
        import jinja2

        try:
            return _environment().get_template(f"{name}.rq")
        except jinja2.TemplateNotFound:
            raise TemplateError(f"no query template named {name!r}") from None

    def _context(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {**self._globals, **params}


@cache
def templates_for(dialect: Dialect) -> Templates:
    """The templates of one dialect, shared by every store that writes it."""
    return Templates(dialect)


@cache
def package_folder(package: str) -> Path:
    """The folder of a package of data files (`tgsparql.queries`, `tgsparql.shapes`), through
    the package itself: importlib.resources would load tempfile, shutil and the compression
    modules into every command."""
    return Path(cast(str, import_module(package).__file__)).parent


def _walk(node: Path, prefix: str) -> Iterable[tuple[str, Path]]:
    """Every template file under `node`, with its name relative to `queries/`."""
    for child in node.iterdir():
        if child.is_dir():
            yield from _walk(child, f"{prefix}{child.name}/")
        elif child.name.endswith(".rq"):
            yield prefix + child.name, child

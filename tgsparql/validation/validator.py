"""Running the compiled queries on a store and turning their rows into validation results."""

from __future__ import annotations

import re
import threading
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pyoxigraph as ox

from tgsparql.rdf.lexical import BY_VALUE, stored_forms
from tgsparql.rdf.templates import Prepared, Sparql, render_term, stand_in, templates_for, to_iri
from tgsparql.rdf.terms import DEFAULT_DIALECT, Dialect, Term
from tgsparql.stores.store import DataGraph, EmbeddedStore, Solution, Store, open_store
from tgsparql.validation.compiler import (
    FOCUS_STAND_IN, SPARQL_BASED, CompiledQuery, check_shapes, compile_shape, compile_shapes,
)
from tgsparql.validation.errors import ShapesError, ValidationFailure
from tgsparql.validation.model import Shape
from tgsparql.validation.prebinding import group_starts, insert_values
from tgsparql.validation.report import ValidationReport, ValidationResult
from tgsparql.validation.shapes import Shapes
from tgsparql.validation.sparql import SparqlConstraint

if TYPE_CHECKING:
    from concurrent.futures import Future

_PLACEHOLDER = re.compile(r"\{[?$]([A-Za-z_][A-Za-z0-9_]*)\}")
_STAND_IN = re.compile(f"<{re.escape(FOCUS_STAND_IN)}([0-9]+)>")


class Validator:
    """Shapes compiled once for a store dialect; `validate` runs them on any store."""

    def __init__(self, shapes: Shapes, dialect: Dialect = DEFAULT_DIALECT) -> None:
        self.shapes = shapes
        self.templates = templates_for(dialect)
        self.paths = shapes.paths()
        self._compiled: dict[bool, list[CompiledQuery]] = {}
        self._prepared: dict[str, Prepared] = {}
        self._starts: dict[str, tuple[int, ...]] = {}
        """Where pre-binding inserts a focus node into each query run once per focus node, as
        `prepare` found it (a validator read back from disk then lexes none)."""
        self._by_shape: dict[tuple[int, bool], list[CompiledQuery]] = {}
        check_shapes(shapes, self.templates)
        self._target_literals = {
            stored: written
            for stored, written in _inverse(stored_forms(
                target for shape in shapes for kind, target in shape.target_pairs
                if kind == "targetNode" and isinstance(target, ox.Literal)
            )).items()
        }
        """The shapes' own target-node literals the store keeps in another form, by that form."""
        self._value_edges = {
            shape.key: (shape, edge) for shape in shapes if (edge := _value_edge(shape)) is not None
        }
        """The property shapes a few focus nodes need run only if one of them has a value, with
        the target pair (targetSubjectsOf or targetObjectsOf, predicate) of the nodes having one."""
        self._target_pairs = {shape.key: shape.target_pairs for shape in shapes if not shape.deactivated}
        """The target pairs of each active shape, by key (read for every run over a few nodes)."""
        wanted: dict[str, set[Term]] = {}
        for pairs in self._target_pairs.values():
            for kind, target in pairs:
                wanted.setdefault(kind, set()).add(target)
        for _, (kind, predicate) in self._value_edges.values():
            wanted.setdefault(kind, set()).add(predicate)
        self._wanted = {kind: sorted(found, key=str) for kind, found in wanted.items()}
        """Every target of each kind that a run over a few nodes asks the store about."""
        self._reads_shapes_graph = sorted(
            shape.name for shape in shapes if shape.has_focus
            for constraint in shape.constraints if constraint.component in SPARQL_BASED
            and constraint.value.shapes_graph  # type: ignore[attr-defined]
        )
        """The shapes whose SHACL-SPARQL reads $shapesGraph: their runs need the shapes graph
        in the data's dataset."""

    @property
    def scoped(self) -> list[CompiledQuery]:
        """The queries for a few focus nodes, with stand-ins for the nodes (rendered on first
        use; a run over a few nodes renders only those of the shapes it reaches)."""
        return [query for shape in self.shapes for query in self._shape_queries(shape, False)]

    def prepare(self) -> None:
        """Render every query of a run over a few focus nodes: each shape's, in both forms (with
        and without the records of tgsparql.rdf.lexical), and the validator's own (`_own`); a
        validator kept on disk then renders none when read back."""
        for shape in self.shapes:
            for lexical in (False, True):
                for query in self._shape_queries(shape, lexical):
                    if query.per_focus_node is not None:
                        self._starts[query.per_focus_node] = group_starts(query.per_focus_node)
        self._lexical()
        self._targeted()
        for size in range(2, BATCH + 1):
            self._batch(size)

    def _own(self, key: str, name: str, **params: object) -> Prepared:
        """A query of the validator's own (not a shape's), template `name` rendered once with
        `params`, kept under `key`."""
        if key not in self._prepared:
            self._prepared[key] = self.templates.prepare(name, **params)
        return self._prepared[key]

    def _lexical(self) -> Prepared:
        """Whether the store holds records of tgsparql.rdf.lexical (validation/any_lexical)."""
        return self._own("lexical", "validation/any_lexical")

    def _targeted(self) -> Prepared:
        """What the shapes' targets reach among a few nodes (validation/_targeted), the nodes a
        stand-in."""
        ordered = self._wanted
        return self._own(
            "targeted", "validation/_targeted", focus_nodes=[stand_in("focus_nodes")],
            classes=ordered.get("targetClass"), subjects_of=ordered.get("targetSubjectsOf"),
            objects_of=ordered.get("targetObjectsOf"),
        )

    def _batch(self, size: int) -> Prepared:
        """`size` queries in one request (validation/batch), each text a stand-in."""
        return self._own(f"batch {size}", "validation/batch",
                         texts=[Sparql(str(stand_in(f"text{i}"))) for i in range(size)])

    def _shape_queries(self, shape: Shape, lexical: bool) -> list[CompiledQuery]:
        key = (shape.key, lexical)
        if key not in self._by_shape:
            self._by_shape[key] = list(compile_shape(shape, self.templates, scoped=True, lexical=lexical)) \
                if shape.has_focus else []
        return self._by_shape[key]

    @property
    def queries(self) -> list[CompiledQuery]:
        """The queries of a run over every focus node (rendered on first use)."""
        return self._compile(lexical=False)

    def _compile(self, lexical: bool) -> list[CompiledQuery]:
        """The queries over every focus node, rendered once, on first use: those reading the
        records of tgsparql.rdf.lexical only for a store that holds some."""
        if lexical not in self._compiled:
            self._compiled[lexical] = list(compile_shapes(self.shapes, self.templates, lexical=lexical))
        return self._compiled[lexical]

    def validate(
        self,
        store: Store,
        default_graph: DataGraph = "union",
        focus: Collection[str | ox.NamedNode] | None = None,
    ) -> ValidationReport:
        """Every result over the data graph; `focus` restricts the targeted focus nodes."""
        with self._shapes_graph_beside(store, default_graph) as (dataset, data_graph):
            return self._validate(dataset, data_graph, focus)

    @contextmanager
    def _shapes_graph_beside(
        self, store: Store, default_graph: DataGraph
    ) -> Iterator[tuple[Store, DataGraph]]:
        """The store and data graph to validate, with the shapes graph as a named graph of the
        dataset when a query reads $shapesGraph (SHACL §5.3.1): added to an in-memory store for
        the run and removed after; an on-disk store (read-only, or written only by its owner) is
        never written, the run reads an in-memory copy. The data graph leaves it out. An
        endpoint's dataset cannot take it (validation writes nothing there): ShapesError."""
        if not self._reads_shapes_graph:
            yield store, default_graph
            return
        if not isinstance(store, EmbeddedStore):
            raise ShapesError(
                f"shape {self._reads_shapes_graph[0]}: its SHACL-SPARQL reads $shapesGraph, which "
                "needs the shapes graph in the data's dataset, and an endpoint's dataset cannot "
                "take it (validation writes nothing to an endpoint); validate the store itself "
                "with --store")
        name = self.shapes.graph.name
        dataset = store if store.path is None and not store.read_only else _in_memory(store)
        dataset.oxigraph.extend(ox.Quad(t.subject, t.predicate, t.object, name)
                                for t in self.shapes.graph.triples)
        try:
            if default_graph == "union":
                default_graph = [ox.DefaultGraph(), *sorted(
                    (g for g in dataset.oxigraph.named_graphs() if g != name), key=str)]
            yield dataset, default_graph
        finally:
            dataset.oxigraph.remove_graph(name)

    def _validate(
        self, store: Store, default_graph: DataGraph, focus: Collection[str | ox.NamedNode] | None
    ) -> ValidationReport:
        queries: Iterable[CompiledQuery]
        lexical = store.ask(self._lexical().fill())
        if focus is None:
            queries = self._compile(lexical)
        else:
            nodes = sorted({to_iri(node) for node in focus}, key=str)
            targeted, reached, idle = self._reaching(store, nodes, default_graph)
            listed: dict[frozenset[Term], str] = {}  # one text per set of nodes, shared

            def nodes_of(key: int) -> str:
                found = targeted.get(key, frozenset())
                if found not in listed:
                    listed[found] = " ".join(
                        render_term(n, self.templates.dialect) for n in sorted(found, key=str)
                    )
                return listed[found]

            queries = (  # one at a time: each text lists the nodes
                query._replace(text=_STAND_IN.sub(lambda m: nodes_of(int(m[1])), query.text))
                for shape in self.shapes
                if shape.key in reached and shape.key not in idle
                for query in self._shape_queries(shape, lexical)
            )
        results: list[ValidationResult] = []
        checked = set() if focus is None else set(idle)  # an idle shape is checked: it has no value
        run = 0
        embedded = isinstance(store, EmbeddedStore)
        if focus is None:
            answers = _answered(store, [(q.text, [q]) for q in queries], default_graph, embedded)
        elif embedded:
            answers = _shared(store, self._batched(queries), default_graph)
        else:
            answers = _answered(store, self._batched(queries), default_graph, False)
        for query, rows in answers:
            if query.per_focus_node is not None:
                rows = self._per_focus_node(store, query.per_focus_node, rows, default_graph)
            if query.constraints[0].component in SPARQL_BASED:
                _refuse_failure(query, rows)
            results.extend(self._result(query, row) for row in rows)
            checked.add(query.shape.key)
            run += 1
        return ValidationReport(
            results=self._as_written(store, results, lexical),
            shapes=[(shape.node, shape.name) for shape in self.shapes if shape.key in checked],
            paths=self.paths,
            queries_run=run,
        )

    def _reaching(
        self, store: Store, nodes: list[ox.NamedNode], default_graph: DataGraph
    ) -> tuple[dict[int, frozenset[Term]], set[int], set[int]]:
        """(the nodes each shape's own targets reach, by shape key; the keys of the shapes with
        a focus node among `nodes`, by their targets or their ancestors' through sh:property;
        the keys of the idle ones among those: shapes of `_value_edges` none of whose focus nodes
        has an edge of their predicate). The other shapes have no result, so
        validating a few nodes runs only the queries of the reached shapes that are not idle."""
        rows = store.select(self._targeted().fill(focus_nodes=nodes), default_graph=default_graph)
        kinds = {"targetClass": "targetClass", "out": "targetSubjectsOf", "in": "targetObjectsOf"}
        found: dict[tuple[str, Term], set[Term]] = {}
        for row in rows:
            found.setdefault((kinds[row["kind"].value], row["target"]), set()).add(row["node"])
        met = {pair: frozenset(reached) for pair, reached in found.items()}
        for node in nodes:
            met[("targetNode", node)] = frozenset((node,))
        shared: dict[frozenset[Term], frozenset[Term]] = {}  # shapes alike share one set
        targeted = {
            key: shared.setdefault(union, union)
            for key, pairs in self._target_pairs.items()
            for union in [frozenset().union(*(met.get(pair, ()) for pair in pairs))]
        }
        reached: set[int] = set()

        def reaches(shape: Shape) -> bool:
            if shape.key not in reached and not shape.deactivated and (
                targeted.get(shape.key) or any(reaches(parent) for parent in shape.parents)
            ):
                reached.add(shape.key)
            return shape.key in reached

        for shape in self.shapes:
            reaches(shape)
        idle = {
            key for key, (shape, pair) in self._value_edges.items()
            if key in reached
            and not any(targeted.get(parent.key, frozenset()) & met.get(pair, frozenset())
                        for parent in shape.parents)
        }
        return targeted, reached, idle

    def _batched(self, queries: Iterable[CompiledQuery]) -> Iterator[tuple[str, list[CompiledQuery]]]:
        """The queries for a few focus nodes as requests (text, the queries it answers): those
        of Core constraints up to BATCH at a time in one text (validation/batch), the others
        alone. A batch holds at most BATCH_CHARS of text, so many focus nodes (long texts) keep
        memory to about one query's text at a time."""
        pending: list[CompiledQuery] = []
        held = 0

        def flush() -> Iterator[tuple[str, list[CompiledQuery]]]:
            if len(pending) == 1:
                yield pending[0].text, list(pending)
            elif pending:
                texts = {f"text{i}": Sparql(query.text) for i, query in enumerate(pending)}
                yield self._batch(len(pending)).fill(**texts), list(pending)
            pending.clear()

        for query in queries:
            alone = query.constraints[0].component in SPARQL_BASED or len(query.text) > BATCH_CHARS
            if alone or held + len(query.text) > BATCH_CHARS:
                yield from flush()
                held = 0
            if alone:
                yield query.text, [query]
                continue
            pending.append(query)
            held += len(query.text)
            if len(pending) == BATCH:
                yield from flush()
                held = 0
        yield from flush()

    def _per_focus_node(
        self, store: Store, text: str, focus_rows: list[Solution], default_graph: DataGraph
    ) -> list[Solution]:
        """The query's rows for each focus node in turn, $this pre-bound to it: inserted into
        the text as values (prebinding.insert_values), or (a blank node, which no query text
        can name) handed to the embedded store as a substitution."""
        found: dict[Term, list[Solution]] = {}
        rows: list[Solution] = []
        for focus in focus_rows:
            node = focus["this"]
            if node not in found:
                if _has_blank_node(node):
                    if not isinstance(store, EmbeddedStore):
                        raise ShapesError(
                            "a SHACL-SPARQL query that needs one run per focus node cannot "
                            "pre-bind the blank node focus node of an endpoint"
                        )
                    found[node] = store.select(text, default_graph=default_graph,
                                               substitutions={"this": node})
                else:
                    bound = insert_values(text, {"this": render_term(node, self.templates.dialect)},
                                          self._starts.get(text))
                    found[node] = store.select(bound, default_graph=default_graph)
            rows += [{**focus, **row, "this": node} for row in found[node]]
        return rows

    def _result(self, query: CompiledQuery, row: Solution) -> ValidationResult:
        """The result of a row: a Core query's names its constraint by ?k; a SHACL-SPARQL
        query's variables are the user's, read as §5.3.2 maps them (whatever else they are
        named: ?k, ?lexical)."""
        shape = query.shape
        path: Term | None
        if query.constraints[0].component not in SPARQL_BASED:
            constraint = query.constraints[int(row["k"].value)]
            source_constraint = None
            messages = shape.messages
            path, value = row.get("path"), row.get("value")
            lexical, datatype = row.get("lexical"), row.get("lexicalDatatype")
            if isinstance(lexical, ox.Literal) and isinstance(datatype, ox.NamedNode):
                value = ox.Literal(lexical.value, datatype=datatype)  # as written
        else:
            constraint = query.constraints[0]
            sparql: SparqlConstraint = constraint.value  # type: ignore[assignment]
            if sparql.component is None:
                source_constraint = sparql.node
                messages = sparql.messages or shape.messages
            else:  # §6: a component's results name no constraint; the shape's messages first
                source_constraint = None
                messages = shape.messages or sparql.messages
                row = {**dict(sparql.parameters), **row}
            path = row["path"] if isinstance(row.get("path"), ox.NamedNode) else None
            value = row.get("value", row["this"] if shape.path is None else None)
        if path is None and shape.path is not None:
            path = shape.path.node
        if "message" in row and isinstance(row["message"], ox.Literal):
            messages = (row["message"],)
        messages = tuple(_substitute(m, row) for m in messages)
        if messages:
            text = _preferred(messages)
        else:
            from tgsparql.validation.messages import default_message  # for shapes without any

            text = default_message(shape, constraint, row)
        return ValidationResult(
            focus_node=row["this"],
            result_path=path,
            value=value,
            severity=shape.severity,
            source_shape=shape.node,
            source_constraint_component=constraint.component_iri,
            source_constraint=source_constraint,
            message=text,
            messages=messages,
        )


    def _as_written(
        self, store: Store, results: list[ValidationResult], lexical: bool
    ) -> list[ValidationResult]:
        """The results with each literal the store keeps in another form as the data (or the
        shapes' sh:targetNode) wrote it: a focus node from the shapes' target nodes, any other
        from the records of tgsparql.rdf.lexical, matched by the result's statement (focus node,
        predicate path) when that names one, else by the stored literal alone when only one
        written form is behind it."""
        stored = sorted(
            {term for r in results for term in (r.focus_node, r.value) if _rewritable(term)}, key=str
        )
        if not stored:
            return results
        records: dict[Term, list[tuple[Term, Term, ox.Literal]]] = {}
        if lexical:
            rows = store.run("validation/written_literals", literals=stored).rows
            for row in rows:
                written = ox.Literal(row["form"].value, datatype=row["datatype"])  # type: ignore[arg-type]
                records.setdefault(row["stored"], []).append((row["subject"], row["predicate"], written))

        def written(term: Term | None, subject: Term | None, path: Term | None) -> Term | None:
            if term is None or not _rewritable(term):
                return term
            if subject is None and term in self._target_literals:
                return self._target_literals[term]
            found = records.get(term, [])
            exact = {w for s, p, w in found if s == subject and p == path}
            forms = exact or ({w for _, _, w in found} if not isinstance(path, ox.NamedNode) else set())
            return forms.pop() if len(forms) == 1 else term

        out = []
        for result in results:
            focus = written(result.focus_node, None, None)
            if result.value == result.focus_node and result.result_path is None:
                value = focus
            else:
                value = written(result.value, result.focus_node, result.result_path)
            out.append(result._replace(focus_node=focus, value=value)
                       if (focus, value) != (result.focus_node, result.value) else result)
        return out


BATCH = 8
"""Core constraint queries for a few focus nodes sent as one request: each costs little but its
round trip (parsing, planning, a hand-over between threads)."""

AHEAD = 4
"""How many requests a run over a few focus nodes may take beyond the one its reader waits
for (_shared): enough to keep two CPUs busy, few enough that the texts held stay few."""

BATCH_CHARS = 16_000
"""The most query text one batch holds (a session's Core queries are about 1,000 characters)."""

QUERIES_AT_ONCE = 2
"""Queries in flight at once on the embedded store, which evaluates them without holding
Python's lock: a second one runs on a second CPU (a run over every focus node, a few queries
of seconds each, takes about half the time on two; for a few focus nodes, it overlaps one
query's parsing and planning with another's)."""


def _answered(
    store: Store, requests: Iterable[tuple[str, list[CompiledQuery]]], default_graph: DataGraph,
    overlapped: bool,
) -> Iterator[tuple[CompiledQuery, list[Solution]]]:
    """Each query with its rows, in order. Without `overlapped` one request after another (an
    endpoint's). With it (every focus node, on the embedded store), QUERIES_AT_ONCE requests at
    a time, queued whole, the longest first (_longest_first), so that both CPUs stay busy to the
    end instead of one waiting while the other finishes the request read next."""
    if not overlapped:
        for text, answered in requests:
            yield from _split(answered, store.select(text, default_graph=default_graph))
        return
    from concurrent.futures import ThreadPoolExecutor  # with logging, 4 ms a command need not pay

    queued = list(requests)
    pool = ThreadPoolExecutor(QUERIES_AT_ONCE)
    try:
        futures: dict[int, Future[list[Solution]]] = {}
        for i in sorted(range(len(queued)), key=lambda i: _longest_first(queued[i][1])):
            futures[i] = pool.submit(store.select, queued[i][0], default_graph=default_graph)
        for i, (_, answered) in enumerate(queued):
            yield from _split(answered, futures.pop(i).result())
    finally:  # a run stopped by an error (or its reader) runs none of the queued requests
        pool.shutdown(cancel_futures=True)


def _shared(
    store: Store, requests: Iterable[tuple[str, list[CompiledQuery]]], default_graph: DataGraph
) -> Iterator[tuple[CompiledQuery, list[Solution]]]:
    """Each query with its rows, in order, for a run over a few focus nodes on the embedded
    store: the requests shared between this thread and one helper, each taking the next
    request as soon as it is free, so that both CPUs stay busy (a session's forty-odd short
    queries take about two thirds of the time one after another). A request's text is made
    only when a thread takes it, and none is taken more than AHEAD requests beyond the one
    the reader waits for, so few texts (each lists the nodes) are held at a time."""
    pulled = iter(requests)
    turn = threading.Condition()
    taken: dict[int, list[CompiledQuery]] = {}
    """The queries of each request taken and not yet handed to the reader, by its number."""
    answers: dict[int, list[Solution] | BaseException] = {}
    count = 0  # requests taken so far
    ended = False

    def take(index: int) -> tuple[int, str] | None:
        """The next request, numbered; None when none is left, the reader stopped, or the run
        is AHEAD requests beyond `index`. With `turn` held: one thread reads `requests` at a
        time."""
        nonlocal count, ended
        if ended or count - index >= AHEAD:
            return None
        try:
            text, answered = next(pulled)
        except StopIteration:
            ended = True
            return None
        except BaseException as error:  # making a text failed: raised in its turn
            ended = True
            taken[count], answers[count] = [], error
            count += 1
            turn.notify_all()
            return None
        taken[count] = answered
        count += 1
        return count - 1, text

    def answer(number: int, text: str) -> None:
        rows: list[Solution] | BaseException
        try:
            rows = store.select(text, default_graph=default_graph)
        except BaseException as error:  # raised in this request's turn, by the reader's thread
            rows = error
        with turn:
            answers[number] = rows
            turn.notify_all()

    index = 0  # the next request to hand the reader

    def help_out() -> None:
        while True:
            with turn:
                while (request := take(index)) is None and not ended:
                    turn.wait()  # AHEAD beyond the reader: until it moves on
            if request is None:
                return
            answer(*request)

    helper = threading.Thread(target=help_out, name="tgsparql-validate", daemon=True)
    helper.start()
    try:
        while True:
            with turn:
                request = None if index in answers else take(index)
                if request is None:
                    while index not in answers and index < count:
                        turn.wait()
                    if index not in answers:
                        return
            if request is not None:
                answer(*request)
                continue
            rows = answers.pop(index)
            if isinstance(rows, BaseException):
                raise rows
            answered = taken.pop(index)
            with turn:
                index += 1
                turn.notify_all()
            yield from _split(answered, rows)
    finally:  # a run stopped by an error (or its reader) takes no further request
        with turn:
            ended = True
            turn.notify_all()
        helper.join()


def _longest_first(answered: list[CompiledQuery]) -> int:
    """The order in which a whole run's requests are queued: SHACL-SPARQL ones first, as they
    join whatever the query says where a Core one reads its shape's path (on the benchmark's
    shapes they take 2 to 5 times as long)."""
    return 0 if answered[0].constraints[0].component in SPARQL_BASED else 1


def _split(
    answered: list[CompiledQuery], rows: list[Solution]
) -> Iterator[tuple[CompiledQuery, list[Solution]]]:
    """The rows of a request by query: all of them for a query sent alone, else by ?part."""
    if len(answered) == 1:
        yield answered[0], rows
        return
    parts: list[list[Solution]] = [[] for _ in answered]
    for row in rows:
        part = row.pop("part")
        parts[int(part.value)].append(row)
    yield from zip(answered, parts)


ABSENT_VALUES_CONFORM = frozenset({
    "Class", "Datatype", "NodeKind", "MinExclusive", "MinInclusive", "MaxExclusive",
    "MaxInclusive", "MinLength", "MaxLength", "Pattern", "LanguageIn", "In", "MaxCount",
    "QualifiedMaxCount", "UniqueLang", "Disjoint", "LessThan", "LessThanOrEquals", "Node",
    "Not", "And", "Or", "Xone", "Closed",
})
"""The Core components that find no violation at a focus node without value nodes."""


FAILURE = ox.Literal(True)


def _refuse_failure(query: CompiledQuery, rows: list[Solution]) -> None:
    """ValidationFailure when a solution binds ?failure to true (SHACL §5.3: a failure, not a
    validation result)."""
    for row in rows:
        if row.get("failure") == FAILURE:
            raise ValidationFailure(
                f"shape {query.shape.name}: a SHACL-SPARQL query reported a failure at focus node "
                f"{row['this']} (?failure is true), so the data could not be validated "
                "(SHACL §5.3)")


def _in_memory(store: EmbeddedStore) -> EmbeddedStore:
    """A copy of the store's quads in memory, in its dialect."""
    copy = open_store()
    copy.dialect = store.dialect
    copy.oxigraph.bulk_extend(store.oxigraph.quads_for_pattern(None, None, None, None))
    return copy


def _value_edge(shape: Shape) -> tuple[str, Term] | None:
    """For a property shape that has no result where none of its focus nodes has a value, the
    edge a value needs, as the target pair that finds the nodes having one: its path is one
    predicate (or its inverse), its focus nodes are those its node shapes' own targets reach,
    and all its constraints find nothing without a value."""
    path = shape.path
    if path is None or shape.target_pairs or not shape.constraints or not shape.parents:
        return None
    inverse = path.kind == "inverse"
    step = path.items[0] if inverse else path
    if step.kind != "predicate" or any(c.component not in ABSENT_VALUES_CONFORM for c in shape.constraints):
        return None
    if any(parent.path is not None or any(p.has_focus for p in parent.parents) for parent in shape.parents):
        return None
    return ("targetObjectsOf" if inverse else "targetSubjectsOf", step.node)


def _rewritable(term: Term | None) -> bool:
    """A literal of a datatype the store keeps by value, so maybe not as written."""
    return isinstance(term, ox.Literal) and term.language is None and term.datatype.value in BY_VALUE


def _inverse(forms: dict[ox.Literal, ox.Literal]) -> dict[ox.Literal, ox.Literal]:
    """Stored form -> written form, for stored forms behind one written form only."""
    behind: dict[ox.Literal, set[ox.Literal]] = {}
    for written, stored in forms.items():
        behind.setdefault(stored, set()).add(written)
    return {stored: found.pop() for stored, found in behind.items() if len(found) == 1}


def _substitute(message: ox.Literal, row: Solution) -> ox.Literal:
    """`{?var}` and `{$var}` in a message replaced by the row's values."""
    if "{" not in message.value:
        return message
    text = _PLACEHOLDER.sub(
        lambda m: _plain(row[m.group(1)]) if m.group(1) in row else m.group(0), message.value
    )
    if message.language:
        return ox.Literal(text, language=message.language)
    return ox.Literal(text, datatype=message.datatype)


def _has_blank_node(term: Term) -> bool:
    if isinstance(term, ox.Triple):
        return any(_has_blank_node(t) for t in (term.subject, term.predicate, term.object))
    return isinstance(term, ox.BlankNode)


def _plain(term: Term) -> str:
    """A value as a message shows it: terms.term_text's lexical form, and a blank node or a
    triple term (which have none) as N-Triples rather than nothing."""
    return term.value if isinstance(term, (ox.NamedNode, ox.Literal)) else str(term)


def _preferred(messages: tuple[ox.Literal, ...]) -> str:
    """The English (or untagged) message for people, else the first."""
    for message in messages:
        if not message.language or message.language.lower().startswith("en"):
            return message.value
    return messages[0].value


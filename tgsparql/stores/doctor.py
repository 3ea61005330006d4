"""`tgsparql doctor`: can this SPARQL endpoint serve tgsparql, and in which dialect? And, read
only, for validation: does it show every graph when asked for their union?

Every probe is a template of `queries/doctor/` and writes only into a scratch named graph of its
own, which is dropped at the end, so running the doctor against a production store is safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pyoxigraph as ox

from tgsparql.rdf.terms import Dialect
from tgsparql.rdf.vocab import TG
from tgsparql.stores.remote import EndpointUnreachable, RemoteStore, display_url
from tgsparql.stores.store import InDialect, StoreError

Result = Literal["ok", "no", "skipped"]
PROBE_FACT = ox.Triple(
    ox.NamedNode("urn:tgsparql:doctor:s"),
    ox.NamedNode("urn:tgsparql:doctor:p"),
    ox.Literal("probe"),
)
PROBE_PREDICATE = ox.NamedNode(TG + "probe")
"""What the probe triple states (`tg:probe` in `doctor/probe_write`)."""
REQUIRED = ("reachable", "read", "update", "named graphs")
"""What every dialect needs: a session is written with INSERT DATA into named graphs."""


@dataclass(frozen=True)
class Check:
    name: str
    result: Result
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"check": self.name, "result": self.result, "detail": self.detail}


@dataclass
class Diagnosis:
    endpoint: str
    update_endpoint: str
    checks: list[Check] = field(default_factory=list)
    dialect: Dialect | None = None
    """The recommended dialect; None when the endpoint cannot serve tgsparql."""
    reason: str | None = None
    """Why the endpoint cannot serve tgsparql (in the dialect asked for); None when it can."""

    @property
    def ok(self) -> bool:
        return self.reason is None

    def result(self, name: str) -> Result:
        return next((c.result for c in self.checks if c.name == name), "skipped")

    def to_json(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "update_endpoint": self.update_endpoint,
            "checks": [check.to_json() for check in self.checks],
            "dialect": self.dialect,
            "ok": self.ok,
            "reason": self.reason,
        }

    def to_text(self) -> str:
        rows = [("CHECK", "RESULT", "DETAIL")] + [(c.name, c.result, c.detail) for c in self.checks]
        widths = [max(len(row[i]) for row in rows) for i in range(2)]
        lines = [f"endpoint {self.endpoint}" + (
            f" (updates: {self.update_endpoint})" if self.update_endpoint != self.endpoint else "")]
        lines += [f"{a.ljust(widths[0])}  {b.ljust(widths[1])}  {c}".rstrip() for a, b, c in rows]
        lines.append(f"recommended dialect: {self.dialect or 'none'}")
        lines.append("verdict: " + ("ok, the endpoint can serve tgsparql" if self.ok
                                    else f"cannot serve tgsparql: {self.reason}"))
        return "\n".join(lines)


class UnionNotShown(StoreError):
    """An endpoint that, asked for the union of all graphs, leaves named graphs out: validating
    what it shows would pass records it never read."""


def require_union(store: RemoteStore) -> None:
    """Refuse an endpoint whose union of all graphs does not show a triple of a named graph
    (one it holds outside its default graph), without writing to it: one probe of two reads."""
    rows = store.run("doctor/named_triple").rows
    if not rows:
        return  # no named graph holds a triple of its own: the default graph is the union
    found = rows[0]
    if not store.run("doctor/union_shows", default_graph="union", subject=found["s"],
                     predicate=found["p"], object=found["o"]).boolean:
        asked = store.endpoint.union_parameter or "a read without a dataset"
        raise UnionNotShown(
            f"{display_url(store.endpoint.query_url)} does not show the named graphs in the union "
            f"of all graphs: asked for it ({asked}), it did not show "
            f"{found['s']} {found['p']} {found['o']} of the graph {found['g']}; validating "
            "there would read the default graph alone (name the graphs with --graph)")


def diagnose(store: RemoteStore, *, dialect: Dialect | None = None) -> Diagnosis:
    """Probe the endpoint; `dialect`, when given, must be served or the diagnosis fails."""
    return _Probe(store).run(dialect)


class _Probe:
    def __init__(self, store: RemoteStore) -> None:
        self.store = store
        self.graph = ox.NamedNode(f"urn:tgsparql:doctor:{uuid.uuid4()}")
        self.probe = ox.NamedNode(f"{self.graph.value}:probe")
        self.value = "tgsparql doctor probe"
        self.diagnosis = Diagnosis(display_url(store.endpoint.query_url),
                                   display_url(store.endpoint.updates_to))

    def run(self, wanted: Dialect | None) -> Diagnosis:
        d = self.diagnosis
        if self._reachable_and_readable():
            if self._check("update", self._write):
                try:
                    self._check("named graphs", self._named_graphs)
                    self._check("union graph", self._union)
                    self._check("triple terms", lambda: self._edge("rdf12", "<<( s p o )>>"))
                    self._check("quoted triples", lambda: self._edge("rdfstar", "<< s p o >>"))
                finally:
                    self._check("cleanup", self._remove)
        usable = all(d.result(name) == "ok" for name in REQUIRED)
        d.checks.append(Check(
            "reification", "ok" if usable else "no",
            "rdf:Statement IRIs need only SPARQL 1.1 update and named graphs"))
        supported: list[Dialect] = [
            name for name, check in (("rdf12", "triple terms"), ("rdfstar", "quoted triples"),
                                     ("reification", "reification"))
            if usable and d.result(check) == "ok"
        ]
        d.dialect = supported[0] if supported else None
        if not usable:
            failed = next(c for c in d.checks if c.name in REQUIRED and c.result != "ok")
            d.reason = f"{failed.name}: {failed.detail}"
        elif wanted is not None and wanted not in supported:
            d.reason = (f"the endpoint does not serve the {wanted} dialect; "
                        f"use --dialect {d.dialect}")
        return d

    def _reachable_and_readable(self) -> bool:
        d = self.diagnosis
        try:
            rows = self.store.run("doctor/read").rows
        except EndpointUnreachable as error:
            d.checks.append(Check("reachable", "no", str(error)))
            d.checks.append(Check("read", "skipped"))
            return False
        except StoreError as error:
            d.checks.append(Check("reachable", "ok", "the server answers HTTP"))
            d.checks.append(Check("read", "no", str(error)))
            return False
        d.checks.append(Check("reachable", "ok", "the server answers HTTP"))
        d.checks.append(Check("read", "ok", "SELECT answered in SPARQL JSON"
                              + ("" if rows else " (the store is empty)")))
        return True

    def _check(self, name: str, probe: Callable[[], str]) -> bool:
        """Run one probe: its detail when it passes; a StoreError or a missing feature fails it."""
        try:
            detail = probe()
        except (StoreError, _No) as error:
            self.diagnosis.checks.append(Check(name, "no", str(error)))
            return False
        self.diagnosis.checks.append(Check(name, "ok", detail))
        return True

    def _probe(self) -> dict[str, Any]:
        """The probe triple's subject and value, as its templates take them."""
        return {"probe": self.probe, "value": self.value}

    def _write(self) -> str:
        self.store.run("doctor/probe_write", graph=self.graph, **self._probe())
        return f"wrote a probe triple into the scratch graph {self.graph.value}"

    def _named_graphs(self) -> str:
        rows = self.store.run("doctor/probe_graphs", **self._probe()).rows
        graphs = [row["g"] for row in rows if "g" in row]
        if self.graph not in graphs:
            raise _No(f"the probe written into {self.graph.value} was not found in it "
                      f"(found in: {', '.join(map(str, graphs)) or 'no named graph'})")
        return "the probe reads back from its named graph"

    def _union(self) -> str:
        if not self.store.run("doctor/union_shows", default_graph="union", subject=self.probe,
                              predicate=PROBE_PREDICATE, object=ox.Literal(self.value)).boolean:
            raise _No(f"{self.store.endpoint.union_parameter} did not merge the named graphs; "
                      "validation must then be given --graph")
        return f"{self.store.endpoint.union_parameter} merges every graph"

    def _edge(self, dialect: Dialect, form: str) -> str:
        probe = ox.NamedNode(f"{self.probe.value}:{dialect}")
        InDialect(self.store, dialect).run("doctor/probe_edge_write", graph=self.graph, probe=probe,
                                           fact=PROBE_FACT)
        rows = self.store.run("doctor/probe_edge_read", graph=self.graph, probe=probe).rows
        found = [row["edge"] for row in rows if "edge" in row]
        if found == [PROBE_FACT]:
            return f"{form} reads back as the same triple"
        if found and all(isinstance(term, ox.BlankNode) for term in found):
            raise _No(f"{form} is read as an RDF 1.2 reifier (a blank node), not a triple")
        raise _No(f"{form} reads back as {', '.join(map(str, found)) or 'nothing'}")

    def _remove(self) -> str:
        self.store.run("doctor/probe_remove", graph=self.graph)
        if self.store.run("doctor/probe_graphs", **self._probe()).rows:
            raise _No(f"the scratch graph {self.graph.value} is still there")
        return "the scratch graph was dropped"


class _No(Exception):
    """A probe whose request succeeded but whose answer shows the feature is missing."""

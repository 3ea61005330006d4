"""The W3C SHACL Core suite: every test passes fully, or its miss is listed with the reason."""

from __future__ import annotations

import pytest

from benchmarks.data import MissingData
from tests.validation.w3c_suite import KNOWN_MISSES, cases, run, scoped_against_full

try:
    CASES, MISSING = cases(), ""
except MissingData as error:
    CASES, MISSING = [], f"the W3C SHACL suite is missing: {error}"
pytestmark = pytest.mark.skipif(bool(MISSING), reason=MISSING)


def test_the_suite_has_all_98_core_tests() -> None:
    assert len(CASES) == 98


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN_MISSES[c.name], strict=True))
        if c.name in KNOWN_MISSES
        else c
        for c in CASES
    ],
    ids=lambda c: c.name,
)
def test_w3c_case_passes_fully(case) -> None:
    verdict = run(case)
    assert verdict.outcome == "full", verdict.reason


@pytest.mark.parametrize("name", sorted(KNOWN_MISSES))
def test_known_misses_still_agree_on_conformance(name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    assert run(case).outcome == "partial"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_validating_a_few_focus_nodes_gives_their_results_of_the_whole_run(case) -> None:
    """`validate --session` runs other queries (starting from the nodes, SHACL-SPARQL once per
    node): with every IRI of the data as the focus, the results on IRIs are the whole run's."""
    verdict = scoped_against_full(case)
    assert verdict.outcome == "full", verdict.reason

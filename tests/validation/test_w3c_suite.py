"""The W3C SHACL Core suite: every test passes fully."""

from __future__ import annotations

import pytest

from benchmarks.data import MissingData
from tests.validation.w3c_suite import cases, run, scoped_against_full

try:
    CASES, MISSING = cases(), ""
except MissingData as error:
    CASES, MISSING = [], f"the W3C SHACL suite is missing: {error}"
pytestmark = pytest.mark.skipif(bool(MISSING), reason=MISSING)


def test_the_suite_has_all_98_core_tests() -> None:
    assert len(CASES) == 98


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_w3c_case_passes_fully(case) -> None:
    verdict = run(case)
    assert verdict.outcome == "full", verdict.reason


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_validating_a_few_focus_nodes_gives_their_results_of_the_whole_run(case) -> None:
    """`validate --session` runs other queries (starting from the nodes, SHACL-SPARQL once per
    node): with every IRI of the data as the focus, the results on IRIs are the whole run's."""
    verdict = scoped_against_full(case)
    assert verdict.outcome == "full", verdict.reason

"""Golden questions in a user's test suite: the `tgsparql_golden` marker makes one test item per
question, and the fixture fails an item with the same diff as `tgsparql check`."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

EX = "https://example.org/demo/"
BORN = f"<{EX}entity/Marie_Curie> <{EX}rel/bornIn> <{EX}entity/Warsaw>"
GOLDEN = f"""
questions:
- question: Where was the scientist who discovered polonium born?
  name: polonium
  select:
  - {BORN}
  answer: {{contains: Warsaw}}
- question: Who discovered radium?
  name: radium
  answer: {{contains: Marie Curie}}
"""
TESTS = f'''
import pytest


@pytest.mark.tgsparql_golden("golden/demo.yaml")
def test_golden(tgsparql_golden, tgsparql_demo_store):
    result = tgsparql_golden.check(tgsparql_demo_store)
    assert result.session.startswith("urn:trustgraph:session:")


@pytest.mark.tgsparql_golden("golden/demo.yaml")
def test_golden_after_the_birthplace_is_deleted(tgsparql_golden, tgsparql_demo_store):
    tgsparql_demo_store.update("DELETE DATA {{ {BORN} }}")
    tgsparql_golden.check(tgsparql_demo_store)


@pytest.mark.tgsparql_golden("golden/demo.yaml", tolerate=("edges", "answer"))
def test_golden_tolerant(tgsparql_golden, tgsparql_demo_store):
    tgsparql_demo_store.update("DELETE DATA {{ {BORN} }}")
    tgsparql_golden.check(tgsparql_demo_store, backend="offline")
'''


def run(pytester: pytest.Pytester, golden: str, tests: str) -> pytest.RunResult:
    (pytester.path / "golden").mkdir()
    (pytester.path / "golden" / "demo.yaml").write_text(golden, encoding="utf-8")
    pytester.makepyfile(test_user=tests)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rf")


def test_each_question_is_a_test_item_failing_with_what_changed(pytester: pytest.Pytester) -> None:
    result = run(pytester, GOLDEN, TESTS)
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines([
        "FAILED test_user.py::test_golden_after_the_birthplace_is_deleted[[]polonium[]]*"])
    result.stdout.fnmatch_lines([
        "golden question 'polonium' of *demo.yaml changed:",
        f"  no longer selected: {BORN} (Marie Curie — born in — Warsaw); no longer a fact of "
        f"the KG; stated in {EX}doc/marie-curie, page 1, chunk 0: *",
        # what the offline selector answers once the fact is gone is not the point here
        '  answer changed: expected containing "Warsaw", got "*',
    ])


def test_a_bad_golden_file_fails_collection_naming_the_entry(pytester: pytest.Pytester) -> None:
    result = run(pytester, "questions:\n- question: q\n  answer: Warsaw\n", TESTS)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*demo.yaml: question 1 (q): `answer`: expected one of `exact`, "
                                 "`contains` or `pattern` with a text*"])


def test_the_fixture_without_the_marker_says_what_is_missing(pytester: pytest.Pytester) -> None:
    result = run(pytester, GOLDEN, "def test_unmarked(tgsparql_golden):\n    pass\n")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*the tgsparql_golden fixture needs its test marked "
        "@pytest.mark.tgsparql_golden(\"golden.yaml\")*"])


def test_a_bad_marker_argument_fails_collection_saying_what_it_takes(
    pytester: pytest.Pytester,
) -> None:
    tests = '''
import pytest


@pytest.mark.tgsparql_golden("golden/demo.yaml", tolerate="answer")
def test_tolerate_as_text(tgsparql_golden):
    pass
'''
    result = run(pytester, GOLDEN, tests)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*tgsparql_golden: tolerate= takes a tuple of checks among "
                                 "answer, citations, edges, sources, grounding, hops, validation; "
                                 "got 'answer'*"])

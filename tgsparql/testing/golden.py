"""Golden questions in a team's own test suite: `@pytest.mark.tgsparql_golden("golden.yaml")`
makes one test item per question of the file, and the `tgsparql_golden` fixture of each item asks
its question and fails with the same diff as `tgsparql check`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tgsparql.record.golden import GoldenError, GoldenQuestion, load_golden
from tgsparql.record.regression import TOLERABLE
from tgsparql.record.replay import QuestionResult, replaying
from tgsparql.testing.fakes import backend_of
from tgsparql.testing.plugin import GOLDEN_MARKER as MARKER

if TYPE_CHECKING:
    from tgsparql.stores.store import Store


@dataclass(frozen=True)
class GoldenCheck:
    """One golden question, ready to be asked of a store."""

    entry: GoldenQuestion
    origin: str
    tolerate: tuple[str, ...] = ()

    @property
    def question(self) -> str:
        return self.entry.question

    def check(self, store: Store, backend: Any = "offline", **options: Any) -> QuestionResult:
        """Ask the question of `store` (recorded in a throwaway collection, deleted after) with
        `backend` ("offline", any Backend, or a mapping of question → Script) and GraphRag's
        `limits` and `output_limits`; fail the test with every change found, else return the
        result."""
        with replaying(store, backend_of(backend), tolerate=self.tolerate,
                       **options) as replay:
            result = replay.one(self.entry)
        if result.fails:
            pytest.fail(f"golden question {self.entry.name!r} of {self.origin} changed:\n  "
                        + "\n  ".join(result.lines()), pytrace=False)
        return result


def golden_checks(marker: pytest.Mark, test_file: Path) -> list[GoldenCheck]:
    """The checks a marker names: its file (relative to the test's own file) read, each
    question one check; a bad file or argument fails the test module's collection, named."""
    if len(marker.args) != 1 or not isinstance(marker.args[0], (str, Path)):
        pytest.fail(f"{MARKER} takes one golden file: @pytest.mark.{MARKER}(\"golden.yaml\")",
                    pytrace=False)
    extra = sorted(set(marker.kwargs) - {"tolerate"})
    if extra:
        pytest.fail(f"{MARKER}: unknown argument {extra[0]!r}; it takes tolerate=",
                    pytrace=False)
    tolerate = tuple(marker.kwargs.get("tolerate", ()))
    unknown = [kind for kind in tolerate if kind not in TOLERABLE]
    if isinstance(marker.kwargs.get("tolerate"), str) or unknown:
        pytest.fail(f"{MARKER}: tolerate= takes a tuple of checks among "
                    f"{', '.join(TOLERABLE)}; got {marker.kwargs['tolerate']!r}", pytrace=False)
    path = test_file.parent / marker.args[0]
    try:
        golden = load_golden(path)
    except GoldenError as error:
        pytest.fail(str(error), pytrace=False)
    return [GoldenCheck(entry, str(path), tolerate) for entry in golden.questions]


def ids(checks: Iterable[GoldenCheck]) -> list[str]:
    return [check.entry.name for check in checks]

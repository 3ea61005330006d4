"""Shared fixtures: an Oxigraph server, the datasets (our own small fixtures, and the
third-party files of `TGSPARQL_DATA`), and commands run without the settings' environment.
Fresh stores, the demo sample and a pipeline over it are the tgsparql pytest plugin's
(`tgsparql_store`, `tgsparql_demo_store`, `tgsparql_demo_pipeline`, ...), as a user's suite
gets them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.data import MissingData, data_path
from tests.servers import Server, oxigraph_binary, serve_oxigraph
from tgsparql.cli import main
from tgsparql.validation.cache import CACHE_ENVIRONMENT

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
"""Files we wrote in the formats of the third-party datasets (`datasets/2wiki`, `/redocred`)."""


def third_party(*parts: str) -> Path:
    """A path under `TGSPARQL_DATA`; the test skips, saying why, when it is not there."""
    try:
        return data_path(*parts)
    except MissingData as error:
        pytest.skip(f"third-party data missing: {error}")


@pytest.fixture(scope="module", params=["fixtures", "TGSPARQL_DATA"])
def datasets(request: pytest.FixtureRequest) -> Path:
    """The `datasets/` folder: ours, always; then the real one when it is there."""
    return FIXTURES / "datasets" if request.param == "fixtures" else third_party("datasets")


SETTINGS_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "TGSPARQL_MODEL", "TGSPARQL_STORE",
                "TGSPARQL_ENDPOINT", "TGSPARQL_LLM_TIMEOUT", "TGSPARQL_LLM_STREAM_TIMEOUT",
                "TGSPARQL_LLM_RETRIES")
"""The environment that picks the command's LLM and store: a test's command runs without it,
unless the test gives it."""


@pytest.fixture(scope="session", autouse=True)
def validator_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The suite keeps validators in a directory of its own, not the user's cache (its
    commands, in process or started, find it in the environment)."""
    directory = tmp_path_factory.mktemp("validators")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENVIRONMENT, str(directory))
        yield directory


@pytest.fixture
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process runs without `SETTINGS_ENV` too, for code that reads it in process."""
    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)


@dataclass(frozen=True)
class CliRun:
    """What a command run in process said and how it ended."""

    exit_code: int
    stdout: str
    stderr: str

    def __iter__(self) -> Iterator[int | str]:
        """`code, out, err = cli(...)`."""
        return iter((self.exit_code, self.stdout, self.stderr))

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]

    @property
    def one_error_line(self) -> str:
        """The single stderr line of a run that failed with one error."""
        lines = self.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), self.stderr
        return lines[0]


def cli(*args: object, env: dict[str, str] | None = None) -> CliRun:
    """Invoke the `tgsparql` command in process, without `SETTINGS_ENV` (but with those given in
    `env`); anything it raises but SystemExit fails."""
    result = CliRunner().invoke(main, [str(arg) for arg in args],
                                env={**dict.fromkeys(SETTINGS_ENV), **(env or {})})
    unexpected = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not unexpected, f"the CLI raised {result.exception!r}"
    return CliRun(result.exit_code, result.stdout, result.stderr)


def clean_env(**env: str) -> dict[str, str]:
    """This process's environment without `SETTINGS_ENV`, with `env`: for a command started."""
    return {**{k: v for k, v in os.environ.items() if k not in SETTINGS_ENV}, **env}


def console_script() -> str:
    """The installed `tgsparql` command."""
    beside = Path(sys.executable).with_name("tgsparql")
    command = str(beside) if beside.exists() else shutil.which("tgsparql")
    assert command is not None, "the tgsparql console script is not installed"
    return command


def tgsparql_process(*args: object, **env: str) -> subprocess.Popen[str]:
    """The installed `tgsparql` command, started as a CI would, without `SETTINGS_ENV` (but with
    those given in `env`)."""
    return subprocess.Popen([console_script(), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env(**env))


@pytest.fixture(scope="session")
def oxigraph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Oxigraph server 0.5 (`rdf12`), one for the whole run; tests empty it as they need."""
    binary = oxigraph_binary()
    if binary is None:
        pytest.skip("the oxigraph server binary is not installed (pip install oxigraph)")
    yield from serve_oxigraph(binary, tmp_path_factory.mktemp("oxigraph"), "rdf12")

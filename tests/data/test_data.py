"""Third-party data is found through TGSPARQL_DATA alone, and a failed fetch leaves nothing half."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import data
from benchmarks.data import ENV, MissingData, data_path


def test_without_the_setting_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(MissingData, match="TGSPARQL_DATA is not set"):
        data_path("w3c-shacl")


def test_a_missing_file_is_named_with_the_setting(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setenv(ENV, str(tmp_path))
    (tmp_path / "datasets").mkdir()
    assert data_path("datasets") == tmp_path / "datasets"
    with pytest.raises(MissingData, match=f"{tmp_path / 'w3c-shacl'} does not exist"):
        data_path("w3c-shacl")


def test_a_failed_fetch_names_each_source_and_writes_no_part(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    def unreachable(*_: object) -> bytes:
        raise OSError("network is unreachable")

    monkeypatch.setattr(data, "_download", unreachable)
    monkeypatch.setattr(data, "_fetch_w3c", unreachable)
    failures = data.fetch(tmp_path)
    assert [f.split(":")[0] for f in failures] == [
        "w3c-shacl/manifest.ttl", "datasets/2wiki/corpus.json",
        "datasets/redocred/dev_revised.json", "datasets/2wiki/questions_dev.json",
        "datasets/redocred/rel_info.json",
    ]
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_fetch_keeps_what_is_there(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fixtures = Path(__file__).parents[1] / "fixtures" / "datasets"
    for relative in ("2wiki/corpus.json", "2wiki/questions_dev.json",
                     "redocred/dev_revised.json", "redocred/rel_info.json"):
        (tmp_path / "datasets" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "datasets" / relative).write_bytes((fixtures / relative).read_bytes())
    (tmp_path / "w3c-shacl").mkdir()
    (tmp_path / "w3c-shacl" / "manifest.ttl").write_text("")
    monkeypatch.setattr(data, "_download", pytest.fail)
    assert data.fetch(tmp_path) == []

"""The evaluation at a tiny size (on our fixtures, and on real data when it is there), so it keeps
working, and its answer scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.evaluate import (
    answer_lead, evaluate, evaluate_names, exact_match, f1_score, hub_stress, main, render,
    render_hubs, render_names, shortened,
)
from benchmarks.importers.twowiki import Question


@pytest.mark.parametrize("prediction, gold, em, f1", [
    ("The Eiffel Tower!", "eiffel   tower", 1.0, 1.0),
    ("Paris, France", "Paris", 0.0, 2 / 3),
    ("yes", "no", 0.0, 0.0),
    ("", "Paris", 0.0, 0.0),
])
def test_scoring_follows_the_2wiki_script(prediction: str, gold: str, em: float,
                                          f1: float) -> None:
    assert exact_match(prediction, gold) == em
    assert f1_score(prediction, gold) == pytest.approx(f1)


def test_answer_lead() -> None:
    assert answer_lead("Warsaw. From the knowledge graph: Marie Curie born in Warsaw.") == "Warsaw"
    assert answer_lead("From the knowledge graph: a b c.") == ""
    assert answer_lead("The knowledge graph holds no facts that answer this question.") == ""


@pytest.fixture(scope="module")
def tiny(datasets: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Up to 8 questions with the paragraphs of their subjects, and up to 10 Re-DocRED documents."""
    root = tmp_path_factory.mktemp("eval")
    questions = json.loads((datasets / "2wiki" / "questions_dev.json").read_text())[:8]
    corpus = json.loads((datasets / "2wiki" / "corpus.json").read_text())
    subjects = {s for q in questions for s, _, _ in q["evidence"]}
    (root / "q.json").write_text(json.dumps(questions))
    (root / "c.json").write_text(json.dumps([p for p in corpus if p["title"] in subjects]))
    docs = json.loads((datasets / "redocred" / "dev_revised.json").read_text())[:10]
    (root / "d.json").write_text(json.dumps(docs))
    return {"corpus": root / "c.json", "questions": root / "q.json", "docs": root / "d.json",
            "rel_info": datasets / "redocred" / "rel_info.json", "count": len(questions)}


def test_tiny_evaluation(tiny: dict) -> None:
    ev = evaluate(tiny["corpus"], tiny["questions"], tiny["docs"], tiny["rel_info"])
    assert len(ev.results) == tiny["count"]
    assert all(r.error is None for r in ev.results)
    anchored = sum(r.anchored_selected for r in ev.results)
    assert anchored > 0
    assert sum(r.trace_exact for r in ev.results) == anchored
    assert sum(r.sources_equal_walk for r in ev.results) == sum(r.selected for r in ev.results)
    assert ev.redocred_trace.exact == ev.redocred_trace.facts == len(ev.redocred.evidence)
    for r in ev.results:
        assert 0 <= r.retrieved_gold <= r.gold and r.selected_gold <= r.selected
    table = render(ev)
    assert f"| **all** | {tiny['count']} |" in table
    assert f"{anchored}/{anchored} (100.0%) — pass" in table


def test_cli_writes_the_table_and_names_bad_input(tiny: dict, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "evaluation.md"
    args = ["--corpus", str(tiny["corpus"]), "--questions", str(tiny["questions"]),
            "--redocred", str(tiny["docs"]), "--rel-info", str(tiny["rel_info"]),
            "--out", str(out), "--limit", "2"]
    assert main(args) == 0
    assert "| **all** | 2 |" in out.read_text()
    assert main([*args[:-2], "--questions", str(tmp_path / "missing.json")]) == 1
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'missing.json'}: cannot read")


@pytest.mark.parametrize("mode", [[], ["--hubs", "0"]], ids=["evaluation", "hub stress"])
def test_without_the_data_setting_the_cli_names_it(mode: list[str], monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("TGSPARQL_DATA", raising=False)
    assert main([*mode, "--limit", "1"]) == 1
    assert capsys.readouterr().err.startswith("error: TGSPARQL_DATA is not set")


def test_tiny_hub_stress_keeps_the_facts_under_noise_loaded_before_and_after(tiny: dict) -> None:
    questions = min(4, tiny["count"])
    runs = hub_stress(tiny["corpus"], tiny["questions"], tiny["docs"], tiny["rel_info"],
                      sizes=(0, 30), limit=questions)
    assert [(run.k, run.order, run.on_disk) for run in runs] == [
        (0, "before", False), (0, "before", True),
        (30, "before", False), (30, "before", True), (30, "after", False), (30, "after", True),
    ]
    quiet = runs[0]
    assert quiet.noise_edges == 0 and runs[2].noise_edges > 0
    assert runs[2].noise_edges % 30 == 0
    for run in runs:
        assert len(run.results) == len(run.latencies_ms) == questions
        assert all(r.error is None for r in run.results)
        # thirty unrelated edges on every entity cut none of the facts the quiet KG gave
        assert [r.retrieved_gold for r in run.results] == [
            r.retrieved_gold for r in quiet.results
        ]
    table = render_hubs(runs, questions)
    assert table.count("\n| 30 | ") == 4
    assert "- selection precision ≥ 0.9 at every K: worst run" in table


def test_a_full_name_is_cut_as_people_say_it() -> None:
    asked = Question("q", "compositional", "Why did John Middleton Murry (Writer)'s wife die?", "",
                     ())
    cuts = [shortened(asked, i, ["John Middleton Murry"]) for i in range(3)]
    assert [(cut.kind, cut.short.question) for cut in cuts if cut is not None] == [
        ("surname", "Why did Murry's wife die?"),
        ("given name", "Why did John's wife die?"),
        ("without middle names", "Why did John Murry's wife die?"),
    ]
    titled = Question("q", "compositional", "Who is Berengaria Of Portugal's mother?", "", ())
    assert shortened(titled, 0, ["Berengaria of Portugal"]) is None


def test_tiny_names_evaluation(tiny: dict) -> None:
    ev = evaluate_names(tiny["corpus"], tiny["questions"], tiny["docs"], tiny["rel_info"])
    assert len(ev.full) == len(ev.short) == len(ev.variants)
    assert len(ev.written) == len(ev.lower) == tiny["count"]
    assert all(r.error is None for r in ev.full + ev.short + ev.written + ev.lower)
    assert all(v.short.question != v.full.question for v in ev.variants)
    table = render_names(ev)
    assert f"| every question in lower case | {tiny['count']} |" in table
    assert "- short names: retrieval recall ≥ 0.85:" in table

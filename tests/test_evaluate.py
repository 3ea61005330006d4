"""The evaluation at a tiny size (on our fixtures, and on real data when it is there), so it keeps
working, and its answer scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from benchmarks.evaluate import (
    answer_lead, evaluate, evaluate_names, exact_match, f1_score, hub_stress, main, render,
    render_hubs, render_names, shortened, write_noise,
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
                      sizes=(0, 30), limit=questions, kinds=("made-up", "real"))
    assert [(run.k, run.noise, run.order, run.on_disk) for run in runs] == [
        (0, "made-up", "before", False), (0, "made-up", "before", True),
        *((30, kind, order, disk) for kind in ("made-up", "real") for order in ("before", "after")
          for disk in (False, True)),
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
    # each run is a row of the runs table and one of EM by question type
    assert table.count("\n| 30 | made-up | ") == table.count("\n| 30 | real | ") == 8
    assert "## EM by question type" in table
    assert "- selection precision ≥ 0.9 at every K of made-up noise: worst run" in table
    assert "- selection precision ≥ 0.93 at K = 0 (no noise): worst run" in table


def test_the_hub_stress_in_parallel_jobs_writes_its_grid_in_order(tiny: dict,
                                                                   tmp_path: Path) -> None:
    out = tmp_path / "hubs.md"
    assert main(["--corpus", str(tiny["corpus"]), "--questions", str(tiny["questions"]),
                 "--redocred", str(tiny["docs"]), "--rel-info", str(tiny["rel_info"]),
                 "--hubs", "0,30", "--hub-noise", "made-up,real", "--hub-orders", "before",
                 "--hub-stores", "memory", "--limit", "2", "--hub-jobs", "3",
                 "--hub-out", str(out)]) == 0
    runs = out.read_text().split("\n## ")[0]
    rows = [line.split(" | ")[:2] for line in runs.splitlines()
            if line.startswith(("| 0 |", "| 30 |"))]
    assert rows == [["| 0", "—"], ["| 30", "made-up"], ["| 30", "real"]]


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
    assert len(ev.full) == len(ev.short) == len(ev.lower_short) == len(ev.variants)
    assert len(ev.written) == len(ev.lower) == tiny["count"]
    assert all(r.error is None for r in ev.full + ev.short + ev.lower_short + ev.written + ev.lower)
    assert all(v.short.question != v.full.question for v in ev.variants)
    table = render_names(ev)
    assert f"| every question in lower case | {tiny['count']} |" in table
    assert f"| the same, cut short, in lower case | {len(ev.variants)} |" in table
    assert "- short names: retrieval recall ≥ 0.85:" in table


def node(name: str) -> ox.NamedNode:
    return ox.NamedNode("https://example.org/kg/" + name)


LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
KG = [
    ox.Triple(node("film"), node("director"), node("person")),
    ox.Triple(node("person"), node("born"), node("city")),
    ox.Triple(node("book"), node("author"), node("writer")),
    ox.Triple(node("writer"), node("director-too"), node("town")),
    *(ox.Triple(node(name), LABEL, ox.Literal(text)) for name, text in (
        ("director", "director"), ("director-too", "director"), ("born", "place of birth"),
        ("author", "author"))),
]


@pytest.mark.parametrize("kind", ["real", "restating"])
def test_real_noise_is_drawn_from_the_kg(tmp_path: Path, kind: str) -> None:
    """Real noise uses the KG's own predicates and entities; unless restating, never a
    predicate named like one of a fact either end of the noise edge is an end of."""
    path = tmp_path / "noise.nt"
    assert write_noise([node("film"), node("person")], 40, path, kind, KG) == 80
    noise = [ox.Triple(q.subject, q.predicate, q.object) for q in ox.parse(
        path=path, format=ox.RdfFormat.N_TRIPLES)]
    facts = [t for t in KG if t.predicate != LABEL]
    assert {t.predicate for t in noise} <= {t.predicate for t in facts}
    ends = {end for t in facts for end in (t.subject, t.object)}
    assert all(t.subject in ends and t.object in ends and t.subject != t.object for t in noise)
    names = {t.subject: t.object.value for t in KG if t.predicate == LABEL}
    told = {end: {names[t.predicate] for t in facts if end in (t.subject, t.object)}
            for end in ends}
    restated = [t for t in noise if names[t.predicate] in told[t.subject] | told[t.object]]
    assert bool(restated) == (kind == "restating")

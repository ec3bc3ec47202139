"""The demo's `markers` system (issue 26, item 6): stored answers with inline markers over the
passages the system retrieved, scored with no setting through `model=precomputed
model.system=markers`, the default `ngram` matcher at 0.5."""

from __future__ import annotations

from pathlib import Path

from runner import evaluate
from runner.data.dataset import Dataset
from tests.conftest import only_run_dir, read_json, run_cli
from tests.data.test_shipped_datasets import dataset_conf

# Worked by hand from data/demo/responses/markers.jsonl (each document is one paragraph of the
# knowledge base; a reference's paragraph has ngram similarity 1.0 with it, every other
# paragraph cited here stays below 0.5). Per case (ctx R, ctx P | src R, src P), all others
# 1, 1 | 1, 1 (none-1: nothing expected, nothing cited):
#   rw-2  "[1][3]": its paragraph and the Benefits Guide's wellbeing one → 1, 1/2 | 1, 1/2
#   rw-3  "[1-2]": its paragraph and another of the same policy           → 1, 1/2 | 1, 1
#   ec-2  "[1, 3]": its paragraph and the notice one of the same contract → 1, 1/2 | 1, 1
#   ec-4  "[2]": the Benefits Guide's pension paragraph                   → 0, 0 | 0, 0
#   ds-3  "[2]": the clean-desk paragraph of the right policy             → 0, 0 | 1, 1
#   pto-3 "[4]" over three documents: dangling, nothing cited             → 0, 0 | 0, 0
# context R = 27/30 = 0.9, P = (30 - 3 × 0.5 - 3)/30 = 25.5/30 = 0.85, F1 = (24 + 3 × 2/3)/30
# = 26/30; source R = 28/30, P = (30 - 0.5 - 2)/30 = 27.5/30, F1 = (27 + 2/3)/30 = 27.6667/30.
# Citations: 36 read from the markers, 31 matched; one dangling marker in one answer.
HEADLINE = {"context_recall": 0.9, "context_precision": 0.85, "context_f1": 0.86667,
            "source_recall": 0.93333, "source_precision": 0.91667, "source_f1": 0.92222}


def rounded(metrics: dict) -> dict:
    return {k: round(metrics[k], 5) for k in HEADLINE}


def test_the_markers_system_through_the_command_line(tmp_path: Path) -> None:
    proc = run_cli(["model=precomputed", "model.system=markers", "tracking=none", "report=none",
                    "progress=false", f"output_root={tmp_path}"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = read_json(only_run_dir(tmp_path) / "metrics.json")
    assert rounded(figures["metrics"]) == HEADLINE
    assert (figures["counts"]["citations"], figures["counts"]["citations_matched"]) == (36, 31)
    assert figures["dangling"] == {"citations": 1, "answers": 1}


def test_the_markers_system_through_evaluate() -> None:
    demo = Dataset(dataset_conf("demo"))
    answers = demo.responses("markers") or {}
    cases = [c.model_copy(update={"response": answers[c.id]}) for c in demo.iter_cases()]
    by_id = {c.id: c for c in cases}
    rw3 = by_id["rw-3"].response
    assert rw3 is not None and [c.source for c in rw3.citations] == ["Remote Work Policy.pdf"] * 2
    assert rw3.citations[0].claim == ("Yes, for up to 20 working days a year with HR and Legal "
                                      "approval [1-2].")
    assert [c.id for c in cases if c.response and c.response.dangling] == ["pto-3"]
    assert rounded(evaluate(cases).metrics) == HEADLINE

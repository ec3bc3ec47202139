"""Citations given by character offsets into the knowledge base (SPEC 2.1): their content is
the document's ``text[start:end]``, through `runner.evaluate` and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import runner
from runner.data.errors import DataError
from tests.conftest import run_cli

KB = {"a": "Employees get 25 days of paid leave per year.", "b": "Travel is approved by HR."}
# Case 1 cites a[0:35] = "Employees get 25 days of paid leave", all 5 of whose word trigrams
# occur in its reference (a's whole text): ngram similarity 5 / min(5, 8) = 1.0, a match. Case 2
# cites b[0:9] = "Travel is", shorter than a trigram, so both sides use bigrams: its one bigram
# is one of the 6 of its reference ("Travel is approved by the line manager."): 1 / min(1, 6)
# = 1.0, a match. Every figure is 1.0.
CASES = [
    {"id": "1", "query": "q1", "references": [{"source": "a", "content": KB["a"]}],
     "response": {"answer": "25 days.", "citations": [{"source": "a", "start": 0, "end": 35}]}},
    {"id": "2", "query": "q2",
     "references": [{"source": "b", "content": "Travel is approved by the line manager."}],
     "response": {"answer": "HR.", "citations": [{"source": "b", "start": 0, "end": 9}]}},
]


def test_evaluate_reads_offsets_from_the_knowledge_base() -> None:
    result = runner.evaluate(CASES, knowledge_base=KB)
    assert result.metrics["context_recall"] == 1.0
    assert [c.response["citations"][0]["content"] for c in result.cases] == [
        "Employees get 25 days of paid leave", "Travel is"]


def test_evaluate_refuses_an_offset_past_the_end_in_one_line() -> None:
    bad = [{**CASES[0], "response": {"citations": [{"source": "a", "start": 40, "end": 46}]}}]
    with pytest.raises(DataError) as caught:
        runner.evaluate(bad, knowledge_base=KB)
    # a's text has 45 characters.
    assert str(caught.value) == (
        "cases, case '1', field 'response.citations[0].end': the span 40:46 does not fit in "
        "'a'; expected 0 <= start <= end <= 45, the document's length")


def test_the_cli_reads_offsets_from_the_dataset_knowledge_base(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (tmp_path / "kb.jsonl").write_text("".join(
        json.dumps({"source": s, "text": t}) + "\n" for s, t in KB.items()))
    proc = run_cli(["dataset=file", "dataset.path=c.jsonl", "model=precomputed",
                    "dataset.knowledge_base.path=kb.jsonl", "tracking=none", "report=none",
                    "progress=false", "hydra.run.dir=out"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ("threshold 0.5: context R/P/F1 1.000/1.000/1.000  source R/P/F1 1.000/1.000/1.000"
            in proc.stderr)
    frame = runner.read_results(tmp_path / "out", per="citation")
    assert list(frame["content"]) == ["Employees get 25 days of paid leave", "Travel is"]

"""ragcite's metrics as MLflow GenAI scorers (runner.tracking.genai), run by
``mlflow.genai.evaluate`` offline on a sqlite store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
import pytest

import runner
from runner.errors import RagciteError
from runner.scoring.metrics import METRIC_KEYS, METRICS
from runner.tracking.genai import scorers
from tests.tracking.conftest import sqlite_uri

LEAVE = "Employees get 25 days of paid leave per year."
CARRY = "Unused days may be carried over until the end of March."
TRAVEL = "Travel is approved by the line manager."
HR = "HR approves all requests for equipment."


def _cite(source: str, content: str) -> dict[str, str]:
    return {"source": source, "content": content}


# Per kind: the response's citations and the references; then the six values worked out by hand
# (context R, P, F1, source R, P, F1). Identical passages have ngram similarity 1.0, passages
# without a shared word 0.0 (threshold 0.5, the ngram matcher's default level).
KINDS: dict[str, tuple[list[dict[str, str]], list[dict[str, str]], tuple[float, ...]]] = {
    # Cites its one reference word for word.
    "right": ([_cite("leave.md", LEAVE)], [_cite("leave.md", LEAVE)],
              (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)),
    # The right document, another passage of it: no passage matches, the source does.
    "wrong_passage": ([_cite("leave.md", CARRY)], [_cite("leave.md", LEAVE)],
                      (0.0, 0.0, 0.0, 1.0, 1.0, 1.0)),
    # Two references; one is cited, the other citation is of a document not expected: every
    # figure is 1 of 2, and F1 = 2 * 0.5 * 0.5 / (0.5 + 0.5) = 0.5.
    "half": ([_cite("leave.md", LEAVE), _cite("hr.md", HR)],
             [_cite("leave.md", LEAVE), _cite("travel.md", TRAVEL)],
             (0.5, 0.5, 0.5, 0.5, 0.5, 0.5)),
    # Cites nothing: recall 0 of 1; a precision with nothing cited but something expected is
    # 0.0 (zero_division=auto).
    "none": ([], [_cite("leave.md", LEAVE)], (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
}


def _rows() -> list[dict[str, Any]]:
    """20 rows: four of each kind, two whose system failed, two malformed."""
    rows = []
    for i in range(20):
        kind = list(KINDS)[i % 4] if i < 16 else ("failed" if i < 18 else "malformed")
        citations, references, _ = KINDS.get(kind, KINDS["right"])
        outputs: dict[str, Any] = {"answer": f"answer {i}", "citations": citations}
        expectations: dict[str, Any] = {"references": references}
        if kind == "failed":
            outputs = {"answer": "", "citations": [], "error": "TimeoutError: no answer"}
        if kind == "malformed":
            expectations = {"references": "leave.md"}  # a name where a list belongs
        rows.append({"inputs": {"query": f"{kind} question {i}"}, "outputs": outputs,
                     "expectations": expectations})
    return rows


@pytest.fixture
def sqlite_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An experiment on a sqlite store in `tmp_path`, its artifacts there too; its id."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sqlite_uri(tmp_path))
    monkeypatch.setenv("DO_NOT_TRACK", "true")
    # Unset, MLflow sizes its pools from its rate limits (40 threads for the rows, up to 240 for
    # six scorers): they exhaust the sqlite store's 15 connections and writes wait out the pool's
    # 30 s timeout (README, "ragcite's metrics in mlflow.genai.evaluate").
    monkeypatch.setenv("MLFLOW_GENAI_EVAL_MAX_WORKERS", "1")
    return mlflow.MlflowClient().create_experiment(
        "genai", artifact_location=(tmp_path / "artifacts").as_uri())


@pytest.mark.slow  # MLflow logs a trace and six assessments per row: 0.1 to 0.5 s a row here
def test_mlflow_genai_evaluate_scores_rows_as_ragcite_does(sqlite_store: str) -> None:
    rows = _rows()
    with mlflow.start_run(experiment_id=sqlite_store):
        result = mlflow.genai.evaluate(data=pd.DataFrame(rows), scorers=scorers())
    frame = result.result_df.set_index(result.result_df["request"].map(lambda r: r["query"]))
    assert len(frame) == 20
    for i, row in enumerate(rows[:16]):
        expected = KINDS[list(KINDS)[i % 4]][2]
        got = frame.loc[row["inputs"]["query"], [f"{k}/value" for k in METRIC_KEYS]]
        assert tuple(got) == expected, row["inputs"]["query"]
    # The batch path gives the same values, case by case.
    batch = runner.evaluate([{"query": r["inputs"]["query"], "response": r["outputs"],
                              **r["expectations"]} for r in rows[:16]])
    for row, case in zip(rows, batch.cases):
        assert case.metrics == {k: frame.loc[row["inputs"]["query"], f"{k}/value"]
                                for k in METRIC_KEYS}
    # The explanation of the case is the rationale.
    half = frame.loc["half question 2"]
    assert half["context_recall/rationale"] == (
        "Only the leave.md passage matches its ground-truth reference (1 of 2). travel.md is "
        "not cited at all.")
    assert half["source_precision/rationale"] == (
        "leave.md is an expected source, but hr.md is not (1 of 2 cited sources are expected).")
    assert frame.loc["wrong_passage question 1", "context_precision/rationale"] == (
        "The only response citation, from leave.md, does not match any ground-truth reference. "
        "The leave.md citation uses a wrong passage.")
    assert frame.loc["none question 3", "source_f1/rationale"] == (
        "Both source recall and precision are zero.")
    # Failed and malformed rows are errors, never scores: no value, and the means are over the
    # 16 scored rows (context: (4 * 1 + 4 * 0.5) / 16; source: (8 * 1 + 4 * 0.5) / 16).
    for query in ("failed question 16", "failed question 17", "malformed question 18",
                  "malformed question 19"):
        assert frame.loc[query, [f"{k}/value" for k in METRIC_KEYS]].isna().all(), query
    assert {k: result.metrics[f"{k}/mean"] for k in METRIC_KEYS} == {
        "context_recall": 0.375, "context_precision": 0.375, "context_f1": 0.375,
        "source_recall": 0.625, "source_precision": 0.625, "source_f1": 0.625}
    errors = {a["assessment_name"]: a["feedback"]["error"]["error_message"]
              for a in frame.loc["failed question 16", "assessments"] if "feedback" in a}
    assert errors == dict.fromkeys(METRIC_KEYS, "not scored: TimeoutError: no answer")
    errors = {a["assessment_name"]: a["feedback"]["error"]["error_message"]
              for a in frame.loc["malformed question 18", "assessments"] if "feedback" in a}
    assert errors == dict.fromkeys(METRIC_KEYS, "not scored: expectations.references: Input "
                                                "should be a valid list (got 'leave.md')")


@pytest.mark.parametrize(("matcher", "threshold", "recall", "matched"), [
    ("ngram", None, 0.5, "1"), ("ngram", "strict", 0.5, "1"), ("ngram", 0.8, 0.0, "0"),
    ("substring", None, 0.0, "0")])
def test_a_scorer_decides_at_the_matcher_and_threshold_it_was_made_with(
        matcher: str, threshold: float | str | None, recall: float, matched: str) -> None:
    # The citation adds a word to the hr.md reference: 3 of the 4 trigrams of the reference
    # (its shorter side) are shared, ngram similarity 0.75: a match at the default level (0.5)
    # and at strict (0.75), none at 0.8; not contained in the reference (substring: 0.0).
    (scorer,) = scorers(matcher=matcher, threshold=threshold, metrics=["context_recall"])
    quoted = {"answer": "a", "citations": [_cite("hr.md", "HR approves all requests for new "
                                                          "equipment")]}
    feedback = scorer(inputs={"query": "q"}, outputs=quoted,
                      expectations={"references": [_cite("hr.md", HR), _cite("leave.md", LEAVE)]})
    assert (feedback.name, feedback.value, feedback.metadata, feedback.error) == (
        "context_recall", recall, {"references_matched": matched, "references": "2"}, None)


def test_an_undefined_value_is_none_with_its_reason() -> None:
    (scorer,) = scorers(zero_division="nan", metrics=["context_recall"])
    feedback = scorer(inputs={"query": "q"}, outputs={"answer": "a", "citations": []},
                      expectations={"references": []})
    assert (feedback.value, feedback.error, feedback.rationale) == (
        None, None, "There are no ground-truth passages, so context recall is undefined by the "
                    "zero-division rule.")


def test_bad_settings_are_refused_when_the_scorers_are_made() -> None:
    with pytest.raises(RagciteError) as bad_threshold:
        scorers(threshold=7)
    assert str(bad_threshold.value) == ("scoring.threshold: 7 is outside [0, 1], the "
                                        "similarities this matcher gives")
    with pytest.raises(RagciteError) as bad_metric:
        scorers(metrics=["context_typo"])
    # Every declared metric may be named: the six built-in first, then any other module's
    # (the test session imports a toy one).
    others = "".join(f", {name}" for name in METRICS if name not in METRIC_KEYS)
    assert str(bad_metric.value) == (
        "unknown metric context_typo: expected one of context_recall, context_precision, "
        f"context_f1, source_recall, source_precision, source_f1{others}")


@pytest.mark.parametrize(("inputs", "outputs", "message"), [
    ({}, {"answer": "a", "citations": []}, "inputs.query: required field is missing"),
    ({"query": "q"}, {"answer": "a", "citations": [{"source": "", "content": "x"}]},
     "outputs.citations[0].source: Value error, must not be blank (got '')")])
def test_a_malformed_row_is_an_error_naming_its_field(inputs: dict[str, Any],
                                                       outputs: dict[str, Any],
                                                       message: str) -> None:
    (scorer,) = scorers(metrics=["source_f1"])
    feedback = scorer(inputs=inputs, outputs=outputs, expectations=None)
    assert (feedback.value, feedback.error.error_message) == (None, f"not scored: {message}")

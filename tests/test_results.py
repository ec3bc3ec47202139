"""The results contract (SPEC 7, docs/results.md): passages.parquet, cases.parquet and
metrics.json round trips."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import runner
from runner.results import (
    CASES_FILE,
    PASSAGES_FILE,
    SCHEMA_VERSION,
    CaseResult,
    RunResult,
    iter_decisions,
    iter_records,
    read_cases,
    read_metrics,
    result_dirs,
    write_job,
    write_metrics,
    write_result,
)
from runner.results.table import write_table
from runner.scoring.metrics import METRIC_KEYS
from tests.helpers import SEED_FILE, case


@pytest.fixture(scope="module")
def seed_result() -> RunResult:
    cases = runner.load_cases(SEED_FILE)
    failed = case([("Ünïcode.pdf", "x")], [("Ünïcode.pdf", "x")], id="failed", error="timeout",
                  metadata={"lang": "fr"})
    return runner.evaluate([*cases, failed], bootstrap_resamples=200)


def test_cases_round_trip(tmp_path: Path, seed_result: RunResult) -> None:
    write_result(tmp_path, seed_result)
    back = list(read_cases(tmp_path))
    assert len(back) == 4  # 3 seed cases + 1 failed
    assert back == seed_result.cases


def test_a_result_folder_is_listed_by_its_job(tmp_path: Path, seed_result: RunResult) -> None:
    assert result_dirs(tmp_path) == []  # no job.json: not finished
    write_result(tmp_path / "t0.3", seed_result, passages=f"../{PASSAGES_FILE}")
    write_result(tmp_path / "t0.5", seed_result, passages=f"../{PASSAGES_FILE}")
    write_job(tmp_path, ["t0.3", "t0.5"])
    assert result_dirs(tmp_path) == [tmp_path / "t0.3", tmp_path / "t0.5"]
    assert (tmp_path / PASSAGES_FILE).is_file()  # written once, shared
    assert not (tmp_path / "t0.3" / PASSAGES_FILE).exists()
    assert list(read_cases(tmp_path / "t0.5")) == seed_result.cases


def test_the_two_files_must_hold_the_same_cases(tmp_path: Path,
                                              seed_result: RunResult) -> None:
    # The decisions table holds no ids: its rows pair with the passages' rows by position.
    write_result(tmp_path, seed_result)
    decided = pq.read_table(tmp_path / CASES_FILE)
    write_table(tmp_path / CASES_FILE, decided.slice(0, 3))
    with pytest.raises(ValueError) as exc:
        list(iter_records(tmp_path))
    assert str(exc.value) == f"{tmp_path / CASES_FILE}: 3 cases, but the passages file has more"
    write_table(tmp_path / CASES_FILE, decided.slice(0, 3).append_column("x", [[1, 2, 3]])
                .drop_columns("x").slice(0, 3).take([0, 1, 2, 0, 1]))
    with pytest.raises(ValueError) as exc:
        list(iter_records(tmp_path))
    assert str(exc.value) == f"{tmp_path / CASES_FILE}: case 5 is not in the passages file"


def test_tables_carry_the_cases_format_version(tmp_path: Path, seed_result: RunResult) -> None:
    write_result(tmp_path, seed_result)
    for name in (CASES_FILE, PASSAGES_FILE):
        assert pq.read_schema(tmp_path / name).metadata[b"ragcite.format"] == b"4"
    # Format 3 (fidelity spans in the folded text, no excerpt) and a table with no version.
    for written, said in ((b"3", "3"), (None, "none")):
        pq.write_table(pq.read_table(tmp_path / CASES_FILE).replace_schema_metadata(
            written and {b"ragcite.format": written}), tmp_path / CASES_FILE)
        with pytest.raises(ValueError) as exc:
            list(iter_records(tmp_path))
        assert str(exc.value) == (f"{tmp_path / CASES_FILE}: per-case results format {said} is "
                                  "not supported (this ragcite reads version 4)")


def test_a_folder_of_format_2_is_refused_with_what_to_do(tmp_path: Path,
                                                         seed_result: RunResult) -> None:
    # Format 2 (passages.jsonl, cases.jsonl) is not read: one line says to run the job again.
    write_result(tmp_path, seed_result)
    (tmp_path / "cases.jsonl").write_text('{"v": 2, "id": "seed-1"}\n', encoding="utf-8")
    for read in (iter_records, iter_decisions, runner.read_results):
        with pytest.raises(ValueError) as exc:
            list(read(tmp_path))
        assert str(exc.value) == (f"{tmp_path / 'cases.jsonl'}: per-case results of format 2 "
                                  "(JSON lines); this ragcite reads format 4 (Parquet tables): "
                                  "run the job again")


def test_tables_hold_the_contract_columns(tmp_path: Path, seed_result: RunResult) -> None:
    write_result(tmp_path, seed_result)
    assert pq.read_schema(tmp_path / PASSAGES_FILE).names == [
        "id", "query", "references", "expected_sources", "response", "metadata", "similarity",
        "fidelity"]
    assert pq.read_schema(tmp_path / CASES_FILE).names == [
        "matched", "citation_labels", "reference_labels", "metrics", "counts", "bands", "error"]
    records = list(iter_decisions(tmp_path))
    assert [r["id"] for r in records] == ["seed-1", "seed-2", "seed-3", "failed"]
    for r in records:
        assert {"id", "metrics", "labels", "error"} <= set(r)
    assert records[0]["error"] is None
    assert records[2]["labels"] == {
        "citations": ["supported", "wrong_passage", "unexpected_source"],
        "references": ["cited", "passage_missed", "source_missed"]}
    # The failed case: every metric null, no counts, its error kept.
    assert records[3]["metrics"] == dict.fromkeys(METRIC_KEYS)
    assert (records[3]["counts"], records[3]["error"]) == ({}, "timeout")
    assert [r["references"][0]["source"] for r in iter_records(tmp_path)][3] == "Ünïcode.pdf"


def test_metrics_round_trip(tmp_path: Path, seed_result: RunResult) -> None:
    path = tmp_path / "metrics.json"
    write_metrics(path, seed_result)
    data = read_metrics(path)
    assert data["schema_version"] == SCHEMA_VERSION == 2
    assert (data["n_cases"], data["n_scored"], data["n_errors"]) == (4, 3, 1)
    assert data["error_rate"] == 0.25  # 1 of 4
    assert data["metrics"] == seed_result.metrics
    assert data["ci"] == seed_result.ci
    assert data["micro"] == seed_result.micro
    assert data["labels"] == seed_result.labels
    assert data["counts"] == seed_result.counts
    assert data["complete"] is True
    # Context recall: (1 + 0 + 1/3) / 3 = 4/9 over the three scored cases.
    assert data["metrics"]["context_recall"] == pytest.approx(4 / 9, rel=1e-15)
    assert not (tmp_path / "metrics.json.tmp").exists()  # written atomically


def test_metrics_extra_fields_are_written(tmp_path: Path) -> None:
    result = RunResult(metrics={}, ci={}, micro={}, labels={}, n_cases=0, n_scored=0,
                       n_errors=0, extra={"gates": {"passed": True}})
    path = tmp_path / "metrics.json"
    write_metrics(path, result)
    assert read_metrics(path)["gates"] == {"passed": True}


def test_write_metrics_accepts_a_dict(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    write_metrics(path, {"schema_version": SCHEMA_VERSION, "n_cases": 1})
    assert read_metrics(path) == {"schema_version": 2, "n_cases": 1}


@pytest.mark.parametrize("version", [0, 1, None, "2"])
def test_schema_version_check(tmp_path: Path, version: object) -> None:
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps({"schema_version": version}), encoding="utf-8")
    with pytest.raises(ValueError) as exc:
        read_metrics(path)
    assert str(exc.value) == (f"{path}: schema_version {version!r} is not supported (this "
                              "ragcite reads version 2)")


def test_missing_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="schema_version None is not supported"):
        read_metrics(path)


def test_nan_and_infinity_are_written_as_null(tmp_path: Path) -> None:
    # JSON has no NaN: a NaN anywhere (even nested, even a numpy value) is written as null.
    result = RunResult(metrics={"context_recall": math.nan}, ci={"context_recall": None},
                       micro={"context_recall": math.inf}, labels={}, n_cases=0, n_scored=0,
                       n_errors=0, extra={"timings": [1.5, np.float32("nan"), np.float64(2.0)],
                                          "arr": np.array([1.0, np.nan])})
    path = tmp_path / "metrics.json"
    write_metrics(path, result)
    text = path.read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    assert data["metrics"] == {"context_recall": None}
    assert data["micro"] == {"context_recall": None}
    assert data["timings"] == [1.5, None, 2.0]
    assert data["arr"] == [1.0, None]

    cr = CaseResult(id="x", query="q", references=[], expected_sources=[], response=None,
                    similarity=[[math.nan, 0.5]])
    write_result(tmp_path / "one", _one([cr]))
    assert next(iter_records(tmp_path / "one"))["similarity"] == [[None, 0.5]]


def test_case_result_from_minimal_dict() -> None:
    cr = CaseResult.from_dict({"id": "a", "query": "q", "references": [],
                               "expected_sources": []})
    assert (cr.response, cr.metadata, cr.metrics, cr.citation_labels, cr.error) == (
        None, {}, {}, [], None)


def _one(cases: list[CaseResult]) -> RunResult:
    return RunResult(metrics={"context_recall": None}, ci={}, micro={}, labels={},
                     n_cases=len(cases), n_scored=len(cases), n_errors=0,
                     counts={"references": 0}, cases=cases)


def test_tables_with_numpy_int_keys_and_huge_integers(tmp_path: Path) -> None:
    # metadata from YAML may have integer keys (written as strings, as json.dumps does);
    # numpy values are plain numbers; an integer beyond 64 bits still round-trips.
    cr = CaseResult(id="x", query="q…", references=[], expected_sources=[], response=None,
                    metadata={1: "one", "n": np.int64(3), "v": np.array([0.25, np.inf]),
                              "big": 2**70},
                    similarity=[[np.float32(0.5)]])
    write_result(tmp_path, _one([cr, CaseResult(id="y", query="q", references=[],
                                                expected_sources=[], response=None)]))
    first, second = iter_records(tmp_path)
    assert first["query"] == "q…"
    assert first["metadata"] == {"1": "one", "n": 3, "v": [0.25, None], "big": 2**70}
    assert first["similarity"] == [[0.5]]
    assert second["id"] == "y"


def test_tables_reject_what_json_cannot_encode(tmp_path: Path) -> None:
    cr = CaseResult(id="x", query="q", references=[], expected_sources=[], response=None,
                    metadata={"when": object()})
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        write_result(tmp_path, _one([cr]))


def test_a_lone_surrogate_is_stored_as_a_replacement_character(tmp_path: Path) -> None:
    # Parquet text is UTF-8: a text that is not valid Unicode keeps every other character.
    cr = CaseResult(id="x", query="a\ud800b", references=[], expected_sources=[],
                    response=None, metadata={"m": "c\udfffd"})
    write_result(tmp_path, _one([cr]))
    (back,) = iter_records(tmp_path)
    assert (back["query"], back["metadata"]) == ("a\ufffdb", {"m": "c\ufffdd"})

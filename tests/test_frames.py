"""Results as DataFrames (SPEC 8): ``RunResult.to_pandas`` and ``runner.read_results`` give the
same frame, in memory and from the written tables."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import runner
from runner.results import CASES_FILE, PASSAGES_FILE, RunResult, write_job, write_result
from runner.results.table import decisions_schema
from runner.scoring.metrics import COUNT_KEYS, METRIC_KEYS
from tests.helpers import SEED_FILE, case


@pytest.fixture(scope="module")
def cases() -> list[runner.Case]:
    failed = case([("A.pdf", "x")], [("A.pdf", "x")], id="failed", error="timeout")
    return [*runner.load_cases(SEED_FILE), failed]


def test_one_row_per_case_with_its_figures(cases: list[runner.Case]) -> None:
    frame = runner.evaluate(cases, threshold=0.5).to_pandas()
    assert list(frame.columns) == ["threshold", "id", *METRIC_KEYS, *COUNT_KEYS,
                                   "citation_labels", "reference_labels", "error"]
    assert frame["id"].tolist() == ["seed-1", "seed-2", "seed-3", "failed"]
    assert frame["threshold"].tolist() == [0.5] * 4
    # The seed's third example by hand: 1 of 3 references matched, 2 of 3 sources cited.
    third = frame.iloc[2]
    assert (third["references"], third["references_matched"]) == (3, 1)
    assert third["source_recall"] == 2 / 3
    assert list(third["citation_labels"]) == ["supported", "wrong_passage", "unexpected_source"]
    # The failed case: no figure, its error.
    last = frame.iloc[3]
    assert last[list(METRIC_KEYS)].isna().all() and last[list(COUNT_KEYS)].isna().all()
    assert last["error"] == "timeout"


@pytest.mark.parametrize("per", [None, "citation", "reference"])
def test_the_written_folder_reads_back_as_the_frame_in_memory(
        cases: list[runner.Case], tmp_path: Path, per: str | None) -> None:
    result = runner.evaluate(cases, threshold=0.5)
    write_result(tmp_path, result)
    write_job(tmp_path, ["."])
    pd.testing.assert_frame_equal(runner.read_results(tmp_path, per=per), result.to_pandas(per),
                                  check_exact=True)


def test_per_citation_and_per_reference_rows(cases: list[runner.Case]) -> None:
    result = runner.evaluate(cases, threshold=0.5)
    cits = result.to_pandas(per="citation")
    third = cits[cits["id"] == "seed-3"]
    assert third["citation"].tolist() == [0, 1, 2]
    assert third["label"].tolist() == ["supported", "wrong_passage", "unexpected_source"]
    assert third["source"].tolist() == [c["source"] for c in result.cases[2].response["citations"]]
    refs = result.to_pandas(per="reference")
    # One reference each in seed-1 and seed-2, three in seed-3; none for the failed case.
    assert refs.groupby("id", sort=False).size().to_dict() == {"seed-1": 1, "seed-2": 1,
                                                                 "seed-3": 3}
    assert refs[refs["id"] == "seed-3"]["label"].tolist() == [
        "cited", "passage_missed", "source_missed"]
    with pytest.raises(ValueError, match="per must be 'citation' or 'reference', got 'case'"):
        result.to_pandas(per="case")


def test_several_thresholds_index_by_threshold_and_read_back(cases: list[runner.Case],
                                                             tmp_path: Path) -> None:
    results = runner.evaluate(cases, thresholds=[0.3, "default"])
    assert list(results) == [0.3, 0.5] and isinstance(results[0.5], RunResult)
    for name, result in zip(("t0.3", "t0.5"), results.values()):
        write_result(tmp_path / name, result, passages=f"../{PASSAGES_FILE}")
    write_job(tmp_path, ["t0.3", "t0.5"])
    frame = runner.read_results(tmp_path)
    assert frame["threshold"].tolist() == [0.3] * 4 + [0.5] * 4
    pd.testing.assert_frame_equal(frame, results.to_pandas(), check_exact=True)
    pd.testing.assert_frame_equal(runner.read_results(tmp_path / "t0.5"),
                                  results[0.5].to_pandas(), check_exact=True)


def test_a_folder_that_holds_no_results_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as exc:
        runner.read_results(tmp_path)
    assert str(exc.value) == f"{tmp_path}: not a results folder (no metrics.json or job.json)"


def test_a_job_scored_on_two_cores_reads_back_as_evaluate_gives_it(
        run_job_in: Callable[..., list[Any]], tmp_path: Path) -> None:
    """The workers send each label as a one-byte code and the files store it as text: the
    job's folder reads back as the frame of ``runner.evaluate`` on the same cases."""
    run_job_in("dataset=file", f"dataset.path={SEED_FILE}", "model=precomputed",
               "scoring.threshold=[0.3,0.5]", "scoring.workers=2")
    cases = runner.load_cases(SEED_FILE)
    pd.testing.assert_frame_equal(runner.read_results(tmp_path / "job"),
                                  runner.evaluate(cases, thresholds=[0.3, 0.5]).to_pandas(),
                                  check_exact=True)
    file = pq.ParquetFile(tmp_path / "job" / "t0.3" / CASES_FILE)
    assert file.schema_arrow.remove_metadata() == decisions_schema(METRIC_KEYS, COUNT_KEYS)
    assert file.schema_arrow.metadata == {b"ragcite.format": b"4"}
    assert file.metadata.row_group(0).column(1).compression == "LZ4"


def test_importing_runner_leaves_pandas_for_the_first_frame() -> None:
    """pandas costs a run 0.2 s to import: it comes with the first frame, not with runner."""
    code = ("import sys, runner; print('pandas' in sys.modules); "
            f"runner.evaluate(runner.load_cases({str(SEED_FILE)!r})).to_pandas(); "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True"]

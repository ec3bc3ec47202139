"""Multirun sweeps: the jobs that differ only in threshold run as one job, and each threshold's
result is exactly what a run of its own at that threshold writes.

The offline matchers (``substring``, ``ngram``) compute faster than the similarity cache looks
up, so they skip it (``runner.matchers.base.Local``); a job computes them once for all its
thresholds. The API matchers' similarity cache is covered in tests/apis/test_cli_apis.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.results import CASES_FILE, PASSAGES_FILE
from tests.conftest import REPO, only_run_dir, read_json, run_cli

ENV = {"PYTHONPATH": str(REPO)}
QUIET = ["tracking=none", "report=none", "progress=false"]


def _sweep(root: Path) -> Path:
    (sweep,) = (root / "sweeps").iterdir()
    return sweep


def _jobs(root: Path) -> list[Path]:
    return sorted((p for p in _sweep(root).iterdir() if (p / ".hydra").is_dir()),
                  key=lambda p: int(p.name.split("_", 1)[0]))


@pytest.mark.slow
def test_a_threshold_grid_runs_a_job_per_matcher_and_equals_single_runs(tmp_path: Path) -> None:
    # The demo's ngram similarities are 0, 1, or 0.04, 0.06 and 0.07 (three pairs): 0.05 and
    # 0.065 each change the decisions of the case with one of them.
    proc = run_cli(["-m", "matcher=substring,ngram", "scoring.threshold=0.03,0.05,0.065",
                    "scoring.workers=2", *QUIET, f"output_root={tmp_path}"],
                   cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = _jobs(tmp_path)
    assert [j.name for j in jobs] == ["0_extractive_substring", "1_extractive_ngram"]
    for job in jobs:
        assert read_json(job / "job.json")["results"] == ["t0.03", "t0.05", "t0.065"]
        assert not (job / "t0.05" / "passages.jsonl").exists()  # once per job
    summary = read_json(_sweep(tmp_path) / "sweep.json")
    assert (summary["n_jobs"], summary["n_results"], summary["failed"]) == (2, 6, False)
    assert summary["name"] == "demo · extractive · sweep matcher×threshold"
    assert [j["dir"] for j in summary["jobs"]] == [
        f"{job.name}/t{t}" for job in jobs for t in ("0.03", "0.05", "0.065")]
    overrides = summary["jobs"][4]["overrides"]  # as a run of that one threshold has them
    assert (overrides[0], overrides[-1]) == ("matcher=ngram", "scoring.threshold=0.05")
    assert not any(o.startswith("scoring.threshold=[") for o in overrides)
    # The model answered each case once; the second job read every response from the cache.
    first, second = (read_json(j / "t0.03" / "metrics.json") for j in jobs)
    n_cases = first["n_cases"]
    assert first["execution"]["cache"]["computed"]["responses"] == n_cases
    assert second["execution"]["cache"]["hits"]["responses"] == n_cases
    ngram = [read_json(jobs[1] / f"t{t}" / "metrics.json") for t in ("0.03", "0.05", "0.065")]
    # The 0.04 pair un-matches at 0.05, the 0.06 pair at 0.065.
    assert [m["counts"]["citations_matched"] for m in ngram] == [28, 27, 26]
    # Each threshold's files are byte for byte those of a run of its own.
    for threshold in ("0.03", "0.05", "0.065"):
        root = tmp_path / f"alone-{threshold}"
        alone = run_cli(["matcher=ngram", f"scoring.threshold={threshold}",
                         "cache.enabled=false", *QUIET, f"output_root={root}"],
                        cwd=tmp_path, env=ENV)
        assert alone.returncode == 0, alone.stderr[-3000:]
        own = only_run_dir(root)
        assert (jobs[1] / f"t{threshold}" / CASES_FILE).read_bytes() == (
            own / CASES_FILE).read_bytes()
        assert (jobs[1] / PASSAGES_FILE).read_bytes() == (own / PASSAGES_FILE).read_bytes()
        mine, theirs = (read_json(d / "metrics.json") for d in (jobs[1] / f"t{threshold}", own))
        for key in ("metrics", "ci", "micro", "labels", "counts", "n_scored", "n_errors"):
            assert mine[key] == theirs[key], key
    assert "][DEBUG]" not in proc.stderr  # bm25s's own logger is quieted


@pytest.mark.slow
def test_threshold_levels_sweep_as_one_job_per_matcher(tmp_path: Path) -> None:
    proc = run_cli(["-m", "matcher=substring,ngram", "threshold=strict,lenient", *QUIET,
                    f"output_root={tmp_path}"], cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = _jobs(tmp_path)
    assert [read_json(j / "job.json")["results"] for j in jobs] == [
        ["strict_t1", "lenient_t1"], ["strict_t0.75", "lenient_t0.3"]]
    summary = read_json(_sweep(tmp_path) / "sweep.json")
    assert [j["threshold"] for j in summary["jobs"]] == [
        {"value": 1.0, "level": "strict"}, {"value": 1.0, "level": "lenient"},
        {"value": 0.75, "level": "strict"}, {"value": 0.3, "level": "lenient"}]
    overrides = summary["jobs"][3]["overrides"]
    assert (overrides[0], overrides[-1]) == ("matcher=ngram", "threshold=lenient")
    assert f"sweep: 4 results of 2 jobs in {_sweep(tmp_path)}\n" in proc.stderr  # no report


@pytest.mark.slow
def test_without_reports_the_last_line_names_the_sweep_folder(tmp_path: Path) -> None:
    proc = run_cli(["-m", "scoring.threshold=0.3,0.5", *QUIET, f"output_root={tmp_path}"],
                   cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.rstrip().endswith(f"sweep: 2 results of 1 job in {_sweep(tmp_path)}")
    assert not (_sweep(tmp_path) / "sweep.html").exists()

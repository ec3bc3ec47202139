"""``hydra/sweeper=ragcite`` (hydra_plugins/ragcite_sweeper): the jobs that differ only in their
threshold are launched as one job deciding all of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.errors import HydraException

from hydra_plugins.ragcite_sweeper.ragcite_sweeper import group_thresholds
from tests.conftest import REPO, read_json, run_cli

ENV = {"PYTHONPATH": str(REPO)}


def test_jobs_that_differ_only_in_threshold_are_one_job() -> None:
    jobs = [["matcher=substring", "threshold=strict"], ["matcher=substring", "threshold=lenient"],
            ["matcher=ngram", "threshold=strict"], ["matcher=ngram", "threshold=lenient"]]
    assert group_thresholds(jobs) == [
        ["matcher=substring", "scoring.threshold=[strict,lenient]"],
        ["matcher=ngram", "scoring.threshold=[strict,lenient]"]]
    values = [[f"scoring.threshold={t}"] for t in (0.1, 0.3, 0.5, 0.7, 0.9)]
    assert group_thresholds(values) == [["scoring.threshold=[0.1,0.3,0.5,0.7,0.9]"]]


def test_other_jobs_are_launched_as_given() -> None:
    systems = [["model.system=a", "threshold=strict"], ["model.system=b", "threshold=strict"]]
    assert group_thresholds(systems) == systems  # one threshold each: nothing to group
    assert group_thresholds([["matcher=ngram"], ["matcher=substring"]]) == [
        ["matcher=ngram"], ["matcher=substring"]]
    # A job already deciding a list stays a job of its own.
    assert group_thresholds([["scoring.threshold=[0.3,0.5]"], ["scoring.threshold=0.7"]]) == [
        ["scoring.threshold=[0.3,0.5]"], ["scoring.threshold=0.7"]]


def test_the_value_wins_over_the_level_and_repeats_are_dropped() -> None:
    jobs = [["threshold=strict", "scoring.threshold=0.4"], ["threshold=lenient",
                                                             "scoring.threshold=0.4"]]
    assert group_thresholds(jobs) == [jobs[0]]  # both decide 0.4: one job, as first given
    jobs = [["scoring.threshold=0.4"], ["scoring.threshold=0.6"], ["scoring.threshold=0.4"]]
    assert group_thresholds(jobs) == [["scoring.threshold=[0.4,0.6]"]]


def test_a_threshold_that_is_no_number_or_level_stops_the_sweep() -> None:
    with pytest.raises(HydraException) as exc:
        group_thresholds([["scoring.threshold=0.5"], ["scoring.threshold=high"]])
    assert str(exc.value) == ("scoring.threshold: 'high' is neither a number nor a level "
                              "(strict, default, lenient)")


def test_a_bad_value_in_a_later_job_still_stops_the_sweep_before_any_job(tmp_path: Path) -> None:
    proc = run_cli(["-m", "matcher=ngram", "scoring.threshold=0.5,high", "tracking=none",
                    "report=none", "progress=false", f"output_root={tmp_path}"],
                   cwd=tmp_path, env=ENV)
    assert proc.returncode != 0
    assert "scoring.threshold: 'high' is neither a number nor a level" in proc.stderr
    sweeps = tmp_path / "sweeps"
    jobs = [p for s in sweeps.iterdir() for p in s.iterdir() if p.is_dir()] if sweeps.is_dir() \
        else []
    assert jobs == []  # no job ran


def test_the_sweep_runs_with_either_sweeper(tmp_path: Path) -> None:
    for sweeper in ("ragcite", "basic"):
        root = tmp_path / sweeper
        proc = run_cli(["-m", f"hydra/sweeper={sweeper}", "matcher=ngram",
                        "scoring.threshold=0.4,0.6", "tracking=none", "report=none",
                        "progress=false", f"output_root={root}"], cwd=tmp_path, env=ENV)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (sweep,) = (root / "sweeps").iterdir()
        summary = read_json(sweep / "sweep.json")
        # ragcite's sweeper decides both thresholds in one job; Hydra's runs a job each.
        assert summary["n_jobs"] == (1 if sweeper == "ragcite" else 2)
        assert summary["n_results"] == 2 and summary["failed"] is False
        multirun = (sweep / "multirun.yaml").read_text(encoding="utf-8")
        assert f"hydra/sweeper: {sweeper}" in multirun

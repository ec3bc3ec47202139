"""Multirun sweeps: every job completes; responses come from the model once per sweep.

The offline matchers (``substring``, ``ngram``) compute faster than the similarity cache looks
up, so they skip it (``BaseMatcher.cacheable``). ``ngram`` similarities are kept in memory
instead (runner/memo.py): a job reads those of the jobs before it in the same process. The API
matchers' similarity cache is covered in tests/apis/test_cli_apis.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO, only_run_dir, read_json, run_cli

ENV = {"PYTHONPATH": str(REPO)}


def _jobs(root: Path) -> list[Path]:
    sweeps = list((root / "sweeps").iterdir())
    assert len(sweeps) == 1
    return sorted(p for p in sweeps[0].iterdir() if p.is_dir())


@pytest.mark.slow
def test_joblib_sweep_computes_each_similarity_and_response_once(tmp_path: Path) -> None:
    proc = run_cli(["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                    "matcher=substring,ngram", "matcher.threshold=0.3,0.5,0.7",
                    "tracking=none", "report=none", "progress=false",
                    f"output_root={tmp_path}"], cwd=tmp_path, env=ENV, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = _jobs(tmp_path)
    assert [j.name.split("_", 1)[1] for j in jobs] == [
        "extractive_substring_t0.3", "extractive_substring_t0.5", "extractive_substring_t0.7",
        "extractive_ngram_t0.3", "extractive_ngram_t0.5", "extractive_ngram_t0.7"]
    metrics = [read_json(j / "metrics.json") for j in jobs]
    assert all(m["complete"] for m in metrics)
    n_cases = metrics[0]["n_cases"]
    # The model is called once per case in the whole sweep; every other job reads the cache.
    computed = [m["cache"]["computed"].get("responses", 0) for m in metrics]
    assert sum(computed) == n_cases
    assert sorted(computed) == [0, 0, 0, 0, 0, n_cases]
    # substring skips every cache: each of its jobs computes the same similarities.
    sims = [m["cache"]["computed"]["similarities"] for m in metrics[:3]]
    assert sims[0] > 0 and sims == [sims[0]] * 3
    assert [m["cache"]["hits"]["similarities"] for m in metrics[:3]] == [0, 0, 0]
    # ngram's are kept in memory by each of the two worker processes: a job reads them all
    # when its worker ran an ngram job before, else computes them all.
    per_job = metrics[3]["cache"]["computed"]["similarities"]
    assert per_job > 0
    pairs = [(m["cache"]["hits"]["similarities"], m["cache"]["computed"]["similarities"])
             for m in metrics[3:]]
    assert set(pairs) <= {(0, per_job), (per_job, 0)}
    assert 1 <= pairs.count((0, per_job)) <= 2  # at most once per worker
    # A lower threshold never matches less.
    recalls = [m["metrics"]["context_recall"] for m in metrics[3:]]
    assert recalls[0] >= recalls[1] >= recalls[2]
    summary = read_json(jobs[0].parent / "sweep.json")
    assert summary["n_jobs"] == 6 and summary["failed"] is False


@pytest.mark.slow
def test_basic_launcher_second_job_reads_responses_from_the_cache(tmp_path: Path) -> None:
    args = ["-m", "matcher=ngram", "matcher.threshold=0.4,0.6", "tracking=none",
            "report=none", "progress=false", f"output_root={tmp_path}"]
    first = run_cli(args, cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr[-3000:]
    jobs = _jobs(tmp_path)
    m0, m1 = (read_json(j / "metrics.json") for j in jobs)
    # The second job reuses the cases the first loaded (runner.pipeline.LOADED).
    assert first.stderr.count("reusing the ") == 1
    assert f"reusing the {m0['n_cases']} cases of " in first.stderr
    assert m0["cache"]["computed"]["responses"] == m0["n_cases"]
    assert m1["cache"]["computed"].get("responses", 0) == 0
    assert m1["cache"]["hits"]["responses"] == m0["n_cases"]
    # ngram skips the disk cache; the second job reads the first job's similarities in memory.
    assert m0["cache"]["computed"]["similarities"] > 0
    assert m0["cache"]["hits"]["similarities"] == 0
    assert m1["cache"]["hits"]["similarities"] == m0["cache"]["computed"]["similarities"]
    assert m1["cache"]["computed"]["similarities"] == 0
    # ... and scores exactly as a run of its own at that threshold, computing them all.
    alone = run_cli(["matcher=ngram", "matcher.threshold=0.6", "tracking=none", "report=none",
                     "progress=false", "cache.enabled=false",
                     f"output_root={tmp_path / 'alone'}"], cwd=tmp_path, env=ENV)
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert "][DEBUG]" not in first.stderr + alone.stderr  # bm25s's own logger is quieted
    own = read_json(only_run_dir(tmp_path / "alone") / "metrics.json")
    assert own["cache"]["computed"]["similarities"] == m0["cache"]["computed"]["similarities"]
    assert (own["metrics"], own["ci"], own["labels"]) == (m1["metrics"], m1["ci"], m1["labels"])
    assert (jobs[1] / "cases.jsonl").read_bytes() == (
        only_run_dir(tmp_path / "alone") / "cases.jsonl").read_bytes()


@pytest.mark.slow
def test_a_job_reuses_the_lines_of_cases_whose_decisions_did_not_change(tmp_path: Path) -> None:
    # Scored by two worker processes (scoring.workers=2), the jobs of a basic-launcher sweep
    # take a case's cases.jsonl line from the previous job when the case, its response and its
    # decisions are the same (runner/memo.py LineMemo): exactly the lines the two jobs share.
    # The demo's similarities are 0, 1, or 0.04, 0.06 and 0.07 (three pairs): 0.05 and 0.065
    # each change the decisions of the case with one of them.
    args = ["-m", "matcher=ngram", "matcher.threshold=0.03,0.05,0.065", "scoring.workers=2",
            "tracking=none", "report=none", "progress=false", f"output_root={tmp_path}"]
    proc = run_cli(args, cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = _jobs(tmp_path)
    metrics = [read_json(j / "metrics.json") for j in jobs]
    lines = [(j / "cases.jsonl").read_bytes().splitlines() for j in jobs]
    n_cases = metrics[0]["n_cases"]
    shared = [sum(a == b for a, b in zip(lines[k - 1], lines[k])) for k in (1, 2)]
    assert 0 < shared[0] < n_cases and 0 < shared[1] < n_cases
    assert [m["cache"]["hits"]["lines"] for m in metrics] == [0, *shared]
    assert [m["cache"]["computed"]["lines"] for m in metrics] == [
        n_cases, n_cases - shared[0], n_cases - shared[1]]
    # The first job computed every similarity in two workers; the later ones read them and
    # the lines from the memos, in the sweep's own process.
    assert [m["scoring"]["workers"] for m in metrics] == [2, 1, 1]
    assert [m["cache"]["hits"]["similarities"] > 0 for m in metrics] == [False, True, True]
    assert [m["cache"]["computed"]["similarities"] for m in metrics][1:] == [0, 0]
    # Each job's file is byte for byte that of a run of its own, built line by line.
    for job, threshold in zip(jobs, ("0.03", "0.05", "0.065")):
        root = tmp_path / f"alone-{threshold}"
        alone = run_cli(["matcher=ngram", f"matcher.threshold={threshold}",
                         "scoring.workers=2", "cache.enabled=false", "tracking=none",
                         "report=none", "progress=false", f"output_root={root}"],
                        cwd=tmp_path, env=ENV)
        assert alone.returncode == 0, alone.stderr[-3000:]
        assert (job / "cases.jsonl").read_bytes() == (
            only_run_dir(root) / "cases.jsonl").read_bytes()

"""bench/suite.py end to end at 50 cases: the rows of its table and the fields of its JSON."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

SUITE = REPO / "bench" / "suite.py"
N = 50
SEED = 3


def _stage_labels() -> dict[str, str]:
    """bench/suite.py's STAGE_LABELS (the script is not a package module)."""
    spec = importlib.util.spec_from_file_location("bench_suite", SUITE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_suite", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return dict(module.STAGE_LABELS)


STAGES = _stage_labels()
NUMBA = importlib.util.find_spec("numba") is not None
# The matchers part's rows; the compiled `ngram` kernel's only where numba is installed.
MATCHERS = [("similarity", "substring"), ("similarity", "ngram:numpy"),
            *([("similarity", "ngram:numba")] if NUMBA else []),
            ("evaluate", "ngram:numpy"), *([("evaluate", "ngram:numba")] if NUMBA else [])]

E2E_KEYS = {"n_cases", "wall_s", "peak_rss_mb", "cases_per_s", "stages_s", "context_f1",
            "run_dir", "target", "passed", "score_target", "wall_s_all"}
MATCHER_KEYS = {"stage", "matcher", "n_cases", "seconds", "cases_per_s", "pairs", "pairs_per_s",
                "rss_before_mb", "peak_rss_mb", "target", "passed"}
MULTIRUN_KEYS = {"n_cases", "n_jobs", "failed", "thresholds", "single_s", "single_source",
                 "single_s_all", "single_peak_rss_mb", "multirun_s", "multirun_s_all",
                 "multirun_peak_rss_mb", "ratio", "max_ratio", "passed", "sweep_dir", "jobs"}


def _table(stdout: str) -> list[list[str]]:
    """The table's rows as cells (columns are separated by at least two spaces)."""
    lines = stdout.splitlines()
    rule = next(i for i, line in enumerate(lines) if line and set(line) == {"-"})
    header = re.split(r"\s{2,}", lines[rule - 1].strip())
    assert header == ["part", "measurement", "N", "seconds", "cases/s", "pairs/s",
                      "peak RSS MB", "target", "result"]
    return [re.split(r"\s{2,}", line.strip()) for line in lines[rule + 1:]
            if line.strip() and not line.startswith("*")]


@pytest.mark.slow
def test_suite_at_50_cases(tmp_path: Path) -> None:
    default_data = REPO / "bench" / "results" / "data" / f"synth-n{N}-s{SEED}.jsonl"
    existed = default_data.exists()
    out_json = tmp_path / "suite.json"
    proc = subprocess.run(
        [sys.executable, str(SUITE), "--sizes", str(N), "--multirun-size", str(N),
         "--seed", str(SEED), "--data-dir", str(tmp_path / "data"),
         "--work-dir", str(tmp_path / "work"), "--json", str(out_json)],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The data went to --data-dir, not to bench/results/data.
    assert (tmp_path / "data" / f"synth-n{N}-s{SEED}.jsonl").is_file()
    assert default_data.exists() == existed

    rows = _table(proc.stdout)
    assert [(r[0], r[1]) for r in rows] == [
        ("setup", "new MLflow store: a 1-case run"),
        ("e2e", "ragcite run (ngram, MLflow, HTML report)"),
        *[("e2e", label) for label in STAGES.values()],
        *[("matchers", ("similarities " if stage == "similarity" else "runner.evaluate ")
           + matcher) for stage, matcher in MATCHERS],
        ("multirun", "single run (alternating with the sweeps)"),
        ("multirun", "5-threshold multirun (sweep=thresholds)"),
    ]
    assert rows[0][2] == "1"
    assert all(r[2] == str(N) for r in rows[1:])
    # Targets apply at 100,000 cases only; the multirun ratio at any size.
    assert rows[1][-1] == "n/a"
    assert re.fullmatch(r"\d+\.\d\dx (PASS|FAIL)", rows[-1][-1])

    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert report["sizes"] == [N]
    assert report["multirun_size"] == N
    assert report["seed"] == SEED
    assert report["parts"] == ["e2e", "matchers", "multirun"]
    assert report["store"] == "warm"
    assert report["store_creation_s"] > 0
    assert [(r["part"], r["measurement"].strip()) for r in report["table"]] == [
        (r[0], r[1]) for r in rows]

    (e2e,) = report["e2e"]
    assert set(e2e) == E2E_KEYS
    assert e2e["n_cases"] == N
    assert e2e["passed"] is None and e2e["target"]["applies"] is False
    assert e2e["score_target"] == {"max_score_s": 5.0, "applies": False, "passed": None}
    assert e2e["wall_s_all"] == [e2e["wall_s"]]  # --repeat 1: one run
    assert list(e2e["stages_s"]) == list(STAGES)
    assert abs(sum(e2e["stages_s"].values()) - e2e["wall_s"]) < 0.01
    assert all(v >= -0.01 for v in e2e["stages_s"].values())
    # The child's own peak RSS (it imports MLflow), not the suite's.
    assert e2e["peak_rss_mb"] > 100

    assert [(m["stage"], m["matcher"]) for m in report["matchers"]] == MATCHERS
    by_row = {(m["stage"], m["matcher"]): m for m in report["matchers"]}
    for m in report["matchers"]:
        assert set(m) == MATCHER_KEYS
        assert m["n_cases"] == N
        assert m["seconds"] > 0
        if m["stage"] == "similarity":
            assert m["pairs"] > N and m["pairs_per_s"] > 0
            assert m["target"] is None and m["passed"] is None
        else:
            assert m["pairs"] is None
            assert m["target"]["applies"] is False and m["passed"] is None
    # The default install carries issue 2's target; the compiled kernel issue 7's.
    assert by_row[("evaluate", "ngram:numpy")]["target"] == {
        "n_cases": 100_000, "max_seconds": 8.0, "max_peak_rss_mb": 1024.0, "applies": False}
    if NUMBA:
        assert by_row[("evaluate", "ngram:numba")]["target"] == {
            "n_cases": 100_000, "max_seconds": 5.0, "applies": False}

    multirun = report["multirun"]
    assert set(multirun) == MULTIRUN_KEYS
    assert multirun["n_cases"] == N
    assert multirun["n_jobs"] == 5
    assert multirun["failed"] is False
    assert multirun["thresholds"] == [0.1, 0.3, 0.5, 0.7, 0.9]
    # Single runs of its own, alternating with the sweeps; the fastest of each is compared.
    assert multirun["single_source"] == "interleaved"
    assert multirun["single_s"] == min(multirun["single_s_all"])
    assert multirun["multirun_s"] == min(multirun["multirun_s_all"])
    assert len(multirun["single_s_all"]) == len(multirun["multirun_s_all"])
    assert multirun["ratio"] == pytest.approx(multirun["multirun_s"] / multirun["single_s"],
                                              abs=1e-3)
    assert multirun["passed"] is (multirun["ratio"] < 1.5)
    assert [j["n_cases"] for j in multirun["jobs"]] == [N] * 5

"""bench/suite.py end to end at 50 cases (memory part at 200): the rows of its table and the
fields of its JSON."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO

SUITE = REPO / "bench" / "suite.py"
N = 50
MEMORY_N = 200
SEED = 3


def _suite_module() -> ModuleType:
    """bench/suite.py (the script is not a package module)."""
    spec = importlib.util.spec_from_file_location("bench_suite", SUITE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_suite", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SUITE_MODULE = _suite_module()
STAGES: dict[str, str] = dict(SUITE_MODULE.STAGE_LABELS)
NUMBA = importlib.util.find_spec("numba") is not None
# The matchers part's rows; the compiled `ngram` kernel's only where numba is installed.
MATCHERS = [("similarity", "substring"), ("similarity", "ngram:numpy"),
            *([("similarity", "ngram:numba")] if NUMBA else []),
            ("evaluate", "ngram:numpy"), ("evaluate_5t", "ngram:numpy"),
            *([("evaluate", "ngram:numba")] if NUMBA else [])]
K5 = [0.1, 0.3, 0.5, 0.7, 0.9]
K20 = [round(0.05 * i, 2) for i in range(1, 21)]

E2E_KEYS = {"n_cases", "wall_s", "peak_rss_mb", "tree_peak_pss_mb", "cases_per_s", "stages_s",
            "workers", "context_f1", "bytes", "run_dir", "target", "passed", "score_target",
            "wall_s_all"}
BYTES_KEYS = {"folder_bytes", "mlflow_artifact_bytes", "total_bytes", "mlflow_db_growth_bytes"}
MATCHER_KEYS = {"stage", "matcher", "n_cases", "thresholds", "seconds", "cases_per_s", "pairs",
                "pairs_per_s", "rss_before_mb", "peak_rss_mb", "target", "passed"}
MULTIRUN_KEYS = {"n_cases", "single", "sweeps"}
SINGLE_KEYS = {"wall_s", "wall_s_all", "peak_rss_mb", "tree_peak_pss_mb", "cases_per_s",
               "stages_s", "bytes"}
SWEEP_KEYS = {"k", "thresholds", "wall_s", "wall_s_all", "peak_rss_mb", "tree_peak_pss_mb",
              "n_jobs", "n_results", "failed", "job_timings_s", "results", "bytes", "sweep_dir",
              "ratio", "max_ratio", "aim_ratio", "passed", "bytes_ratio"}
MEMORY_KEYS = {"n_cases", "profile", "tracking", "report", "wall_s", "wall_s_all",
               "peak_rss_mb", "tree_peak_pss_mb", "cases_per_s", "workers", "stages_s", "bytes",
               "target", "passed"}
BYTES_ROW = "  bytes written: folder + MLflow artifacts"


def _table(stdout: str) -> list[list[str]]:
    """The table's rows as cells (columns are separated by at least two spaces)."""
    lines = stdout.splitlines()
    rule = next(i for i, line in enumerate(lines) if line and set(line) == {"-"})
    header = re.split(r"\s{2,}", lines[rule - 1].strip())
    assert header == ["part", "measurement", "N", "seconds", "cases/s", "pairs/s",
                      "peak RSS MB", "target", "result"]
    return [re.split(r"\s{2,}", line.strip()) for line in lines[rule + 1:]
            if line.strip() and not line.startswith("*")]


def _matcher_label(stage: str, matcher: str) -> str:
    if stage == "similarity":
        return f"similarities {matcher}"
    if stage == "evaluate_5t":
        return f"runner.evaluate {matcher}, 5 thresholds"
    return f"runner.evaluate {matcher}"


@pytest.mark.slow
def test_suite_at_50_cases(tmp_path: Path) -> None:
    default_data = REPO / "bench" / "results" / "data" / f"synth-n{N}-s{SEED}.jsonl"
    existed = default_data.exists()
    out_json = tmp_path / "suite.json"
    work = tmp_path / "work"
    proc = subprocess.run(
        [sys.executable, str(SUITE), "--sizes", str(N), "--multirun-sizes", str(N),
         "--memory-size", str(MEMORY_N), "--fidelity-size", str(N), "--fidelity-docs", "20",
         "--seed", str(SEED), "--data-dir",
         str(tmp_path / "data"), "--work-dir", str(work), "--json", str(out_json)],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The data went to --data-dir, not to bench/results/data.
    assert (tmp_path / "data" / f"synth-n{N}-s{SEED}.jsonl").is_file()
    assert (tmp_path / "data" / f"synth-small-n{MEMORY_N}-s{SEED}.jsonl").is_file()
    assert default_data.exists() == existed

    rows = _table(proc.stdout)
    assert [(r[0], r[1]) for r in rows] == [
        ("setup", "new MLflow store: a 1-case run"),
        ("e2e", "ragcite run (ngram, MLflow, HTML report)"),
        *[("e2e", label) for label in STAGES.values()],
        *[("matchers", _matcher_label(stage, matcher)) for stage, matcher in MATCHERS],
        ("multirun", "single run (alternating with the sweeps)"),
        ("multirun", BYTES_ROW.strip()),
        ("multirun", "5-threshold multirun: 1 job, 5 results"),
        ("multirun", BYTES_ROW.strip()),
        ("multirun", "20-threshold multirun: 1 job, 20 results"),
        ("multirun", BYTES_ROW.strip()),
        ("memory", "small cases, tracking=none report=none"),
        ("memory", "process tree PSS (sampled)"),
        ("fidelity", "ragcite run, scoring.fidelity=off, 20 docs"),
        ("fidelity", "ragcite run, scoring.fidelity=auto, 20 docs"),
    ]
    assert rows[0][2] == "1"
    assert all(r[2] == str(N) for r in rows[1:-4] + rows[-2:])
    assert all(r[2] == str(MEMORY_N) for r in rows[-4:-2])
    # Targets apply at 100,000 cases only; the multirun ratios at any size.
    assert rows[1][-1] == "n/a"
    multirun_rows = [r for r in rows if r[0] == "multirun"]
    assert re.fullmatch(r"[\d.]+ MB", multirun_rows[1][-1])
    assert multirun_rows[2][-2] == "< 1.5x single run (aim 1.3x)"
    assert re.fullmatch(r"\d+\.\d\dx (PASS|FAIL)", multirun_rows[2][-1])
    assert re.fullmatch(r"[\d.]+ MB = \d+\.\d\dx single", multirun_rows[3][-1])
    assert multirun_rows[4][-2] == "< 2x single run"
    assert re.fullmatch(r"\d+\.\d\dx (PASS|FAIL)", multirun_rows[4][-1])
    assert rows[-4][-2:] == ["< 1 GB at 100k, < 1.5 GB at 1M", "n/a"]
    assert rows[-1][-2] == "<= 1.5x off"
    assert re.fullmatch(r"\d+\.\d\dx (PASS|FAIL)", rows[-1][-1])

    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert report["sizes"] == [N]
    assert report["multirun_sizes"] == [N]
    assert report["memory_sizes"] == [MEMORY_N]
    assert report["seed"] == SEED
    assert report["repeat"] == 1
    assert report["parts"] == ["e2e", "matchers", "multirun", "memory", "fidelity"]
    assert report["store"] == "warm"
    assert report["store_creation_s"] > 0
    assert report["targets"]["multirun"] == {
        "5": {"thresholds": K5, "max_ratio": 1.5, "aim_ratio": 1.3},
        "20": {"thresholds": K20, "max_ratio": 2.0, "aim_ratio": None}}
    assert report["targets"]["memory"] == {"1000000": {"max_peak_rss_mb": 1536.0},
                                           "100000": {"max_peak_rss_mb": 1024.0}}
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
    assert set(e2e["bytes"]) == BYTES_KEYS
    assert e2e["bytes"]["folder_bytes"] > 0 and e2e["bytes"]["mlflow_artifact_bytes"] > 0
    assert e2e["bytes"]["total_bytes"] == (e2e["bytes"]["folder_bytes"]
                                           + e2e["bytes"]["mlflow_artifact_bytes"])

    assert [(m["stage"], m["matcher"]) for m in report["matchers"]] == MATCHERS
    by_row = {(m["stage"], m["matcher"]): m for m in report["matchers"]}
    for m in report["matchers"]:
        assert set(m) == MATCHER_KEYS
        assert m["n_cases"] == N
        assert m["seconds"] > 0
        if m["stage"] == "similarity":
            assert m["pairs"] > N and m["pairs_per_s"] > 0
            assert m["target"] is None and m["passed"] is None
        elif m["stage"] == "evaluate_5t":
            assert m["thresholds"] == K5
            assert m["target"] is None and m["passed"] is None
        else:
            assert m["pairs"] is None and m["thresholds"] is None
            assert m["target"]["applies"] is False and m["passed"] is None
    # The default install carries issue 2's target; the compiled kernel issue 7's.
    assert by_row[("evaluate", "ngram:numpy")]["target"] == {
        "n_cases": 100_000, "max_seconds": 8.0, "max_peak_rss_mb": 1024.0, "applies": False}
    if NUMBA:
        assert by_row[("evaluate", "ngram:numba")]["target"] == {
            "n_cases": 100_000, "max_seconds": 5.0, "applies": False}

    (multirun,) = report["multirun"]
    assert set(multirun) == MULTIRUN_KEYS
    assert multirun["n_cases"] == N
    single = multirun["single"]
    assert set(single) == SINGLE_KEYS
    assert single["wall_s"] == min(single["wall_s_all"])
    assert set(single["bytes"]) == BYTES_KEYS and single["bytes"]["total_bytes"] > 0
    assert [s["k"] for s in multirun["sweeps"]] == [5, 20]
    for sweep, thresholds, max_ratio in zip(multirun["sweeps"], [K5, K20], [1.5, 2.0]):
        assert set(sweep) == SWEEP_KEYS
        assert sweep["thresholds"] == thresholds
        # One job deciding every threshold; one result (folder, tracked run, report) each.
        assert sweep["n_jobs"] == 1
        assert sweep["n_results"] == len(thresholds)
        assert sweep["failed"] is False
        assert [r["threshold"]["value"] for r in sweep["results"]] == thresholds
        assert [r["dir"] for r in sweep["results"]] == [
            f"0_precomputed-stored_ngram/t{t:g}" for t in thresholds]
        assert all(r["n_cases"] == N and r["complete"] for r in sweep["results"])
        assert list(sweep["job_timings_s"]) == ["0_precomputed-stored_ngram"]
        assert set(sweep["job_timings_s"]["0_precomputed-stored_ngram"]) == {"load_s", "model_s",
                                                                      "score_s"}
        # Alternating with the single runs; the fastest of each is compared.
        assert len(sweep["wall_s_all"]) == len(single["wall_s_all"])
        assert sweep["wall_s"] == min(sweep["wall_s_all"])
        assert sweep["ratio"] == pytest.approx(sweep["wall_s"] / single["wall_s"], abs=1e-3)
        assert sweep["max_ratio"] == max_ratio
        assert sweep["passed"] is (sweep["ratio"] < max_ratio)
        assert set(sweep["bytes"]) == BYTES_KEYS
        # K results write more than one: a cases table and a report each, and their artifacts.
        assert sweep["bytes"]["total_bytes"] > single["bytes"]["total_bytes"]
        assert sweep["bytes_ratio"] == pytest.approx(
            sweep["bytes"]["total_bytes"] / single["bytes"]["total_bytes"], abs=1e-3)
        # Measured, then deleted (no --keep-outputs).
        assert not Path(sweep["sweep_dir"]).exists()

    (memory,) = report["memory"]
    assert set(memory) == MEMORY_KEYS
    assert memory["n_cases"] == MEMORY_N
    assert (memory["profile"], memory["tracking"], memory["report"]) == ("small", "none",
                                                                         "none")
    assert memory["target"] is None and memory["passed"] is None
    assert memory["peak_rss_mb"] > 0 and memory["wall_s"] > 0
    assert memory["bytes"]["mlflow_artifact_bytes"] == 0
    assert "report_s" not in memory["stages_s"]
    # The small profile: one reference and one citation a case.
    line = json.loads((tmp_path / "data" / f"synth-small-n{MEMORY_N}-s{SEED}.jsonl")
                      .read_text(encoding="utf-8").splitlines()[0])
    assert len(line["references"]) == 1 and len(line["response"]["citations"]) == 1

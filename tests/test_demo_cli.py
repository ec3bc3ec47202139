"""`ragcite -m sweep=systems` on the demo, in a subprocess, against the hand-worked figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO, read_json, run_cli
from tests.data.test_demo_dataset import EXPECTED, LABEL_KEYS, LABELS
from tests.helpers import read_decisions


@pytest.mark.slow
def test_demo_systems_sweep_matches_the_hand_computation(tmp_path: Path) -> None:
    proc = run_cli(["-m", "sweep=systems", "tracking=none", "report=none", "progress=false",
                    f"output_root={tmp_path}"], cwd=tmp_path, env={"PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sweep,) = (tmp_path / "sweeps").iterdir()
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir())
    # Three systems, one threshold each: three jobs, each its own result folder.
    assert [j.name for j in jobs] == ["0_precomputed-wrong_documents_ngram",
                                      "1_precomputed-wrong_passages_ngram",
                                      "2_precomputed-mostly_right_ngram"]
    summary = read_json(sweep / "sweep.json")
    assert (summary["n_jobs"], summary["n_results"]) == (3, 3)
    assert [j["dir"] for j in summary["jobs"]] == [j.name for j in jobs]
    for job, system in zip(jobs, ("wrong_documents", "wrong_passages", "mostly_right")):
        assert read_json(job / "job.json")["results"] == ["."]
        metrics = read_json(job / "metrics.json")
        assert metrics["threshold"]["value"] == 0.5
        assert (metrics["n_cases"], metrics["n_scored"], metrics["n_errors"]) == (30, 30, 0)
        # The per-system macro means worked out by hand in tests/data/test_demo_dataset.py,
        # e.g. mostly_right context recall 167/180.
        for key, value in EXPECTED[system].items():
            assert metrics["metrics"][key] == pytest.approx(float(value), rel=1e-12), key
        assert tuple(metrics["labels"][k] for k in LABEL_KEYS) == LABELS[system]
        cases = {c["id"]: c for c in read_decisions(job)}
        assert len(cases) == 30
        if system == "mostly_right":
            # The seed's first worked example: (1, 1 | 1, 1).
            rw1 = cases["rw-1"]["metrics"]
            assert [rw1[k] for k in ("context_recall", "context_precision", "source_recall",
                                     "source_precision")] == [1.0, 1.0, 1.0, 1.0]
        if system == "wrong_passages":
            # The seed's second: right document, wrong passage → (0, 0 | 1, 1).
            ec1 = cases["ec-1"]
            assert [ec1["metrics"][k] for k in ("context_recall", "context_precision",
                                                "source_recall", "source_precision")] == \
                [0.0, 0.0, 1.0, 1.0]
            assert ec1["labels"] == {"citations": ["wrong_passage"],
                                     "references": ["passage_missed"]}

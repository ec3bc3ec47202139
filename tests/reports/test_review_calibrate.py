"""Issue 19's acceptance loop in a browser: pairs marked in a run report survive a reload, are
exported as ``labels.jsonl`` from the page, and that file, as downloaded, is what the real
``ragcite-calibrate`` reads, with counts worked out by hand from the marked pairs' similarities.

The report is the demo's ``loose_quotes`` system scored by ``ngram`` (n = 3) at 0.5, as in
tests/reports/test_review.py; calibration's default ``ngram`` is the same matcher at the same
threshold.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from runner.reports.run import render_run_report
from tests.calibration.conftest import ULP
from tests.conftest import run_cli
from tests.reports.test_review import _closest, _export, _open_case, _pair, check_labels

F = Fraction
# ngram similarities by hand (tests/reports/test_review.py, tests/data/test_demo_loose_quotes.py:
# ec-1's citation is its reference truncated, band A: similarity 1).
HAND = {"ec-1": F(1), "pto-1": F(8, 17), "mix-1": F(7, 15), "rw-3": F(4, 9), "rw-4": F(5, 9),
        "ds-1": F(3, 7)}


@pytest.fixture
def loose_report(run_job_in: Callable[..., list[Any]], tmp_path: Path) -> Path:
    """The run report of ``model=precomputed model.system=loose_quotes`` (ngram @ 0.5)."""
    (outcome,) = run_job_in("model=precomputed", "model.system=loose_quotes",
                            out=tmp_path / "loose")
    return render_run_report(outcome.folder, options={"embed": "gzip"})


@pytest.mark.slow
def test_marked_pairs_reload_export_and_calibrate(loose_report: Path, open_page: Any,
                                                  tmp_path: Path) -> None:
    page, watch = open_page(loose_report)
    # Six marks: ec-1 (1) same part in its case view; then the five pairs closest to 0.5:
    # pto-1 (8/17) same, mix-1 R2 × C2 (7/15) unsure, rw-3 (4/9) and rw-4 (5/9) different,
    # ds-1 R2 × C2 (3/7) same.
    _open_case(page, "ec-1")
    _pair(page, "ec-1", 0, 0, "same").click()
    page.click("#review-closest")
    assert _closest(page)[:5] == [("pto-1", "0:0"), ("mix-1", "1:1"), ("rw-3", "0:0"),
                                  ("rw-4", "0:0"), ("ds-1", "1:1")]
    items = page.locator("#review-list li.review-item")
    for n, mark in enumerate(["same", "unsure", "different", "different", "same"]):
        items.nth(n).locator(f"button[data-mark='{mark}']").click()
    status = page.locator("#review-status")
    marked = "6 marked: 3 same part, 2 different, 1 unsure."
    expect(status).to_have_text(marked)
    page.reload()
    page.locator("html[data-ready='1']").wait_for(state="attached")
    expect(status).to_have_text(marked)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(_export(page), encoding="utf-8")
    records = check_labels(labels.read_text(encoding="utf-8"))
    assert sorted((r["case_id"], r["label"]) for r in records) == [
        ("ds-1", True), ("ec-1", True), ("pto-1", True), ("rw-3", False), ("rw-4", False)]
    # No request but the report itself, once per load; no console error.
    assert watch.requests == [watch.url] * 2
    watch.requests = [watch.url]
    watch.assert_clean()

    out = tmp_path / "out"
    proc = run_cli([f"calibrate.labels={labels}", "matcher=ngram", "tracking=none",
                    f"output_root={out}"],
                   tmp_path, module="runner.calibration.app")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (folder,) = (out / "calibrations").iterdir()
    data = json.loads((folder / "calibration.json").read_text(encoding="utf-8"))
    assert data["labels"]["n_records"] == 5
    m = data["matchers"]["ngram"]
    assert m["similarities"] == [round(float(HAND[r["case_id"]]), 6) for r in records]
    # At 0.5 only ec-1 (1, same) and rw-4 (5/9, different) match: tp ec-1, fp rw-4; tn rw-3
    # (4/9); fn pto-1 (8/17) and ds-1 (3/7).
    assert m["threshold"] == 0.5
    assert m["counts"] == {"tp": 1, "fp": 1, "tn": 1, "fn": 2, "n_pos": 3, "n_neg": 2}
    # ROC area: of the 3 × 2 (same, different) pairs, 1 > 4/9, 1 > 5/9 and 8/17 > 4/9: 3/6.
    # Balanced accuracy ½ (1/3 + 1/2) = 5/12; precision 1/2, recall 1/3, F1 2/5; kappa:
    # p_o = 2/5, p_e = 2/5 · 3/5 + 3/5 · 2/5 = 12/25, (2/5 − 12/25) / (13/25) = −2/13.
    # (scikit-learn's balanced accuracy, the mean of 1/3 and 1/2, is 5/12 to the last unit: ULP)
    assert (m["auc"], m["balanced_accuracy"], m["precision"], m["recall"]) == (
        0.5, ULP(5 / 12), 0.5, 1 / 3)
    assert (m["f1"], m["kappa"]) == (pytest.approx(2 / 5, abs=1e-12),
                                     pytest.approx(-2 / 13, abs=1e-12))
    # Best: only ec-1 matching, ½ (1/3 + 1) = 2/3, anywhere in (5/9, 1]: the middle, 7/9.
    assert m["best_balanced_accuracy"] == pytest.approx(2 / 3, abs=1e-12)
    assert m["best_threshold"] == pytest.approx(7 / 9, abs=1e-6)

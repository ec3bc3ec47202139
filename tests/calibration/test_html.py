"""calibration.html and calibration_summary.html opened in headless Chromium (as the run
reports are in tests/reports/): no request, no script error, the data escaped, the charts and
tables showing calibration.json's figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from runner.calibration.html import HTML_FILE, CalibrationReports, render_calibration
from runner.calibration.job import JSON_FILE, run_calibration
from runner.reports.common import fmt, page_assets
from runner.results import write_job
from runner.sweep import SWEEP_FILE, summarize
from tests.calibration.conftest import FIXTURE
from tests.reports.conftest import CLOSE, IMG, SCRIPT, SVG, assert_no_external_refs, screenshot

pytestmark = pytest.mark.slow


def _cfg(tmp_path: Path, labels: Path, **matcher: Any) -> dict[str, Any]:
    return {"calibrate": {"labels": str(labels), "mapping": {}, "format": None, "worst": 25},
            "seed": 0,
            "matcher": {"_target_": "runner.matchers.ngram.NgramMatcher", "n": 1, **matcher},
            "scoring": {"threshold": "default",
                        "bootstrap": {"resamples": 200, "confidence": 0.95}},
            "cache": {"enabled": False, "dir": str(tmp_path / "cache")}}


def _xss_labels(tmp_path: Path) -> Path:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    bad = {"reference": f"kite {SCRIPT} {IMG}", "citation": f"kite {CLOSE} {SVG}", "label": False,
           "annotator": SCRIPT, "note": IMG, "reference_source": CLOSE}
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join([*lines, json.dumps(bad)]) + "\n", encoding="utf-8")
    return path


def test_the_page_shows_the_figures_escaped_and_makes_no_request(
        tmp_path: Path, open_page: Any) -> None:
    out = tmp_path / "cal"
    data = run_calibration(_cfg(tmp_path, _xss_labels(tmp_path)), out, "ngram")
    render_calibration(out)
    html = (out / HTML_FILE).read_text(encoding="utf-8")
    assert_no_external_refs(html)
    body = html[:html.rindex("<script>")]  # the page before the report's own script
    assert SCRIPT not in body and "<img" not in body and "<svg onload" not in body
    assert f'content="{escape(page_assets()["csp"])}"' in html  # the reports' own CSP
    page, watch = open_page(out / HTML_FILE)
    screenshot(page, "calibration")
    watch.assert_clean()
    assert page.evaluate("window.__xss") is None
    m = data["matchers"]["ngram"]
    for key in ("auc", "balanced_accuracy", "kappa", "best_threshold"):
        shown = page.locator(f"#figures-ngram [data-value='{key}']").inner_text()
        assert shown == fmt(m[key]), key
    assert page.locator("[data-withheld='reason']").inner_text() == (
        "too few labels: 5 true and 6 false pairs; a recommendation needs at least 10 of each")
    assert page.locator("[data-ready='command']").count() == 0
    # The ROC curve: one corner per distinct similarity plus the origin.
    points = page.locator("[data-roc='ngram']").get_attribute("points")
    assert len(points.split()) == len(set(m["similarities"])) + 1
    assert page.locator("#dist-ngram [data-line='threshold']").count() == 1
    assert page.locator("#dist-ngram [data-bar]").count() > 0
    # The worst pairs, the XSS pair's texts shown as text.
    rows = page.locator("#worst-ngram tbody tr")
    assert rows.count() == len(m["worst"]) == 5
    assert SCRIPT in page.locator("#worst-ngram").inner_text()
    page.locator("#worst-filter-ngram").fill("november")
    assert page.locator("#worst-ngram tbody tr:visible").count() == 1
    json.loads((out / JSON_FILE).read_text(encoding="utf-8"))


def test_the_summary_page_lists_each_matcher(tmp_path: Path, open_page: Any) -> None:
    sweep = tmp_path / "sweep"
    for num, (name, target) in enumerate((("substring", "substring.SubstringMatcher"),
                                          ("ngram", "ngram.NgramMatcher"))):
        job = sweep / f"{num}_{name}"
        (job / ".hydra").mkdir(parents=True)
        cfg = _cfg(tmp_path, FIXTURE)
        cfg["matcher"] = {"_target_": f"runner.matchers.{target}"}
        run_calibration(cfg, job, name)
        render_calibration(job)
        write_job(job, ["."])
    (sweep / "2_ngram" / ".hydra").mkdir(parents=True)  # a job that left nothing
    summary = summarize(sweep, False)  # the one sweep summary (runner/sweep.py)
    (sweep / SWEEP_FILE).write_text(json.dumps(summary), encoding="utf-8")
    CalibrationReports().render_sweep(sweep)
    assert [j["job"] for j in summary["jobs"] if j["complete"]] == ["0_substring", "1_ngram"]
    assert summary["incomplete_jobs"] == ["2_ngram"]
    page, watch = open_page(sweep / "calibration_summary.html")
    watch.assert_clean()
    assert page.locator("#summary-table tbody tr").count() == 2
    assert page.locator("[data-matcher='substring'] [data-figure='auc']").inner_text() == "0.600"
    link = page.locator("[data-matcher='ngram'] a").get_attribute("href")
    assert (sweep / link).is_file()


def test_the_annotators_agreement_is_shown_as_the_ceiling(tmp_path: Path) -> None:
    # Cohen's kappa of ana and bo, worked out in test_metrics: 1/3.
    a = [True, True, True, False, False, False]
    b = [True, True, False, False, False, True]
    rows = [{"reference": f"alpha beta r{i}", "citation": f"alpha gamma c{i}", "label": x,
             "annotator": who} for who, labels in (("ana", a), ("bo", b))
            for i, x in enumerate(labels)]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = run_calibration(_cfg(tmp_path, path), tmp_path / "cal", "ngram")
    assert data["agreement"]["method"] == "cohen" and data["agreement"]["n_items"] == 6
    assert data["labels"]["n_records"] == 12  # kept per annotator
    render_calibration(tmp_path / "cal")
    html = (tmp_path / "cal" / HTML_FILE).read_text(encoding="utf-8")
    assert '<strong data-agreement="kappa">0.333</strong>' in html
    assert "Cohen&#39;s kappa of ana, bo" in html

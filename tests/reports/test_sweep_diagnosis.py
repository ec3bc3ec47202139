"""The sweep report's diagnosis across results (stacked label bars with exact shares) and the
per-series bar charts of a sweep whose results share one threshold (a sweep over systems)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.reports.sweep import SWEEP_FILE, render_sweep_report
from runner.results import CASES_FILE, PASSAGES_FILE, read_result, result_dirs, write_metrics
from runner.sweep import best_results, scored_cases
from tests.reports.conftest import (
    IMG,
    SCRIPT,
    assert_no_external_refs,
    build_job,
    build_run,
    fuzzy_cases,
    parse,
    plain_cases,
    screenshot,
)


def _write_sweep(sweep: Path, jobs: list[tuple[Path, list[str]]]) -> Path:
    """sweep.json for job folders already written: one entry per result folder."""
    entries = []
    for num, (job, overrides) in enumerate(jobs):
        for d in result_dirs(job):
            metrics = read_result(d)
            entries.append({"dir": d.relative_to(sweep).as_posix(), "job": job.name,
                            "num": num, "threshold": {"value": metrics["threshold"]["value"],
                                                      "level": None},
                            "overrides": overrides, "complete": True, "metrics": metrics})
    summary = {"schema_version": 2, "sweep_dir": str(sweep), "failed": False,
               "n_jobs": len(jobs), "incomplete_jobs": [], "jobs": entries,
               "best": best_results(entries),  # as ragcite's own sweep.json has it
               "scored_cases": scored_cases(entries)}
    (sweep / SWEEP_FILE).write_text(json.dumps(summary), encoding="utf-8")
    return sweep


def fuzzy_sweep(root: Path) -> Path:
    """One ngram job over fuzzy_cases at thresholds 0.05, 0.3 and 0.5. By hand: fuzzy-1's
    citation has similarity 0.375 to its reference, fuzzy-2's 0.0667 (the third case fails).
    So at 0.05 both citations are supported and both references cited; at 0.3 one of each;
    at 0.5 none: both citations are wrong_passage (right document) and both references
    passage_missed."""
    sweep = root / "sweep"
    build_job(sweep / "0_precomputed_ngram", fuzzy_cases(), [0.05, 0.3, 0.5], name="fz")
    return _write_sweep(sweep, [(sweep / "0_precomputed_ngram",
                                 ["matcher=ngram", "scoring.threshold=0.05,0.3,0.5"])])


EXPECTED = {
    "0_precomputed_ngram/t0.05": {
        "citation_supported": "supported: 2 of 2 citations (100.0%)",
        "reference_cited": "cited: 2 of 2 references (100.0%)"},
    "0_precomputed_ngram/t0.3": {
        "citation_supported": "supported: 1 of 2 citations (50.0%)",
        "citation_wrong_passage": "wrong_passage: 1 of 2 citations (50.0%)",
        "reference_cited": "cited: 1 of 2 references (50.0%)",
        "reference_passage_missed": "passage_missed: 1 of 2 references (50.0%)"},
    "0_precomputed_ngram/t0.5": {
        "citation_wrong_passage": "wrong_passage: 2 of 2 citations (100.0%)",
        "reference_passage_missed": "passage_missed: 2 of 2 references (100.0%)"},
}


def test_diagnosis_bars_have_exact_shares(tmp_path: Path) -> None:
    page = parse(render_sweep_report(fuzzy_sweep(tmp_path)))
    for folder, segments in EXPECTED.items():
        # Only labels that occur get a segment; its title is the exact count and share.
        shown = {a["data-label"]: text for tag, a, text in page.parser.elements
                 if tag == "rect" and a.get("data-diag") == folder}
        assert shown == segments, folder
        for key, text in segments.items():
            assert page.text(data_diag_text=f"{folder}|{key}") == text
    assert page.text(data_diag_total="0_precomputed_ngram/t0.3|citations") == "2 citations"
    assert_no_external_refs(page.html)


def systems_sweep(root: Path, system_b: str = "b") -> Path:
    """Two stored systems at one threshold: plain_cases answered twice, once with every
    citation of the fuzzy kind (fuzzy_cases)."""
    sweep = root / "sweep"
    build_run(sweep / "0_precomputed", plain_cases(), name="a", model="precomputed")
    build_run(sweep / "1_precomputed", fuzzy_cases(), name=system_b, model="precomputed")
    return _write_sweep(sweep, [(sweep / "0_precomputed", ["model.system=a"]),
                                (sweep / "1_precomputed", [f"model.system={system_b}"])])


def test_a_sweep_over_systems_is_charted_per_system(tmp_path: Path) -> None:
    page = parse(render_sweep_report(systems_sweep(tmp_path)))
    assert 'data-chart-kind="bars"' in page.html and 'data-chart-kind="lines"' not in page.html
    bars = [(a["data-bar-of"], a["data-series"], text) for tag, a, text in page.parser.elements
            if tag == "rect" and a.get("data-bar-of")]
    # One bar per system for each of the six metrics, never points at a single x.
    assert len(bars) == 12 and 'class="series-0" cx=' not in page.html
    summary = json.loads((tmp_path / "sweep" / SWEEP_FILE).read_text())
    f1 = {e["dir"]: e["metrics"]["metrics"]["context_f1"] for e in summary["jobs"]}
    titles = {series: text for metric, series, text in bars if metric == "context_f1"}
    assert titles["model.system=a"].startswith(f"model.system=a: {f1['0_precomputed']:.3f}")
    assert titles["model.system=b"].startswith(f"model.system=b: {f1['1_precomputed']:.3f}")


@pytest.mark.slow
def test_diagnosis_bars_in_chromium(tmp_path: Path, open_page: Any) -> None:
    sweep = fuzzy_sweep(tmp_path)
    path = render_sweep_report(sweep)
    page, watch = open_page(path)
    row = page.locator('[data-diag-row="0_precomputed_ngram/t0.3"]')
    assert row.is_visible()
    for folder, segments in EXPECTED.items():
        for key, text in segments.items():
            seg = page.locator(f'rect[data-diag="{folder}"][data-label="{key}"]')
            assert seg.locator("title").text_content() == text
            box = seg.bounding_box()
            assert box is not None and box["width"] > 0
    # At 0.3 the two citation segments split the bar in half.
    half = [page.locator(f'rect[data-diag="0_precomputed_ngram/t0.3"][data-label="{k}"]')
            .bounding_box() for k in ("citation_supported", "citation_wrong_passage")]
    assert half[0] is not None and half[1] is not None
    assert abs(half[0]["width"] - half[1]["width"]) < 1.0
    screenshot(page, "sweep-diagnosis")
    watch.assert_clean()


@pytest.mark.slow
def test_systems_sweep_in_chromium(tmp_path: Path, open_page: Any) -> None:
    path = render_sweep_report(systems_sweep(tmp_path, system_b=f"b{SCRIPT}{IMG}"))
    page, watch = open_page(path)
    assert page.locator("[data-chart-kind='bars'] rect[data-bar-of='context_f1']").count() == 2
    assert page.locator("svg.stack").count() == 4
    screenshot(page, "sweep-systems")
    assert page.evaluate("window.__xss") is None
    watch.assert_clean()


def test_results_on_different_cases_are_named(tmp_path: Path) -> None:
    """A scores plain_cases (5 scored: seed-1, seed-2, seed-3, empty-ref, no-cits; broken
    fails), B seed-1, seed-2 and fuzzy-1 (3 scored): two sets of cases, told apart by the
    digests of their ids in metrics.json (the report reads no case)."""
    sweep = tmp_path / "sweep"
    build_run(sweep / "0_precomputed", plain_cases(), name="a")
    build_run(sweep / "1_precomputed", plain_cases()[:2] + fuzzy_cases()[:1], name="b")
    for folder, answered in (("0_precomputed", 5), ("1_precomputed", 3)):
        metrics = read_result(sweep / folder)
        metrics["coverage"] = {"answered": answered, "dataset_cases": 8}
        write_metrics(sweep / folder / "metrics.json", metrics)
    _write_sweep(sweep, [(sweep / "0_precomputed", ["model.system=a"]),
                         (sweep / "1_precomputed", ["model.system=b"])])
    for folder in ("0_precomputed", "1_precomputed"):  # the report reads no case
        (sweep / folder / CASES_FILE).unlink()
        (sweep / folder / PASSAGES_FILE).unlink()
    page = parse(render_sweep_report(sweep))
    assert page.text(data_field="common-cases") == (
        "These results were not scored on the same cases: each scored between 3 and 5, in 2 "
        "different sets of cases (the thresholds of one job share theirs). Their figures are "
        "each over its own cases; ragcite-compare A B gives two of them on the cases both "
        "scored.")
    assert page.text(data_answered="0_precomputed") == "5 of 8"
    assert page.text(data_answered="1_precomputed") == "3 of 8"
    # The same cases: no note.
    same = parse(render_sweep_report(fuzzy_sweep(tmp_path / "other")))
    assert same.texts(data_field="common-cases") == []

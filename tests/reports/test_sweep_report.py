"""The sweep report: every job side by side, best per metric, charts, links; in Chromium too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.reports.common import fmt
from runner.reports.run import render_run_report
from runner.reports.sweep import render_sweep_report
from runner.scoring.metrics import METRIC_KEYS
from runner.sweep import SWEEP_FILE, collect_jobs
from tests.conftest import REPO, run_cli
from tests.reports.conftest import (
    IMG,
    SCRIPT,
    assert_no_external_refs,
    build_run,
    load_json,
    parse,
    plain_cases,
    screenshot,
)

GRID = [("ngram", 0.3), ("ngram", 0.5), ("ngram", 0.9), ("substring", 0.5), ("substring", 0.9)]


def make_sweep(root: Path, dataset: str = "fixture", broken_job: bool = False,
               job_name: str = "{num}_precomputed_{matcher}_t{threshold}") -> Path:
    """A sweep folder as runner.sweep leaves it: job folders, their reports, sweep.json."""
    sweep = root / "sweep"
    for num, (matcher, threshold) in enumerate(GRID):
        job = sweep / job_name.format(num=num, matcher=matcher, threshold=threshold)
        build_run(job, plain_cases(), matcher=matcher, threshold=threshold, dataset=dataset,
                  name=f"{dataset}_{matcher}_t{threshold}")
        (job / ".hydra").mkdir()
        overrides = [f"matcher={matcher}", f"matcher.threshold={threshold}", "report=html",
                     f"dataset={dataset}"]
        (job / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
        render_run_report(job)
    if broken_job:
        job = sweep / f"{len(GRID)}_precomputed_ngram_t0.7"
        (job / ".hydra").mkdir(parents=True)
        (job / ".hydra" / "overrides.yaml").write_text(
            yaml.safe_dump(["matcher=ngram", "matcher.threshold=0.7"]))
    jobs = collect_jobs(sweep)
    incomplete = [j["dir"] for j in jobs if not j["complete"]]
    summary = {"sweep_dir": str(sweep), "failed": bool(incomplete), "n_jobs": len(jobs),
               "incomplete_jobs": incomplete, "jobs": jobs}
    (sweep / SWEEP_FILE).write_text(json.dumps(summary, indent=2))
    return sweep


def test_sweep_report_numbers_best_and_links(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path, broken_job=True)
    path = render_sweep_report(sweep)
    assert path == sweep / "sweep.html"
    page = parse(path)
    summary = load_json(sweep / SWEEP_FILE)
    complete = [j for j in summary["jobs"] if j["complete"]]
    for job in complete:
        for key in METRIC_KEYS:
            assert page.text(data_job=str(job["num"]), data_metric=key) == fmt(
                job["metrics"]["metrics"][key])
    for key in METRIC_KEYS:
        best = max(j["metrics"]["metrics"][key] for j in complete)
        assert page.text(data_best_value=key) == fmt(best)
        winners = [j["num"] for j in complete if j["metrics"]["metrics"][key] >= best - 1e-12]
        text = page.text(data_best_jobs=key)
        for num in winners:
            assert f"#{num}" in text
    # Each complete job links to its own report; the unfinished one is listed.
    links = {int(n): href for n, href in _links(page)}
    assert sorted(links) == [j["num"] for j in complete]
    for job in complete:
        assert (sweep / links[job["num"]]).resolve() == (sweep / job["dir"] / "report.html")
    assert "5_precomputed_ngram_t0.7" in page.html
    assert page.text(data_count="n_jobs") == "6"
    # One chart per metric for each matcher, one point per threshold of that matcher.
    assert page.html.count('data-matcher="ngram"') == 1
    assert page.html.count('data-matcher="substring"') == 1
    assert page.html.count('class="series-0" cx=') == 6 * len(GRID)
    assert_no_external_refs(page.html)


def _links(page: Any) -> list[tuple[str, str]]:
    return [(a["data-report-link"], a["href"]) for tag, a, _ in page.parser.elements
            if tag == "a" and a.get("data-report-link") is not None]


def test_series_split_by_what_else_varies(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path)
    summary = load_json(sweep / SWEEP_FILE)
    # Two models in one sweep: each matcher then gets one line per model.
    for job in summary["jobs"]:
        if job["num"] % 2:
            job["metrics"]["model"]["name"] = "other"
            job["overrides"].append("model=other")
        else:
            job["overrides"].append("model=precomputed")
    (sweep / SWEEP_FILE).write_text(json.dumps(summary))
    page = parse(render_sweep_report(sweep))
    assert "model=other" in page.html and "model=precomputed" in page.html
    assert page.html.count('class="series-1" cx=') > 0


@pytest.mark.slow
def test_sweep_report_in_chromium(tmp_path: Path, open_page: Any) -> None:
    sweep = make_sweep(tmp_path, dataset=f"d{SCRIPT}{IMG}", broken_job=True)
    path = render_sweep_report(sweep)
    summary = load_json(sweep / SWEEP_FILE)
    page, watch = open_page(path)
    for job in summary["jobs"]:
        if not job["complete"]:
            continue
        for key in METRIC_KEYS:
            cell = page.locator(f'[data-job="{job["num"]}"][data-metric="{key}"]')
            assert cell.is_visible()
            assert cell.inner_text().strip() == fmt(job["metrics"]["metrics"][key])
    assert f"d{SCRIPT}{IMG}" in page.locator("#job-table").inner_text()
    # Filtering narrows the job table; sorting reorders it.
    page.fill("#job-filter", "substring")
    visible = page.locator("#job-table tbody tr:visible")
    assert visible.count() == 2
    page.fill("#job-filter", "")
    assert page.locator("#job-table tbody tr:visible").count() == len(GRID) + 1
    page.click("#job-table thead th:nth-child(5) button")   # threshold, ascending
    page.click("#job-table thead th:nth-child(5) button")   # descending
    first = page.locator("#job-table tbody tr").first.locator("td").nth(4).inner_text()
    assert first == "0.9"
    assert page.locator("svg.line").count() == 12
    screenshot(page, "sweep")
    assert page.evaluate("window.__xss") is None
    watch.assert_clean()
    # The link opens the job's own report, from disk.
    page.locator('[data-report-link="0"]').click()
    page.wait_for_url("**/0_precomputed_ngram_t0.3/report.html")
    page.locator("html[data-ready='1']").wait_for(state="attached")
    assert page.locator('[data-metric="context_f1"][data-stat="mean"]').is_visible()
    assert all(url.startswith("file://") for url in watch.requests)


@pytest.mark.slow
def test_multirun_writes_sweep_report(tmp_path: Path) -> None:
    conf = tmp_path / "conf" / "dataset"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text(
        "defaults: [/schema/dataset@_here_, _self_]\nname: mine\n"
        f"path: {REPO / 'tests' / 'fixtures' / 'seed_examples.jsonl'}\n", encoding="utf-8")
    proc = run_cli(["-m", "--config-dir", str(tmp_path / "conf"), "dataset=mine",
                    "model=precomputed", "report=html", "tracking=none", "progress=false",
                    "matcher=ngram,substring", "matcher.threshold=0.4,0.8",
                    f"output_root={tmp_path / 'out'}"], cwd=tmp_path,
                   env={"PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sweep,) = list((tmp_path / "out" / "sweeps").iterdir())
    page = parse(sweep / "sweep.html")
    links = dict(_links(page))
    assert len(links) == 4
    for href in links.values():
        assert (sweep / href).is_file()
    summary = load_json(sweep / SWEEP_FILE)
    for job in summary["jobs"]:
        assert page.text(data_job=str(job["num"]), data_metric="context_f1") == fmt(
            job["metrics"]["metrics"]["context_f1"])


def test_a_sweep_where_no_job_finished_renders(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    job = sweep / "0_precomputed_ngram_t0.5"
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(["matcher=ngram"]))
    jobs = collect_jobs(sweep)
    (sweep / SWEEP_FILE).write_text(json.dumps({"failed": True, "n_jobs": 1, "jobs": jobs,
                                                "incomplete_jobs": [job.name]}))
    page = parse(render_sweep_report(sweep))
    assert "no job defines it" in page.html and "0_precomputed_ngram_t0.5" in page.html
    assert "No complete job has a threshold to chart." in page.html

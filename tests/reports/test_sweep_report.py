"""The sweep report: every job side by side, best per metric, charts, links; in Chromium too."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from runner.reports.common import fmt
from runner.reports.run import render_run_reports
from runner.reports.sweep import SWEEP_FILE, render_sweep_report
from runner.results import read_result, result_dirs
from runner.scoring.metrics import METRIC_KEYS
from runner.sweep import best_results
from tests.conftest import REPO, run_cli
from tests.reports.conftest import (
    IMG,
    SCRIPT,
    _case,
    assert_no_external_refs,
    build_job,
    build_run,
    load_json,
    parse,
    plain_cases,
    screenshot,
)

# Jobs of a sweep: ngram decides three thresholds (result folders t0.3, t0.5, t0.9), substring
# one (its job folder is its result folder).
GRID = [("ngram", [0.3, 0.5, 0.9]), ("substring", [0.9])]
N_RESULTS = 4


def make_sweep(root: Path, dataset: str = "fixture", broken_job: bool = False) -> Path:
    """A sweep folder as runner.sweep leaves it: job folders with their result folders and
    reports, and sweep.json with one entry per result."""
    sweep = root / "sweep"
    entries: list[dict[str, Any]] = []
    for num, (matcher, thresholds) in enumerate(GRID):
        job = sweep / f"{num}_precomputed_{matcher}"
        if len(thresholds) == 1:
            build_run(job, plain_cases(), matcher=matcher, threshold=thresholds[0],
                      dataset=dataset, name=f"{dataset}_{matcher}")
        else:
            build_job(job, plain_cases(), thresholds, matcher=matcher, dataset=dataset,
                      name=f"{dataset}_{matcher}")
        dirs = result_dirs(job)
        render_run_reports(dirs, [None] * len(dirs))
        overrides = [f"matcher={matcher}",
                     f"scoring.threshold={','.join(f'{t:g}' for t in thresholds)}",
                     "report=html", f"dataset={dataset}"]
        for d in dirs:
            metrics = read_result(d)
            entries.append({"dir": d.relative_to(sweep).as_posix(), "job": job.name, "num": num,
                            "threshold": {"value": metrics["threshold"]["value"],
                                          "level": None},
                            "overrides": overrides, "complete": True, "metrics": metrics})
    incomplete = []
    if broken_job:
        job = sweep / f"{len(GRID)}_precomputed_ngram_n2"
        job.mkdir(parents=True)
        incomplete.append(job.name)
        entries.append({"dir": job.name, "job": job.name, "num": len(GRID),
                        "threshold": {"value": 0.7, "level": None},
                        "overrides": ["matcher=ngram", "matcher.n=2"], "complete": False,
                        "metrics": None})
    summary = {"schema_version": 2, "sweep_dir": str(sweep), "failed": bool(incomplete),
               "n_jobs": len(GRID) + len(incomplete), "incomplete_jobs": incomplete,
               "jobs": entries, "best": best_results(entries)}
    (sweep / SWEEP_FILE).write_text(json.dumps(summary, indent=2))
    return sweep


def test_sweep_report_numbers_best_and_links(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path, broken_job=True)
    path = render_sweep_report(sweep)
    assert path == sweep / "sweep.html"
    page = parse(path)
    summary = load_json(sweep / SWEEP_FILE)
    complete = [j for j in summary["jobs"] if j["complete"]]
    assert [j["dir"] for j in complete] == ["0_precomputed_ngram/t0.3",
                                            "0_precomputed_ngram/t0.5",
                                            "0_precomputed_ngram/t0.9", "1_precomputed_substring"]
    for job in complete:  # every threshold is a row
        assert page.text(data_threshold=job["dir"]) == f"{job['threshold']['value']:g}"
        for key in METRIC_KEYS:
            assert page.text(data_job=job["dir"], data_metric=key) == fmt(
                job["metrics"]["metrics"][key])
    for key in METRIC_KEYS:  # the best is the summary's, not the reader's
        best = summary["best"][key]
        assert page.text(data_best_value=key) == fmt(best["value"])
        assert best["dir"] in page.text(data_best_jobs=key)
    # Each complete result links to its report (a threshold of a job of several: the job's page,
    # the fragment choosing it); the unfinished job is listed.
    assert dict(_links(page)) == {
        "0_precomputed_ngram/t0.3": "0_precomputed_ngram/report.html#t0.3",
        "0_precomputed_ngram/t0.5": "0_precomputed_ngram/report.html#t0.5",
        "0_precomputed_ngram/t0.9": "0_precomputed_ngram/report.html#t0.9",
        "1_precomputed_substring": "1_precomputed_substring/report.html"}
    assert (sweep / "0_precomputed_ngram" / "report.html").is_file()
    assert "2_precomputed_ngram_n2" in page.html
    assert page.text(data_count="n_jobs") == "3"
    assert page.text(data_count="n_results") == "5"
    # One chart per metric for each matcher, one point per threshold of that matcher.
    assert page.html.count('data-matcher="ngram"') == 1
    assert page.html.count('data-matcher="substring"') == 1
    assert page.html.count('class="series-0" cx=') == 6 * N_RESULTS
    assert_no_external_refs(page.html)


def test_the_best_is_read_not_computed(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path)
    summary = load_json(sweep / SWEEP_FILE)
    summary["best"]["context_f1"] = {"dir": "0_precomputed_ngram/t0.9", "value": 0.123}
    del summary["best"]["source_f1"]
    (sweep / SWEEP_FILE).write_text(json.dumps(summary))
    page = parse(render_sweep_report(sweep))
    assert page.text(data_best_value="context_f1") == "0.123"
    assert "0_precomputed_ngram/t0.9" in page.text(data_best_jobs="context_f1")
    # A best without its ties (a sweep.json written before them) is not called the only one.
    assert page.text(data_best_jobs="context_f1").endswith(
        "(the first result of this value: this sweep.json does not list ties)")
    assert "does not list ties" not in page.text(data_best_jobs="context_recall")
    assert page.text(data_best_value="source_f1") == "n/a"
    assert page.text(data_best_jobs="source_f1") == "no result defines it"
    summary["schema_version"] = 1
    (sweep / SWEEP_FILE).write_text(json.dumps(summary))
    with pytest.raises(ValueError, match="schema_version"):
        render_sweep_report(sweep)


def test_the_title_names_what_was_swept(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path)
    summary = load_json(sweep / SWEEP_FILE)
    summary["name"] = "demo · precomputed · sweep matcher×threshold <i>"
    (sweep / SWEEP_FILE).write_text(json.dumps(summary))
    html = render_sweep_report(sweep).read_text(encoding="utf-8")
    shown = "demo · precomputed · sweep matcher×threshold &lt;i&gt;"
    assert f"<title>ragcite sweep report — {shown}</title>" in html
    assert f"<h1>{shown}</h1>" in html
    del summary["name"]  # a sweep.json written before sweeps had a name: its folder's
    (sweep / SWEEP_FILE).write_text(json.dumps(summary))
    assert "<h1>sweep</h1>" in render_sweep_report(sweep).read_text(encoding="utf-8")


def _links(page: Any) -> list[tuple[str, str]]:
    return [(a["data-report-link"], a["href"]) for tag, a, _ in page.parser.elements
            if tag == "a" and a.get("data-report-link") is not None]


def test_series_split_by_what_else_varies(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path)
    summary = load_json(sweep / SWEEP_FILE)
    # Two models in one sweep: each matcher then gets one line per model.
    for entry in summary["jobs"]:
        if entry["dir"].endswith(("t0.5", "t0.9")):
            entry["metrics"]["model"]["name"] = "other"
            entry["overrides"] = [*entry["overrides"], "model=other"]
        else:
            entry["overrides"] = [*entry["overrides"], "model=precomputed"]
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
            cell = page.locator(f'[data-job="{job["dir"]}"][data-metric="{key}"]')
            assert cell.is_visible()
            assert cell.inner_text().strip() == fmt(job["metrics"]["metrics"][key])
    assert f"d{SCRIPT}{IMG}" in page.locator("#job-table").inner_text()
    # Filtering narrows the job table; sorting reorders it.
    page.fill("#job-filter", "substring")
    visible = page.locator("#job-table tbody tr:visible")
    assert visible.count() == 1
    page.fill("#job-filter", "")
    assert page.locator("#job-table tbody tr:visible").count() == N_RESULTS + 1
    page.click("#job-table thead th:nth-child(5) button")   # threshold, ascending
    page.click("#job-table thead th:nth-child(5) button")   # descending
    first = page.locator("#job-table tbody tr").first.locator("td").nth(4).inner_text()
    assert first == "0.9"
    assert page.locator("svg.line").count() == 12
    screenshot(page, "sweep")
    assert page.evaluate("window.__xss") is None
    watch.assert_clean()
    # The link opens the job's page at that threshold, from disk.
    page.locator('[data-report-link="0_precomputed_ngram/t0.5"]').click()
    page.wait_for_url("**/0_precomputed_ngram/report.html#t0.5")
    page.locator("html[data-ready='1']").wait_for(state="attached")
    assert page.locator('[data-field="threshold-line"]:visible').inner_text() == "Threshold 0.5"
    assert page.locator("#threshold-switch").input_value() == "1"
    assert page.locator('[data-metric="context_f1"][data-stat="mean"]:visible').count() == 1
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
                    "matcher=ngram,substring", "scoring.threshold=0.4,0.8",
                    f"output_root={tmp_path / 'out'}"], cwd=tmp_path,
                   env={"PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sweep,) = list((tmp_path / "out" / "sweeps").iterdir())
    page = parse(sweep / "sweep.html")
    links = dict(_links(page))
    assert len(links) == 4
    for folder, href in links.items():  # each job's page, at the result's threshold
        job, name = folder.split("/")
        assert href == f"{job}/report.html#{name}" and (sweep / job / "report.html").is_file()
    summary = load_json(sweep / SWEEP_FILE)
    for entry in summary["jobs"]:
        assert page.text(data_job=entry["dir"], data_metric="context_f1") == fmt(
            entry["metrics"]["metrics"]["context_f1"])


def test_a_sweep_where_no_job_finished_renders(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    (sweep / "0_precomputed_ngram").mkdir(parents=True)
    (sweep / SWEEP_FILE).write_text(json.dumps({
        "schema_version": 2, "sweep_dir": str(sweep), "failed": True, "n_jobs": 1,
        "incomplete_jobs": ["0_precomputed_ngram"], "best": {},
        "jobs": [{"dir": "0_precomputed_ngram", "job": "0_precomputed_ngram", "num": 0,
                  "threshold": {"value": None, "level": None}, "overrides": ["matcher=ngram"],
                  "complete": False, "metrics": None}]}))
    page = parse(render_sweep_report(sweep))
    assert "no result defines it" in page.html and "0_precomputed_ngram" in page.html
    assert "No complete result has a threshold to chart." in page.html


def test_equal_results_are_all_listed_as_best(tmp_path: Path) -> None:
    # sweep.json's best names the first of a tie; the page lists every result of that value,
    # so it never calls one of several equal results the best. The fixture's source figures
    # do not depend on the matcher or the threshold: its 4 complete results tie on source F1.
    sweep = make_sweep(tmp_path)
    summary = load_json(sweep / SWEEP_FILE)
    complete = [j["dir"] for j in summary["jobs"] if j["complete"]]
    assert len({j["metrics"]["metrics"]["source_f1"] for j in summary["jobs"]
                if j["complete"]}) == 1
    assert summary["best"]["source_f1"]["dir"] == complete[0]
    assert summary["best"]["source_f1"]["ties"] == complete
    page = parse(render_sweep_report(sweep))
    assert page.text(data_best_jobs="source_f1") == "4 results tie: " + ", ".join(complete)
    # Every tied cell is outlined as a best of its column.
    assert page.html.count('data-metric="source_f1" data-value=') == 4
    assert len(re.findall(r'class="num band-\w+ best" data-job="[^"]+" data-metric="source_f1"',
                          page.html)) == 4


@pytest.mark.slow
def test_fidelity_shares_per_result_in_chromium(tmp_path: Path, open_page: Any) -> None:
    # Two results of the quotes of tests/reports/test_run_report.py (labels worked out in
    # tests/scoring/test_fidelity.py): "all" checks its 4 quotes against the knowledge base, 1
    # fabricated of 4 checked (25.0%); "none" has an empty knowledge base: 2 unchecked, none
    # checked, so no share ("—"). A sweep without fidelity (make_sweep) has no such table.
    from tests.reports.test_run_report import FIDELITY_KB, FIDELITY_QUOTES

    sweep, entries = tmp_path / "sweep", []
    for num, (name, quotes, kb) in enumerate([("all", FIDELITY_QUOTES, FIDELITY_KB),
                                              ("none", FIDELITY_QUOTES[2:], {})]):
        cases = [_case(cid, "q", [("leave.md", q)], [("leave.md", q)]) for cid, q, *_ in quotes]
        build_run(sweep / name, cases, knowledge_base=kb)
        entries.append({"dir": name, "job": name, "num": num, "overrides": [],
                        "threshold": {"value": 0.5, "level": None}, "complete": True,
                        "metrics": read_result(sweep / name)})
    (sweep / SWEEP_FILE).write_text(json.dumps({
        "schema_version": 2, "sweep_dir": str(sweep), "failed": False, "n_jobs": 2,
        "incomplete_jobs": [], "jobs": entries, "best": best_results(entries)}))
    page, watch = open_page(render_sweep_report(sweep))
    want = {"all": ["25.0%", "1", "1", "1", "0", "1", "0"],
            "none": ["—", "0", "0", "0", "0", "0", "2"]}
    for name, cells in want.items():  # fabricated share, then verbatim ... unchecked
        row = page.locator(f'#fidelity-table tr[data-fidelity-row="{name}"] td.num')
        expect(row).to_have_text(cells)
    watch.assert_clean()
    assert "fidelity-table" not in render_sweep_report(make_sweep(tmp_path / "plain")).read_text(
        "utf-8")

"""Links in ``sweep.html`` viewed as an MLflow artifact: each job's report link points to its
MLflow run's ``report.html`` artifact, checked against a real `mlflow server` on 127.0.0.1."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from runner.scoring.metrics import METRIC_KEYS
from tests.conftest import REPO, run_cli
from tests.reports.conftest import BROWSER_BOUND_MS
from tests.tracking.conftest import MlflowServer, all_runs

pytestmark = pytest.mark.slow


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as resp:  # loopback only
        assert resp.status == 200, url
        return bytes(resp.read())


def test_sweep_report_links_open_the_job_runs_reports(tmp_path: Path,
                                                      mlflow_server: MlflowServer,
                                                      browser: Any) -> None:
    uri = mlflow_server.uri
    proc = run_cli(["-m", "matcher=substring,ngram", "model=precomputed",
                    "model.system=loose_quotes", f"tracking.tracking_uri={uri}",
                    "experiment=sweep-links", "progress=false", "cache.enabled=false"],
                   cwd=tmp_path, env={"PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sweep,) = (tmp_path / "outputs" / "sweeps").iterdir()
    # The session's server holds other tests' runs too: this sweep's are its parent and its
    # parent's children.
    (parent,) = [r for r in all_runs(uri) if r.data.tags.get("ragcite.kind") == "sweep"
                 and r.data.tags.get("ragcite.sweep_dir") == str(sweep.resolve())]
    runs = [parent, *(r for r in all_runs(uri)
                      if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id)]
    children = {r.data.tags["ragcite.result_dir"]: r for r in runs if r is not parent}
    assert len(children) == 2
    # The page as MLflow's artifact viewer fetches it.
    page = _get(f"{uri}/get-artifact?path=sweep.html&run_uuid={parent.info.run_id}").decode()
    assert 'id="mlflow-note"' in page
    links = re.findall(r'<a href="([^"]+)" target="_blank" rel="noopener noreferrer" '
                       r'data-report-link="([^"]+)">report</a>', page)
    assert sorted(d for _, d in links) == ["0_precomputed-loose_quotes_substring",
                                           "1_precomputed-loose_quotes_ngram"]
    for href, folder in links:
        child = children[str((sweep / folder).resolve())]
        assert href == (f"{uri}/#/experiments/{child.info.experiment_id}/runs/"
                        f"{child.info.run_id}/artifacts/report.html")
        # The link opens the MLflow UI (the part before #) at that run's report.html artifact,
        # which the server returns as the report the job wrote.
        ui, _, route = href.partition("#")
        assert b"<title>MLflow</title>" in _get(ui)
        run_id = route.split("/runs/")[1].split("/")[0]
        report = _get(f"{uri}/get-artifact?path=report.html&run_uuid={run_id}")
        assert report == (sweep / folder / "report.html").read_bytes()
    # On disk, the page keeps its relative links.
    local = (sweep / "sweep.html").read_text(encoding="utf-8")
    assert 'href="1_precomputed-loose_quotes_ngram/report.html"' in local
    _in_chromium(browser, uri, parent.info.experiment_id, parent.info.run_id, links[1][0],
                 tmp_path)


def _frame_text(page: Any, marker: str) -> str:
    """The text of MLflow's HTML artifact frame once it shows `marker`."""
    body = page.frame_locator("iframe.mlflow-html-iframe").locator("body")
    body.get_by_text(marker).first.wait_for()
    return str(body.inner_text())


def _in_chromium(browser: Any, uri: str, experiment_id: str, parent_id: str, href: str,
                 tmp_path: Path) -> None:
    """The sweep page in MLflow's artifact viewer shows the link; its address opens the job's
    report in MLflow's viewer (the session's one Chromium, shared with the report tests)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(BROWSER_BOUND_MS)
    try:
        page.goto(f"{uri}/#/experiments/{experiment_id}/runs/{parent_id}/artifacts/"
                  "sweep.html")
        assert "MLflow's artifact frame may block new tabs" in _frame_text(page, "Sweep ")
        shown = page.frame_locator("iframe.mlflow-html-iframe").locator(
            '[data-report-link="1_precomputed-loose_quotes_ngram"]').get_attribute("href")
        assert shown == href
        page.screenshot(path=str(tmp_path / "sweep_in_mlflow.png"))
        page.goto(href)
        text = _frame_text(page, "t0.5_ngram_loose_quotes_demo_default")
        assert "Context recall" in text or "Context Recall" in text
        page.screenshot(path=str(tmp_path / "job_report_in_mlflow.png"))
        # The job's run page lists the six headline metrics first, its execution last.
        page.goto(href.split("/artifacts/")[0])
        page.get_by_text("execution/workers").first.wait_for()
        lines = page.inner_text("body").splitlines()
        names = lines[lines.index("Value") + 1::2]
        assert names[:7] == [*METRIC_KEYS, "threshold"]
        assert names.index("execution/workers") > names.index("counts/references")
        page.screenshot(path=str(tmp_path / "job_run_page.png"))
    finally:
        page.close()

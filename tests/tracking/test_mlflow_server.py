"""Tracking to a real `mlflow server` on 127.0.0.1 over HTTP: a run, and a sweep's job."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.results import CASES_FILE, read_result
from runner.sweep import start_tracking
from runner.tracking.flatten import metrics_from_results
from tests.tracking.conftest import (
    MlflowServer,
    all_runs,
    artifact_paths,
    client,
    download_bytes,
    mlflow_tracker,
    track,
)
from tests.tracking.jobs import make_job
from tests.tracking.test_mlflow import JOB_FILES, RESULT_FILES, sweep_config

pytestmark = pytest.mark.slow


def test_run_logged_to_a_server_over_http(tmp_path: Path, mlflow_server: MlflowServer) -> None:
    uri = mlflow_server.uri
    (folder,) = make_job(tmp_path / "job", [0.3], report=True)
    (link,) = track(mlflow_tracker(uri, tmp_path / "out", experiment="server-run"), [folder])
    assert not (tmp_path / "out").exists()  # nothing local: the server holds the run
    exp = client(uri).get_experiment_by_name("server-run")
    (run,) = client(uri).search_runs([exp.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.metrics == metrics_from_results(read_result(folder))
    assert artifact_paths(uri, run.info.run_id) == RESULT_FILES | JOB_FILES | {"report.html"}
    assert download_bytes(uri, run.info.run_id, CASES_FILE, tmp_path / "dl") == \
        (folder / CASES_FILE).read_bytes()
    # A remote store gives the report a link to the run in the server's UI.
    assert link == f"{uri}/#/experiments/{exp.experiment_id}/runs/{run.info.run_id}"


def test_a_sweep_job_logged_to_a_server_over_http(
        tmp_path: Path, mlflow_server: MlflowServer) -> None:
    uri = mlflow_server.uri
    sweep = tmp_path / "sweep"
    config = sweep_config(uri, tmp_path / "out")
    config.experiment = "server-sweep"
    sweep_tracker = start_tracking(config, sweep)
    dirs = make_job(sweep / "0_job", [0.15, 0.8])
    track(mlflow_tracker(uri, tmp_path / "out", experiment="server-sweep"), dirs)
    (sweep / "sweep.json").write_text("{}\n", encoding="utf-8")
    summary = {"failed": False, "n_jobs": 1, "incomplete_jobs": [],
               "jobs": [{"dir": f"0_job/{d.name}", "complete": True} for d in dirs],
               "best": {"context_recall": {"dir": "0_job/t0.15", "value": 1.0}}}
    sweep_tracker.end_sweep(sweep, summary, "FINISHED")
    exp = client(uri).get_experiment_by_name("server-sweep")
    runs = [r for r in all_runs(uri) if r.info.experiment_id == exp.experiment_id]
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = sorted((r for r in runs
                       if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id),
                      key=lambda r: r.info.run_name)
    assert len(children) == 2 and len(runs) == 3
    assert [r.info.status for r in (parent, *children)] == ["FINISHED"] * 3
    assert [c.data.params["scoring.threshold"] for c in children] == ["0.15", "0.8"]
    assert [artifact_paths(uri, c.info.run_id) for c in children] == [
        RESULT_FILES | JOB_FILES, RESULT_FILES]
    assert artifact_paths(uri, parent.info.run_id) == {"sweep.json"}
    assert (parent.data.metrics["n_results"], parent.data.metrics["best/context_recall"]) == (
        2.0, 1.0)

"""Tracking to a real `mlflow server` on 127.0.0.1 over HTTP: a run and a joblib sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.tracking import mlflow as tracking
from tests.conftest import only_run_dir, run_cli
from tests.tracking.conftest import (
    BASE,
    ENV,
    MlflowServer,
    all_runs,
    artifact_paths,
    client,
    download_text,
    read_json,
)

pytestmark = pytest.mark.slow


def test_run_logged_to_a_server_over_http(tmp_path: Path, mlflow_server: MlflowServer) -> None:
    uri = mlflow_server.uri
    out = tmp_path / "out"
    proc = run_cli([*BASE, "report=html", f"output_root={out}", "experiment=server-run"],
                   cwd=tmp_path, env={**ENV, "MLFLOW_TRACKING_URI": uri})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not (out / "mlflow.db").exists()  # nothing local: the server holds the run
    run_dir = only_run_dir(out)
    exp = client(uri).get_experiment_by_name("server-run")
    (run,) = client(uri).search_runs([exp.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.metrics == tracking.metrics_from_results(read_json(run_dir / "metrics.json"))
    assert {"cases.jsonl", "metrics.json", "config.yaml", "report.html",
            "cases_table.json"} <= artifact_paths(uri, run.info.run_id)
    assert download_text(uri, run.info.run_id, "cases.jsonl", tmp_path / "dl") == \
        (run_dir / "cases.jsonl").read_text(encoding="utf-8")
    # A remote store gives the report a link to the run in the server's UI.
    link = f"{uri}/#/experiments/{exp.experiment_id}/runs/{run.info.run_id}"
    assert link in (run_dir / "report.html").read_text(encoding="utf-8")


def test_joblib_sweep_logged_to_a_server_over_http(
        tmp_path: Path, mlflow_server: MlflowServer) -> None:
    uri = mlflow_server.uri
    out = tmp_path / "out"
    proc = run_cli(["-m", *BASE, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                    "matcher=ngram,substring", f"output_root={out}", "experiment=server-sweep",
                    f"tracking.tracking_uri={uri}"], cwd=tmp_path, env=ENV, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    exp = client(uri).get_experiment_by_name("server-sweep")
    runs = [r for r in all_runs(uri) if r.info.experiment_id == exp.experiment_id]
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 2 and len(runs) == 3
    assert parent.info.status == "FINISHED"
    assert all(c.info.status == "FINISHED" for c in children)
    assert sorted(c.data.params["matcher._target_"].rsplit(".", 1)[1] for c in children) == [
        "NgramMatcher", "SubstringMatcher"]
    assert "sweep.json" in artifact_paths(uri, parent.info.run_id)
    assert parent.data.metrics["n_jobs"] == 2

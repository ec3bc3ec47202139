"""A tracking server that stops answering (SIGSTOP: its port still accepts connections, no reply
ever comes) during a sweep: every call to it has a deadline, so the sweep stops with one line at
the deadline, keeps its results, and its summary lists the job that never ran."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import read_json
from tests.tracking.conftest import MlflowServer
from tests.tracking.test_runs_left_running import (
    GATE_ENV,
    SEED,
    parent_id,
    ragcite,
    sweep_of,
    wait_for,
)

pytestmark = pytest.mark.slow

MODELS = "tests.tracking.fake_models"
# MLflow alone would wait 3 s per read, 11 times, with back-off between (minutes in all).
HTTP_ENV = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "3", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "10"}


def test_a_sweep_whose_server_stops_answering_stops_at_the_deadline(tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    server = MlflowServer(tmp_path / "server")
    out, gate = tmp_path / "out", tmp_path / "gate"
    try:
        server.wait_healthy()
        uri = server.uri
        proc = ragcite(["-m", *SEED, f"output_root={out}", f"tracking.tracking_uri={uri}",
                        f"model.function={MODELS}.stored,tests.tracking.test_runs_left_running"
                        f".gated,{MODELS}.marked"], tmp_path, **{GATE_ENV: str(gate)}, **HTTP_ENV)
        try:
            wait_for(Path(f"{gate}.waiting"), proc)  # job 0 is tracked; job 1 is scoring
            os.killpg(server.proc.pid, signal.SIGSTOP)
            start = time.monotonic()
            gate.touch()
            _, err = proc.communicate(timeout=150)
            took = time.monotonic() - start
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    finally:
        os.killpg(server.proc.pid, signal.SIGCONT)
        server.stop()
    # The deadline (3 s), then the health check of the sweep's end (5 s), and the CLI's work.
    assert took < 60, took
    print(f"stopped server: the sweep ended {took:.1f} s after the gate opened")
    assert proc.returncode == 2, err[-3000:]
    assert [line for line in err.splitlines() if line.startswith("ragcite: error")] == [
        f"ragcite: error: tracking: the MLflow tracking server at {uri} did not complete "
        f"create_run within 3 s (MLFLOW_HTTP_REQUEST_TIMEOUT)"]
    assert f"ragcite: warning: tracking: the sweep's MLflow run {parent_id(sweep_of(out))} " \
        f"stays RUNNING on {uri}, which does not answer; the next ragcite run on this host " \
        f"against it marks it KILLED" in err.splitlines()
    assert "Traceback" not in err and "Retrying" not in err
    sweep = sweep_of(out)
    summary = read_json(sweep / "sweep.json")
    assert (summary["failed"], summary["n_jobs"], summary["n_results"]) == (True, 3, 2)
    assert [entry["num"] for entry in summary["not_run"]] == [2]
    escaped = uri.replace(":", "\\:")  # as Hydra spells a job's overrides
    assert summary["not_run"][0]["overrides"][-2:] == [
        f"tracking.tracking_uri={escaped}", f"model.function={MODELS}.marked"]
    # Both jobs that ran keep their results: they were written before they were tracked.
    assert sorted(p.parent.name for p in sweep.glob("*/job.json")) == [
        "0_python-stored_ngram", "1_python-gated_ngram"]

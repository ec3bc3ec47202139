"""Runs a dead process left RUNNING, as real processes: a sweep killed with its process group
(kill -9), and a sweep whose `mlflow server` dies after its first job. Each stops promptly,
keeps its local results, and the next run against the store ends those runs KILLED."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import read_json
from tests.helpers import FIXTURES, wait_until
from tests.tracking.conftest import ENV, MlflowServer, all_runs, sqlite_uri
from tests.tracking.fake_models import stored

pytestmark = pytest.mark.slow

GATE_ENV = "RAGCITE_TEST_GATE"
SEED = ["dataset=file", f"dataset.path={FIXTURES / 'seed_examples.jsonl'}", "model=python",
        "progress=false", "report=none"]


def gated(case: object) -> object:
    """`model=python`: leave ``<gate>.waiting``, then answer once the file ``<gate>`` exists."""
    gate = Path(os.environ[GATE_ENV])
    Path(f"{gate}.waiting").touch()
    wait_until(gate.exists, f"{gate}")
    return stored(case)


def ragcite(args: list[str], cwd: Path, **env: str) -> subprocess.Popen[str]:
    """``ragcite ARGS`` in `cwd`, in a process group of its own."""
    return subprocess.Popen([sys.executable, "-m", "runner.cli", *args], cwd=cwd,
                            env={**os.environ, **ENV, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def statuses(uri: str) -> list[str]:
    """The status of every run of the store, sorted."""
    return sorted(r.info.status for r in all_runs(uri))


def sweep_of(out: Path) -> Path:
    (sweep,) = (out / "sweeps").iterdir()
    return sweep


def parent_id(sweep: Path) -> str:
    return str(read_json(sweep / ".ragcite" / "parent_run.json")["run_id"])


def warning(run: object, pid: int) -> str:
    info = run.info  # type: ignore[attr-defined]
    return (f"ragcite: warning: tracking: run {info.run_id} ({info.run_name}) was left RUNNING "
            f"by process {pid}, which has ended; marked KILLED")


def test_a_killed_sweep_is_marked_killed_by_the_next_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    marker = tmp_path / "called"
    proc = ragcite(["-m", *SEED, "model.function=tests.tracking.fake_models.held",
                    f"output_root={out}"], tmp_path, RAGCITE_TEST_MARKER=str(marker))
    try:
        wait_until(marker.exists, "the model's first call", proc)
        os.killpg(proc.pid, signal.SIGKILL)  # the whole process group, no goodbye
    finally:
        proc.communicate(timeout=60)
    uri = sqlite_uri(out)
    (parent,) = all_runs(uri)
    assert parent.info.status == "RUNNING"
    assert parent.data.tags["ragcite.pid"] == str(proc.pid)
    after = ragcite([*SEED, "model.function=tests.tracking.fake_models.stored",
                     f"output_root={out}"], tmp_path)
    _, err = after.communicate(timeout=300)
    assert after.returncode == 0, err[-3000:]
    assert warning(parent, proc.pid) in err.splitlines()
    assert statuses(uri) == ["FINISHED", "KILLED"]
    # The sweep's local folder stays as the kill left it: no job.json, no sweep.json.
    (sweep,) = (out / "sweeps").iterdir()
    assert list(sweep.glob("*/job.json")) == [] and not (sweep / "sweep.json").exists()


def test_a_sweep_whose_server_dies_stops_in_one_line_and_keeps_its_results(
        tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    server = MlflowServer(tmp_path / "server")
    out, gate = tmp_path / "out", tmp_path / "gate"
    try:
        server.wait_healthy()
        uri = server.uri
        proc = ragcite(["-m", *SEED, f"output_root={out}", f"tracking.tracking_uri={uri}",
                        "model.function=tests.tracking.fake_models.stored,"
                        "tests.tracking.test_runs_left_running.gated"],
                       tmp_path, **{GATE_ENV: str(gate)})
        try:
            # Job 0 is tracked; job 1 is scoring.
            wait_until(Path(f"{gate}.waiting").exists, "the second job's model call", proc)
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(timeout=30)
            start = time.monotonic()
            gate.touch()
            _, err = proc.communicate(timeout=300)
            took = time.monotonic() - start
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    finally:
        server.stop()
    assert took < 90, took  # MLflow's own retries of a server that is gone: minutes
    assert proc.returncode == 2, err[-3000:]
    assert [line for line in err.splitlines() if line.startswith("ragcite: error")] == [
        f"ragcite: error: tracking: cannot reach the MLflow tracking server at {uri} "
        f"([Errno 111] Connection refused; timeout 5 s)"]
    assert f"ragcite: warning: tracking: the sweep's MLflow run {parent_id(sweep_of(out))} " \
        f"stays RUNNING on {uri}, which does not answer; the next ragcite run on this host " \
        f"against it marks it KILLED" in err.splitlines()
    assert "Traceback" not in err and "Retrying" not in err
    assert read_json(sweep_of(out) / "sweep.json")["failed"] is True
    # Every local result stays: both jobs wrote their results before tracking them. Job 1's
    # report stage (its tracked run opened first, for the report's link) did not finish: no
    # job.json, the job's last file.
    (sweep,) = (out / "sweeps").iterdir()
    assert sorted(p.parent.name for p in sweep.glob("*/job.json")) == ["0_python-stored_ngram"]
    assert [read_json(p)["complete"] for p in sorted(sweep.glob("*/metrics.json"))] == [
        True, True]
    # The server, back on the same store, holds the sweep's run RUNNING until the next run.
    again = MlflowServer(tmp_path / "server")
    try:
        again.wait_healthy()
        (parent,) = [r for r in all_runs(again.uri) if "mlflow.parentRunId" not in r.data.tags]
        assert parent.info.status == "RUNNING"
        assert statuses(again.uri) == ["FINISHED", "RUNNING"]
        after = ragcite([*SEED, "model.function=tests.tracking.fake_models.stored",
                         f"output_root={out}", f"tracking.tracking_uri={again.uri}"], tmp_path)
        _, err = after.communicate(timeout=300)
        assert after.returncode == 0, err[-3000:]
        assert warning(parent, proc.pid) in err.splitlines()
        assert statuses(again.uri) == ["FINISHED", "FINISHED", "KILLED"]
    finally:
        again.stop()

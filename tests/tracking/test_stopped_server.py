"""Tracking servers that stop answering: every call to one has a deadline. A server that trickles
(each read gets a byte, so no read timeout ever fires) fails each call at its deadline; a
`mlflow server` stopped (SIGSTOP: its port still accepts connections, no reply ever comes)
during a sweep stops the sweep with one line at the deadline, its results kept and its summary
listing the job that never ran."""

from __future__ import annotations

import itertools
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from runner.tracking import mlflow_store as store
from tests.conftest import read_json
from tests.helpers import wait_until
from tests.tracking.conftest import MlflowServer
from tests.tracking.test_runs_left_running import (
    GATE_ENV,
    SEED,
    parent_id,
    ragcite,
    sweep_of,
)

MODELS = "tests.tracking.fake_models"
# MLflow alone would wait 3 s per read, 11 times, with back-off between (minutes in all).
HTTP_ENV = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "3", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "10"}


class Trickle:
    """A server on 127.0.0.1 that answers each request with a header line one byte every 0.1 s,
    for ever (until :meth:`close`)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.uri = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests = 0
        self.stopped = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            self.requests += 1
            for byte in itertools.chain(b"HTTP/1.1 200 OK\r\nX-Pad: ", itertools.repeat(97)):
                if self.stopped.wait(0.1):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def close(self) -> None:
        self.stopped.set()
        self.sock.close()


def test_each_call_to_a_trickling_tracking_server_ends_at_its_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "1")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    server = Trickle()
    try:
        start = time.monotonic()
        with pytest.raises(store.Unreachable) as health:
            store.check_reachable(server.uri, 1.0)
        with pytest.raises(store.Unreachable) as call:
            store.client(server.uri).get_experiment_by_name("ragcite")
        took = time.monotonic() - start
    finally:
        server.close()
    assert str(health.value) == (f"cannot reach the MLflow tracking server at {server.uri} "
                                 f"(timed out; timeout 1 s)")
    assert str(call.value) == (f"the MLflow tracking server at {server.uri} did not complete "
                               f"get_experiment_by_name within 1 s (MLFLOW_HTTP_REQUEST_TIMEOUT)")
    assert server.requests == 2
    assert took < 30, took  # two deadlines of 1 s; without them, for ever


@pytest.mark.slow
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
            # job 0 is tracked; job 1 is scoring
            wait_until(Path(f"{gate}.waiting").exists, "the second job's model call", proc)
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
    assert (summary["failed"], summary["n_jobs"], summary["n_results"]) == (True, 3, 1)
    assert summary["incomplete_jobs"] == ["1_python-gated_ngram"]
    assert [entry["num"] for entry in summary["not_run"]] == [2]
    escaped = uri.replace(":", "\\:")  # as Hydra spells a job's overrides
    assert summary["not_run"][0]["overrides"][-2:] == [
        f"tracking.tracking_uri={escaped}", f"model.function={MODELS}.marked"]
    # Both jobs that ran keep their results: they were written before they were tracked. Job
    # 1's report stage (its tracked run opened first, for the report's link) did not finish:
    # no job.json, the job's last file, so it is listed as incomplete.
    assert sorted(p.parent.name for p in sweep.glob("*/job.json")) == ["0_python-stored_ngram"]
    assert [read_json(p)["complete"] for p in sorted(sweep.glob("*/metrics.json"))] == [
        True, True]

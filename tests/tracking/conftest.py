"""Fixtures for the MLflow tracking tests: run readers, trackers, a real `mlflow server`."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.tracking.base import make_tracker
from runner.tracking.mlflow import MlflowTracker
from tests.conftest import REPO
from tests.helpers import wait_until
from tests.reports.conftest import browser  # noqa: F401  (Chromium, as the reports)

# MLflow's usage telemetry stays off in the tests (no network beyond 127.0.0.1).
ENV = {"PYTHONPATH": str(REPO), "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
MLFLOW_TARGET = "runner.tracking.mlflow.MlflowTracker"


def sqlite_uri(root: Path) -> str:
    """The sqlite store file under `root`."""
    return f"sqlite:///{root.resolve() / 'mlflow.db'}"


def mlflow_tracker(uri: str, root: Path, experiment: str = "ragcite",
                   **keys: Any) -> MlflowTracker:
    """An MLflow tracker built as a job builds it (make_tracker), on `uri`."""
    tracker = make_tracker({"tracking": {"_target_": MLFLOW_TARGET, "tracking_uri": uri, **keys},
                            "experiment": experiment, "output_root": str(root)})
    assert isinstance(tracker, MlflowTracker)
    return tracker


def track(tracker: Any, result_dirs: list[Path]) -> list[str | None]:
    """Track a job's result folders as the command line does; returns the links."""
    tracker.check()
    links = []
    for folder in result_dirs:
        links.append(tracker.open(folder))
        tracker.log(folder)
        tracker.close("FINISHED")
    return links


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (right now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def client(uri: str) -> Any:
    """An MlflowClient on `uri`."""
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def all_runs(uri: str) -> list[Any]:
    """Every run of every experiment of the store, oldest first."""
    c = client(uri)
    ids = [e.experiment_id for e in c.search_experiments()]
    return list(c.search_runs(ids, order_by=["attributes.start_time ASC"], max_results=1000))


def artifact_paths(uri: str, run_id: str, path: str | None = None) -> set[str]:
    """Every artifact file path of a run, recursively."""
    c = client(uri)
    out: set[str] = set()
    for info in c.list_artifacts(run_id, path):
        if info.is_dir:
            out |= artifact_paths(uri, run_id, info.path)
        else:
            out.add(info.path)
    return out


def download_text(uri: str, run_id: str, path: str, dst: Path) -> str:
    """The text of one artifact."""
    return download_bytes(uri, run_id, path, dst).decode("utf-8")


def download_bytes(uri: str, run_id: str, path: str, dst: Path) -> bytes:
    """The bytes of one artifact."""
    dst.mkdir(parents=True, exist_ok=True)
    local = client(uri).download_artifacts(run_id, path, str(dst))
    return Path(local).read_bytes()


@pytest.fixture(autouse=True)
def _no_ambient_tracking_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests set the tracking URI explicitly; the developer's environment must not leak in."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")


class MlflowServer:
    """A running `mlflow server` on 127.0.0.1."""

    def __init__(self, root: Path) -> None:
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.root = root
        self.log = (root / "server.log").open("w", encoding="utf-8")
        mlflow_bin = Path(sys.executable).parent / "mlflow"
        cmd = [str(mlflow_bin) if mlflow_bin.exists() else sys.executable, *(
            [] if mlflow_bin.exists() else ["-m", "mlflow"]), "server",
            "--backend-store-uri", f"sqlite:///{root / 'server.db'}",
            "--artifacts-destination", str(root / "artifacts"),
            "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
        env.pop("MLFLOW_TRACKING_URI", None)
        self.proc = subprocess.Popen(cmd, cwd=root, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.uri + "/health", timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def wait_healthy(self) -> None:
        wait_until(self.healthy, f"mlflow server healthy (see {self.root / 'server.log'})",
                   self.proc)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """One real `mlflow server` (sqlite backend, one worker) for the whole session."""
    server = MlflowServer(tmp_path_factory.mktemp("mlflow-server"))
    try:
        server.wait_healthy()
        yield server
    finally:
        server.stop()


def read_json(path: Path) -> Any:
    """Parse a JSON file."""
    return json.loads(path.read_text(encoding="utf-8"))

"""``ragcite-compare`` by MLflow run id (issue 23, item 6): every threshold of a job, read from
a real `mlflow server`; and a tracking server that is not there, or stops answering, ends the
command with one line (exit 2) instead of holding it."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from runner.results import PASSAGES_FILE
from tests.conftest import run_cli
from tests.tracking.conftest import MlflowServer, artifact_paths, client, free_port

COMPARE = "runner.reports.compare"
REF = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
# Each case cites its reference's document with 10 words; the reference has 8 word trigrams.
# `high` cites it whole (similarity 8/8 = 1); `mid` keeps its first 7 words (5 trigrams
# shared: 5/8 = 0.625); `low` its first 5 (3 shared: 3/8 = 0.375).
CITED = {"high": REF, "mid": "alpha bravo charlie delta echo foxtrot golf kilo lima mike",
         "low": "alpha bravo charlie delta echo kilo lima mike november oscar"}
RUN_IDS = ["0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"]


def _dataset() -> str:
    return "".join(json.dumps({
        "id": cid, "query": f"q {cid}", "references": [{"source": "a.pdf", "content": REF}],
        "response": {"answer": "x", "citations": [{"source": "a.pdf", "content": text}]}}) + "\n"
        for cid, text in CITED.items())


def _error_lines(proc: Any) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.strip()]


@pytest.mark.slow
def test_every_threshold_of_a_job_by_run_id(tmp_path: Path,
                                            mlflow_server: MlflowServer) -> None:
    """A job deciding 0.3, 0.5 and 0.7 logs three runs; only the first holds the passages.
    Before, comparing the 2nd and 3rd by run id stopped at "has no passages artifact"."""
    uri = mlflow_server.uri
    (tmp_path / "c.jsonl").write_text(_dataset(), encoding="utf-8")
    job = run_cli(["dataset=file", "dataset.path=c.jsonl", "model=precomputed", "matcher=ngram",
                   "scoring.threshold=[0.3,0.5,0.7]", "tracking=mlflow",
                   f"tracking.tracking_uri={uri}", "experiment=compare-thresholds",
                   "report=none", "progress=false"], tmp_path)
    assert job.returncode == 0, job.stderr
    exp = client(uri).get_experiment_by_name("compare-thresholds")
    runs = sorted(client(uri).search_runs([exp.experiment_id]),
                  key=lambda r: int(r.data.tags["ragcite.threshold_index"]))
    first, second, third = (r.info.run_id for r in runs)
    for run in runs[1:]:  # the shared passages are in the first run, which the tag names
        assert PASSAGES_FILE not in artifact_paths(uri, run.info.run_id)
        assert run.data.tags["ragcite.passages_run_id"] == first

    proc = run_cli([second, f"runs:/{third}", "--tracking-uri", uri, "--out", "cmp/c.html"],
                   tmp_path, module=COMPARE)
    assert (proc.returncode, proc.stderr) == (0, "")  # no progress bars either
    summary = json.loads((tmp_path / "cmp" / "c.json").read_text(encoding="utf-8"))
    assert (summary["a"]["threshold"], summary["b"]["threshold"]) == (0.5, 0.7)
    assert summary["a"]["source"] == f"mlflow run {second}"
    assert summary["b"]["link"] == f"{uri}/#/experiments/{exp.experiment_id}/runs/{third}"
    assert summary["pairing"]["n_paired_scored"] == 3 and summary["pairing"]["newly_failed"] == 0
    # At 0.5 `high` and `mid` match, at 0.7 only `high`: `mid` goes from 1 to 0 on the three
    # context metrics (its one citation and one reference), so the means go 2/3 -> 1/3 and the
    # paired mean difference is -1/3; its source is cited at both thresholds: no change.
    for key in ("context_recall", "context_precision", "context_f1"):
        entry = summary["metrics"][key]
        assert entry["a"] == pytest.approx(2 / 3) and entry["b"] == pytest.approx(1 / 3)
        assert entry["delta"] == pytest.approx(-1 / 3)
        assert entry["paired_mean_delta"] == pytest.approx(-1 / 3) and entry["n_paired"] == 3
    for key in ("source_recall", "source_precision", "source_f1"):
        entry = summary["metrics"][key]
        assert (entry["a"], entry["b"], entry["delta"], entry["paired_mean_delta"],
                entry["ci"]) == (1.0, 1.0, 0.0, 0.0, [0.0, 0.0])
    (changed,) = summary["changed"]
    assert (changed["id"], changed["status"], changed["direction"]) == ("mid", "scored", "worse")
    assert changed["delta"] == {"context_recall": -1.0, "context_precision": -1.0,
                                "context_f1": -1.0, "source_recall": 0.0,
                                "source_precision": 0.0, "source_f1": 0.0}


def test_a_tracking_server_that_is_not_there(tmp_path: Path) -> None:
    uri = f"http://127.0.0.1:{free_port()}"
    proc = run_cli([*RUN_IDS, "--tracking-uri", uri], tmp_path, module=COMPARE, timeout=60)
    assert proc.returncode == 2
    assert _error_lines(proc) == [
        f"ragcite: error: cannot reach the MLflow tracking server at {uri} ([Errno 111] "
        "Connection refused; timeout 5 s)"]


def test_a_tracking_server_that_never_answers(tmp_path: Path) -> None:
    """A socket that accepts connections (the kernel's backlog) and never replies: the health
    check gives up after its 5 s."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        uri = f"http://127.0.0.1:{sock.getsockname()[1]}"
        proc = run_cli([*RUN_IDS, "--tracking-uri", uri], tmp_path, module=COMPARE, timeout=60)
        assert proc.returncode == 2
        assert _error_lines(proc) == [
            f"ragcite: error: cannot reach the MLflow tracking server at {uri} (timed out; "
            "timeout 5 s)"]
        sock.settimeout(30)
        conn, _ = sock.accept()  # the request the command sent, waiting in the backlog
        with conn:
            assert conn.recv(4096).startswith(b"GET /health HTTP/1.1\r\n")


class _StallingServer(ThreadingHTTPServer):
    """Answers ``/health``; holds every other request unanswered until released."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.release = threading.Event()
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _StallingServer

    def do_GET(self) -> None:
        if self.path == "/health":
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"OK")
            return
        self.server.paths.append(self.path)
        self.server.release.wait(120)
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stalling_server() -> Iterator[_StallingServer]:
    server = _StallingServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


def test_a_tracking_server_that_stops_answering(tmp_path: Path,
                                               stalling_server: _StallingServer) -> None:
    """The health check passes, then the run's lookup never gets an answer: the download ends
    at --timeout."""
    uri = f"http://127.0.0.1:{stalling_server.server_address[1]}"
    proc = run_cli([*RUN_IDS, "--tracking-uri", uri, "--timeout", "3"], tmp_path,
                   module=COMPARE, timeout=60)
    assert proc.returncode == 2
    assert _error_lines(proc) == [
        f"ragcite: error: MLflow run {RUN_IDS[0]} at {uri}: no answer within 3 s (--timeout)"]
    assert [p.split("?")[0] for p in stalling_server.paths] == ["/api/2.0/mlflow/runs/get"]

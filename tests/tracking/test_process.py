"""The tracker helper process (runner/tracking/process.py), with a recording tracker.

The recording tracker runs in the forked helper, so it writes each call to a file that the test
reads back. The real MLflow tracker in the helper is covered by the CLI tests of test_mlflow.py,
which run ``ragcite`` in a fresh process (where the helper is used).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Collection
from pathlib import Path

import pytest

from runner.errors import RagciteError
from runner.tracking.process import TrackerProcess, use_helper


class Recorder:
    """Appends every call, with the process it ran in, to `path` as a JSON line."""

    def __init__(self, path: Path, fail: str | None = None,
                 error: BaseException | None = None) -> None:
        self.path = path
        self.fail = fail
        self.error = error or RagciteError(f"tracking: {fail} failed")
        self.link: str | None = None
        self._note("built")
        if fail == "build":
            raise self.error

    def _note(self, *call: object) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps([os.getpid(), *map(str, call)]) + "\n")

    def _call(self, name: str, *args: object) -> None:
        self._note(name, *args)
        if self.fail == name:
            raise self.error

    def start(self, names: dict[str, str], run_dir: Path) -> None:
        self._call("start", names["matcher"], run_dir.name)
        self.link = "http://127.0.0.1:5000/#/runs/abc"

    def ready(self) -> None:
        self._call("ready")

    def log_results(self, run_dir: Path, skip: Collection[str] = (), wait: bool = True) -> None:
        self._call("log_results", run_dir.name, ",".join(skip))

    def log_file(self, path: Path) -> None:
        self._call("log_file", path.name)

    def end(self, status: str) -> None:
        self._call("end", status)


def calls(path: Path) -> list[list[str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_calls_run_in_one_helper_process_in_order(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    tracker = TrackerProcess(lambda: Recorder(log))
    tracker.start({"matcher": "ngram"}, tmp_path / "run1")
    tracker.ready()
    assert tracker.link == "http://127.0.0.1:5000/#/runs/abc"  # set by start, in the helper
    tracker.log_results(tmp_path / "run1", skip=("report.html",))
    tracker.log_file(tmp_path / "run1" / "report.html")
    tracker.end("FINISHED")
    tracker.end("FINISHED")  # a second end is a no-op
    got = calls(log)
    helper = got[0][0]
    assert helper != os.getpid()
    assert all(pid == helper for pid, *_ in got)
    assert [call for _, *call in got] == [
        ["built"], ["start", "ngram", "run1"], ["log_results", "run1", "report.html"],
        ["log_file", "report.html"], ["end", "FINISHED"]]
    assert not tracker._proc.is_alive()
    assert tracker._proc.exitcode == 0


def test_a_failed_build_is_raised_by_ready_and_end_stays_quiet(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log = tmp_path / "calls.jsonl"
    tracker = TrackerProcess(lambda: Recorder(log, fail="build"))
    tracker.start({"matcher": "ngram"}, tmp_path / "run1")  # returns at once
    with pytest.raises(RagciteError, match=r"^tracking: build failed$"):
        tracker.ready()
    tracker.end("FAILED")
    assert [call for _, *call in calls(log)] == [["built"]]
    assert "could not close" not in caplog.text
    assert tracker._proc.exitcode == 0


def test_an_error_while_logging_is_raised_with_its_message(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    tracker = TrackerProcess(lambda: Recorder(log, fail="log_results"))
    tracker.start({"matcher": "ngram"}, tmp_path / "run1")
    tracker.ready()
    with pytest.raises(RagciteError, match=r"^tracking: log_results failed$"):
        tracker.log_results(tmp_path / "run1")
    tracker.end("FAILED")
    assert [call[1:] for call in calls(log)][-1] == ["end", "FAILED"]


def test_an_error_that_does_not_pickle_arrives_as_its_type_and_message(tmp_path: Path) -> None:
    class Local(Exception):  # a local class cannot be pickled
        pass

    tracker = TrackerProcess(lambda: Recorder(tmp_path / "calls.jsonl", fail="log_file",
                                              error=Local("disk full")))
    tracker.start({"matcher": "ngram"}, tmp_path / "run1")
    tracker.ready()
    with pytest.raises(RagciteError, match=r"^Local: disk full$"):
        tracker.log_file(tmp_path / "run1" / "report.html")
    tracker.end("FINISHED")


def test_a_job_gone_without_ending_its_run_ends_it_killed(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    tracker = TrackerProcess(lambda: Recorder(log))
    tracker.start({"matcher": "ngram"}, tmp_path / "run1")
    tracker.ready()
    tracker._conn.close()  # what the job's death does to its end of the pipe
    tracker._proc.join(timeout=30)
    assert [call[1:] for call in calls(log)][-1] == ["end", "KILLED"]
    assert tracker._proc.exitcode == 0


def test_a_job_gone_while_the_tracker_is_built_leaves_no_run_open(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "calls.jsonl"
    tracker = TrackerProcess(lambda: Recorder(log))
    tracker.start({"matcher": "ngram"}, tmp_path / "run1")
    tracker._conn.close()  # gone before any reply: the helper's replies meet a closed pipe
    tracker._proc.join(timeout=30)
    got = [call[1:] for call in calls(log)]
    # Whether the start arrived before the helper noticed depends on timing; the run it may
    # have opened is ended either way, and the helper exits quietly.
    assert got in ([["built"], ["end", "KILLED"]],
                   [["built"], ["start", "ngram", "run1"], ["end", "KILLED"]])
    assert tracker._proc.exitcode == 0
    assert "Traceback" not in capfd.readouterr().err


def test_a_helper_that_died_is_a_clear_error(tmp_path: Path) -> None:
    tracker = TrackerProcess(lambda: Recorder(tmp_path / "calls.jsonl"))
    tracker.ready()
    tracker._proc.kill()
    tracker._proc.join()
    with pytest.raises(RagciteError, match=r"^tracking: the tracker process stopped \(exit "
                                           r"code -9; its error is printed above\)$"):
        tracker.log_results(tmp_path / "run1")


def test_the_helper_is_not_used_beside_other_threads_or_once_mlflow_is_imported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.delitem(sys.modules, "mlflow", raising=False)
    assert use_helper() == (sys.platform.startswith("linux") and threading.active_count() == 1)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert use_helper() is False  # forking beside another thread is not safe
    finally:
        stop.set()
        other.join()
    monkeypatch.setitem(sys.modules, "mlflow", sys)  # any module object: "already imported"
    assert use_helper() is False

"""The sweep's tracker host (runner/tracking/process.py, ``TrackerHost``), with recording trackers.

The host is one forked helper that opens a sweep's parent run and serves every job's tracker of a
sweep whose jobs run in the sweep's own process. Everything it runs writes a JSON line to a file
the test reads back. The real MLflow trackers in the host are covered by the basic-launcher sweep
tests of test_mlflow.py.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runner.errors import RagciteError
from runner.tracking.process import HostedTracker, TrackerHost, active_host
from tests.helpers import true_in_forked_child
from tests.tracking.test_process import Recorder, calls


def _note(path: Path, *call: object) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps([os.getpid(), *map(str, call)]) + "\n")


def _open(path: Path, error: BaseException | None = None) -> None:
    _note(path, "open_sweep")
    if error is not None:
        raise error


def _build(path: Path, cfg: dict[str, Any]) -> Recorder:
    return Recorder(path, fail=cfg.get("fail"))


def _host(path: Path, open_error: BaseException | None = None) -> TrackerHost:
    return TrackerHost(functools.partial(_open, path, open_error),
                       functools.partial(_build, path),
                       functools.partial(_note, path, "end_sweep"),
                       functools.partial(_note, path, "orphan"))


def test_jobs_trackers_share_one_helper_and_may_overlap(tmp_path: Path) -> None:
    # A job's run stays open (its report still uploading) while the next job's run starts:
    # both are served by the same helper, each call in the order it was sent.
    log = tmp_path / "calls.jsonl"
    host = _host(log)
    assert active_host() is host
    first = host.tracker({})
    first.start({"matcher": "ngram"}, tmp_path / "job0")
    first.ready()
    assert first.link == "http://127.0.0.1:5000/#/runs/abc"
    first.log_results(tmp_path / "job0", skip=("report.html",))
    second = host.tracker({})
    second.start({"matcher": "ngram"}, tmp_path / "job1")
    second.ready()
    first.log_file(tmp_path / "job0" / "report.html")
    first.end("FINISHED")
    second.log_results(tmp_path / "job1")
    second.end("FINISHED")
    host.end_sweep({"failed": False})
    assert active_host() is None
    got = calls(log)
    helper = got[0][0]
    assert helper != os.getpid() and all(pid == helper for pid, *_ in got)
    assert [call for _, *call in got] == [
        ["open_sweep"],
        ["built"], ["start", "ngram", "job0"], ["log_results", "job0", "report.html"],
        ["built"], ["start", "ngram", "job1"],
        ["log_file", "report.html"], ["end", "FINISHED"],
        ["log_results", "job1", ""], ["end", "FINISHED"],
        ["end_sweep", "{'failed': False}"],
    ]
    assert host._proc.exitcode == 0


def test_an_error_is_raised_by_the_tracker_it_belongs_to(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    host = _host(log)
    bad = host.tracker({"fail": "log_results"})
    good = host.tracker({})
    bad.start({"matcher": "a"}, tmp_path / "bad")
    good.start({"matcher": "b"}, tmp_path / "good")
    host.call(bad._tid, "log_results", tmp_path / "bad", ())  # sent, not waited for
    good.ready()  # collects the failed reply too, but it is not good's error
    good.log_results(tmp_path / "good")
    with pytest.raises(RagciteError, match=r"^tracking: log_results failed$"):
        bad.log_file(tmp_path / "bad" / "report.html")
    bad.end("FAILED")
    good.end("FINISHED")
    host.end_sweep({})


def test_results_logged_in_the_background_raise_at_the_upload(tmp_path: Path) -> None:
    # A deferred sweep job logs its results without waiting (wait=False): the call returns
    # while the helper logs; a failure is raised by that job's next waiting call, the report's
    # upload (runner.cli._finish_job), and not by the next job's.
    log = tmp_path / "calls.jsonl"
    host = _host(log)
    bad = host.tracker({"fail": "log_results"})
    bad.start({"matcher": "a"}, tmp_path / "bad")
    bad.ready()
    bad.log_results(tmp_path / "bad", skip=("report.html",), wait=False)  # returns at once
    after = host.tracker({})
    after.start({"matcher": "b"}, tmp_path / "after")
    after.ready()  # its reply comes after bad's failed one, which is not its error
    with pytest.raises(RagciteError, match=r"^tracking: log_results failed$"):
        bad.log_file(tmp_path / "bad" / "report.html")
    bad.end("FAILED")
    after.log_results(tmp_path / "after", wait=False)
    after.end("FINISHED")  # waits for the logging before closing
    host.end_sweep({})
    assert [call[1:] for call in calls(log)] == [
        ["open_sweep"],
        ["built"], ["start", "a", "bad"], ["log_results", "bad", "report.html"],
        ["built"], ["start", "b", "after"],
        ["log_file", "report.html"], ["end", "FAILED"],
        ["log_results", "after", ""], ["end", "FINISHED"],
        ["end_sweep", "{}"],
    ]


def test_once_a_run_opened_a_later_job_starts_without_waiting(tmp_path: Path) -> None:
    # The first job waits for its run (the store is checked before any model call). Later
    # jobs go on while the helper may still be logging the job before: an error opening their
    # own run is raised by their next waiting call, and the link waits for the run.
    log = tmp_path / "calls.jsonl"
    host = _host(log)
    first = host.tracker({})
    first.start({"matcher": "a"}, tmp_path / "job0")
    assert not host.proven
    first.ready()
    assert host.proven
    first.log_results(tmp_path / "job0", wait=False)
    bad = host.tracker({"fail": "start"})
    bad.start({"matcher": "b"}, tmp_path / "job1")
    bad.ready()  # returns at once: nothing received yet
    assert host._pending == [(1, "log_results"), (2, "new"), (2, "start")]
    assert bad.link is None  # waited for its start, which failed: no link
    assert host._pending == []
    with pytest.raises(RagciteError, match=r"^tracking: start failed$"):
        bad.log_file(tmp_path / "job1" / "report.html")
    bad.end("FAILED")
    good = host.tracker({})
    good.start({"matcher": "c"}, tmp_path / "job2")
    good.ready()
    assert good.link == "http://127.0.0.1:5000/#/runs/abc"
    first.end("FINISHED")
    good.end("FINISHED")
    host.end_sweep({})
    assert [call[1:] for call in calls(log)] == [
        ["open_sweep"],
        ["built"], ["start", "a", "job0"], ["log_results", "job0", ""],
        ["built"], ["start", "b", "job1"], ["log_file", "report.html"], ["end", "FAILED"],
        ["built"], ["start", "c", "job2"], ["end", "FINISHED"], ["end", "FINISHED"],
        ["end_sweep", "{}"],
    ]


def test_a_failed_parent_run_is_raised_by_every_job(tmp_path: Path,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    # The helper's start_sweep exits 2 after logging why (a required store that fails).
    log = tmp_path / "calls.jsonl"
    host = _host(log, SystemExit(2))
    for name in ("job0", "job1"):
        tracker = host.tracker({})
        tracker.start({"matcher": "ngram"}, tmp_path / name)
        with pytest.raises(RagciteError, match=r"^tracking: the sweep's parent run could not "
                                               r"be opened \(see the error above\)$"):
            tracker.ready()
        tracker.end("FAILED")
    host.end_sweep({"failed": True})
    assert [call[1:] for call in calls(log)][:2] == [["open_sweep"], ["built"]]
    assert "Traceback" not in capfd.readouterr().err


def test_a_failed_build_is_the_jobs_error_alone(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    host = _host(log)
    broken = host.tracker({"fail": "build"})
    broken.start({"matcher": "ngram"}, tmp_path / "job0")
    with pytest.raises(RagciteError, match=r"^tracking: build failed$"):
        broken.ready()
    broken.end("FAILED")  # quiet: there is no run to close
    fine = host.tracker({})
    fine.start({"matcher": "ngram"}, tmp_path / "job1")
    fine.ready()
    fine.end("FINISHED")
    host.end_sweep({})
    assert [call[1:] for call in calls(log)][-2:] == [["end", "FINISHED"], ["end_sweep", "{}"]]


def test_a_sweep_gone_without_closing_ends_open_runs_killed(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    host = _host(log)
    done = host.tracker({})
    done.start({"matcher": "a"}, tmp_path / "job0")
    done.ready()
    done.end("FINISHED")
    left = host.tracker({})
    left.start({"matcher": "b"}, tmp_path / "job1")
    left.ready()  # returns at once (a run opened before); the link waits for this run
    assert left.link == "http://127.0.0.1:5000/#/runs/abc"
    host._conn.close()  # what the main process's death does to its end of the pipe
    host._proc.join(timeout=30)
    got = [call[1:] for call in calls(log)]
    assert got[-2:] == [["end", "KILLED"], ["orphan"]]
    assert got.count(["end", "KILLED"]) == 1  # the finished run is left alone
    assert host._proc.exitcode == 0


def test_a_forked_child_does_not_see_the_host(tmp_path: Path) -> None:
    host = _host(tmp_path / "calls.jsonl")
    assert true_in_forked_child(lambda: active_host() is None)
    assert isinstance(host.tracker({}), HostedTracker)
    host.end_sweep({})


def test_a_sweep_that_exits_without_closing_leaves_no_run_open(tmp_path: Path) -> None:
    # Ctrl-C (or an uncaught error) skips end_sweep: at exit the host is told, and it ends the
    # open runs KILLED before the process is gone.
    log = tmp_path / "calls.jsonl"
    script = f"""
import functools, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from pathlib import Path
from tests.tracking import test_process_host as t
host = t._host(Path({str(log)!r}))
tracker = host.tracker({{}})
tracker.start({{"matcher": "ngram"}}, Path("job0"))
tracker.ready()
raise KeyboardInterrupt
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr
    assert [call[1:] for call in calls(log)] == [
        ["open_sweep"], ["built"], ["start", "ngram", "job0"], ["end", "KILLED"], ["orphan"]]

"""A tracker of the user's own class, named by ``tracking._target_``, gets the sweep's hooks in a
real multirun sweep: the sweep names no tracker class."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_cli

CALLS_ENV = "RAGCITE_TEST_TRACKER_CALLS"


class SweepRecorder:
    """Appends each call, as a JSON line, to the file named by :data:`CALLS_ENV` (the sweep's
    main process and its jobs are one process with the basic launcher)."""

    def __init__(self, experiment: str, output_root: str) -> None:
        self.path = Path(os.environ[CALLS_ENV])
        self._record("init", experiment, Path(output_root).name)

    def _record(self, *call: Any) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(call) + "\n")

    def check(self) -> None:
        self._record("check")

    def open(self, result_dir: Path) -> str | None:
        self._record("open", str(result_dir))
        return None

    def log(self, result_dir: Path) -> None:
        self._record("log", str(result_dir))

    def close(self, status: str, result_dir: Path | None = None) -> None:
        self._record("close", status, str(result_dir) if result_dir else None)

    def start_sweep(self, sweep_dir: Path, name: str, sweep: dict[str, Any]) -> None:
        self._record("start_sweep", str(sweep_dir), name, sweep)

    def end_sweep(self, sweep_dir: Path, summary: dict[str, Any], status: str) -> None:
        self._record("end_sweep", str(sweep_dir), summary["n_results"], summary["failed"],
                     status)


@pytest.mark.slow
def test_an_outside_tracker_gets_the_sweeps_hooks(tmp_path: Path) -> None:
    calls, out = tmp_path / "calls.jsonl", tmp_path / "out"
    target = "tracking._target_=tests.tracking.test_sweep_hooks.SweepRecorder"
    args = ["matcher=substring,ngram", "tracking=none", target, "report=none",
            "progress=false", "experiment=hooks", f"output_root={out}"]
    proc = run_cli(["-m", *args], cwd=tmp_path,
                   env={"PYTHONPATH": str(REPO), CALLS_ENV: str(calls)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sweep,) = (out / "sweeps").iterdir()
    jobs = ["0_extractive_substring", "1_extractive_ngram"]
    job_calls = [c for job in jobs for c in (
        ["init", "hooks", "out"], ["check"], ["open", str(sweep / job)],
        ["log", str(sweep / job)], ["close", "FINISHED", str(sweep / job)])]
    assert [json.loads(line) for line in calls.read_text(encoding="utf-8").splitlines()] == [
        ["init", "hooks", "out"], ["check"],
        # the class named as the group's option: the command recorded runs as it is
        ["start_sweep", str(sweep), "demo · extractive · sweep matcher",
         {"overrides": [*args[:2], "tracking=tests.tracking.test_sweep_hooks.SweepRecorder",
                        *args[3:]]}],
        *job_calls,
        ["end_sweep", str(sweep), 2, False, "FINISHED"]]

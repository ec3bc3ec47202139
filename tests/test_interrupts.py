"""SIGTERM is taken as Ctrl-C at any moment, also while a task of the model runs: exit 130, one
``ragcite: interrupted`` line, no traceback (the tests that stop real sweeps from outside:
tests/tracking/test_mlflow.py, tests/tracking/test_runs_left_running.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import EXIT_INTERRUPTED
from tests.conftest import REPO, run_cli
from tests.helpers import SEED_FILE

pytestmark = pytest.mark.slow


def test_sigterm_inside_a_running_task_stops_with_one_line(tmp_path: Path) -> None:
    # Before: the handler raised KeyboardInterrupt inside the task, which kept it; asyncio
    # printed "Task exception was never retrieved" and its traceback after the last line.
    proc = run_cli(["dataset=file", f"dataset.path={SEED_FILE}", "model=python",
                    "model.function=tests.tracking.fake_models.terminated", "tracking=none",
                    "report=none", "progress=false"], tmp_path, env={"PYTHONPATH": str(REPO)})
    assert proc.returncode == EXIT_INTERRUPTED, proc.stderr
    assert proc.stderr.splitlines()[-1] == "ragcite: interrupted", proc.stderr
    assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr
    assert list(tmp_path.glob("outputs/runs/*/job.json")) == []

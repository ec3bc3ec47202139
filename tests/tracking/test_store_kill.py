"""A first run killed (kill -9) while it makes the default MLflow store, as real processes:
no half-made ``mlflow.db`` is left, and the next run makes the store and logs its run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.helpers import wait_until
from tests.tracking.conftest import ENV, all_runs, sqlite_uri

pytestmark = pytest.mark.slow

ARGS = ["tracking=mlflow", "report=none", "progress=false"]


@pytest.mark.parametrize(("statement", "nth"), [
    ("CREATE TABLE", 1),  # the first table of the schema
    ("UPDATE alembic_version", 30),  # 31 of MLflow's 67 migrations done
], ids=["first-table", "migration-31"])
def test_a_run_killed_while_it_makes_the_store_leaves_no_half_made_store(
        tmp_path: Path, statement: str, nth: int) -> None:
    marker, out = tmp_path / "paused", tmp_path / "outputs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.tracking.paused_migration", *ARGS], cwd=tmp_path,
        env={**os.environ, **ENV, "RAGCITE_TEST_PAUSE_ON": statement,
             "RAGCITE_TEST_PAUSE_AT": str(nth), "RAGCITE_TEST_MARKER": str(marker)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_until(marker.exists, "the migration's pause", proc, bound=300)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert "mlflow.db" not in os.listdir(out)
    assert (out / "mlflow.db.new").is_file()  # what the kill cut short, under its own name
    after = run_cli(ARGS, tmp_path, env=ENV)
    assert after.returncode == 0, after.stderr[-3000:]
    assert not [name for name in os.listdir(out) if name.startswith("mlflow.db.new")]
    assert [run.info.status for run in all_runs(sqlite_uri(out))] == ["FINISHED"]

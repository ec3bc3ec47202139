"""Runs and sweeps started at the same moment, as real processes: distinct folders, distinct
MLflow runs and parents, and one fresh default store shared by first users at once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from runner.config.schema import STAMP_RESOLVER, folder_stamp, register_resolvers
from tests.conftest import REPO

pytestmark = pytest.mark.slow

STAMP = re.compile(r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d-\d{6}-[0-9a-f]{4}")
LEAN = ["report=none", "progress=false"]


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    """``ragcite ARGS`` in `cwd` as a real process (its default store: cwd/outputs/mlflow.db)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
           "MLFLOW_DISABLE_TELEMETRY": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.Popen([sys.executable, "-m", "runner.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str]]:
    """Each process's exit status and stderr, once all have ended."""
    out = []
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        out.append((proc.returncode, err))
    return out


def runs(root: Path) -> list[Any]:
    """Every run of the default store under `root`/outputs."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'outputs' / 'mlflow.db'}")
    ids = [e.experiment_id for e in client.search_experiments()]
    return list(client.search_runs(ids, max_results=1000))


def test_folder_stamp_sorts_by_time_and_differs_within_a_microsecond() -> None:
    stamps = [folder_stamp() for _ in range(200)]
    assert all(STAMP.fullmatch(s) for s in stamps)
    assert len(set(stamps)) == 200
    assert [s[:26] for s in stamps] == sorted(s[:26] for s in stamps)  # time part: sortable


def test_one_config_resolves_one_stamp() -> None:
    """Cached like ``${now:}``: the run and sweep folders of one config, read twice, agree."""
    register_resolvers()
    cfg = OmegaConf.create({"a": f"${{{STAMP_RESOLVER}:}}", "b": f"x/${{{STAMP_RESOLVER}:}}"})
    first = cfg.a
    assert STAMP.fullmatch(first) and cfg.a == first and cfg.b == f"x/{first}"
    assert OmegaConf.create({"a": f"${{{STAMP_RESOLVER}:}}"}).a != first


def test_two_runs_started_together_get_two_folders_and_two_runs(tmp_path: Path) -> None:
    procs = [start(LEAN, tmp_path) for _ in range(2)]
    for status, err in finish(procs):
        assert status == 0, err[-2000:]
    folders = sorted(p.name for p in (tmp_path / "outputs" / "runs").iterdir())
    assert len(folders) == 2
    assert all(STAMP.fullmatch(f.removesuffix("_demo_extractive_ngram")) for f in folders)
    found = runs(tmp_path)
    assert sorted(Path(r.data.tags["ragcite.result_dir"]).name for r in found) == folders
    assert [r.info.status for r in found] == ["FINISHED", "FINISHED"]


def test_two_joblib_sweeps_started_together_get_their_own_parent(tmp_path: Path) -> None:
    args = ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *LEAN,
            "matcher=ngram,substring"]
    procs = [start(args, tmp_path) for _ in range(2)]
    for status, err in finish(procs):
        assert status == 0, err[-2000:]
    sweeps = sorted((tmp_path / "outputs" / "sweeps").iterdir())
    assert len(sweeps) == 2
    found = runs(tmp_path)
    parents = {r.info.run_id: r for r in found if "mlflow.parentRunId" not in r.data.tags}
    assert sorted(Path(p.data.tags["ragcite.sweep_dir"]) for p in parents.values()) == sweeps
    assert len(found) == 2 + 4 and {r.info.status for r in found} == {"FINISHED"}
    for parent in parents.values():
        sweep = Path(parent.data.tags["ragcite.sweep_dir"])
        children = [r for r in found if r.data.tags.get("mlflow.parentRunId") ==
                    parent.info.run_id]
        assert sorted(Path(c.data.tags["ragcite.result_dir"]) for c in children) == sorted(
            p for p in sweep.iterdir() if (p / ".hydra").is_dir())  # its 2 jobs, no other


def test_four_first_users_of_a_fresh_store_all_succeed(tmp_path: Path) -> None:
    assert not (tmp_path / "outputs").exists()
    procs = [start(LEAN, tmp_path) for _ in range(4)]
    results = finish(procs)
    assert [status for status, _ in results] == [0, 0, 0, 0], [e[-800:] for _, e in results]
    found = runs(tmp_path)
    assert len(found) == 4 and {r.info.status for r in found} == {"FINISHED"}
    assert len({r.data.tags["ragcite.result_dir"] for r in found}) == 4

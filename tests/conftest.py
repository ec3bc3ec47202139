"""Shared fixtures: compose the real Hydra config, run the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

from runner.config.schema import register_configs

REPO = Path(__file__).resolve().parent.parent
CONF = REPO / "conf"

# A suite started in the background (`pytest &` in a script, nohup) inherits SIGINT ignored, and
# so would every command it starts: their Ctrl-C tests would then test nothing. The commands
# start with SIGINT's default, as in a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def options(group: str) -> list[str]:
    """Every option of a config group, from the files in conf/<group>/."""
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.fixture
def compose_cfg() -> Iterator[Callable[..., DictConfig]]:
    """Compose the packaged config with overrides, as `ragcite` would."""
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="runner.conf", version_base="1.3"):

        def _compose(*overrides: str, hydra: bool = False) -> DictConfig:
            return compose("config", overrides=list(overrides), return_hydra_config=hydra)

        yield _compose
    GlobalHydra.instance().clear()


def run_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None,
            timeout: float = 300, module: str = "runner.cli",
            python: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m runner.cli ARGS`` in `cwd`; outputs land under cwd unless told otherwise."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    full_env.pop("MLFLOW_TRACKING_URI", None) if "MLFLOW_TRACKING_URI" not in (env or {}) \
        else None
    return subprocess.run([python or sys.executable, "-m", module, *args], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=timeout,
                          check=False)


def only_run_dir(root: Path) -> Path:
    """The single run folder under root/runs (fails when there is not exactly one)."""
    runs = sorted((root / "runs").iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def read_json(path: Path) -> Any:
    """Parse a JSON file."""
    return json.loads(path.read_text(encoding="utf-8"))


def read_jsonl(path: Path) -> list[Any]:
    """Parse a JSON Lines file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture
def run_job_in(compose_cfg: Callable[..., DictConfig],
               tmp_path: Path) -> Callable[..., list[Any]]:
    """Compose the real config and run one job in this process (no tracking, no report unless
    overridden), as ``ragcite`` does: returns its outcomes, one per threshold."""
    from runner.config.schema import plain_config
    from runner.pipeline import run_job

    def _run(*overrides: str, out: Path | None = None) -> list[Any]:
        cfg = plain_config(compose_cfg("tracking=none", "report=none", "progress=false",
                                       f"output_root={tmp_path}", *overrides))
        names = {"dataset": "demo", "model": "m", "matcher": "x"}
        return run_job(cfg, out or tmp_path / "job", names)

    return _run

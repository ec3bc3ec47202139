"""``hydra/sweeper=ragcite`` (hydra_plugins/ragcite_sweeper): each job's config composed once."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from tests.conftest import REPO, read_json, run_cli

ENV = {"PYTHONPATH": str(REPO)}


def _composed_once(inner: Any) -> Any:
    """A ComposedOnce around `inner`, from the module as Hydra's plugin scan left it (the scan
    executes the plugin modules it finds again, so it goes first, as in runner.cli.main)."""
    import importlib

    from hydra.core.plugins import Plugins

    Plugins.instance()
    module = importlib.import_module("hydra_plugins.ragcite_sweeper.ragcite_sweeper")
    return module.ComposedOnce(inner)


class _Loader:
    """Records load_sweep_config calls; each call composes a new config."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def load_sweep_config(self, master_config: DictConfig,
                          sweep_overrides: list[str]) -> DictConfig:
        self.calls.append(list(sweep_overrides))
        return OmegaConf.create({"n": len(self.calls)})

    def get_search_path(self) -> Any:
        return "search path"


def test_the_config_composed_for_the_check_is_the_one_launched() -> None:
    inner = _Loader()
    loader = _composed_once(inner)
    master = OmegaConf.create({"m": 1})
    batch = [["matcher.threshold=0.3"], ["matcher.threshold=0.5"]]
    checked = [loader.load_sweep_config(master, job) for job in batch]  # the batch check
    launched = [loader.load_sweep_config(master, job) for job in batch]  # the launcher
    assert inner.calls == batch  # composed once each
    assert [a is b for a, b in zip(checked, launched)] == [True, True]
    assert loader.reused == 2
    # Handed out once: a third request composes again, as does another master config.
    again = loader.load_sweep_config(master, batch[0])
    assert again is not checked[0] and again.n == 3
    other = loader.load_sweep_config(OmegaConf.create({"m": 1}), batch[1])
    assert other.n == 4 and len(inner.calls) == 4
    assert loader.get_search_path() == "search path"  # everything else is the inner loader's
    # Not keeping (a launcher that composes elsewhere): nothing is held.
    loader.forget()
    loader.keep = False
    loader.load_sweep_config(master, ["x=1"])
    assert loader._kept == {}
    loader.keep = True
    loader.load_sweep_config(master, ["x=2"])
    loader.forget()
    assert loader._kept == {}


def test_a_pickled_loader_carries_no_kept_configs() -> None:
    inner = _Loader()
    loader = _composed_once(inner)
    loader.load_sweep_config(OmegaConf.create({}), ["a=1"])
    copy = pickle.loads(pickle.dumps(loader))
    assert copy._kept == {} and loader._kept != {}


def test_a_bad_value_in_a_later_job_still_stops_the_sweep_before_any_job(tmp_path: Path) -> None:
    proc = run_cli(["-m", "matcher=ngram", "matcher.threshold=0.5,high", "tracking=none",
                    "report=none", "progress=false", f"output_root={tmp_path}"],
                   cwd=tmp_path, env=ENV)
    assert proc.returncode != 0
    assert "matcher.threshold" in proc.stderr and "high" in proc.stderr
    sweeps = tmp_path / "sweeps"
    jobs = [p for s in sweeps.iterdir() for p in s.iterdir() if p.is_dir()] if sweeps.is_dir() \
        else []
    assert jobs == []  # no job ran


def test_the_sweep_runs_with_either_sweeper(tmp_path: Path) -> None:
    for sweeper in ("ragcite", "basic"):
        root = tmp_path / sweeper
        proc = run_cli(["-m", f"hydra/sweeper={sweeper}", "matcher=ngram",
                        "matcher.threshold=0.4,0.6", "tracking=none", "report=none",
                        "progress=false", f"output_root={root}"], cwd=tmp_path, env=ENV)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (sweep,) = (root / "sweeps").iterdir()
        summary = read_json(sweep / "sweep.json")
        assert summary["n_jobs"] == 2 and summary["failed"] is False
        multirun = (sweep / "multirun.yaml").read_text(encoding="utf-8")
        assert f"hydra/sweeper: {sweeper}" in multirun

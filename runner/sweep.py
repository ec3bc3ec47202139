"""Multirun hooks: a Hydra callback in the main process, plus the failure path.

Hydra calls ``on_multirun_start`` before the first job and ``on_multirun_end`` after the last,
but **not** when a job raised (it exits 1 instead). :func:`runner.cli.main` therefore calls
:func:`finish_sweep` with ``failed=True`` on that path, so the sweep summary is written and the
tracking parent run is closed in every case.

Jobs never send state back to the main process: the summary is gathered from each job's
``metrics.json`` on disk.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from runner.results import METRICS_FILE

log = logging.getLogger("ragcite")
SWEEP_FILE = "sweep.json"

_active: dict[str, Any] = {}


def _plain(config: DictConfig) -> dict[str, Any]:
    # The sweep-level config: job-level interpolations may not resolve here.
    data = OmegaConf.to_container(config, resolve=False)
    return {str(k): v for k, v in data.items()} if isinstance(data, dict) else {}


def collect_jobs(sweep_dir: Path) -> list[dict[str, Any]]:
    """Every job folder of a sweep with its results (``metrics`` None when it did not finish)."""
    jobs = []
    for job_dir in sorted((p for p in sweep_dir.iterdir() if p.is_dir() and
                           (p / ".hydra").is_dir()), key=lambda p: _job_num(p.name)):
        metrics_path = job_dir / METRICS_FILE
        metrics = None
        if metrics_path.is_file():
            metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
        overrides_path = job_dir / ".hydra" / "overrides.yaml"
        overrides = (OmegaConf.to_container(OmegaConf.load(overrides_path))
                     if overrides_path.is_file() else [])
        jobs.append({"dir": job_dir.name, "num": _job_num(job_dir.name),
                     "overrides": overrides, "complete": bool(metrics and
                                                              metrics.get("complete")),
                     "metrics": metrics})
    return jobs


def _job_num(name: str) -> int:
    head = name.split("_", 1)[0]
    return int(head) if head.isdigit() else 10**9


def sweep_open_here() -> bool:
    """True in the process that opened the sweep (its jobs run here on the basic launcher)."""
    return bool(_active)


def start_sweep(config: DictConfig) -> None:
    """Remember the sweep and open the tracking parent run (main process)."""
    sweep_dir = Path(str(config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    _active.clear()
    _active.update({"dir": sweep_dir, "config": config})
    cfg = _plain(config)
    if (cfg.get("tracking") or {}).get("backend") == "mlflow":
        from runner.tracking.mlflow import start_sweep as start_tracking

        start_tracking(config, sweep_dir)


def finish_sweep(failed: bool) -> dict[str, Any] | None:
    """Write ``sweep.json``, the sweep report and close the tracking parent run.

    Args:
        failed: A job raised (Hydra skipped ``on_multirun_end``).

    Returns:
        The sweep summary, or None when no sweep is active.
    """
    if not _active:
        return None
    sweep_dir: Path = _active["dir"]
    config: DictConfig = _active["config"]
    _active.clear()
    from runner.pipeline import LOADED

    LOADED.clear()  # the cases the jobs shared
    jobs = collect_jobs(sweep_dir) if sweep_dir.is_dir() else []
    incomplete = [j["dir"] for j in jobs if not j["complete"]]
    summary = {"sweep_dir": str(sweep_dir.resolve()), "failed": failed or bool(incomplete),
               "n_jobs": len(jobs), "incomplete_jobs": incomplete, "jobs": jobs}
    (sweep_dir / SWEEP_FILE).write_text(json.dumps(summary, indent=2, default=str) + "\n",
                                        encoding="utf-8")
    cfg = _plain(config)
    if (cfg.get("report") or {}).get("format") == "html":
        try:
            from runner.reports.sweep import render_sweep_report

            render_sweep_report(sweep_dir)
        except Exception as exc:  # a report must not hide the sweep's own outcome
            log.error("ragcite: could not write the sweep report: %s", exc)
    if (cfg.get("tracking") or {}).get("backend") == "mlflow":
        from runner.tracking.mlflow import end_sweep

        end_sweep(config, sweep_dir, summary)
    return summary


class SweepCallback(Callback):
    """Registered in conf/config.yaml under ``hydra.callbacks.ragcite_sweep``."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Open the sweep."""
        start_sweep(config)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Close the sweep after every job succeeded."""
        finish_sweep(failed=False)

"""Multirun hooks: a Hydra callback in the main process, plus the failure path.

Hydra calls ``on_multirun_start`` before the first job and ``on_multirun_end`` after the last,
but **not** when a job raised (it exits 1 instead). :func:`runner.cli.main` therefore calls
:func:`finish_sweep` with ``failed=True`` on that path, so the sweep summary is written and the
tracking parent run is closed in every case.

Jobs never send state back to the main process: the summary is gathered from each job's
``metrics.json`` on disk.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from runner.results import METRICS_FILE

log = logging.getLogger("ragcite")
SWEEP_FILE = "sweep.json"

_active: dict[str, Any] = {}
_deferred: list[tuple[str, Callable[[], None]]] = []
_deferred_failures: list[str] = []
_last: list[dict[str, Any]] = []  # the summary of the sweep that ended last, for main()


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


def defer(job_dir: Path, finish: Callable[[], None]) -> None:
    """Run a job's `finish` later: when the next job calls :func:`run_deferred`, or at the end.

    A job of a sweep running in this process hands over its last step (waiting for its report,
    uploading it, closing its tracked run), so that the report renders beside the next job's
    scoring instead of holding it up.
    """
    _deferred.append((str(job_dir), finish))


def run_deferred(keep: int = 0) -> None:
    """Run the steps earlier jobs deferred, in order, but the last `keep`.

    A step that raises is logged with its job's folder and makes the sweep fail; it is not
    raised into the job that happens to call this.
    """
    while len(_deferred) > keep:
        job_dir, finish = _deferred.pop(0)
        try:
            finish()
        except Exception as exc:
            log.error("ragcite: error: job %s: %s", job_dir, exc)
            _deferred_failures.append(Path(job_dir).name)


def _jobs_run_here(config: DictConfig) -> bool:
    """True when the sweep's launcher runs its jobs in this process (Hydra's basic launcher)."""
    target = OmegaConf.select(config, "hydra.launcher._target_", default="") or ""
    return str(target).endswith(".BasicLauncher")


def start_sweep(config: DictConfig) -> None:
    """Remember the sweep and open the tracking parent run (main process)."""
    sweep_dir = Path(str(config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    _active.clear()
    _active.update({"dir": sweep_dir, "config": config})
    _deferred.clear()
    _deferred_failures.clear()
    cfg = _plain(config)
    if ((cfg.get("report") or {}).get("format") == "html" and _jobs_run_here(config)
            and sys.platform.startswith("linux")):
        from runner.reports.host import ReportHost

        ReportHost()  # renders every job's report, forked now, before any case is loaded
    if (cfg.get("tracking") or {}).get("backend") == "mlflow":
        from runner.tracking import mlflow as tracking
        from runner.tracking.process import TrackerHost, use_helper

        if use_helper() and _jobs_run_here(config) and tracking.sweep_is_local(config):
            # Jobs in this process: MLflow in one helper for the whole sweep. It opens the
            # parent run while Hydra prepares the jobs, and logs every job's results beside the
            # next job's work. (Jobs in other processes would race it creating a new store.)
            TrackerHost(functools.partial(tracking.start_sweep, config, sweep_dir),
                        tracking.MlflowTracker,
                        functools.partial(tracking.end_sweep, config, sweep_dir),
                        tracking.close_open_sweep)
        else:  # a server is checked before any job runs (exit 2 when it is unreachable)
            tracking.start_sweep(config, sweep_dir)


def last_summary() -> dict[str, Any] | None:
    """The summary :func:`finish_sweep` wrote last (once), or None."""
    return _last.pop() if _last else None


def finish_sweep(failed: bool) -> dict[str, Any] | None:
    """Write ``sweep.json``, the sweep report and close the tracking parent run.

    Args:
        failed: A job raised (Hydra skipped ``on_multirun_end``).

    Returns:
        The sweep summary, or None when no sweep is active.
    """
    if not _active:
        return None
    run_deferred()  # the last jobs' reports and tracked runs
    from runner.reports.host import active_host as active_report_host

    reports = active_report_host()
    if reports is not None:
        reports.close()
    sweep_dir: Path = _active["dir"]
    config: DictConfig = _active["config"]
    _active.clear()
    from runner.memo import LINES, PREPARED
    from runner.pipeline import LOADED, RESPONSES

    LOADED.clear()  # the cases the jobs shared
    RESPONSES.clear()  # and their responses
    LINES.clear()  # the last job's cases.jsonl lines
    PREPARED.clear()  # and its batches' threshold-free parts
    tracking = sys.modules.get("runner.tracking.mlflow")
    if tracking is not None:  # the per-case table rows, when this process logged them
        tracking.clear_rows()
    jobs = collect_jobs(sweep_dir) if sweep_dir.is_dir() else []
    incomplete = [j["dir"] for j in jobs if not j["complete"]]
    report_failed = list(_deferred_failures)
    _deferred_failures.clear()
    summary = {"sweep_dir": str(sweep_dir.resolve()),
               "failed": failed or bool(incomplete) or bool(report_failed),
               "n_jobs": len(jobs), "incomplete_jobs": incomplete,
               "failed_after_results": report_failed, "jobs": jobs}
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
        from runner.tracking.process import active_host

        host = active_host()
        if host is not None:
            host.end_sweep(summary)
        else:
            end_sweep(config, sweep_dir, summary)
    _last[:] = [summary]
    return summary


class SweepCallback(Callback):
    """Registered in conf/config.yaml under ``hydra.callbacks.ragcite_sweep``."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Open the sweep."""
        start_sweep(config)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Close the sweep after every job succeeded."""
        finish_sweep(failed=False)

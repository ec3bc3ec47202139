"""The tracker protocol: how a job reports itself to an experiment tracker.

The job flow (runner/cli.py) is::

    tracker = make_tracker(cfg)      # checks a remote URI before any model call
    tracker.start(names, run_dir)    # opens the run (child of the sweep's parent run, if any)
    ... run_experiment loads the cases ...
    tracker.ready()                  # waits for the run to be open, before any model call
    ... run_experiment writes config.yaml, cases.jsonl, metrics.json ...
    ... reports are rendered (they may show tracker.link) ...
    tracker.log_results(run_dir)     # reads the results files; never recomputes
    tracker.end("FINISHED")          # or "FAILED" when the job raised

A sweep additionally calls :func:`runner.sweep` hooks in the main process.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any, Protocol


class Tracker(Protocol):
    """An experiment tracker for one job."""

    link: str | None

    def start(self, names: dict[str, str], run_dir: Path) -> None:
        """Open the run (a tracker may do so in the background; see :meth:`ready`)."""
        ...

    def ready(self) -> None:
        """Return once the run is open; raise what went wrong opening it."""
        ...

    def log_results(self, run_dir: Path, skip: Collection[str] = (), wait: bool = True) -> None:
        """Log the job's results files (metrics.json, cases.jsonl, reports, config).

        Args:
            run_dir: The job's folder.
            skip: File names not to log now (a report still being written).
            wait: False lets a tracker that logs in a helper process return at once; its error
                is then raised by the next call that waits (:meth:`log_file`), and
                :meth:`end` waits for it.
        """
        ...

    def log_file(self, path: Path) -> None:
        """Log one more file of the job (a report written after :meth:`log_results`)."""
        ...

    def end(self, status: str) -> None:
        """Close the run with ``FINISHED`` or ``FAILED``."""
        ...


class NullTracker:
    """Tracking switched off (``tracking=none``)."""

    link: str | None = None

    def start(self, names: dict[str, str], run_dir: Path) -> None:
        """Nothing to open."""

    def ready(self) -> None:
        """Nothing to wait for."""

    def log_results(self, run_dir: Path, skip: Collection[str] = (), wait: bool = True) -> None:
        """Nothing to log."""

    def log_file(self, path: Path) -> None:
        """Nothing to log."""

    def end(self, status: str) -> None:
        """Nothing to close."""


def make_tracker(cfg: dict[str, Any]) -> Tracker:
    """The tracker the config asks for (``cfg["tracking"]["backend"]``).

    An MLflow tracker is built in a helper process when that pays
    (:mod:`runner.tracking.process`); a problem with its store is then raised by
    :meth:`Tracker.ready`, still before any model call.

    Raises:
        RagciteError: The backend is unknown, or a required remote store is unreachable.
    """
    backend = (cfg.get("tracking") or {}).get("backend", "none")
    if backend == "none":
        return NullTracker()
    if backend == "mlflow":
        from runner.tracking.mlflow import MlflowTracker
        from runner.tracking.process import TrackerProcess, active_host, use_helper

        host = active_host()
        if host is not None:  # a job of a sweep whose trackers live in one helper
            return host.tracker(cfg)
        if use_helper():
            return TrackerProcess(lambda: MlflowTracker(cfg))
        return MlflowTracker(cfg)
    from runner.errors import RagciteError

    raise RagciteError(f"tracking.backend: unknown backend {backend!r}; expected none or mlflow")

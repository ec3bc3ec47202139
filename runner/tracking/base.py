"""The tracker protocol: how a job reports its results to an experiment tracker.

A tracker only reads the files a job has written (docs/results.md); it never recomputes a figure.
One tracker object serves one job, whose K thresholds give K result folders: K runs, open at
once. The command line (runner/cli.py) drives it::

    tracker = make_tracker(cfg)
    tracker.check()                      # before any model call: a bad store stops the job
    try:
        ... the job writes its result folders ...
        links = [tracker.open(d) for d in result_dirs]
        ... render the K reports at once, each with its link; then the job writes job.json ...
        for d in result_dirs:
            tracker.log(d)
            tracker.close("FINISHED", d)
    except BaseException:
        tracker.close("FAILED")          # every run still open; "KILLED" on Ctrl-C
        raise

A sweep's parent run is opened and closed by :func:`runner.tracking.mlflow_sweep.start_sweep`
and :func:`~runner.tracking.mlflow_sweep.end_sweep`; a job's runs find it on their own.

Which tracker a config asks for is its ``tracking._target_`` (``conf/tracking/*.yaml``): any
class implementing :class:`Tracker`, built by :func:`make_tracker` with the keys of the
``tracking`` section plus two keyword arguments from the root config, ``experiment`` and
``output_root``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from runner.errors import RagciteError


class Tracker(Protocol):
    """An experiment tracker for one job: one run per result folder, one after another."""

    def check(self) -> None:
        """Make sure the tracker can record runs, before any model call.

        Raises:
            RagciteError: A required store is unusable or unreachable (one line).
        """

    def open(self, result_dir: Path) -> str | None:
        """Open the run of a result folder whose results are written (in a sweep, a child of
        the parent run named by ``<sweep>/.ragcite/parent_run.json`` above it).

        Returns:
            A link to the run for the report, or None.
        """

    def log(self, result_dir: Path) -> None:
        """Log the result folder given to :meth:`open`: params, metrics, tags, artifacts."""

    def close(self, status: str, result_dir: Path | None = None) -> None:
        """End the run of `result_dir` (every open run when None) as ``FINISHED``,
        ``FAILED`` or ``KILLED``; never raises."""


class TrackingLost(RagciteError):
    """The tracking server stopped answering. A sweep stops at the first job that finds it so:
    the results written so far stay on disk, and the runs the server holds RUNNING are ended
    KILLED by the next run against it (runner/tracking/mlflow_store.py::end_dead_runs)."""


class NullTracker:
    """Tracking switched off (``tracking=none``): every call does nothing (the arguments every
    tracker is built with are ignored)."""

    def __init__(self, **_: Any) -> None:
        pass

    def check(self) -> None:
        """Nothing to check."""

    def open(self, result_dir: Path) -> str | None:
        """Nothing to open; no link."""
        return None

    def log(self, result_dir: Path) -> None:
        """Nothing to log."""

    def close(self, status: str, result_dir: Path | None = None) -> None:
        """Nothing to close."""


def make_tracker(cfg: Mapping[str, Any]) -> Tracker:
    """The tracker a job's config asks for, by ``cfg["tracking"]["_target_"]``.

    ``hydra.utils.instantiate(cfg["tracking"], experiment=..., output_root=...)``; no
    ``tracking`` section means :class:`NullTracker`. Building does no I/O.

    Args:
        cfg: The job's composed config, plain (``OmegaConf.to_container(resolve=True)``).

    Raises:
        RagciteError: No ``_target_``, or the class cannot be built.
    """
    section = cfg.get("tracking")
    if not section:
        return NullTracker()
    if not isinstance(section, Mapping) or not section.get("_target_"):
        raise RagciteError("tracking: the tracking config names no class (_target_); choose "
                           "tracking=mlflow or tracking=none")
    from runner.plugins import build

    tracker: Tracker = build(section, "tracking",
                             experiment=str(cfg.get("experiment") or "ragcite"),
                             output_root=str(cfg.get("output_root") or "outputs"))
    return tracker

"""The tracker protocol: how a job, and a sweep, report their results to an experiment tracker.

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

A sweep (runner/sweep.py) builds the tracker of its sweep-level config in its main process and
calls ``check``, then ``start_sweep`` before any job and ``end_sweep`` after the last; each job's
own tracker, in whatever process runs it, finds what ``start_sweep`` left in the sweep folder.

Which tracker a config asks for is its ``tracking._target_`` (``conf/tracking/*.yaml``): any
class implementing :class:`Tracker`, built by :func:`make_tracker` with the keys of the
``tracking`` section plus two keyword arguments from the root config, ``experiment`` and
``output_root``. A class that subclasses :class:`Tracker` inherits a no-op for each method it
leaves out; any other class lacking one is refused before any work.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from runner.errors import RagciteError


@runtime_checkable
class Tracker(Protocol):
    """An experiment tracker for one job (one run per result folder) or one sweep."""

    def check(self) -> None:
        """Make sure the tracker can record runs, before any model call.

        Raises:
            RagciteError: A required store is unusable or unreachable (one line).
        """
        return None

    def open(self, result_dir: Path) -> str | None:
        """Open the run of a result folder whose results are written (in a sweep, a child of
        the sweep's run, found from `result_dir`).

        Returns:
            A link to the run for the report, or None.
        """
        return None

    def log(self, result_dir: Path) -> None:
        """Log the result folder given to :meth:`open`: params, metrics, tags, artifacts."""
        return None

    def close(self, status: str, result_dir: Path | None = None) -> None:
        """End the run of `result_dir` (every open run when None) as ``FINISHED``,
        ``FAILED`` or ``KILLED``; never raises."""
        return None

    def start_sweep(self, sweep_dir: Path, name: str, sweep: dict[str, Any]) -> None:
        """Open the sweep's own run, after :meth:`check` and before any job (main process).

        Args:
            sweep_dir: The sweep folder; the jobs' result folders are below it.
            name: The sweep's name (``demo · precomputed · sweep matcher``).
            sweep: ``{"overrides": [...], "params": {...}}``: the sweep's command-line
                overrides and its sweeper's params, secrets masked.

        Raises:
            RagciteError: A required store is unusable (one line): the sweep stops.
        """
        return None

    def end_sweep(self, sweep_dir: Path, summary: dict[str, Any], status: str) -> None:
        """Close the sweep's run as `status` (``FINISHED``, ``FAILED``, or ``KILLED`` when
        interrupted), with its summary (the content of ``sweep.json``); never raises."""
        return None


class TrackingLost(RagciteError):
    """The tracking server stopped answering. A sweep stops at the first job that finds it so:
    the results written so far stay on disk, and the runs the server holds RUNNING are ended
    KILLED by the next run against it (runner/tracking/mlflow_store.py::end_dead_runs)."""


class NullTracker(Tracker):
    """Tracking switched off (``tracking=none``): every call does nothing."""

    def __init__(self, **_: Any) -> None:
        """Ignore the arguments every tracker is built with."""


def make_tracker(cfg: Mapping[str, Any]) -> Tracker:
    """The tracker a job's config asks for, by ``cfg["tracking"]["_target_"]``.

    ``hydra.utils.instantiate(cfg["tracking"], experiment=..., output_root=...)``; no
    ``tracking`` section means :class:`NullTracker`. Building does no I/O.

    Args:
        cfg: The job's composed config, plain (``OmegaConf.to_container(resolve=True)``).

    Raises:
        RagciteError: No ``_target_``, the class cannot be built, or it is not a
            :class:`Tracker` (a method missing).
    """
    section = cfg.get("tracking")
    if not section:
        return NullTracker()
    if not isinstance(section, Mapping) or not section.get("_target_"):
        raise RagciteError("tracking: the tracking config names no class (_target_); choose "
                           "tracking=mlflow or tracking=none")
    from runner.config.plugins import build

    return build(section, "tracking", protocol=Tracker,
                 experiment=str(cfg.get("experiment") or "ragcite"),
                 output_root=str(cfg.get("output_root") or "outputs"))

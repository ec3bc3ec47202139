"""The `ragcite` console script: a Hydra app around :func:`runner.pipeline.run_experiment`.

This is the only module that touches ``HydraConfig``.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import multiprocessing
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from runner.data.errors import DataError
from runner.pipeline import Experiment, RagciteError, run_experiment, summary_line
from runner.redact import env_secrets, scrub_files, secret_values
from runner.reports.host import ReportHost
from runner.reports.host import active_host as active_report_host
from runner.schema import register_configs
from runner.sweep import defer, run_deferred, sweep_open_here
from runner.tracking.base import Tracker, make_tracker

log = logging.getLogger("ragcite")
_exit_status = 0

CONFIG_PATH = "pkg://runner.conf"


def _plain(cfg: DictConfig) -> dict[str, Any]:
    container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True,
                                       enum_to_str=True)
    if not isinstance(container, dict):  # pragma: no cover - the root is always a mapping
        raise RagciteError("the composed config is not a mapping")
    data: dict[str, Any] = {str(k): v for k, v in container.items()}
    # Paths below output_root are made absolute so that every process agrees on them.
    root = Path(data.get("output_root") or "outputs")
    cache = data.setdefault("cache", {})
    cache["dir"] = str(Path(cache.get("dir") or root / "cache").resolve())
    return data


def _scrub_hydra_files(output_dir: Path, secrets: set[str]) -> None:
    """Hydra writes command-line overrides verbatim into .hydra/ and multirun.yaml."""
    if not secrets:
        return
    scrub_files(output_dir / ".hydra", secrets)
    multirun = output_dir.parent / "multirun.yaml"
    if multirun.is_file():
        _scrub_one(multirun, secrets)


def _scrub_one(path: Path, secrets: set[str]) -> None:
    from runner.redact import scrub_text

    text = path.read_text(encoding="utf-8")
    clean = scrub_text(text, secrets)
    if clean != text:
        path.write_text(clean, encoding="utf-8")


def _render_report(run_dir: Path, link: str | None, forked: bool = False) -> None:
    from runner.reports.run import render_run_report

    if forked:
        # The parent's heap (its loaded cases) came with the fork: frozen, the collector never
        # walks it, and never writes to its pages, which would copy them one by one.
        gc.freeze()
    render_run_report(run_dir, tracking_link=link)


def _start_report(run_dir: Path, link: str | None) -> multiprocessing.process.BaseProcess:
    """Fork a process that renders ``report.html`` of `run_dir` (Linux)."""
    proc = multiprocessing.get_context("fork").Process(
        target=_render_report, args=(run_dir, link, True), name="ragcite-report")
    proc.start()
    return proc


def _wait_report(proc: multiprocessing.process.BaseProcess, run_dir: Path) -> None:
    """Wait for a report process of :func:`_start_report`.

    Raises:
        RagciteError: It failed (its traceback is on stderr).
    """
    proc.join()
    if proc.exitcode != 0:
        raise RagciteError(f"the HTML report of {run_dir} failed (exit code {proc.exitcode}; "
                           "its error is printed above)")


@contextlib.contextmanager
def report_beside(run_dir: Path, link: str | None) -> Iterator[None]:
    """Render ``report.html`` in a forked process while the block runs (Linux), else first.

    Raises:
        RagciteError: The report process failed (its traceback is on stderr).
    """
    if not sys.platform.startswith("linux"):
        _render_report(run_dir, link)
        yield
        return
    proc = _start_report(run_dir, link)
    try:
        yield
    finally:
        proc.join()
    _wait_report(proc, run_dir)


def _finish_job(reports: ReportHost, run_dir: Path, tracker: Tracker,
                secrets: set[str]) -> None:
    """The deferred end of a sweep job: its report, uploaded, then its tracked run closed."""
    from runner.reports.run import REPORT_FILE

    try:
        reports.wait(run_dir)
        scrub_files(run_dir, secrets)
        tracker.log_file(run_dir / REPORT_FILE)
    except BaseException:
        tracker.end("FAILED")
        raise
    tracker.end("FINISHED")


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="config")
def _app(cfg: DictConfig) -> None:
    global _exit_status
    hc = HydraConfig.get()
    output_dir = Path(hc.runtime.output_dir)
    overrides = list(hc.overrides.task)
    secrets = secret_values({"overrides": overrides}) | env_secrets()
    _scrub_hydra_files(output_dir, secrets)
    names = {k: str(v) for k, v in hc.runtime.choices.items()
             if v is not None and not k.startswith("hydra")}
    multirun = hc.mode is not None and hc.mode.name == "MULTIRUN"
    tracker: Tracker | None = None
    deferred = False  # this job's end handed over to the next job (runner.sweep.defer)
    try:
        plain = _plain(cfg)
        # The tracking store is checked before any model or API call: here, or (when the
        # tracker opens in a helper process while the cases load) in tracker.ready().
        tracker = make_tracker(plain)
        tracker.start(names, output_dir)
        # A sweep running its jobs in this process (the basic launcher) loads its dataset once.
        result, failures = run_experiment(plain, Experiment(
            output_dir, names, before_model=tracker.ready, reuse_cases=sweep_open_here(),
            sweep_job=multirun))
        scrub_files(output_dir, secrets)
        if (plain.get("report") or {}).get("format") == "html":
            from runner.reports.run import REPORT_FILE

            reports = active_report_host() if multirun else None
            if reports is not None:
                # A sweep job in the sweep's own process: its report is rendered by the
                # sweep's report helper beside the next job; the job after next uploads it and
                # closes this job's run (the one before that is done here).
                run_deferred(keep=1)
                reports.render(output_dir, tracker.link)
                # In the background where the tracker can (the sweep's helper process): its
                # error is raised when the report is uploaded, by _finish_job.
                tracker.log_results(output_dir, skip=(REPORT_FILE,), wait=False)
                defer(output_dir, functools.partial(_finish_job, reports, output_dir, tracker,
                                                    secrets))
                deferred = True
            else:
                # The report and the tracker each read cases.jsonl: side by side on two cores.
                with report_beside(output_dir, tracker.link):
                    tracker.log_results(output_dir, skip=(REPORT_FILE,))
                scrub_files(output_dir, secrets)
                tracker.log_file(output_dir / REPORT_FILE)
        else:
            tracker.log_results(output_dir)
        if not deferred:
            tracker.end("FINISHED")
    except BaseException as exc:
        if tracker is not None and not deferred:
            tracker.end("FAILED")
        if isinstance(exc, (RagciteError, DataError)):
            log.error("ragcite: error: %s", exc)
            _exit_status = 2
            if multirun:
                raise
            return
        raise
    finally:
        _scrub_hydra_files(output_dir, secrets)
        scrub_files(output_dir, secrets)
    log.info("%s", summary_line(result))
    log.info("results: %s", output_dir)
    if failures:
        for reason in failures:
            log.error("ragcite: gate failed: %s", reason)
        _exit_status = max(_exit_status, 1)


def _register_sweeper() -> None:
    """Make ``hydra/sweeper=ragcite`` known to Hydra however ragcite is installed.

    Hydra finds plugins by listing the ``hydra_plugins`` namespace, which an editable install
    does not show; the class is registered by hand as Hydra documents
    (``Plugins.instance().register``).
    """
    from hydra.core.plugins import Plugins

    plugins = Plugins.instance()  # first: its scan executes the core plugin modules again
    from hydra_plugins.ragcite_sweeper.ragcite_sweeper import RagciteSweeper

    plugins.register(RagciteSweeper)


def main() -> None:
    """Entry point of the `ragcite` console script."""
    from runner.sweep import finish_sweep, last_summary

    register_configs()
    _register_sweeper()
    try:
        _app()
    except KeyboardInterrupt:
        # Ctrl-C: no traceback. What was written stays; an unfinished run or sweep has no
        # metrics.json or sweep.json, and its tracked runs end FAILED or KILLED.
        print("ragcite: interrupted", file=sys.stderr)
        sys.exit(130)
    except SystemExit as exc:
        # Hydra exits here when a job raised; it skips on_multirun_end, so close the sweep.
        if exc.code not in (0, None):
            finish_sweep(failed=True)
        raise
    # A sweep still open is closed here; one closed by Hydra's callback left its summary.
    summary = finish_sweep(failed=False) or last_summary()
    if summary is not None and summary["failed"]:
        sys.exit(1)
    sys.exit(_exit_status)


if __name__ == "__main__":
    main()

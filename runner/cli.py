"""The `ragcite` console script: a Hydra app around :func:`runner.pipeline.run_experiment`.

This is the only module that touches ``HydraConfig``.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import multiprocessing
import os
import pickle
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from runner.data.errors import DataError
from runner.pipeline import Experiment, RagciteError, run_experiment, summary_line
from runner.redact import env_secrets, scrub_files, secret_values
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


def _render_report(run_dir: Path, link: str | None, forked: bool = False,
                   fragments_out: Path | None = None,
                   after: tuple[int, Path | None] | None = None) -> None:
    from runner.reports.cases import FRAGMENTS
    from runner.reports.run import render_run_report

    if forked:
        # The parent's heap (its loaded cases, in a sweep every job's kept data) came with the
        # fork: frozen, the collector never walks it, and never writes to its pages, which
        # would copy them one by one.
        gc.freeze()
    if after is not None:
        _after_previous(*after)
    if fragments_out is None:
        render_run_report(run_dir, tracking_link=link)
        return
    # A sweep job's report: the rows of lines the sweep's earlier reports read are reused,
    # and the ones built here go back to the sweep's process for the next job's report.
    render_run_report(run_dir, tracking_link=link, fragments=FRAGMENTS)
    try:
        with fragments_out.open("wb") as fh:
            pickle.dump(FRAGMENTS.take_new(), fh, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError:  # a full temporary folder only costs the next report time
        with contextlib.suppress(OSError):
            fragments_out.write_bytes(b"")


def _after_previous(done: int, fragments: Path | None) -> None:
    """In a sweep job's report process: wait until the previous job's report process has
    exited (`done`, the read end of a pipe only it held open, is at its end), then take the
    rows it built (its `fragments` file) and whatever it left in the passages cache."""
    from runner.reports.cases import FRAGMENTS

    try:
        while os.read(done, 4096):
            pass
    finally:
        os.close(done)
    if fragments is not None:
        _read_fragments(fragments, FRAGMENTS)


def _start_report(run_dir: Path, link: str | None,
                  fragments_out: Path | None = None,
                  after: tuple[int, Path | None] | None = None,
                  ) -> tuple[multiprocessing.process.BaseProcess, int]:
    """Fork a process that renders ``report.html`` of `run_dir` (Linux); with
    `fragments_out`, it writes there what :func:`_take_fragments` reads back; with `after`
    (the previous report's ``done`` end and rows file), it waits for that report first.

    Returns:
        The process, and the read end of a pipe that reaches its end when the process exits
        (the caller closes it, or hands it to the next report as ``after``).
    """
    done, held = os.pipe()  # `held` stays open in the child alone, until it exits
    try:
        proc = multiprocessing.get_context("fork").Process(
            target=_render_report, args=(run_dir, link, True, fragments_out, after),
            name="ragcite-report")
        proc.start()
    except BaseException:
        os.close(done)
        raise
    finally:
        os.close(held)
    return proc, done


def _fragments_file() -> Path | None:
    """A new temporary file for a report process's rows (None when none can be made: the
    report then runs without them)."""
    try:
        fd, name = tempfile.mkstemp(prefix="ragcite-report-rows-", suffix=".pickle")
    except OSError:
        return None
    os.close(fd)
    return Path(name)


def _read_fragments(path: Path, into: Any) -> None:
    """Add the rows of a report process's `path` (:func:`_render_report`) to `into`."""
    try:
        if path.stat().st_size:
            with path.open("rb") as fh:
                into.update(pickle.load(fh))
    except (OSError, EOFError, pickle.UnpicklingError):
        pass  # a report that failed wrote nothing to keep


class _ReportChain:
    """The report processes of a sweep's jobs, one after another.

    Each job's report process is forked as the job ends and waits for the previous job's to
    exit before it renders (it then reads that one's rows and passages), so the jobs never
    wait for a report but to upload it, a job later. A rows file is removed once the report
    after it has exited.
    """

    def __init__(self) -> None:
        self.last: tuple[int, Path | None] | None = None  # the newest report's done end, rows
        self.read: list[Path] = []  # rows files taken, for the report after them to read

    def follow(self) -> tuple[int, Path | None] | None:
        """What the next report waits for (its ``after``); the caller owns it now."""
        last, self.last = self.last, None
        return last

    def close(self) -> None:
        """Forget the chain: close the pipe end, remove the rows files."""
        if self.last is not None:
            os.close(self.last[0])
            self.last = None
        for path in self.read:
            path.unlink(missing_ok=True)
        self.read.clear()


_REPORTS = _ReportChain()


def _take_fragments(path: Path) -> None:
    """Keep the rows a finished report process built (:class:`FragmentMemo
    <runner.reports.cases.FragmentMemo>`) for the next job's report; remove the rows files of
    the reports before it (the report after each has read it, or never will)."""
    from runner.reports.cases import FRAGMENTS

    for old in _REPORTS.read:
        old.unlink(missing_ok=True)
    _REPORTS.read[:] = [path]
    _read_fragments(path, FRAGMENTS)


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
    proc, done = _start_report(run_dir, link)
    os.close(done)
    try:
        yield
    finally:
        proc.join()
    _wait_report(proc, run_dir)


def _finish_job(proc: multiprocessing.process.BaseProcess, run_dir: Path, tracker: Tracker,
                secrets: set[str], fragments: Path | None = None) -> None:
    """The deferred end of a sweep job: its report, uploaded, then its tracked run closed."""
    from runner.reports.run import REPORT_FILE

    try:
        try:
            _wait_report(proc, run_dir)
        finally:
            if fragments is not None:
                _take_fragments(fragments)
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
            from runner.reports.run import REPORT_FILE, prepare_templates

            if multirun and sweep_open_here() and sys.platform.startswith("linux"):
                # A sweep job in the sweep's own process: the previous job's report has been
                # rendering beside this job's scoring; wait for it, upload it and close its run.
                # This job's report renders beside the next job in turn (or the sweep's end).
                # The job before this one stays open: its report renders beside this job's
                # (which waits for it); the one before that is waited for and uploaded.
                run_deferred(keep=1)
                prepare_templates()  # once, for every job's report process
                fragments = _fragments_file()
                after = _REPORTS.follow()
                try:
                    proc, done = _start_report(output_dir, tracker.link, fragments, after)
                    _REPORTS.last = (done, fragments)
                finally:
                    if after is not None:
                        os.close(after[0])
                try:
                    # In the background where the tracker can (the sweep's helper process):
                    # its error is raised when the report is uploaded, by _finish_job.
                    tracker.log_results(output_dir, skip=(REPORT_FILE,), wait=False)
                except BaseException:
                    proc.join()
                    if fragments is not None:
                        fragments.unlink(missing_ok=True)
                    raise
                defer(output_dir, functools.partial(_finish_job, proc, output_dir, tracker,
                                                    secrets, fragments))
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
        try:
            _app()
        except SystemExit as exc:
            # Hydra exits here when a job raised; it skips on_multirun_end, so close the sweep.
            if exc.code not in (0, None):
                finish_sweep(failed=True)
            raise
        # A sweep still open is closed here; one closed by Hydra's callback left its summary.
        summary = finish_sweep(failed=False) or last_summary()
    finally:
        _REPORTS.close()
    if summary is not None and summary["failed"]:
        sys.exit(1)
    sys.exit(_exit_status)


if __name__ == "__main__":
    main()

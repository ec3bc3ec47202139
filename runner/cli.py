"""The `ragcite` console script: a Hydra app around :func:`run`.

:func:`run` is the whole job, top to bottom: build the tracker and the reports, run the
pipeline (one pass deciding every threshold), then for each threshold's result open its tracked
run, render its report, log it and close it. This is the only module that touches
``HydraConfig``.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from omegaconf import DictConfig

from runner._gc import gc_paused
from runner.calibration.job import calibrate_job
from runner.config.check import check_config
from runner.config.hydra_errors import FULL_ERROR, describe
from runner.config.schema import chosen_targets, plain_config, register_configs
from runner.data.errors import DataError
from runner.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_GATE_FAILED,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NOTHING_SCORED,
    RagciteError,
)
from runner.pipeline import Outcome, run_job, summary_line
from runner.redact import env_secrets, guard_output, scrub_files, scrub_text, secret_values
from runner.reports.base import make_reports
from runner.results import REPORT_FILE
from runner.scoring.gates import check_gate_config
from runner.scoring.thresholds import is_number
from runner.sweep import SWEEPS, finish_sweep
from runner.tracking.base import TrackingLost, make_tracker

log = logging.getLogger("ragcite")
CONFIG_PATH = "pkg://runner.conf"
ALIASES = {"matcher.threshold": "scoring.threshold"}
"""Other spellings of a key a user may type, and the canonical key they mean."""
MULTIRUN_FLAGS = ("-m", "--multirun")


class _Status:
    """The exit status of the jobs this process ran (the worst)."""

    value = 0


def run(cfg: dict[str, Any], out: Path, names: dict[str, str] | None = None) -> list[Outcome]:
    """One job: the pipeline and each result's report (run_job writes job.json after them),
    then each result tracked.

    Args:
        cfg: The composed config as plain data.
        out: The job's folder.
        names: The chosen option of each config group.

    Returns:
        One outcome per threshold.

    Raises:
        RagciteError: Bad config or data, or an unusable tracking store (before any model
            call).
    """
    tracker = make_tracker(cfg)
    tracker.check()
    reports = make_reports(cfg)
    secrets = secret_values(cfg) | env_secrets()

    def report(folders: list[Path]) -> None:  # before job.json: the reports are the job's
        links = [tracker.open(folder) for folder in folders]
        # One report of the job's K results, in the job folder when K > 1.
        reports.render_runs(folders, links)
        scrub_files(out / REPORT_FILE, secrets)  # the one file written since the results

    try:
        outcomes = run_job(cfg, out, names, report)
        with gc_paused():  # a few thousand objects a run: no full collection walks the modules
            for outcome in outcomes:  # the job complete: its runs get its files
                tracker.log(outcome.folder)
                tracker.close("FINISHED", outcome.folder)
    except BaseException as exc:  # Ctrl-C (and SIGTERM, taken as it) ends the runs KILLED
        tracker.close("KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED")
        raise
    return outcomes


def _scrub_hydra_files(output_dir: Path, secrets: set[str]) -> None:
    """Hydra writes command-line overrides verbatim into .hydra/ and multirun.yaml."""
    scrub_files(output_dir / ".hydra", secrets)
    scrub_files(output_dir.parent / "multirun.yaml", secrets)


def _report(outcomes: list[Outcome], out: Path) -> int:
    """Log each result's summary and failed gates; the exit status they give."""
    for outcome in outcomes:
        label = "" if len(outcomes) == 1 else f" ({outcome.folder.name})"
        log.info("threshold %g%s: %s", outcome.threshold.value, label,
                 summary_line(outcome.result))
        for reason in outcome.failures:
            log.error("ragcite: gate failed%s: %s", label, reason)
    log.info("results: %s", out)
    result = outcomes[0].result  # failed cases are the same at every threshold
    listed = (result.failed or {}).get("listed") or []
    first = f"; the first: {listed[0]['id']}: {listed[0]['error']}" if listed else ""
    if result.n_cases and not result.n_scored:
        log.error("ragcite: error: no case could be scored: all %d failed%s", result.n_cases,
                  first)
        return EXIT_NOTHING_SCORED
    if result.n_errors:
        log.warning("ragcite: %d of %d cases failed and were not scored (metrics.json: "
                    "failed)%s", result.n_errors, result.n_cases, first)
    return EXIT_GATE_FAILED if any(outcome.failures for outcome in outcomes) else 0


def job_failed(exc: Exception, out: Path, sweep: bool) -> int:
    """The status of a job (its folder `out`; `sweep`: one job of a multirun) stopped by an
    error other than ragcite's own.

    A config value missing or unresolvable, a ``_target_`` that fails, or a write the storage
    refused (a full disk, a read-only file system) is one located line (2). Anything else is a
    bug: raised in a single run; in a sweep, logged with its traceback while the other jobs
    carry on (1; this job left no job.json, so it is incomplete).

    Raises:
        Exception: `exc`, outside a sweep, when no line describes it.
    """
    if isinstance(exc, OSError) and exc.filename is None:
        exc.filename = str(out)  # a buffered write that failed names no file: its job's folder
    line = describe(exc)
    if line is not None:
        log.error("ragcite: error: %s", line)
        return EXIT_INPUT
    if not sweep:
        raise exc
    log.exception("ragcite: job %s failed", out.name)
    return EXIT_GATE_FAILED


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="config")
def _app(cfg: DictConfig) -> None:
    hc = HydraConfig.get()
    out = Path(hc.runtime.output_dir)
    sweep = hc.mode is not None and hc.mode.name == "MULTIRUN"
    secrets = guard_output(list(hc.overrides.task))  # a job in its own process too
    _scrub_hydra_files(out, secrets)
    names = {k: str(v) for k, v in hc.runtime.choices.items()
             if v is not None and not k.startswith("hydra")}
    finished = False  # a finished job's files were scrubbed as they were written
    try:
        plain = plain_config(cfg)
        check_config(cfg)  # what each key allows, before any work
        if plain.get("calibrate") is not None:  # mode=calibrate (docs/calibration.md)
            status = calibrate_job(plain, out, names.get("matcher", "matcher"),
                                   list(hc.overrides.task))
        else:
            plain.pop("calibrate", None)  # a run's config.yaml and params name no calibration
            check_gate_config(plain)  # the gates of the run's metrics
            status = _report(run(plain, out, names), out)
        finished = True
        _Status.value = max(_Status.value, status)
    except (RagciteError, DataError) as exc:
        log.error("ragcite: error: %s", exc)
        _Status.value = max(_Status.value, EXIT_INPUT)
        if isinstance(exc, TrackingLost) and sweep:
            raise SystemExit(EXIT_INPUT) from None  # the sweep stops: its server is gone
    except Exception as exc:
        _Status.value = max(_Status.value, job_failed(exc, out, sweep))
    finally:
        if not finished:
            scrub_files(out, secrets)  # whatever the job left
        _scrub_hydra_files(out, secrets)


def canonical_args(argv: list[str]) -> list[str]:
    """The command line with alias keys spelled canonically (``matcher.threshold=0.4`` →
    ``scoring.threshold=0.4``) and a number given to the ``threshold`` group read as a value
    (``threshold=0.4`` → ``scoring.threshold=0.4``; levels stay group choices), the policy
    ``scoring.zero_division=nan`` kept a word (``'nan'``, not the float); ``-m`` moved
    first, so that it may come anywhere (Hydra's parser refuses it after an override)."""
    out = [arg for arg in argv if arg in MULTIRUN_FLAGS]
    for arg in (a for a in argv if a not in MULTIRUN_FLAGS):
        key, eq, value = arg.partition("=")
        bare = key.lstrip("+~")
        if eq and bare in ALIASES:
            arg = f"{key[:len(key) - len(bare)]}{ALIASES[bare]}={value}"
        elif eq and bare == "threshold" and (value[:1] in "0123456789.-[" or is_number(value)):
            arg = f"scoring.threshold={value}"
        elif eq and bare == "scoring.zero_division":  # Hydra reads a bare nan as a float
            arg = f"{key}=" + ",".join("'nan'" if v.strip().lower() == "nan" else v
                                       for v in value.split(","))
        out.append(arg)
    return out


def _register_sweeper() -> None:
    """Make ``hydra/sweeper=ragcite`` known to Hydra however ragcite is installed (Hydra finds
    plugins by listing the ``hydra_plugins`` namespace, which an editable install hides)."""
    plugins = Plugins.instance()  # first: its scan executes the core plugin modules again
    from hydra_plugins.ragcite_sweeper.ragcite_sweeper import RagciteSweeper

    plugins.register(RagciteSweeper)


def _terminate(signum: int, frame: Any) -> None:
    """SIGTERM as Ctrl-C, through SIGINT's own handler: a running event loop's handler cancels
    its task (an interrupt raised inside a task would leave it holding the exception, printed
    as a traceback at exit); KeyboardInterrupt where SIGINT is ignored (a background job)."""
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        raise KeyboardInterrupt
    signal.raise_signal(signal.SIGINT)


def front_door(app: Callable[[], None]) -> None:
    """Run the Hydra app: secrets kept off the output, the command line in canonical form,
    SIGTERM taken as Ctrl-C, and Hydra's composition errors as one located ``ragcite: error:``
    line with exit status 2. An error or an interrupt closes an open sweep first.

    Raises:
        SystemExit: On an interrupt (130), a config error (2) or Hydra's own exit.
    """
    logging.raiseExceptions = False  # a log file on a full disk: the console still has the line
    guard_output(sys.argv[1:])  # no secret on stdout, stderr or in a log: Hydra's lines too
    sys.argv[1:] = chosen_targets(canonical_args(sys.argv[1:]))  # a class named as a plug-in
    signal.signal(signal.SIGTERM, _terminate)  # like Ctrl-C: one line, no run left open
    os.environ[FULL_ERROR] = os.environ.get(FULL_ERROR) or "1"  # raised: `describe` words them
    try:
        app()
    except BrokenPipeError:
        # The reader went away (`ragcite --help | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_BROKEN_PIPE)
    except KeyboardInterrupt:
        # What was written stays; an unfinished job has no job.json, a sweep no sweep.json
        # listing it as complete, and open tracked runs end KILLED.
        finish_sweep(failed=True, status="KILLED")
        print("ragcite: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except SystemExit as exc:
        if exc.code not in (0, None):
            finish_sweep(failed=True)
        raise
    except Exception as exc:
        line = describe(exc)  # Hydra's composition errors: one located line, not its block
        if line is None:
            raise
        try:
            finish_sweep(failed=True)
        except OSError as again:  # the same full disk stops sweep.json: `line` says so
            if describe(again) is None:
                raise
        secrets = secret_values({"overrides": sys.argv[1:]}) | env_secrets()
        print(f"ragcite: error: {scrub_text(line, secrets)}", file=sys.stderr)
        sys.exit(EXIT_INPUT)


def main() -> None:
    """Entry point of the `ragcite` console script."""
    register_configs()
    _register_sweeper()
    front_door(_app)
    gc.freeze()  # the process ends: its last collections need not walk every module (~1 s)
    summary = SWEEPS.last
    if summary is not None and summary["failed"]:
        sys.exit(max(_Status.value, EXIT_GATE_FAILED))
    sys.exit(_Status.value)

if __name__ == "__main__":
    main()

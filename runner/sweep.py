"""Multirun hooks (a Hydra callback in the main process): open a sweep, and close it with
``sweep.json``, the sweep report and the tracking parent run.

Jobs never send state back to the main process: the summary is gathered from each job's
results files on disk (``job.json``, each result's ``metrics.json``), so it holds on every
launcher. A job that fails records no ``job.json`` and is listed as incomplete; a job the
sweeper launched that never started (the sweep was stopped first) is listed as not run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from runner.calibration.job import sweep_entry
from runner.config.plugins import NotAPlugin
from runner.errors import RagciteError
from runner.redact import known_secrets, redact, scrub_data
from runner.results import METRICS_FILE, SCHEMA_VERSION, read_metrics, result_dirs
from runner.scoring.metrics import METRIC_KEYS
from runner.scoring.thresholds import THRESHOLD_KEYS
from runner.tracking.base import NullTracker, Tracker, make_tracker

log = logging.getLogger("ragcite")
SWEEP_FILE = "sweep.json"


@dataclass
class _Sweeps:
    """The sweep this process has open (its folder, config and tracker) and the summary of the
    one it closed last: what ``main`` needs for its exit status and for closing on an
    interrupt."""

    open: tuple[Path, DictConfig, Tracker] | None = None
    last: dict[str, Any] | None = None
    planned: list[list[str]] = field(default_factory=list)  # each job's overrides (the sweeper)


SWEEPS = _Sweeps()


def _select(config: Any, name: str, default: Any = None) -> Any:
    """A resolved, plain value of a sweep-level config (`default` when it does not resolve)."""
    try:
        node = OmegaConf.select(config, name, default=default)
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    except Exception:  # an interpolation only a job can resolve
        return default


def swept_keys(config: Any) -> list[str]:
    """What a sweep varies: the keys given several values on the command line
    (``matcher=substring,ngram``, ``range(...)``: a sweep as Hydra's parser reads it) or by the
    sweeper's ``params`` (a preset)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    keys = [str(name) for name in _select(config, "hydra.sweeper.params") or {}]
    task = [str(o) for o in _select(config, "hydra.overrides.task", []) or []]
    keys += [override.key_or_group for override in OverridesParser.create().parse_overrides(task)
             if override.is_sweep_override()]
    return list(dict.fromkeys("threshold" if k == "scoring.threshold" else k for k in keys))


def sweep_name(config: Any) -> str:
    """A sweep's name (``<run_name>_sweep`` when ``run_name`` is set): dataset, model (and its
    system when one is fixed) and what is swept, e.g. ``demo · precomputed · sweep
    matcher×threshold``."""
    from runner.config.naming import system_name

    if _select(config, "run_name"):
        return f"{_select(config, 'run_name')}_sweep"
    swept = swept_keys(config)
    dataset = str(_select(config, "hydra.runtime.choices.dataset") or "?")
    model = str(_select(config, "hydra.runtime.choices.model") or "?")
    if not any(k == "model" or k.startswith("model.") for k in swept):
        settings = _select(config, "model") or {}
        system = system_name(settings if isinstance(settings, dict) else {},
                             _select(config, "dataset") or {}, model)
        model = model if system == model else f"{model} · {system}"
    return f"{dataset} · {model} · sweep {'×'.join(swept) or 'of one job'}"


def _job_num(name: str) -> int:
    head = name.split("_", 1)[0]
    return int(head) if head.isdigit() else 10**9


def _entries(sweep_dir: Path, job_dir: Path) -> list[dict[str, Any]]:
    """One entry per result of a job (one incomplete entry when the job did not finish), its
    overrides as a run of its one threshold would have them."""
    path = job_dir / ".hydra" / "overrides.yaml"
    overrides = [str(o) for o in OmegaConf.load(path)] if path.is_file() else []
    rest = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in THRESHOLD_KEYS]
    base = {"job": job_dir.name, "num": _job_num(job_dir.name)}
    out = []
    for folder in result_dirs(job_dir):
        metrics = read_metrics(folder / METRICS_FILE) if (folder / METRICS_FILE).is_file() \
            else sweep_entry(folder)  # a calibration's (mode=calibrate)
        threshold = (metrics or {}).get("threshold") or {}
        out.append({**base, "dir": folder.relative_to(sweep_dir).as_posix(),
                    "threshold": {"value": threshold.get("value"),
                                  "level": threshold.get("level")},
                    "overrides": [*rest, f"threshold={threshold['level']}"
                                  if threshold.get("level")
                                  else f"scoring.threshold={threshold.get('value')}"],
                    "complete": bool(metrics and metrics.get("complete")), "metrics": metrics})
    return out or [{**base, "dir": job_dir.name, "threshold": None, "overrides": overrides,
                    "complete": False, "metrics": None}]


def best_results(jobs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The best complete result of each metric: the highest value; on a tie, the first in
    sweep order (job number, then threshold order), and ``ties``: every result of that value.
    Metrics no result defines are left out."""
    best: dict[str, dict[str, Any]] = {}
    for job in (j for j in jobs if j["complete"]):
        for key in METRIC_KEYS:
            value = ((job["metrics"] or {}).get("metrics") or {}).get(key)
            if value is not None and (key not in best or value > best[key]["value"]):
                best[key] = {"dir": job["dir"], "value": value, "ties": []}
            if value is not None and value == best[key]["value"]:
                best[key]["ties"].append(job["dir"])
    return best


def scored_cases(jobs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Whether the complete results scored the same cases, from their ``metrics.json`` (the
    digest of their scored cases' ids, ``scored_digest``; never their cases): how many sets of
    cases they form (1: the same cases), and the fewest and most cases a result scored. None
    with fewer than two complete results that have a digest (files written before it)."""
    done = [j["metrics"] for j in jobs if j["complete"] and j["metrics"].get("scored_digest")]
    sizes = [int(m.get("n_scored") or 0) for m in done]
    sets = len({m["scored_digest"] for m in done})
    return {"sets": sets, "fewest": min(sizes), "most": max(sizes)} if len(done) > 1 else None


def summarize(sweep_dir: Path, failed: bool,
              planned: Sequence[Sequence[str]] = ()) -> dict[str, Any]:
    """The content of ``sweep.json``; `planned`: each launched job's overrides, by job number
    (those without a folder are listed as ``not_run``)."""
    folders = sorted((p for p in sweep_dir.iterdir() if p.is_dir() and (p / ".hydra").is_dir()),
                     key=lambda p: _job_num(p.name)) if sweep_dir.is_dir() else []
    jobs = [entry for job_dir in folders for entry in _entries(sweep_dir, job_dir)]
    incomplete = sorted({j["job"] for j in jobs if not j["complete"]}, key=_job_num)
    gates = [j["dir"] for j in jobs if j["complete"]
             and not ((j["metrics"] or {}).get("gates") or {}).get("passed", True)]
    started = {j["num"] for j in jobs}
    not_run = [{"num": num, "overrides": scrub_data(list(job), known_secrets())}
               for num, job in enumerate(planned) if num not in started]
    return {"schema_version": SCHEMA_VERSION, "sweep_dir": str(sweep_dir.resolve()),
            "failed": failed or bool(incomplete) or bool(gates) or bool(not_run),
            "n_jobs": len({j["job"] for j in jobs}) + len(not_run),
            "n_results": sum(1 for j in jobs if j["complete"]),
            "incomplete_jobs": incomplete, "not_run": not_run, "gates_failed": gates,
            "jobs": jobs, "best": best_results(jobs), "scored_cases": scored_cases(jobs)}


def start_tracking(config: Any, sweep_dir: Path) -> Tracker:
    """The tracker of the sweep-level config (a :class:`NullTracker` when it cannot be built
    here: each job then says why), checked, with its sweep run opened.

    Raises:
        RagciteError: The tracker cannot record the sweep; NotAPlugin: the class was built but
            is no tracker (a method missing).
    """
    try:
        tracker = make_tracker({key: _select(config, key)
                                for key in ("tracking", "experiment", "output_root")})
    except NotAPlugin:
        raise
    except RagciteError:
        tracker = NullTracker()
    params = _select(config, "hydra.sweeper.params") or {}
    sweep = {"overrides": [str(o) for o in _select(config, "hydra.overrides.task", []) or []],
             **({"params": params} if isinstance(params, dict) and params else {})}
    tracker.check()  # a store that cannot be used stops the sweep here
    tracker.start_sweep(sweep_dir, sweep_name(config), redact(sweep))
    return tracker


def finish_sweep(failed: bool = False, status: str | None = None) -> None:
    """Write ``sweep.json`` and the sweep report, and end the tracker's sweep run.

    Args:
        failed: Something failed outside the jobs' own results.
        status: The sweep run's end status when not decided by the summary (``KILLED``).

    Does nothing when no sweep is open; the summary is kept in ``SWEEPS.last``.
    """
    if SWEEPS.open is None:
        return
    sweep_dir, config, tracker = SWEEPS.open
    SWEEPS.open = None
    summary = {"name": sweep_name(config), **summarize(sweep_dir, failed, SWEEPS.planned)}
    from runner.reports.common import write_html

    # Whole or not at all: a full disk leaves no half-written sweep.json that reads as complete.
    write_html(sweep_dir / SWEEP_FILE, json.dumps(summary, indent=2, default=str) + "\n")
    try:
        from runner.reports.base import make_reports

        plain = OmegaConf.to_container(config)  # job-level interpolations may not resolve here
        make_reports(plain).render_sweep(sweep_dir)  # type: ignore[arg-type]
    except Exception as exc:  # a report must not hide the sweep's own outcome
        log.error("ragcite: could not write the sweep report: %s", exc)
        summary["failed"] = True
    tracker.end_sweep(sweep_dir, summary, status or ("FAILED" if summary["failed"] else
                                                     "FINISHED"))
    done, report = summary["n_results"], sweep_dir / "sweep.html"
    log.info("sweep: %d result%s of %d job%s%s%s in %s%s", done, "" if done == 1 else "s",
             summary["n_jobs"], "" if summary["n_jobs"] == 1 else "s", *(
                 f", {len(summary[key])} {word}" if summary[key] else ""
                 for key, word in (("incomplete_jobs", "incomplete"), ("not_run", "not run"))),
             sweep_dir, f"; report: {report}" if report.is_file() else "")
    SWEEPS.last = summary


class SweepCallback(Callback):
    """Registered in conf/config.yaml under ``hydra.callbacks.ragcite_sweep``."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Open the sweep: its folder and its tracker's sweep run (main process).

        Raises:
            SystemExit: 2, the tracker cannot record the sweep (one ``ragcite: error:`` line).
        """
        sweep_dir = Path(str(config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        try:
            tracker = start_tracking(config, sweep_dir)
        except RagciteError as exc:
            log.error("ragcite: error: %s", exc)
            raise SystemExit(2) from None
        SWEEPS.open, SWEEPS.last, SWEEPS.planned = (sweep_dir, config, tracker), None, []

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Close the sweep (every job returned; a failed one left no ``job.json``)."""
        finish_sweep()

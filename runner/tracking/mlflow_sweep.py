"""A sweep's parent MLflow run, for the sweep (runner/sweep.py) to open and close.

:func:`start_sweep` opens the parent run in the sweep's main process, before any job, and writes
``<sweep_dir>/.ragcite/parent_run.json``; each job's tracker, in whatever process or machine
runs it, finds that file above its result folders and logs its runs as children
(``mlflow.parentRunId``). :func:`end_sweep` logs the sweep's summary (``sweep.json``) to the
parent, ends FAILED any child still RUNNING (a job that died without closing its run) and closes
the parent, FAILED when a job failed. :func:`close_open_sweep` closes an interrupted sweep.

All three do nothing when the sweep's tracker is not an MLflow one. They keep no state between
calls: the parent file is the only record of the parent run.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from runner.redact import env_secrets, redact_override, scrub_text, secret_values
from runner.tracking import mlflow_store as store
from runner.tracking.base import make_tracker
from runner.tracking.flatten import all_secrets, key, param_value
from runner.tracking.mlflow import MlflowTracker

log = logging.getLogger("ragcite")

SWEEP_FILE = "sweep.json"
SWEEP_REPORT = "sweep.html"


def _select(config: Any, name: str, default: Any = None) -> Any:
    """A resolved, plain value of a sweep-level config (`default` when it does not resolve)."""
    from omegaconf import OmegaConf

    try:
        node = OmegaConf.select(config, name, default=default)
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    except Exception:  # an interpolation only a job can resolve
        return default


def sweep_tracker(config: Any) -> MlflowTracker | None:
    """The sweep's tracker when its ``tracking._target_`` is an MLflow tracker, else None."""
    tracking = _select(config, "tracking") or {}
    target = tracking.get("_target_") if isinstance(tracking, dict) else None
    if not target:
        return None
    from runner.plugins import locate

    try:
        cls = locate(str(target))
    except Exception:  # a bad target: each job reports it
        return None
    if not (isinstance(cls, type) and issubclass(cls, MlflowTracker)):
        return None
    tracker = make_tracker({"tracking": tracking, "experiment": _select(config, "experiment"),
                            "output_root": _select(config, "output_root")})
    return tracker if isinstance(tracker, MlflowTracker) else None


def _parent_params(config: Any, secrets: set[str]) -> dict[str, str]:
    """The sweep's overrides and sweeper params, as params of the parent run."""
    overrides = [redact_override(str(o)) for o in _select(config, "hydra.overrides.task", [])]
    params = {"sweep.overrides": param_value(overrides)}
    sweep_params = _select(config, "hydra.sweeper.params") or {}
    for name, value in (sweep_params if isinstance(sweep_params, dict) else {}).items():
        params[key(["sweep", "params", str(name)])] = param_value(value)
    secrets = secrets | secret_values(overrides)
    return {k: store.mask_uri(scrub_text(v, secrets)) for k, v in params.items()}


def swept_keys(config: Any) -> list[str]:
    """What a sweep varies: the keys given several values on the command line
    (``matcher=substring,ngram``, ``range(...)``) or by the sweeper's ``params`` (a preset)."""
    keys: list[str] = []
    params = _select(config, "hydra.sweeper.params") or {}
    for name in params if isinstance(params, dict) else {}:
        keys.append(str(name))
    for override in _select(config, "hydra.overrides.task", []) or []:
        name, _, value = str(override).partition("=")
        name = name.lstrip("+~")
        if ("," in value and not value.startswith(("[", "{", "'", '"'))) or \
                value.startswith(("range(", "choice(", "glob(", "interval(")):
            keys.append(name)
    return list(dict.fromkeys(k[len("scoring."):] if k == "scoring.threshold" else k
                              for k in keys))


def sweep_name(config: Any) -> str:
    """A sweep's parent run name: dataset, model (and its system when one is fixed) and what
    is swept, e.g. ``demo · precomputed · sweep matcher×threshold``."""
    from runner.naming import system_name

    swept = swept_keys(config)
    dataset = str(_select(config, "hydra.runtime.choices.dataset") or "?")
    model = str(_select(config, "hydra.runtime.choices.model") or "?")
    if not any(k == "model" or k.startswith("model.") for k in swept):
        settings = _select(config, "model") or {}
        system = system_name(settings if isinstance(settings, dict) else {},
                             _select(config, "dataset") or {}, model)
        model = model if system == model else f"{model} · {system}"
    return f"{dataset} · {model} · sweep {'×'.join(swept) or 'of one job'}"


def _open_parent(tracker: MlflowTracker, config: Any, sweep_dir: Path) -> str:
    """Create the parent run; returns its id."""
    secrets = tracker.secrets
    tags = {**store.code_tags(), "ragcite.kind": "sweep",
            "ragcite.sweep_dir": str(sweep_dir.resolve()), **tracker.tags}
    run_name = _select(config, "run_name")
    name = f"{run_name}_sweep" if run_name else sweep_name(config)
    run = tracker.client.create_run(
        tracker.experiment_id, run_name=scrub_text(name, secrets),
        tags={k: scrub_text(v, secrets) for k, v in tags.items()})
    run_id = str(run.info.run_id)
    store.log_batch(tracker.client, run_id, params=_parent_params(config, secrets))
    return run_id


def start_sweep(config: Any, sweep_dir: Path) -> None:
    """Open the sweep's parent run and write ``<sweep_dir>/.ragcite/parent_run.json``.

    Called once, in the sweep's main process, before any job runs. A remote server is checked
    up front. With ``tracking.required=false`` an unusable store is a warning, and the parent
    file says ``{"disabled": true, "reason": ...}``: the jobs then run untracked.

    Args:
        config: The sweep-level config (a DictConfig, with its ``hydra`` section).
        sweep_dir: The sweep folder.

    Raises:
        RagciteError: The store is unusable and ``tracking.required`` is true (one line; no
            parent file is written).
    """
    tracker = sweep_tracker(config)
    if tracker is None:
        return
    tracker.check()
    run_id = None
    if not tracker.disabled:
        try:
            run_id = _open_parent(tracker, config, sweep_dir)
        except Exception as exc:
            tracker.fail("cannot open the sweep's parent run on", exc, up_front=True)
    if run_id is None:
        store.write_parent_file(sweep_dir, {"disabled": True, "reason": tracker.disabled_reason})
        return
    store.write_parent_file(sweep_dir, {
        "run_id": run_id, "tracking_uri": tracker.uri, "experiment_id": tracker.experiment_id,
        "experiment": tracker.experiment, "sweep_dir": str(sweep_dir.resolve())})
    link = store.run_link(tracker.uri, tracker.ui_url, str(tracker.experiment_id), run_id)
    log.info("MLflow sweep run %s%s", run_id,
             f": {link}" if link else f" in {store.mask_uri(tracker.uri)}")


def _summary_figures(summary: dict[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """The parent run's metrics and tags from ``sweep.json`` (its ``best`` as computed there)."""
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {"ragcite.failed": str(bool(summary.get("failed"))).lower()}
    for name, best in (summary.get("best") or {}).items():
        value = (best or {}).get("value")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            metrics[key(["best", str(name)], "/")] = float(value)
            tags[key(["ragcite", "best", str(name)])] = str(best.get("dir"))
    results = summary.get("jobs") or []
    metrics["n_jobs"] = float(summary.get("n_jobs") or 0)
    metrics["n_results"] = float(len(results))
    metrics["n_complete_results"] = float(sum(1 for r in results if r.get("complete")))
    metrics["n_failed_jobs"] = float(len(summary.get("incomplete_jobs") or []))
    return metrics, tags


def _parent(sweep_dir: Path) -> tuple[Any, str] | None:
    """(client, parent run id) of the sweep's parent run, when it has one."""
    data = store.read_parent_file(sweep_dir) or {}
    if data.get("disabled") or not data.get("run_id"):
        return None
    uri, run_id = str(data["tracking_uri"]), str(data["run_id"])
    gone = store.unreachable(uri, store.HEALTH_TIMEOUT) if store.is_remote(uri) else None
    if gone is not None:  # the job that found it so said so; one more line, no retries
        log.warning("ragcite: warning: tracking: the sweep's MLflow run %s stays RUNNING on "
                    "%s, which does not answer; the next ragcite run on this host against it "
                    "marks it KILLED", run_id, store.mask_uri(uri))
        return None
    try:
        return store.client(uri), run_id
    except Exception as exc:
        log.error("ragcite: tracking: could not open the store of the sweep run %s: %s",
                  data["run_id"], store.one_line(exc))
        return None


def end_sweep(config: Any, sweep_dir: Path, summary: dict[str, Any]) -> None:
    """Log the sweep's summary to its parent run, fail stray children, close the parent.

    Logs metrics ``best/<metric>`` (tag ``ragcite.best.<metric>``: the result folder that has
    it, from ``summary["best"]``), ``n_jobs``, ``n_results``, ``n_complete_results``,
    ``n_failed_jobs``, tag ``ragcite.failed``, and the artifacts ``sweep.json`` and
    ``sweep.html`` found in `sweep_dir`. Never raises: the sweep's own outcome must not depend
    on it.

    Args:
        config: The sweep-level config (its secrets are scrubbed from the artifacts).
        sweep_dir: The sweep folder.
        summary: The content of ``sweep.json`` (docs/results.md).
    """
    found = _parent(sweep_dir)
    if found is None:
        return
    mlflow, run_id = found
    failed = bool(summary.get("failed"))
    try:
        metrics, tags = _summary_figures(summary)
        store.log_batch(mlflow, run_id, metrics=metrics, tags=tags)
        secrets = env_secrets() | all_secrets(_select(config, "tracking") or {})
        for name in (SWEEP_FILE, SWEEP_REPORT):
            if (sweep_dir / name).is_file():
                path = sweep_dir / name
                if name == SWEEP_REPORT:  # its job links pointing to the jobs' runs
                    path = _report_copy(mlflow, run_id, config, sweep_dir, path)
                store.log_artifact(mlflow, run_id, path, secrets)
    except Exception as exc:
        log.error("ragcite: tracking: could not log the sweep summary: %s", store.one_line(exc))
    _end_children(mlflow, run_id, "FAILED")
    _terminate(mlflow, run_id, "FAILED" if failed else "FINISHED")


def _report_copy(mlflow: Any, run_id: str, config: Any, sweep_dir: Path, page: Path) -> Path:
    """The sweep report to log: its copy linking each job's MLflow run
    (runner/tracking/mlflow_links.py), or the page itself when that fails."""
    from runner.tracking.mlflow_links import artifact_copy, child_runs

    uri = str((store.read_parent_file(sweep_dir) or {}).get("tracking_uri") or "")
    base = _select(config, "tracking.ui_url") or (uri if store.is_remote(uri) else None)
    try:
        return artifact_copy(page, sweep_dir, base, child_runs(mlflow, run_id, sweep_dir))
    except Exception as exc:
        log.error("ragcite: tracking: the sweep report's links to the job runs: %s",
                  store.one_line(exc))
        return page


def close_open_sweep(sweep_dir: Path, status: str = "KILLED") -> None:
    """Close an interrupted sweep (Ctrl-C): its RUNNING children and its parent end `status`.

    Never raises; does nothing without a parent run.
    """
    found = _parent(sweep_dir)
    if found is not None:
        _end_children(found[0], found[1], status)
        _terminate(found[0], found[1], status)


def _terminate(mlflow: Any, run_id: str, status: str) -> None:
    try:
        mlflow.set_terminated(run_id, status)
    except Exception as exc:
        log.error("ragcite: tracking: could not close the sweep run %s: %s", run_id,
                  store.one_line(exc))


def _end_children(mlflow: Any, parent_id: str, status: str) -> None:
    """End as `status` every child of `parent_id` still RUNNING (its job died without closing)."""
    try:
        parent = mlflow.get_run(parent_id)
        children = mlflow.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.mlflow.parentRunId = '{parent_id}' and "
                          f"attributes.status = 'RUNNING'", max_results=10_000)
        for child in children:
            log.warning("ragcite: tracking: child run %s was still running; marked %s",
                        child.info.run_id, status)
            mlflow.set_terminated(child.info.run_id, status)
    except Exception as exc:
        log.error("ragcite: tracking: could not check the sweep's child runs: %s",
                  store.one_line(exc))


"""MLflow tracking of a job (``tracking=mlflow``): one MLflow run per result folder.

The tracker reads the files a job has written (docs/results.md) and never recomputes a figure;
what each run gets is listed in docs/tracking.md. What a job's result folders share is logged
once, with the first run of the job: its ``passages.parquet``, the per-case table, the dataset
lineage and the job folder's ``report.html`` (a page for every threshold, when the result folders
have none); every run names that run in its tag ``ragcite.passages_run_id``. A sweep's hooks
open and close its parent run (:mod:`runner.tracking.mlflow_sweep`);
``<sweep>/.ragcite/parent_run.json`` above a result folder makes its run a child of the sweep's
parent run.
"""

from __future__ import annotations

import gc
import json
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Annotated, Any

from runner._gc import gc_paused
from runner.config.constraints import COUNT, SECONDS
from runner.errors import RagciteError
from runner.redact import redact, scrub_text
from runner.results import CASES_FILE, CONFIG_FILE, METRICS_FILE, passages_path, read_result
from runner.results import REPORT_FILE as PAGE
from runner.tracking import mlflow_store as store
from runner.tracking import mlflow_sweep as sweeps
from runner.tracking import sqlite_store
from runner.tracking.base import TrackingLost
from runner.tracking.flatten import all_secrets, flatten_params, metrics_from_results, result_tags
from runner.tracking.table import DEFAULT_TABLE_ROWS, log_case_table

log = logging.getLogger("ragcite")
# The files of a result folder logged as artifacts (a run's, a calibration's).
ARTIFACTS = (METRICS_FILE, CASES_FILE, CONFIG_FILE, PAGE, "calibration.json",
             "calibration.html")


def _yaml(path: Path) -> Any:
    """A YAML file's content (None when absent)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where built: 10x faster
    return yaml.load(path.read_text(encoding="utf-8"), loader) if path.is_file() else None


def read_config(path: Path) -> dict[str, Any]:
    """A ``config.yaml`` as a plain dict ({} when absent)."""
    data = _yaml(path)
    return data if isinstance(data, dict) else {}


def overrides_tag(job_dir: Path) -> dict[str, str]:
    """The tag ``ragcite.overrides``: the job's command-line overrides (Hydra's
    ``.hydra/overrides.yaml``), redacted; none when that file is absent or unreadable."""
    try:
        data = _yaml(job_dir / ".hydra" / "overrides.yaml")
    except Exception:  # unreadable: the run goes without the tag
        return {}
    return {"ragcite.overrides": json.dumps(redact([str(x) for x in data]), ensure_ascii=False)
            } if isinstance(data, list) else {}


def read_folder(result_dir: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """What a result folder gives its run: its figures (``metrics.json``), config and own tags;
    a calibration's (``mode=calibrate``) in the same shape; nothing from another folder."""
    from runner.calibration.job import tracked

    if (result_dir / METRICS_FILE).is_file():
        return read_result(result_dir), read_config(result_dir / CONFIG_FILE), {}
    return tracked(result_dir) or ({}, {}, {})


def log_dataset(mlflow: Any, run_id: str, dataset: dict[str, Any]) -> None:
    """Dataset lineage (``log_inputs``): name, digest and source of the test set."""
    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag
    from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_incrementing

    from runner.data.loading import resolve_path

    path = str(dataset.get("path") or "")
    with warnings.catch_warnings():  # MLflow finds a local path a local source in two ways
        warnings.simplefilter("ignore")
        source = resolve_dataset_source(path if store.is_remote(path) else
                                        str(resolve_path(path).resolve()) if path else ".")
    meta = MetaDataset(  # type: ignore[abstract]
        source, name=str(dataset.get("name") or "dataset"),
        digest=str(dataset.get("digest") or "") or None)
    tags = [InputTag("mlflow.data.context", "evaluation"), InputTag("ragcite.path", path),
            *([InputTag("ragcite.n_cases", str(dataset["n_cases"]))]
              if dataset.get("n_cases") is not None else [])]
    # Jobs of a parallel sweep log the same dataset at the same moment: the store creates its
    # dataset row once, and the job that loses the race gets a UNIQUE constraint error. Again,
    # the store finds the row and links it.
    Retrying(stop=stop_after_attempt(3), wait=wait_incrementing(0.2, 0.2), reraise=True,
             retry=retry_if_exception(lambda exc: "UNIQUE constraint" in str(exc)))(
        mlflow.log_inputs, run_id, datasets=[DatasetInput(meta._to_mlflow_entity(), tags)])


class MlflowTracker:
    """Tracks a job's result folders as MLflow runs (``tracking=mlflow``).

    Built by :func:`~runner.tracking.base.make_tracker` from ``conf/tracking/mlflow.yaml``
    (its keys are the keyword arguments below) plus the app-level ``experiment`` and
    ``output_root``. Building it does no I/O; :meth:`check` opens the store.

    Args:
        experiment: The MLflow experiment (root key ``experiment``).
        output_root: Where the default sqlite store and artifacts live (root key).
        tracking_uri: The store; None: ``MLFLOW_TRACKING_URI``, else the local sqlite file.
        artifact_location: Where a new experiment keeps artifacts (None: beside the store, or
            the server's choice).
        required: True: an unusable store is an error (:class:`RagciteError`); False: a warning,
            and the job goes on untracked.
        timeout_s: The reachability check of an ``http(s)`` server.
        log_table: Log the per-case table.
        table_rows: The cases in that table (the first ones; None: all).
        ui_url: Base URL of an MLflow UI, for the link given to reports.
        tags: Extra tags set on every run.
    """

    def __init__(self, *, experiment: str = "ragcite", output_root: str = "outputs",
                 tracking_uri: str | None = None, artifact_location: str | None = None,
                 required: bool = True, timeout_s: Annotated[float, SECONDS] = 5.0,
                 log_table: bool = True,
                 table_rows: Annotated[int | None, COUNT] = DEFAULT_TABLE_ROWS,
                 ui_url: str | None = None, tags: dict[str, Any] | None = None) -> None:
        self.experiment, self.output_root = str(experiment), str(output_root)
        self.uri = store.resolve_tracking_uri(tracking_uri, self.output_root)
        self.artifact_location, self.table_rows, self.ui_url = artifact_location, table_rows, ui_url
        self.required, self.log_table = bool(required), bool(log_table)
        self.timeout_s = float(timeout_s or 5.0)
        self.tags = {str(k): str(v) for k, v in (tags or {}).items()}
        self.secrets = all_secrets({"uri": self.uri, "ui_url": ui_url, "tags": self.tags})
        self.client: Any = None
        self.experiment_id: str | None = None
        self.disabled = False
        self.disabled_reason: str | None = None
        self.runs: dict[Path, str] = {}  # open runs by result folder (a job's K thresholds)
        self.parent_run_id: str | None = None
        self.link: str | None = None
        # The job's passages.parquet → the run holding it and the case table (its first result's).
        self._passages: dict[Path, str] = {}
        self._code: dict[str, str] = {}  # the code tags of its runs (store.code_tags)

    @contextmanager
    def _failing(self, what: str, up_front: bool = False) -> Iterator[None]:
        """Stop tracking after an error of the block: end an open run FAILED, then raise or
        warn (`what` and the store begin the message of an error MLflow raised).

        Raises:
            TrackingLost: The tracking server does not answer (any more), when ``required``.
            RagciteError: Another problem (one line naming the store), when ``required``.
        """
        try:
            yield
        except Exception as exc:
            if store.is_remote(self.uri) and not isinstance(exc, store.TrackingError):
                exc = store.unreachable(self.uri, self.timeout_s) or exc  # say so in plain words
            reason = self.disabled_reason = store.one_line(exc) if isinstance(
                exc, store.TrackingError) else (f"{what} {store.mask_uri(self.uri)}: "
                                                f"{type(exc).__name__}: {store.one_line(exc)}")
            self.disabled, lost = True, isinstance(exc, store.Unreachable)
            if lost:
                self.runs.clear()  # no retries: the next run here ends them KILLED (end_dead_runs)
            self.close("FAILED")
            if self.required:
                hint = " (set tracking.required=false to run without it, or tracking=none)"
                raise (TrackingLost if lost else RagciteError)(
                    f"tracking: {reason}{hint if up_front else ''}") from None
            log.warning("ragcite: warning: tracking: %s; continuing without MLflow tracking "
                        "(results stay in the run folder)", reason)

    def check(self) -> None:
        """Open the store: reach a remote server, open (or create) the experiment, and end
        KILLED the runs of this host left RUNNING by processes that are gone.

        Raises:
            RagciteError: The store is unusable and ``required`` is true.
        """
        if self.client is not None or self.disabled:
            return
        # MLflow's import makes about 600,000 objects that live as long as the process: with
        # the collector on, four full collections walk them (0.2 s of every tracked run). They
        # are frozen before it is back, until the job's end unfreezes them (runner/pipeline.py).
        with self._failing("cannot use the MLflow tracking store", up_front=True), gc_paused():
            store.check_reachable(self.uri, self.timeout_s)
            location = store.artifact_location(self.artifact_location, self.output_root,
                                               self.uri)
            with sqlite_store.store_lock(self.uri):  # a new store is made by one process, whole
                self.client = store.client(self.uri)
                self.experiment_id = store.experiment_id(self.client, self.experiment, location)
            store.end_dead_runs(self.client, self.experiment_id)
            gc.freeze()

    def open(self, result_dir: Path) -> str | None:
        """Open the run of `result_dir` (a child of the sweep's parent run, in a sweep).

        The runs of a job's result folders may be open at once; a run this tracker left open
        for the same folder is first closed ``FAILED``.

        Returns:
            The run's page in an MLflow UI (a remote store or ``ui_url``), else None.

        Raises:
            RagciteError: The run cannot be opened and ``required`` is true.
        """
        self.check()
        self.close("FAILED", result_dir)
        self.link = None
        if self.disabled:
            return None
        with self._failing("cannot open a run on"):
            result_dir = Path(result_dir)
            parent = sweeps.find_parent(result_dir) or {}
            if parent.get("disabled"):  # the sweep runs untracked (and said so)
                self.disabled, self.disabled_reason = True, str(parent.get("reason") or "")
                return None
            tags = {"ragcite.result_dir": str(result_dir.resolve())}
            self.parent_run_id = str(parent["run_id"]) if parent.get("run_id") else None
            if self.parent_run_id:
                if parent.get("tracking_uri") and parent["tracking_uri"] != self.uri:
                    self.uri = str(parent["tracking_uri"])
                    self.client = store.client(self.uri)
                self.experiment_id = str(parent.get("experiment_id") or self.experiment_id)
                tags["mlflow.parentRunId"] = self.parent_run_id
                tags["ragcite.sweep_dir"] = str(parent.get("sweep_dir") or "")
            data, config, own = read_folder(result_dir)
            passages = passages_path(result_dir, data).resolve()
            holder = self._passages.get(passages)  # the job's first run holds what they share
            tags.update({"ragcite.job_dir": str(passages.parent), **overrides_tag(passages.parent),
                         **result_tags(data), **own,
                         **({"ragcite.passages_run_id": holder} if holder else {})})
            name = str((data.get("run") or {}).get("name") or result_dir.resolve().name)
            self.secrets |= all_secrets(config)  # its runs' tags, params and files scrubbed
            run_id = self.runs[result_dir.resolve()] = self._new_run(name, tags)
            self._passages.setdefault(passages, run_id)
            self.link = store.run_link(self.uri, self.ui_url, str(self.experiment_id), run_id)
        return self.link

    def _new_run(self, name: str, tags: dict[str, str]) -> str:
        """Create a run named `name` with the code tags, `tags` and ``tracking.tags``, secrets
        scrubbed; returns its id."""
        self._code = self._code or store.code_tags()  # found once for the job's runs
        tags = {**self._code, **tags, **self.tags}
        run = self.client.create_run(self.experiment_id, run_name=scrub_text(name, self.secrets),
                                     tags={k: scrub_text(v, self.secrets) for k, v in tags.items()})
        return str(run.info.run_id)

    def log(self, result_dir: Path) -> None:
        """Log the result folder's params, metrics and artifacts; with the job's first run,
        what its results share (passages, page, case table, dataset).

        Raises:
            RagciteError: Logging failed and ``required`` is true.
        """
        run_id = self.runs.get(Path(result_dir).resolve())
        if self.disabled or run_id is None:
            return
        with self._failing("cannot log the results to"):
            result_dir = Path(result_dir)
            data, config, _ = read_folder(result_dir)  # its secrets known since it was opened
            passages = passages_path(result_dir, data).resolve()
            held = (result_dir / METRICS_FILE).is_file() and self._passages[passages] == run_id
            if held:  # a calibration's holds no cases
                store.log_artifact(self.client, run_id, passages, self.secrets)
                page = passages.parent / PAGE  # a K-threshold job's one page
                if page.parent != result_dir.resolve() and page.is_file() \
                        and not (result_dir / PAGE).is_file():
                    store.log_artifact(self.client, run_id, page, self.secrets)
                if self.log_table:
                    log_case_table(self.client, run_id, result_dir, self.table_rows)
                if data.get("dataset"):
                    log_dataset(self.client, run_id, data["dataset"])
            store.log_batch(self.client, run_id, metrics=metrics_from_results(data),
                            params=flatten_params(config, self.secrets),
                            tags={"ragcite.passages_run_id": run_id} if held else {})
            for name in ARTIFACTS:
                if (result_dir / name).is_file():
                    store.log_artifact(self.client, run_id, result_dir / name, self.secrets)

    def close(self, status: str, result_dir: Path | None = None) -> None:
        """End the run of `result_dir` (every open run when None) as ``FINISHED``, ``FAILED``
        or ``KILLED``; never raises."""
        for folder in list(self.runs) if result_dir is None else [Path(result_dir).resolve()]:
            run_id = self.runs.pop(folder, None)
            if run_id is None or self.client is None:
                continue
            closed = store.logged(f"could not close MLflow run {run_id} as {status}",  # or False
                                  partial(self.client.set_terminated, run_id, status), False)
            if closed is not False and status == "FINISHED" and not self.parent_run_id:
                uri = store.mask_uri(self.uri)
                log.info("MLflow run %s: %s", run_id, self.link or (
                    uri if store.is_remote(self.uri) else f"mlflow ui --backend-store-uri {uri}"))

    def start_sweep(self, sweep_dir: Path, name: str, sweep: dict[str, Any]) -> None:
        """Open the sweep's parent run (`sweep` as its params ``sweep.overrides`` and
        ``sweep.params.<key>``) and write ``<sweep_dir>/.ragcite/parent_run.json`` for the jobs.

        With ``tracking.required=false`` and an unusable store, a warning, and the parent file
        says ``{"disabled": true, "reason": ...}``: the jobs then run untracked.

        Raises:
            RagciteError: The store is unusable and ``required`` is true (no parent file).
        """
        self.check()
        if not self.disabled:
            with self._failing("cannot open the sweep's parent run on", up_front=True):
                run_id = self._new_run(name, {"ragcite.kind": "sweep",
                                              "ragcite.sweep_dir": str(sweep_dir.resolve())})
                store.log_batch(self.client, run_id,
                                params=flatten_params({"sweep": sweep}, self.secrets))
        if self.disabled:
            sweeps.write_parent_file(sweep_dir, {"disabled": True, "reason": self.disabled_reason})
            return
        sweeps.write_parent_file(sweep_dir, {
            "run_id": run_id, "tracking_uri": self.uri, "experiment_id": self.experiment_id,
            "experiment": self.experiment, "sweep_dir": str(sweep_dir.resolve())})
        link = store.run_link(self.uri, self.ui_url, str(self.experiment_id), run_id)
        log.info("MLflow sweep run %s%s", run_id,
                 f": {link}" if link else f" in {store.mask_uri(self.uri)}")

    def end_sweep(self, sweep_dir: Path, summary: dict[str, Any], status: str) -> None:
        """Log the summary to the sweep's parent run (unless ``KILLED``: metrics ``best/<metric>``
        with tags ``ragcite.best.<metric>``, ``n_jobs``, ``n_results``, ``n_complete_results``,
        ``n_failed_jobs``, tag ``ragcite.failed``; artifacts ``sweep.json`` and ``sweep.html``),
        end its children still RUNNING and itself as `status`. Never raises."""
        found = sweeps.parent_run(sweep_dir)
        if found is None:
            return
        mlflow, uri, run_id = found
        # The children still running, to end them; all of them where a UI links their pages.
        only = "" if self.ui_url or store.is_remote(uri) else " and attributes.status = 'RUNNING'"
        children = store.logged("could not check the sweep's child runs", lambda: list(
            mlflow.search_runs([mlflow.get_run(run_id).info.experiment_id], max_results=10_000,
                               filter_string=f"tags.mlflow.parentRunId = '{run_id}'{only}")), [])
        if status != "KILLED":
            store.logged("could not log the sweep summary", lambda: sweeps.log_summary(
                mlflow, run_id, sweep_dir, summary,
                sweeps.run_pages(children, sweep_dir, uri, self.ui_url), self.secrets))
        sweeps.end_runs(mlflow, run_id, children, status)

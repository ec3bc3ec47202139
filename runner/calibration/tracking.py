"""An MLflow run per calibration (``tracking=mlflow``; ``tracking=none`` turns it off): the
figures as metrics, the settings as params, ``calibration.json`` and ``calibration.html`` as
artifacts, in the experiment ``experiment`` (``ragcite-calibration``). The store is found,
checked and created as for ``ragcite`` runs (:mod:`runner.tracking.mlflow_store`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.calibration.figures import FIGURE_KEYS
from runner.errors import RagciteError
from runner.redact import scrub_text, secret_values
from runner.tracking import mlflow_store as store
from runner.tracking import sqlite_store
from runner.tracking.flatten import all_secrets, flatten_params

log = logging.getLogger("ragcite")
MLFLOW_TARGET = "runner.tracking.mlflow.MlflowTracker"


class CalibrationTracker:
    """Logs calibrations to MLflow when ``tracking`` is the ``mlflow`` option.

    Args:
        cfg: The composed config as plain data (``tracking``, ``experiment``,
            ``output_root``).
    """

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.settings = dict(cfg.get("tracking") or {})
        self.enabled = self.settings.get("_target_") == MLFLOW_TARGET
        self.required = bool(self.settings.get("required", True))
        self.experiment = str(cfg.get("experiment") or "ragcite-calibration")
        self.output_root = str(cfg.get("output_root") or "outputs")
        self.uri = store.resolve_tracking_uri(self.settings.get("tracking_uri"),
                                              self.output_root) if self.enabled else ""
        self.secrets = all_secrets(cfg) | secret_values(self.uri)
        self.client: Any = None
        self.experiment_id = ""

    def _fail(self, what: str, exc: BaseException) -> None:
        reason = store.one_line(exc) if isinstance(exc, store.TrackingError) else \
            f"{what} {store.mask_uri(self.uri)}: {type(exc).__name__}: {store.one_line(exc)}"
        self.enabled = False
        if self.required:
            raise RagciteError(f"tracking: {reason} (set tracking.required=false to run "
                               f"without it, or tracking=none)") from None
        log.warning("ragcite-calibrate: warning: tracking: %s; continuing without MLflow "
                    "tracking", reason)

    def check(self) -> None:
        """Open the store and the experiment, before any similarity is computed."""
        if not self.enabled or self.client is not None:
            return
        try:
            store.check_reachable(self.uri, float(self.settings.get("timeout_s") or 5.0))
            location = store.artifact_location(self.settings.get("artifact_location"),
                                               self.output_root, self.uri)
            with sqlite_store.store_lock(self.uri):
                client = store.client(self.uri)
                self.experiment_id = store.experiment_id(client, self.experiment, location)
            self.client = client
        except Exception as exc:
            self._fail("cannot use the MLflow tracking store", exc)

    def log(self, cfg: dict[str, Any], data: dict[str, Any], files: Sequence[Path],
            run_name: str) -> str | None:
        """One FINISHED run with the calibration's figures and files; its id."""
        if not self.enabled or self.client is None:
            return None
        (name, entry), = data["matchers"].items()
        metrics = {k: float(entry[k]) for k in FIGURE_KEYS if entry.get(k) is not None}
        metrics.update({f"count_{k}": float(v) for k, v in entry["counts"].items()})
        metrics["threshold"] = float(entry["threshold"])
        agreement = data.get("agreement") or {}
        if agreement.get("kappa") is not None:
            metrics["annotator_kappa"] = float(agreement["kappa"])
        tags = {**store.code_tags(), "ragcite.matcher": name,
                "ragcite.labels": str(data["labels"]["path"]),
                "ragcite.labels_digest": str(data["labels"]["digest"]),
                "ragcite.output_dir": str(data["output_dir"])}
        try:
            run = self.client.create_run(self.experiment_id, run_name=scrub_text(
                run_name, self.secrets), tags={k: scrub_text(v, self.secrets)
                                               for k, v in tags.items()})
            run_id = str(run.info.run_id)
            params = flatten_params({k: cfg[k] for k in ("matcher", "scoring", "labels",
                                                         "seed") if k in cfg}, self.secrets)
            store.log_batch(self.client, run_id, metrics=metrics, params=params)
            for path in files:
                if path.is_file():
                    store.log_artifact(self.client, run_id, path, self.secrets)
            self.client.set_terminated(run_id, "FINISHED")
        except Exception as exc:
            self._fail("cannot log the calibration to", exc)
            return None
        log.info("MLflow run %s (experiment %s): %s", run_id, self.experiment,
                 store.mask_uri(self.uri))
        return run_id

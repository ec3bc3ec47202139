"""An MLflow run per calibration (``tracking=mlflow``; ``tracking=none`` turns it off): the
figures as metrics, the settings as params, ``calibration.json`` and ``calibration.html`` as
artifacts, in the experiment ``experiment`` (``ragcite-calibration`` under ``mode=calibrate``).
The store is found, checked and created by the run's own tracker
(:class:`runner.tracking.mlflow.MlflowTracker`), whose settings it takes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.calibration.figures import FIGURE_KEYS
from runner.redact import scrub_text
from runner.tracking import mlflow_store as store
from runner.tracking.flatten import all_secrets, flatten_params
from runner.tracking.mlflow import MlflowTracker

log = logging.getLogger("ragcite")
MLFLOW_TARGET = "runner.tracking.mlflow.MlflowTracker"


class CalibrationTracker(MlflowTracker):
    """The ``mlflow`` tracker, logging a calibration instead of a run's result folder."""

    def log_calibration(self, cfg: dict[str, Any], data: dict[str, Any], files: Sequence[Path],
                        run_name: str) -> None:
        """One FINISHED run with the calibration's figures and files."""
        if self.disabled or self.client is None:
            return
        (name, entry), = data["matchers"].items()
        metrics = {k: float(entry[k]) for k in FIGURE_KEYS if entry.get(k) is not None}
        metrics.update({f"count_{k}": float(v) for k, v in entry["counts"].items()})
        metrics["threshold"] = float(entry["threshold"])
        if (data.get("agreement") or {}).get("kappa") is not None:
            metrics["annotator_kappa"] = float(data["agreement"]["kappa"])
        secrets = self.secrets | all_secrets(cfg)
        tags = {**store.code_tags(), **self.tags, "ragcite.matcher": name,
                "ragcite.labels": str(data["labels"]["path"]),
                "ragcite.labels_digest": str(data["labels"]["digest"]),
                "ragcite.output_dir": str(data["output_dir"])}
        with self._failing("cannot log the calibration to"):
            run = self.client.create_run(str(self.experiment_id), run_name=scrub_text(
                run_name, secrets), tags={k: scrub_text(v, secrets) for k, v in tags.items()})
            run_id = str(run.info.run_id)
            params = flatten_params({k: cfg[k] for k in ("matcher", "scoring", "calibrate",
                                                         "seed") if k in cfg}, secrets)
            store.log_batch(self.client, run_id, metrics=metrics, params=params)
            for path in files:
                if path.is_file():
                    store.log_artifact(self.client, run_id, path, secrets)
            self.client.set_terminated(run_id, "FINISHED")
        if not self.disabled:  # else the error was said (a warning: tracking.required=false)
            log.info("MLflow run %s (experiment %s): %s", run_id, self.experiment,
                     store.mask_uri(self.uri))


def calibration_tracker(cfg: dict[str, Any]) -> CalibrationTracker | None:
    """The tracker of a calibration: None unless ``tracking`` is the ``mlflow`` option."""
    settings = dict(cfg.get("tracking") or {})
    if settings.pop("_target_", None) != MLFLOW_TARGET:
        return None
    return CalibrationTracker(**settings, experiment=str(cfg.get("experiment") or "ragcite"),
                              output_root=str(cfg.get("output_root") or "outputs"))

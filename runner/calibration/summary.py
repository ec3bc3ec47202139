"""``-m matcher=substring,ngram,...``: a summary across the matchers calibrated on the same labels,
``calibration_summary.json`` (and ``.html``) in the sweep folder, written by a Hydra callback
when the sweep ends. It is gathered from each job's ``calibration.json`` on disk, so it holds
on every launcher; a job that failed is listed as incomplete."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from runner.calibration.figures import FIGURE_KEYS
from runner.calibration.job import JSON_FILE, SCHEMA_VERSION

log = logging.getLogger("ragcite")
SUMMARY_JSON = "calibration_summary.json"


def _num(name: str) -> int:
    head = name.split("_", 1)[0]
    return int(head) if head.isdigit() else 10**9


def summarize(sweep_dir: Path) -> dict[str, Any]:
    """The content of ``calibration_summary.json``: one row per job, in job order."""
    rows: list[dict[str, Any]] = []
    incomplete: list[str] = []
    labels: list[dict[str, Any]] = []
    agreement = None
    jobs = sorted((p for p in sweep_dir.iterdir() if p.is_dir() and (p / ".hydra").is_dir()),
                  key=lambda p: _num(p.name))
    for job in jobs:
        path = job / JSON_FILE
        if not path.is_file():
            incomplete.append(job.name)
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        labels.append(data["labels"])
        agreement = agreement or data.get("agreement")
        for name, m in data["matchers"].items():
            rows.append({"job": job.name, "matcher": name, "identity": m.get("identity"),
                         "threshold": m["threshold"],
                         "threshold_level": m.get("threshold_level"),
                         **{k: m.get(k) for k in FIGURE_KEYS},
                         "intervals": m.get("intervals"), "counts": m.get("counts"),
                         "ready": m.get("ready"), "withheld": m.get("withheld"),
                         "report": f"{job.name}/calibration.html"})
    digests = sorted({str(x.get("digest")) for x in labels})
    best = max((r for r in rows if r.get("auc") is not None), key=lambda r: r["auc"],
               default=None)
    return {"schema_version": SCHEMA_VERSION, "sweep_dir": str(sweep_dir.resolve()),
            "labels": labels[0] if labels else None, "same_labels": len(digests) <= 1,
            "agreement": agreement, "matchers": rows, "incomplete_jobs": incomplete,
            "best_auc": None if best is None else {"job": best["job"],
                                                   "matcher": best["matcher"],
                                                   "auc": best["auc"]}}


def write_summary(sweep_dir: Path) -> dict[str, Any]:
    """Write ``calibration_summary.json`` and its page into `sweep_dir`."""
    summary = summarize(sweep_dir)
    (sweep_dir / SUMMARY_JSON).write_text(json.dumps(summary, indent=2, ensure_ascii=False)
                                          + "\n", encoding="utf-8")
    from runner.calibration.html import render_summary

    render_summary(sweep_dir, summary)
    return summary


class SummaryCallback(Callback):
    """Registered in conf/calibrate.yaml under ``hydra.callbacks``."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Write the summary of the sweep's calibrations."""
        sweep_dir = Path(str(config.hydra.sweep.dir))
        if not sweep_dir.is_dir():
            return
        try:
            summary = write_summary(sweep_dir)
        except Exception as exc:  # the jobs' own files stay; say why the summary is missing
            log.error("ragcite-calibrate: could not write the calibration summary: %s", exc)
            return
        log.info("calibration summary: %d matcher%s: %s", len(summary["matchers"]),
                 "" if len(summary["matchers"]) == 1 else "s", sweep_dir)

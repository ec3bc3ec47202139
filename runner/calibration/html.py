"""``calibration.html`` and ``calibration_summary.html``, the reports of ``mode=calibrate``:
self-contained pages on the reports' shared frame (templates/report_base.html.j2: inline CSS and
JS, a CSP that forbids every request, autoescaped text), with inline SVG charts
(:mod:`runner.calibration.charts`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.calibration.charts import distribution_chart, roc_chart
from runner.calibration.job import HTML_FILE, JSON_FILE
from runner.reports.common import render, write_html
from runner.sweep import SWEEP_FILE

SUMMARY_HTML = "calibration_summary.html"
FIGURE_NAMES = {
    "auc": ("ROC area (AUC)", "the chance a true pair scores above a false one (ties: half)"),
    "balanced_accuracy": ("Balanced accuracy", "mean of the true pairs matched and the false "
                                               "pairs not matched"),
    "precision": ("Precision", "matched pairs that are true"),
    "recall": ("Recall", "true pairs that are matched"),
    "f1": ("F1", "harmonic mean of precision and recall"),
    "kappa": ("Cohen's kappa", "agreement with the labels beyond chance (1: perfect, 0: chance)"),
    "best_threshold": ("Best threshold", "maximises balanced accuracy (the middle of the best "
                                         "interval)"),
    "best_balanced_accuracy": ("Best balanced accuracy", "balanced accuracy at the best "
                                                         "threshold"),
}


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def matcher_context(entry: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of one matcher: its figures with intervals, its charts."""
    rows = [{"key": k, "name": n, "about": a, "value": entry.get(k),
             "ci": (entry.get("intervals") or {}).get(k)} for k, (n, a) in FIGURE_NAMES.items()]
    sims, labels = entry.get("similarities") or [], entry.get("labels") or []
    best = entry.get("best_threshold")
    return {"m": entry, "rows": rows,
            "roc": roc_chart(sims, labels, entry["threshold"], best),
            "dist": distribution_chart(sims, labels, entry.get("similarity_range") or (0, 1),
                                       entry["threshold"], best)}


def render_calibration(folder: Path) -> Path:
    """Write ``calibration.html`` in `folder` from its ``calibration.json``."""
    data = _read(folder / JSON_FILE)
    matchers = [matcher_context(e) for e in data["matchers"].values()]
    title = "Calibration: " + ", ".join(data["matchers"])
    return write_html(folder / HTML_FILE, render(
        "calibration.html.j2", title=title, data=data, matchers=matchers))


def summary(sweep: dict[str, Any]) -> dict[str, Any]:
    """What the summary page shows of a calibration sweep's ``sweep.json``: one row per
    matcher of each finished job, in job order; the labels the jobs read, and whether they
    were the same file."""
    done = [j for j in sweep["jobs"] if j["complete"]]
    labels = [j["metrics"]["labels"] for j in done]
    rows = [{**m, "matcher": name, "report": f"{j['dir']}/{HTML_FILE}"}
            for j in done for name, m in j["metrics"]["matchers"].items()]
    return {**sweep, "labels": labels[0] if labels else None, "matchers": rows,
            "same_labels": len({str(x.get("digest")) for x in labels}) <= 1,
            "agreement": next((j["metrics"]["agreement"] for j in done
                               if j["metrics"].get("agreement")), None)}


class CalibrationReports:
    """``report=calibration`` (chosen by ``mode=calibrate``): ``calibration.html`` in each
    calibration folder, ``calibration_summary.html`` in each calibration sweep (from its
    ``sweep.json``)."""

    def __init__(self, **_: Any) -> None:
        pass

    def render_run(self, result_dir: Path, link: str | None) -> None:
        """Write the folder's ``calibration.html``."""
        render_calibration(result_dir)

    def render_runs(self, result_dirs: Sequence[Path], links: Sequence[str | None]) -> None:
        """Write each folder's ``calibration.html``."""
        for folder in result_dirs:
            render_calibration(folder)

    def render_sweep(self, sweep_dir: Path) -> None:
        """Write ``calibration_summary.html`` in `sweep_dir` from its ``sweep.json``."""
        write_html(sweep_dir / SUMMARY_HTML, render(
            "calibration_summary.html.j2", title=f"Calibration summary {sweep_dir.name}",
            s=summary(_read(sweep_dir / SWEEP_FILE)), names=FIGURE_NAMES,
            name=sweep_dir.name))

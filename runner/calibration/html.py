"""``calibration.html`` and ``calibration_summary.html``: self-contained pages on the reports'
shared frame (templates/report_base.html.j2: inline CSS and JS, a CSP that forbids every
request, autoescaped text), with inline SVG charts (:mod:`runner.calibration.charts`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.calibration.charts import distribution_chart, roc_chart
from runner.calibration.job import JSON_FILE
from runner.reports.common import render, write_html

HTML_FILE = "calibration.html"
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


def render_summary(sweep_dir: Path, summary: dict[str, Any]) -> Path:
    """Write ``calibration_summary.html`` in `sweep_dir` from the summary."""
    return write_html(sweep_dir / SUMMARY_HTML, render(
        "calibration_summary.html.j2", title=f"Calibration summary {sweep_dir.name}",
        s=summary, names=FIGURE_NAMES, name=sweep_dir.name))

"""``calibration.html`` and ``calibration_summary.html``, the reports of ``mode=calibrate``:
self-contained pages on the reports' shared frame (templates/report_base.html.j2: inline CSS and
JS, a CSP that forbids every request, autoescaped text), with inline SVG charts. The templates
draw them (and name the figures, templates/calibration_figures.html.j2) from the numbers
computed here: the ROC curve's corners and the similarities' histogram by label."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from runner.calibration.job import HTML_FILE, JSON_FILE
from runner.reports.common import render, write_html
from runner.sweep import SWEEP_FILE

BINS = 20
"""The bins of the similarity histogram, across the matcher's similarity range."""


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def charts(entry: dict[str, Any]) -> dict[str, Any]:
    """The numbers of one matcher's charts: the ROC curve's corners (one per distinct
    similarity) with the thresholds that reach them (None without both labels), and each
    label's count per bin (``hist[0]``: the true pairs) with the bins' and the axis' values."""
    s = np.asarray(entry["similarities"], dtype=np.float64)
    y = np.asarray(entry["labels"], dtype=bool)
    low, high = (float(v) for v in entry.get("similarity_range") or (0, 1))
    edges = np.linspace(low, high, BINS + 1)
    roc = None
    if y.any() and not y.all():
        from sklearn.metrics import roc_curve  # ~1 s to import: only when a calibration draws

        fpr, tpr, cuts = roc_curve(y, s, drop_intermediate=False)
        roc = {"points": list(zip(fpr.tolist(), tpr.tolist())), "cuts": cuts.tolist()}
    return {"roc": roc, "low": low, "high": high, "edges": edges.tolist(),
            "ticks": np.linspace(low, high, 5).tolist(),
            "hist": [np.histogram(s[y == label], bins=edges)[0].tolist()
                     for label in (True, False)]}


def render_calibration(folder: Path) -> Path:
    """Write ``calibration.html`` in `folder` from its ``calibration.json``."""
    data = _read(folder / JSON_FILE)
    matchers = [{"m": e, **charts(e)} for e in data["matchers"].values()]
    title = "Calibration: " + ", ".join(data["matchers"])
    return write_html(folder / HTML_FILE, render(
        "calibration.html.j2", title=title, data=data, matchers=matchers))


class CalibrationReports:
    """``report=calibration`` (chosen by ``mode=calibrate``): ``calibration.html`` in each
    calibration folder, ``calibration_summary.html`` in each calibration sweep (from its
    ``sweep.json``: one row per matcher of each finished job, in job order)."""

    def render_run(self, result_dir: Path, link: str | None) -> None:
        """Write the folder's ``calibration.html``."""
        render_calibration(result_dir)

    def render_runs(self, result_dirs: Sequence[Path], links: Sequence[str | None]) -> None:
        """Write each folder's ``calibration.html``."""
        for folder in result_dirs:
            render_calibration(folder)

    def render_sweep(self, sweep_dir: Path) -> None:
        """Write ``calibration_summary.html`` in `sweep_dir` from its ``sweep.json``."""
        sweep = _read(sweep_dir / SWEEP_FILE)
        name = sweep.get("name") or sweep_dir.name
        write_html(sweep_dir / "calibration_summary.html", render(
            "calibration_summary.html.j2", title=f"Calibration summary: {name}", s=sweep,
            name=name))

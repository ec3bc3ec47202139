"""HTML reports rendered from results files: run, sweep and comparison.

The reports are plain readers of the files a job writes (docs/results.md): they compute no
figure, keep nothing between calls and write nothing but the report. Which reports are written
is chosen by ``report._target_`` (:func:`runner.reports.base.make_reports`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def render_run_report(result_dir: Path, tracking_link: str | None = None) -> Path:
    """Render ``report.html`` into a result folder
    (:func:`runner.reports.run.render_run_report`)."""
    from runner.reports.run import render_run_report as render

    return render(result_dir, tracking_link=tracking_link)


def render_run_reports(result_dirs: Sequence[Path],
                       links: Sequence[str | None]) -> list[Path]:
    """Render ``report.html`` into each result folder of a job, their shared passages read once
    (:func:`runner.reports.run.render_run_reports`)."""
    from runner.reports.run import render_run_reports as render

    return render(result_dirs, links)

"""``report=html``: self-contained HTML reports, ``report.html`` per result folder and
``sweep.html`` per sweep folder (:class:`HtmlReports`, named by ``conf/report/html.yaml``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.reports.run import HtmlOptions, render_run_report, render_run_reports
from runner.reports.sweep import render_sweep_report


@dataclass
class HtmlReports(HtmlOptions):
    """The HTML reports, with their options (the fields of :class:`HtmlOptions`)."""

    def render_run(self, result_dir: Path, link: str | None) -> None:
        """Write ``report.html`` in `result_dir` (`link`: the tracked run, shown in it)."""
        render_run_report(result_dir, tracking_link=link, options=self)

    def render_runs(self, result_dirs: Sequence[Path], links: Sequence[str | None]) -> None:
        """Write the job's ``report.html``: one folder's, or one page of several thresholds
        with a switch."""
        render_run_reports(result_dirs, links, options=self)

    def render_sweep(self, sweep_dir: Path) -> None:
        """Write ``sweep.html`` in `sweep_dir` from its ``sweep.json``."""
        render_sweep_report(sweep_dir)

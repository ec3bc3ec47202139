"""HTML reports rendered from results files: run, sweep and comparison."""

from __future__ import annotations

from pathlib import Path


def render_run_report(run_dir: Path, tracking_link: str | None = None) -> Path:
    """Render ``report.html`` into a run folder from its ``metrics.json`` and ``cases.jsonl``."""
    from runner.reports.run import render_run_report as render

    return render(run_dir, tracking_link=tracking_link)

"""The sweep report as an MLflow artifact: its job links point to the jobs' MLflow runs.

On disk, ``sweep.html`` links each result's ``report.html`` by a relative path. MLflow shows an
HTML artifact in a frame of its own (MLflow 3.17: a ``blob:`` URL, ``sandbox="allow-scripts"``),
where a relative path leads nowhere. The copy logged to the sweep's parent run links instead to
each result's MLflow run page at its ``report.html`` artifact
(``<ui>/#/experiments/<id>/runs/<run>/artifacts/report.html``), opened in a new tab, and says so
at the top. MLflow's frame blocks new tabs and navigation: there the link is a URL to open; the
downloaded copy, or any viewer that allows new tabs, opens it. The UI base is ``tracking.ui_url``,
else a remote tracking URI; without one (a local sqlite store) the links stay relative.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from runner.tracking import mlflow_store as store

REPORT = "report.html"
COPY_DIR = Path(".ragcite") / "mlflow"


def child_runs(mlflow: Any, parent_id: str, sweep_dir: Path) -> dict[str, tuple[str, str]]:
    """Each child run's result folder (relative to `sweep_dir`, as the page names it) →
    (experiment id, run id)."""
    parent = mlflow.get_run(parent_id)
    runs = mlflow.search_runs([parent.info.experiment_id],
                              filter_string=f"tags.mlflow.parentRunId = '{parent_id}'",
                              max_results=10_000)
    out = {}
    root = sweep_dir.resolve()
    for run in runs:
        folder = Path(run.data.tags.get("ragcite.result_dir") or "")
        if folder.is_absolute() and folder.is_relative_to(root):
            out[folder.relative_to(root).as_posix()] = (str(run.info.experiment_id),
                                                        str(run.info.run_id))
    return out


def run_report_url(base: str, experiment_id: str, run_id: str) -> str:
    """A run's ``report.html`` artifact in the MLflow UI at `base`."""
    return f"{store.mask_uri(base).rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}" \
           f"/artifacts/{REPORT}"


def artifact_copy(page: Path, sweep_dir: Path, base: str | None,
                  runs: dict[str, tuple[str, str]]) -> Path:
    """`page` with each result's report link pointing to its MLflow run (see the module doc),
    written under ``<sweep_dir>/.ragcite/mlflow/``; `page` itself when there is no UI base or
    no run to link."""
    if not base or not runs:
        return page
    text = page.read_text(encoding="utf-8")
    for folder, (experiment_id, run_id) in runs.items():
        # The relative link as the page writes it (runner/reports/common.py::rel_link).
        href = html.escape("/".join(quote(p, safe="") for p in (*folder.split("/"), REPORT)),
                           quote=True)
        url = html.escape(run_report_url(base, experiment_id, run_id), quote=True)
        text = text.replace(f'href="{href}"',
                            f'href="{url}" target="_blank" rel="noopener noreferrer"')
    note = ("<p class=\"small muted\" id=\"mlflow-note\">Each job's report link opens its "
            "MLflow run's report.html in a new tab. MLflow's artifact frame may block new "
            "tabs: then open the link's address yourself.</p>")
    text = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + note, text, count=1)
    out = sweep_dir / COPY_DIR / page.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out

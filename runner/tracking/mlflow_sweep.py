"""A sweep's parent MLflow run, for the MLflow tracker's sweep hooks (runner/tracking/mlflow.py).

``start_sweep`` opens the parent run in the sweep's main process, before any job, and writes
``<sweep_dir>/.ragcite/parent_run.json``; each job's tracker, in whatever process or machine
runs it, finds that file above its result folders (:func:`find_parent`) and logs its runs as
children (``mlflow.parentRunId``). ``end_sweep`` logs the sweep's summary (:func:`log_summary`),
ends any child still RUNNING (a job that died without closing its run) and the parent
(:func:`end_runs`). The parent file is the only record of the parent run.

On disk, ``sweep.html`` links each result's ``report.html`` by a relative path. MLflow shows an
HTML artifact in a frame of its own (MLflow 3.17: a ``blob:`` URL, ``sandbox="allow-scripts"``),
where a relative path leads nowhere. The copy logged to the parent run links instead to each
result's MLflow run page at its ``report.html`` artifact
(``<ui>/#/experiments/<id>/runs/<run>/artifacts/report.html``), opened in a new tab, and says so
at the top. MLflow's frame blocks new tabs and navigation: there the link is a URL to open; the
downloaded copy, or any viewer that allows new tabs, opens it. The UI base is ``tracking.ui_url``,
else a remote tracking URI; without one (a local sqlite store) the links stay relative.
"""

from __future__ import annotations

import html
import json
import logging
import re
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

from runner.results import REPORT_FILE
from runner.tracking import mlflow_store as store
from runner.tracking.flatten import key

log = logging.getLogger("ragcite")

# Where a sweep leaves its parent run id for the jobs, relative to the sweep folder.
PARENT_FILE = Path(".ragcite") / "parent_run.json"
SWEEP_FILES = ("sweep.json", "sweep.html")
COPY_DIR = Path(".ragcite") / "mlflow"
NOTE = ("<p class=\"small muted\" id=\"mlflow-note\">Each job's report link opens its MLflow "
        "run's report.html in a new tab. MLflow's artifact frame may block new tabs: then open "
        "the link's address yourself.</p>")


def read_parent_file(sweep_dir: Path) -> dict[str, Any] | None:
    """The content of ``<sweep_dir>/.ragcite/parent_run.json`` (None when absent or unreadable)."""
    try:
        data = json.loads((sweep_dir / PARENT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def find_parent(result_dir: Path, levels: int = 4) -> dict[str, Any] | None:
    """The sweep's ``parent_run.json`` in one of the `levels` folders above `result_dir`."""
    return next((read_parent_file(folder) for folder in list(result_dir.resolve().parents)[:levels]
                 if (folder / PARENT_FILE).is_file()), None)


def write_parent_file(sweep_dir: Path, data: dict[str, Any]) -> None:
    """Write ``<sweep_dir>/.ragcite/parent_run.json`` atomically."""
    path = sweep_dir / PARENT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    path.with_suffix(".tmp").replace(path)


def parent_run(sweep_dir: Path) -> tuple[Any, str, str] | None:
    """(client, tracking URI, parent run id) of the sweep's parent run, when it has one and its
    store answers (else a line saying so)."""
    data = read_parent_file(sweep_dir) or {}
    if data.get("disabled") or not data.get("run_id"):
        return None
    uri, run_id = str(data["tracking_uri"]), str(data["run_id"])
    if store.is_remote(uri) and store.unreachable(uri, store.HEALTH_TIMEOUT):
        # The job that found it so said so; one more line, no retries.
        log.warning("ragcite: warning: tracking: the sweep's MLflow run %s stays RUNNING on "
                    "%s, which does not answer; the next ragcite run on this host against it "
                    "marks it KILLED", run_id, store.mask_uri(uri))
        return None
    return store.logged(f"could not open the store of the sweep run {run_id}",
                        lambda: (store.client(uri), uri, run_id))


def summary_figures(summary: dict[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """The parent run's metrics and tags from ``sweep.json`` (its ``best`` as computed there)."""
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {"ragcite.failed": str(bool(summary.get("failed"))).lower()}
    for name, best in (summary.get("best") or {}).items():
        value = (best or {}).get("value")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            metrics[key(["best", str(name)], "/")] = float(value)
            tags[key(["ragcite", "best", str(name)])] = str(best.get("dir"))
    results = summary.get("jobs") or []
    metrics.update({"n_jobs": float(summary.get("n_jobs") or 0), "n_results": float(len(results)),
                    "n_complete_results": float(sum(1 for r in results if r.get("complete"))),
                    "n_failed_jobs": float(len(summary.get("incomplete_jobs") or []))})
    return metrics, tags


def log_summary(mlflow: Any, run_id: str, sweep_dir: Path, summary: dict[str, Any],
                links: dict[str, str], secrets: set[str]) -> None:
    """Log ``sweep.json``'s figures (:func:`summary_figures`) and the files ``sweep.json`` and
    ``sweep.html`` (its copy linking each result's run page `links`) to the parent run."""
    metrics, tags = summary_figures(summary)
    store.log_batch(mlflow, run_id, metrics=metrics, tags=tags)
    for path in (sweep_dir / name for name in SWEEP_FILES):
        if path.is_file() and path.suffix == ".html" and links:
            path = store.logged("the sweep report's links to the job runs",
                                partial(report_copy, path, sweep_dir, links), path)
        if path.is_file():
            store.log_artifact(mlflow, run_id, path, secrets)


def run_pages(children: list[Any], sweep_dir: Path, uri: str,
              ui_url: str | None) -> dict[str, str]:
    """Each child run's result folder (relative to `sweep_dir`, as the sweep report names it)
    → its run page in the MLflow UI (none without a UI: :func:`store.run_link`)."""
    root, out = sweep_dir.resolve(), {}
    for run in children:
        folder = Path(run.data.tags.get("ragcite.result_dir") or "")
        link = store.run_link(uri, ui_url, str(run.info.experiment_id), str(run.info.run_id))
        if link and folder.is_absolute() and folder.is_relative_to(root):
            out[folder.relative_to(root).as_posix()] = link
    return out


def report_copy(page: Path, sweep_dir: Path, links: dict[str, str]) -> Path:
    """`page` with each result's report link pointing to its run's ``report.html`` artifact
    (see the module doc), written under ``<sweep_dir>/.ragcite/mlflow/``."""
    text = page.read_text(encoding="utf-8")
    for folder, link in links.items():
        # The relative link as the page writes it (runner/reports/sweep.py, "link").
        href = html.escape("/".join(quote(p, safe="") for p in (*folder.split("/"), REPORT_FILE)),
                           quote=True)
        url = html.escape(f"{link}/artifacts/{REPORT_FILE}", quote=True)
        text = text.replace(f'href="{href}"',
                            f'href="{url}" target="_blank" rel="noopener noreferrer"')
    text = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + NOTE, text, count=1)
    out = sweep_dir / COPY_DIR / page.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def end_runs(mlflow: Any, parent_id: str, children: list[Any], status: str) -> None:
    """End the parent run `status`, and first every child of it still RUNNING (its job died
    without closing it): ``KILLED`` when `status` is, else ``FAILED``. Never raises."""
    ended = "KILLED" if status == "KILLED" else "FAILED"

    def end_children() -> None:
        for run_id in [c.info.run_id for c in children if c.info.status == "RUNNING"]:
            log.warning("ragcite: tracking: child run %s was still running; marked %s",
                        run_id, ended)
            mlflow.set_terminated(run_id, ended)

    store.logged("could not check the sweep's child runs", end_children)
    store.logged(f"could not close the sweep run {parent_id}",
                 lambda: mlflow.set_terminated(parent_id, status))

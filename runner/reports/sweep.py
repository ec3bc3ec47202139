"""The sweep report: ``sweep.html`` in a multirun's folder, from its ``sweep.json``.

``sweep.json`` (schema version 2, written by ``runner.sweep``) lists one entry per *result*
(every threshold of every job): its folder relative to the sweep (``dir``), its job folder
(``job``) and number (``num``), its ``threshold`` (``value``, ``level``), the job's
``overrides``, whether it is ``complete`` and its ``metrics.json``; and ``best``, the best
result per metric (``{"dir", "value"}``). The report shows every result side by side, the best
per metric as the summary names it (the reader computes no best), charts of each metric versus
the threshold (``threshold.value``) per matcher, and links to each result's ``report.html``.
Re-render by hand with ``python -m runner.reports.sweep SWEEP_DIR``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runner.reports.common import METRIC_KEYS, METRIC_NAMES, rel_link, render, write_html
from runner.reports.sweep_charts import charts

SWEEP_FILE = "sweep.json"
REPORT_FILE = "sweep.html"
RUN_REPORT = "report.html"
# Overrides that only name where or how a job writes: never a difference worth a column.
_QUIET_KEYS = ("output_root", "progress", "report", "tracking", "hydra.", "cache.", "run_name",
               "experiment")


def split_override(override: str) -> tuple[str, str]:
    """``key=value`` → (key without ``+``/``~``, value)."""
    key, _, value = str(override).partition("=")
    return key.lstrip("+~"), value


def _quiet(key: str) -> bool:
    return any(key == q or key.startswith(q if q.endswith(".") else q + ".")
               for q in _QUIET_KEYS)


def _varying(entries: Sequence[Mapping[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """Override keys whose values differ between results, and those every result shares."""
    values: dict[str, set[str]] = {}
    order: list[str] = []
    for entry in entries:
        for key in dict(split_override(o) for o in entry.get("overrides") or []):
            if key not in values:
                values[key] = set()
                order.append(key)
    for entry in entries:
        seen = dict(split_override(o) for o in entry.get("overrides") or [])
        for key in order:
            values[key].add(seen.get(key, "∅"))
    varying = [k for k in order if len(values[k]) > 1 and not _quiet(k)]
    common = {k: next(iter(values[k])) for k in order
              if len(values[k]) == 1 and not _quiet(k)}
    return varying, common


def _threshold_text(threshold: Mapping[str, Any]) -> str:
    value = threshold.get("value")
    text = f"{value:g}" if isinstance(value, (int, float)) else "n/a"
    return f"{text} ({threshold['level']})" if threshold.get("level") else text


def _row(entry: Mapping[str, Any], sweep_dir: Path, varying: Sequence[str]) -> dict[str, Any]:
    """One result of the sweep as a table row."""
    m = entry.get("metrics") or {}
    overrides = dict(split_override(o) for o in entry.get("overrides") or [])
    folder = str(entry["dir"])
    threshold = dict(entry.get("threshold") or m.get("threshold") or {})
    matcher = m.get("matcher") or {}
    report = sweep_dir / folder / RUN_REPORT
    return {
        "num": entry.get("num"), "dir": folder, "job": str(entry.get("job") or folder),
        "link": rel_link(*Path(folder).parts, RUN_REPORT) if report.is_file() else None,
        "complete": bool(entry.get("complete")) and bool(m),
        "dataset": (m.get("dataset") or {}).get("name") or "?",
        "model": (m.get("model") or {}).get("name") or "?",
        "matcher": matcher.get("name") or overrides.get("matcher") or "?",
        "matcher_identity": matcher.get("identity") or {},
        "threshold": threshold.get("value"),
        "threshold_text": _threshold_text(threshold),
        "config": [f"{k}={overrides[k]}" for k in varying if k in overrides],
        "vals": {k: (m.get("metrics") or {}).get(k) for k in METRIC_KEYS},
        "bands": {k: (m.get("bands") or {}).get(k) or "none" for k in METRIC_KEYS},
        "ci": {k: (m.get("ci") or {}).get(k) for k in METRIC_KEYS},
        "n_scored": m.get("n_scored"), "n_errors": m.get("n_errors"),
        "gates": (m.get("gates") or {}).get("passed"),
    }


def _best(summary: Mapping[str, Any], rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The best result per metric, as ``sweep.json``'s ``best`` names it (ties: a list)."""
    by_dir = {r["dir"]: r for r in rows}
    out = []
    for key in METRIC_KEYS:
        entry = (summary.get("best") or {}).get(key) or {}
        dirs = entry.get("dir")
        names = [dirs] if isinstance(dirs, str) else list(dirs or [])
        winners = [by_dir[d] for d in names if d in by_dir]
        out.append({"key": key, "name": METRIC_NAMES[key], "value": entry.get("value"),
                    "rows": winners, "dirs": [r["dir"] for r in winners]})
    return out


def build_context(summary: Mapping[str, Any], sweep_dir: Path) -> dict[str, Any]:
    """Everything the sweep template shows, from ``sweep.json``."""
    entries = list(summary.get("jobs") or [])
    varying, common = _varying(entries)
    rows = [_row(entry, sweep_dir, varying) for entry in entries]
    started = sorted(str(((e.get("metrics") or {}).get("run") or {}).get("started_at") or "")
                     for e in entries)
    started = [s for s in started if s]
    jobs = list(dict.fromkeys(r["job"] for r in rows))
    return {
        "title": f"ragcite sweep report — {sweep_dir.name}",
        "name": sweep_dir.name,
        "started_at": started[0] if started else None,
        "failed": bool(summary.get("failed")),
        "n_jobs": int(summary.get("n_jobs") or len(jobs)),
        "n_results": len(rows),
        "n_complete": sum(1 for r in rows if r["complete"]),
        "incomplete": [*dict.fromkeys([*map(str, summary.get("incomplete_jobs") or []),
                                       *(r["dir"] for r in rows if not r["complete"])])],
        "varying": varying,
        "common": common,
        "rows": rows,
        "best": _best(summary, rows),
        "matcher_charts": charts(rows),
    }


def render_sweep_report(sweep_dir: str | Path, output: str | Path | None = None) -> Path:
    """Render ``sweep.html`` into a sweep folder from its ``sweep.json``.

    Returns:
        The path of the report.
    """
    sweep_dir = Path(sweep_dir)
    summary = json.loads((sweep_dir / SWEEP_FILE).read_text(encoding="utf-8"))
    version = summary.get("schema_version")
    if version != 2:
        raise ValueError(f"{sweep_dir / SWEEP_FILE}: schema_version {version!r} is not "
                         "supported (this ragcite reads version 2)")
    context = build_context(summary, sweep_dir)
    return write_html(Path(output) if output else sweep_dir / REPORT_FILE,
                      render("report_sweep.html.j2", **context))


def main(argv: list[str] | None = None) -> int:
    """``python -m runner.reports.sweep SWEEP_DIR``: (re)render a sweep report."""
    parser = argparse.ArgumentParser(prog="python -m runner.reports.sweep",
                                     description="Render sweep.html for a ragcite sweep folder.")
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="default: SWEEP_DIR/sweep.html")
    args = parser.parse_args(argv)
    try:
        path = render_sweep_report(args.sweep_dir, output=args.out)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

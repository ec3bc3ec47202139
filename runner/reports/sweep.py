"""The sweep report: ``sweep.html`` in a multirun's folder, from its ``sweep.json``.

``runner.sweep`` writes ``sweep.json`` (every job's ``metrics.json`` embedded) when a multirun
ends and then calls :func:`render_sweep_report`. The report shows every job side by side, the
best job per metric, metric-versus-threshold charts per matcher and links to each job's
``report.html``. Re-render by hand with ``python -m runner.reports.sweep SWEEP_DIR``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runner.reports.common import (
    METRIC_KEYS,
    METRIC_NAMES,
    band_of,
    fmt,
    rel_link,
    render,
    write_html,
)

SWEEP_FILE = "sweep.json"
REPORT_FILE = "sweep.html"
_TIE = 1e-12
# Overrides that only name where or how a job writes: never a difference worth a column.
_QUIET_KEYS = ("output_root", "progress", "report", "tracking", "hydra.", "cache.", "run_name",
               "experiment")


def _split(override: str) -> tuple[str, str]:
    key, _, value = str(override).partition("=")
    return key.lstrip("+~"), value


def _quiet(key: str) -> bool:
    return any(key == q or key.startswith(q if q.endswith(".") else q + ".")
               for q in _QUIET_KEYS)


def _varying(jobs: Sequence[Mapping[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """Override keys whose values differ between jobs, and those every job shares."""
    values: dict[str, set[str]] = {}
    order: list[str] = []
    for job in jobs:
        seen = dict(_split(o) for o in job.get("overrides") or [])
        for key in seen:
            if key not in values:
                values[key] = set()
                order.append(key)
    for job in jobs:
        seen = dict(_split(o) for o in job.get("overrides") or [])
        for key in order:
            values[key].add(seen.get(key, "∅"))
    varying = [k for k in order if len(values[k]) > 1 and not _quiet(k)]
    common = {k: next(iter(values[k])) for k in order
              if len(values[k]) == 1 and not _quiet(k)}
    return varying, common


def _job_row(job: Mapping[str, Any], sweep_dir: Path, varying: Sequence[str]) -> dict[str, Any]:
    m = job.get("metrics") or {}
    bands = (m.get("scoring") or {}).get("bands") or {"green": 0.75, "medium": 0.25}
    overrides = dict(_split(o) for o in job.get("overrides") or [])
    report = sweep_dir / str(job["dir"]) / "report.html"
    values = (m.get("metrics") or {})
    ci = m.get("ci") or {}
    matcher = m.get("matcher") or {}
    return {
        "num": job.get("num"),
        "dir": str(job["dir"]),
        "link": rel_link(str(job["dir"]), "report.html") if report.is_file() else None,
        "complete": bool(job.get("complete")),
        "dataset": (m.get("dataset") or {}).get("name") or "?",
        "model": (m.get("model") or {}).get("name") or "?",
        "matcher": matcher.get("name") or overrides.get("matcher") or "?",
        "threshold": matcher.get("threshold"),
        "config": [f"{k}={overrides[k]}" for k in varying if k in overrides],
        "vals": {k: values.get(k) for k in METRIC_KEYS},
        "bands": {k: band_of(values.get(k), bands) for k in METRIC_KEYS},
        "ci": {k: ci.get(k) for k in METRIC_KEYS},
        "n_cases": m.get("n_cases"), "n_scored": m.get("n_scored"),
        "n_errors": m.get("n_errors"),
        "gates": (m.get("gates") or {}).get("passed"),
        "matcher_identity": matcher.get("identity") or {},
    }


def _best(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key in METRIC_KEYS:
        scored = [r for r in rows if r["complete"] and r["vals"][key] is not None]
        if not scored:
            out.append({"key": key, "name": METRIC_NAMES[key], "value": None, "jobs": []})
            continue
        top = max(r["vals"][key] for r in scored)
        winners = [r for r in scored if r["vals"][key] >= top - _TIE]
        out.append({"key": key, "name": METRIC_NAMES[key], "value": top, "jobs": winners})
    return out


def _series_key(row: Mapping[str, Any], varying: Sequence[str]) -> tuple[str, str]:
    """Jobs that differ only in threshold form one line; the label names what else differs."""
    parts = [c for c in row["config"]
             if not _split(c)[0].endswith("threshold") and _split(c)[0] != "matcher"]
    identity = {k: v for k, v in (row["matcher_identity"] or {}).items() if k != "class"}
    key = json.dumps([row["dataset"], row["model"], identity, parts], sort_keys=True, default=str)
    label = " ".join(parts) if parts else f"{row['model']} · {row['dataset']}"
    return key, label


def _charts(rows: Sequence[dict[str, Any]], varying: Sequence[str]) -> list[dict[str, Any]]:
    """Per matcher: six small charts of a metric versus the threshold, one line per series."""
    width, height, left, right, top, bottom = 330.0, 190.0, 34.0, 10.0, 10.0, 22.0
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["complete"] and row["threshold"] is not None:
            groups.setdefault(row["matcher"], []).append(row)
    out = []
    for matcher, members in groups.items():
        series: dict[str, dict[str, Any]] = {}
        for row in members:
            key, label = _series_key(row, varying)
            series.setdefault(key, {"label": label, "rows": []})["rows"].append(row)
        xs = sorted({float(r["threshold"]) for r in members})
        lo, hi = xs[0], xs[-1]
        if hi - lo < 1e-9:
            lo, hi = lo - 0.1, hi + 0.1

        def sx(v: float, lo: float = lo, hi: float = hi) -> float:
            return round(left + (v - lo) / (hi - lo) * (width - left - right), 2)

        def sy(v: float) -> float:
            v = min(max(v, 0.0), 1.0)
            return round(top + (1.0 - v) * (height - top - bottom), 2)

        legend = [{"index": i % 8, "label": s["label"]} for i, s in enumerate(series.values())]
        charts = []
        for metric in METRIC_KEYS:
            lines = []
            for i, s in enumerate(series.values()):
                points = []
                for row in sorted(s["rows"], key=lambda r: float(r["threshold"])):
                    value = row["vals"][metric]
                    if value is None:
                        continue
                    ci = row["ci"][metric]
                    points.append({
                        "x": sx(float(row["threshold"])), "y": sy(value), "value": value,
                        "threshold": row["threshold"],
                        "ci": [sy(ci[1]), sy(ci[0])] if ci else None,
                        "ci_text": f"[{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "",
                    })
                path = " ".join(("M" if k == 0 else "L") + f"{p['x']} {p['y']}"
                                for k, p in enumerate(points)) if len(points) > 1 else ""
                lines.append({"index": i % 8, "label": s["label"], "points": points,
                              "path": path})
            charts.append({
                "metric": metric, "title": f"{METRIC_NAMES[metric]} versus threshold ({matcher})",
                "name": METRIC_NAMES[metric],
                "width": width, "height": height, "left": left, "right": right,
                "series": lines,
                "yticks": [{"y": sy(t), "label": f"{t:g}"} for t in (0.0, 0.25, 0.5, 0.75, 1.0)],
                "xticks": [{"x": sx(x), "label": f"{x:g}"} for x in xs],
            })
        out.append({"matcher": matcher, "legend": legend, "charts": charts,
                    "n_jobs": len(members), "thresholds": xs})
    return out


def build_context(summary: Mapping[str, Any], sweep_dir: Path) -> dict[str, Any]:
    """Everything the sweep template shows, from ``sweep.json``."""
    jobs = list(summary.get("jobs") or [])
    varying, common = _varying(jobs)
    rows = [_job_row(job, sweep_dir, varying) for job in jobs]
    started = sorted(str((j.get("metrics") or {}).get("run", {}).get("started_at") or "")
                     for j in jobs if j.get("metrics"))
    started = [s for s in started if s]
    return {
        "title": f"ragcite sweep report — {sweep_dir.name}",
        "name": sweep_dir.name,
        "started_at": started[0] if started else None,
        "failed": bool(summary.get("failed")),
        "n_jobs": len(jobs),
        "n_complete": sum(1 for r in rows if r["complete"]),
        "incomplete": [r for r in rows if not r["complete"]],
        "varying": varying,
        "common": common,
        "rows": rows,
        "best": _best(rows),
        "matcher_charts": _charts(rows, varying),
    }


def render_sweep_report(sweep_dir: str | Path, output: str | Path | None = None) -> Path:
    """Render ``sweep.html`` into a sweep folder from its ``sweep.json``.

    Returns:
        The path of the report.
    """
    sweep_dir = Path(sweep_dir)
    summary = json.loads((sweep_dir / SWEEP_FILE).read_text(encoding="utf-8"))
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

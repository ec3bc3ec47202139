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
from urllib.parse import quote

from runner.config.naming import model_text
from runner.reports import common
from runner.reports.common import METRIC_KEYS, stacked_bars
from runner.results import REPORT_FILE as RUN_REPORT

SWEEP_FILE = "sweep.json"
REPORT_FILE = "sweep.html"
# Overrides that only name where or how a job writes: never a difference worth a column.
_QUIET_KEYS = ("output_root", "progress", "report", "tracking", "hydra.", "cache.", "run_name",
               "experiment")


def report_link(sweep_dir: Path, folder: str) -> str | None:
    """A relative link to a result's report, each segment percent-encoded: its own
    ``report.html``, or its job's page of several thresholds with the result's folder as the
    fragment that selects it (``0/report.html#t0.3``); None when there is neither."""
    parts = Path(folder).parts
    if (sweep_dir / folder / RUN_REPORT).is_file():
        return "/".join(quote(p, safe="") for p in (*parts, RUN_REPORT))
    if len(parts) > 1 and (sweep_dir / folder).parent.joinpath(RUN_REPORT).is_file():
        return "/".join(quote(p, safe="") for p in (*parts[:-1], RUN_REPORT)) + "#" + quote(
            parts[-1], safe="")
    return None


def split_override(override: str) -> tuple[str, str]:
    """``key=value`` → (key without ``+``/``~``, value; a local path as :func:`place` shows
    it)."""
    key, _, value = str(override).partition("=")
    return key.lstrip("+~"), common.place(value)


def _varying(entries: Sequence[Mapping[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """Override keys whose values differ between results, and those every result shares."""
    parsed = [dict(split_override(o) for o in entry.get("overrides") or []) for entry in entries]
    order = [k for k in dict.fromkeys(k for overrides in parsed for k in overrides) if not any(
        k == q or k.startswith(q if q.endswith(".") else q + ".") for q in _QUIET_KEYS)]
    values = {key: {overrides.get(key, "∅") for overrides in parsed} for key in order}
    return ([k for k in order if len(values[k]) > 1],
            {k: next(iter(v)) for k, v in values.items() if len(v) == 1})


def _row(entry: Mapping[str, Any], sweep_dir: Path, varying: Sequence[str]) -> dict[str, Any]:
    """One result of the sweep as a table row."""
    m = entry.get("metrics") or {}
    overrides = dict(split_override(o) for o in entry.get("overrides") or [])
    folder = str(entry["dir"])
    threshold = dict(entry.get("threshold") or m.get("threshold") or {})
    matcher = m.get("matcher") or {}
    return {
        "num": entry.get("num"), "dir": folder, "job": str(entry.get("job") or folder),
        "link": report_link(sweep_dir, folder),
        "complete": bool(entry.get("complete")) and bool(m),
        "dataset": (m.get("dataset") or {}).get("name") or "?",
        "model": model_text(m.get("model") or {}),  # the model and its system
        "matcher": matcher.get("name") or overrides.get("matcher") or "?",
        "matcher_identity": matcher.get("identity") or {},
        "threshold": threshold.get("value"), "level": threshold.get("level"), "m": m,
        "config": [f"{k}={overrides[k]}" for k in varying if k in overrides],
        "vals": {k: (m.get("metrics") or {}).get(k) for k in METRIC_KEYS},
        "ci": {k: (m.get("ci") or {}).get(k) for k in METRIC_KEYS},
        "diagnosis": stacked_bars(m) if m else []}


# --- charts: each metric versus the threshold, per matcher, one line per other variation ---


def _series_key(row: Mapping[str, Any]) -> tuple[str, str]:
    """Results that differ only in threshold form one line; the label names what else differs."""
    names = [(c, split_override(c)[0]) for c in row["config"]]
    parts = [c for c, name in names if not name.endswith("threshold") and name != "matcher"]
    identity = {k: v for k, v in (row["matcher_identity"] or {}).items() if k != "class"}
    key = json.dumps([row["dataset"], row["model"], identity, parts], sort_keys=True, default=str)
    label = " ".join(parts) if parts else f"{row['model']} · {row['dataset']}"
    return key, label


def _matcher_charts(matcher: str, members: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A matcher's results as chart series (the template draws them): a line per series
    through its thresholds, or a bar per series when they share one threshold."""
    series: dict[str, dict[str, Any]] = {}
    for row in members:
        key, label = _series_key(row)
        series.setdefault(key, {"label": label, "rows": []})["rows"].append(row)
    groups = [{**s, "index": i % 8, "short": " ".join(
        split_override(p)[1] if "=" in p else p for p in str(s["label"]).split(" "))[:22]}
        for i, s in enumerate(series.values())]
    xs = sorted({float(r["threshold"]) for r in members})
    return {"matcher": matcher, "bars": len(xs) == 1 and len(groups) > 1, "xs": xs,
            "n_results": len(members), "series": groups}


def _charts(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per matcher: six small charts of a metric versus the threshold, one line per series."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if row["complete"] and isinstance(row["threshold"], (int, float)):
            groups.setdefault(row["matcher"], []).append(row)
    return [_matcher_charts(matcher, members) for matcher, members in groups.items()]


def build_context(summary: Mapping[str, Any], sweep_dir: Path) -> dict[str, Any]:
    """Everything the sweep template shows, from ``sweep.json``."""
    entries = list(summary.get("jobs") or [])
    varying, common = _varying(entries)
    rows = [_row(entry, sweep_dir, varying) for entry in entries]
    started = min(filter(None, (str(((e.get("metrics") or {}).get("run") or {}).get("started_at")
                                    or "") for e in entries)), default=None)
    return {
        "summary": summary, "name": summary.get("name") or sweep_dir.name,  # what was swept
        "started_at": started, "failed": bool(summary.get("failed")),
        "n_jobs": int(summary.get("n_jobs") or len({r["job"] for r in rows})),
        "incomplete": [*dict.fromkeys([*map(str, summary.get("incomplete_jobs") or []),
                                       *(r["dir"] for r in rows if not r["complete"]),
                                       *(f"job {j.get('num')}: not run"
                                         for j in summary.get("not_run") or [])])],
        "varying": varying, "common": common, "rows": rows,
        "matcher_charts": _charts(rows), "cases": summary.get("scored_cases")}


def render_sweep_report(sweep_dir: str | Path, output: str | Path | None = None) -> Path:
    """Render ``sweep.html`` into a sweep folder from its ``sweep.json``.

    Returns:
        The path of the report.
    """
    sweep_dir = Path(sweep_dir)
    summary = json.loads((sweep_dir / SWEEP_FILE).read_text(encoding="utf-8"))
    if (version := summary.get("schema_version")) != 2:
        raise ValueError(f"{sweep_dir / SWEEP_FILE}: schema_version {version!r} is not "
                         "supported (this ragcite reads version 2)")
    return common.write_html(Path(output) if output else sweep_dir / REPORT_FILE,
                             common.render("report_sweep.html.j2",
                                           **build_context(summary, sweep_dir)))


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

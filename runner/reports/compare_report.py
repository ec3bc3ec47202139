"""The HTML report of ``ragcite-compare`` (``runner.reports.compare`` computes its data)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.reports.common import (
    LABEL_TEXT,
    METRIC_KEYS,
    METRIC_NAMES,
    render,
    safe_href,
    write_html,
)
from runner.reports.compare_load import RunData
from runner.results import CaseResult

_EXPLAIN_KEYS = ("context_recall", "context_precision", "context",
                 "source_recall", "source_precision", "source")


def _forest(comparison: Mapping[str, Any], max_drop: float | None) -> dict[str, Any]:
    """Geometry of the difference chart: each metric's paired mean and interval around 0."""
    entries = comparison["metrics"]
    extent = 0.05
    for key in METRIC_KEYS:
        e = entries[key]
        for v in (e["paired_mean_delta"], *(e["ci"] or [])):
            if v is not None and math.isfinite(v):
                extent = max(extent, abs(v))
    if max_drop:
        extent = max(extent, float(max_drop))
    extent = min(1.0, math.ceil(extent * 1.15 * 20) / 20)
    width, left, right, row_h, top = 560.0, 130.0, 20.0, 26.0, 28.0

    def x(v: float) -> float:
        return round(left + (v + extent) / (2 * extent) * (width - left - right), 2)

    rows = []
    for i, key in enumerate(METRIC_KEYS):
        e = entries[key]
        y = top + i * row_h + row_h / 2
        rows.append({"key": key, "name": METRIC_NAMES[key], "y": y,
                     "mean": None if e["paired_mean_delta"] is None else x(e["paired_mean_delta"]),
                     "ci": None if e["ci"] is None else [x(e["ci"][0]), x(e["ci"][1])],
                     "verdict": e["verdict"]})
    ticks = [{"x": x(t), "label": f"{t:+g}" if t else "0"}
             for t in (-extent, -extent / 2, 0.0, extent / 2, extent)]
    return {"width": width, "height": top + len(METRIC_KEYS) * row_h + 22, "left": left,
            "zero": x(0.0), "rows": rows, "ticks": ticks, "top": top,
            "bottom": top + len(METRIC_KEYS) * row_h,
            "drop": x(-float(max_drop)) if max_drop else None}


def _case_side(case: CaseResult) -> dict[str, Any]:
    response = case.response or {}
    cits = response.get("citations") or []
    return {
        "error": case.error,
        "answer": response.get("answer"),
        "citations": [{"source": c.get("source", ""), "content": c.get("content", ""),
                       "label": case.citation_labels[j] if j < len(case.citation_labels) else ""}
                      for j, c in enumerate(cits)],
        "references": [{"source": r.get("source", ""), "content": r.get("content", ""),
                        "label": case.reference_labels[i] if i < len(case.reference_labels)
                        else ""} for i, r in enumerate(case.references)],
        "explanations": [case.explanations[k] for k in _EXPLAIN_KEYS if case.explanations.get(k)],
        "bands": {k: case.bands.get(k) or "none" for k in METRIC_KEYS},
    }


def render_compare_report(a: RunData, b: RunData, comparison: Mapping[str, Any],
                          gates: Mapping[str, Any], output: Path,
                          max_drop: float | None = None) -> Path:
    """Write the comparison report (HTML) to `output`."""
    bands_a, bands_b = a.metrics.get("bands") or {}, b.metrics.get("bands") or {}
    changed = []
    for entry in comparison["changed"]:
        ca, cb = a.cases[entry["id"]], b.cases[entry["id"]]
        changed.append({**entry, "query": ca.query, "side_a": _case_side(ca),
                        "side_b": _case_side(cb)})
    rows = []
    for key in METRIC_KEYS:
        e = comparison["metrics"][key]
        rows.append({"key": key, "name": METRIC_NAMES[key], **e,
                     "band_a": bands_a.get(key) or "none", "band_b": bands_b.get(key) or "none",
                     "gated": key in gates["metrics"],
                     "failed": any(f.startswith(key + ":") for f in gates["failures"])})
    sides = {"a": dict(comparison["a"]), "b": dict(comparison["b"])}
    for side in sides.values():
        side["href"] = safe_href(side.get("link"))
        # Two runs of one config share a name: the heading then uses the folder or run id.
        side["title"] = (side["name"] if comparison["a"]["name"] != comparison["b"]["name"]
                         else side["label"])
    context = {
        "title": f"ragcite comparison — {sides['a']['title']} vs {sides['b']['title']}",
        "A": sides["a"], "B": sides["b"], "cmp": comparison, "rows": rows,
        "gates": gates, "changed": changed, "forest": _forest(comparison, max_drop),
        "label_text": LABEL_TEXT,
    }
    return write_html(output, render("report_compare.html.j2", **context))

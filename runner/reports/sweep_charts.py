"""The sweep report's charts: each metric versus the threshold (``threshold.value``), per
matcher, one line per combination of everything else that varies."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runner.reports.common import METRIC_KEYS, METRIC_NAMES, fmt

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 330.0, 190.0, 34.0, 10.0, 10.0, 22.0


def _series_key(row: Mapping[str, Any]) -> tuple[str, str]:
    """Results that differ only in threshold form one line; the label names what else differs."""
    parts = [c for c in row["config"]
             if not c.partition("=")[0].lstrip("+~").endswith("threshold")
             and c.partition("=")[0].lstrip("+~") != "matcher"]
    identity = {k: v for k, v in (row["matcher_identity"] or {}).items() if k != "class"}
    key = json.dumps([row["dataset"], row["model"], identity, parts], sort_keys=True, default=str)
    label = " ".join(parts) if parts else f"{row['model']} · {row['dataset']}"
    return key, label


def _points(rows: Sequence[Mapping[str, Any]], metric: str, sx: Callable[[float], float],
            sy: Callable[[float], float]) -> list[dict[str, Any]]:
    points = []
    for row in sorted(rows, key=lambda r: float(r["threshold"])):
        value = row["vals"][metric]
        if value is None:
            continue
        ci = row["ci"][metric]
        points.append({
            "x": sx(float(row["threshold"])), "y": sy(value), "value": value,
            "threshold": row["threshold_text"],
            "ci": [sy(ci[1]), sy(ci[0])] if ci else None,
            "ci_text": f"[{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "",
        })
    return points


def _matcher_charts(matcher: str, members: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    series: dict[str, dict[str, Any]] = {}
    for row in members:
        key, label = _series_key(row)
        series.setdefault(key, {"label": label, "rows": []})["rows"].append(row)
    xs = sorted({float(r["threshold"]) for r in members})
    lo, hi = xs[0], xs[-1]
    if hi - lo < 1e-9:
        lo, hi = lo - 0.1, hi + 0.1

    def sx(v: float) -> float:
        return round(LEFT + (v - lo) / (hi - lo) * (WIDTH - LEFT - RIGHT), 2)

    def sy(v: float) -> float:
        return round(TOP + (1.0 - min(max(v, 0.0), 1.0)) * (HEIGHT - TOP - BOTTOM), 2)

    out = []
    for metric in METRIC_KEYS:
        lines = []
        for i, s in enumerate(series.values()):
            points = _points(s["rows"], metric, sx, sy)
            path = " ".join(("M" if k == 0 else "L") + f"{p['x']} {p['y']}"
                            for k, p in enumerate(points)) if len(points) > 1 else ""
            lines.append({"index": i % 8, "label": s["label"], "points": points, "path": path})
        out.append({
            "metric": metric, "title": f"{METRIC_NAMES[metric]} versus threshold ({matcher})",
            "name": METRIC_NAMES[metric], "width": WIDTH, "height": HEIGHT, "left": LEFT,
            "right": RIGHT, "series": lines,
            "yticks": [{"y": sy(t), "label": f"{t:g}"} for t in (0.0, 0.25, 0.5, 0.75, 1.0)],
            "xticks": [{"x": sx(x), "label": f"{x:g}"} for x in xs],
        })
    legend = [{"index": i % 8, "label": s["label"]} for i, s in enumerate(series.values())]
    return {"matcher": matcher, "legend": legend, "charts": out, "n_results": len(members),
            "thresholds": [f"{x:g}" for x in xs]}


def charts(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per matcher: six small charts of a metric versus the threshold, one line per series."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if row["complete"] and isinstance(row["threshold"], (int, float)):
            groups.setdefault(row["matcher"], []).append(row)
    return [_matcher_charts(matcher, members) for matcher, members in groups.items()]

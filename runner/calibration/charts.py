"""The inline SVG charts of the calibration page, as numbers for the template to draw: the ROC
curve, and the similarity distributions by label with the thresholds marked. Coordinates are
computed here; the template only writes them out (so nothing from the data reaches the markup
but numbers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.metrics import roc_curve

SIZE = 260
"""The side of a chart's plotting area, in SVG units."""
PAD = 34
BINS = 20


def _xy(x: float, y: float) -> str:
    return f"{PAD + x * SIZE:.1f},{PAD + (1 - y) * SIZE:.1f}"


def roc_chart(sims: Sequence[float], labels: Sequence[bool], threshold: float,
              best: float | None) -> dict[str, Any] | None:
    """The ROC polyline and the two operating points (threshold in effect, best threshold);
    None without both labels."""
    s, y = np.asarray(sims, dtype=np.float64), np.asarray(labels, dtype=bool)
    if y.all() or not y.any():
        return None
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)  # a corner per similarity

    def point(t: float) -> dict[str, Any]:
        hit = s >= t
        fx, ty = float((hit & ~y).sum() / (~y).sum()), float((hit & y).sum() / y.sum())
        x, yy = _xy(fx, ty).split(",")
        return {"x": x, "y": yy, "fpr": fx, "tpr": ty, "t": t}

    ticks = [{"v": f"{v:g}", "x": f"{PAD + v * SIZE:.1f}", "y": f"{PAD + (1 - v) * SIZE:.1f}"}
             for v in (0, 0.25, 0.5, 0.75, 1)]
    return {"size": SIZE + 2 * PAD, "pad": PAD, "end": PAD + SIZE, "ticks": ticks,
            "points": " ".join(_xy(float(a), float(b)) for a, b in zip(fpr, tpr)),
            "now": point(threshold), "best": None if best is None else point(best)}


def distribution_chart(sims: Sequence[float], labels: Sequence[bool],
                       bounds: Sequence[float], threshold: float,
                       best: float | None) -> dict[str, Any]:
    """Histograms of the similarities of the true and the false pairs (share of each label
    per bin), the threshold in effect and the best threshold as vertical lines."""
    s, y = np.asarray(sims, dtype=np.float64), np.asarray(labels, dtype=bool)
    low, high = float(bounds[0]), float(bounds[1])
    edges = np.linspace(low, high, BINS + 1)
    width = SIZE / BINS

    def x_of(v: float) -> float:
        return PAD + (v - low) / ((high - low) or 1.0) * SIZE

    bars = []
    for label, cls, offset in ((True, "fill-green", 0.0), (False, "fill-red", width / 2)):
        counts, _ = np.histogram(s[y == label], bins=edges)
        total = max(int(counts.sum()), 1)
        for i, c in enumerate(counts):
            if c:
                h = c / total * SIZE
                bars.append({"cls": cls, "x": f"{PAD + i * width + offset:.1f}",
                             "y": f"{PAD + SIZE - h:.1f}", "w": f"{width / 2:.1f}",
                             "h": f"{h:.1f}", "n": int(c), "label": label,
                             "range": f"[{edges[i]:g}, {edges[i + 1]:g}"
                                      f"{']' if i == BINS - 1 else ')'}"})
    ticks = [{"v": f"{v:g}", "x": f"{x_of(v):.1f}"} for v in np.linspace(low, high, 5)]
    return {"size": SIZE + 2 * PAD, "pad": PAD, "end": PAD + SIZE, "bars": bars,
            "ticks": ticks, "threshold": {"x": f"{x_of(threshold):.1f}", "v": threshold},
            "best": None if best is None else {"x": f"{x_of(best):.1f}", "v": best}}

"""The figures of the run report, laid out from ``metrics.json`` alone.

Every number shown here is read from ``metrics.json``: the macro means, intervals and micro
figures, the bands of the means (``bands``), the label counts, the per-metric histograms
(``histograms``) and the failed cases (``failed``). This module only places them: card texts
(:mod:`runner.reports.sentences` words them) and the geometry of the small scales and charts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.reports.cases import clip
from runner.reports.common import params_text, safe_href
from runner.reports.diagnosis import stacked_bars
from runner.reports.sentences import card_sentence
from runner.scoring.bands import DEFAULT_BANDS, band
from runner.scoring.metrics import Metric, declared


def run_bands(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The run's band bounds (``scoring.bands``), for the scales' zones."""
    return dict((metrics.get("scoring") or {}).get("bands") or DEFAULT_BANDS)


def run_metrics(metrics: Mapping[str, Any]) -> list[Metric]:
    """The declarations of the run's metrics (``metrics.json``'s ``metrics``), in its order."""
    return declared(metrics.get("metrics") or {})


def metric_cards(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One card per metric: its mean, band (``metrics.json``'s ``bands``), interval, micro."""
    bounds = run_bands(metrics)
    cards = []
    for m in run_metrics(metrics):
        key = m.name
        value, ci, micro = ((metrics.get(s) or {}).get(key) for s in ("metrics", "ci", "micro"))
        cards.append({
            "key": key, "name": m.title, "short": m.short, "about": m.about, "value": value,
            "band": (metrics.get("bands") or {}).get(key) or "none",
            "sentence": card_sentence(key, metrics),
            # The seed's texts: what 1.0, 0.5 and 0.0 mean (a legend, not about this run).
            "legend": list(zip(("1.0", "0.5", "0.0"), m.band_text)),
            "ci": ci, "micro": micro, "bar": interval_bar(value, ci, micro, bounds),
        })
    return cards


def interval_bar(value: float | None, ci: list[float] | None, micro: float | None,
                 bands: Mapping[str, float], width: float = 240.0) -> dict[str, Any]:
    """Geometry of the small 0-1 scale under a figure: band zones, the CI, the mean, micro."""
    def x(v: float) -> float:
        return round(min(max(v, 0.0), 1.0) * width, 2)

    medium, green = float(bands.get("medium", 0.25)), float(bands.get("green", 0.75))
    zones = [{"band": "red", "x": 0.0, "w": x(medium)},
             {"band": "medium", "x": x(medium), "w": round(x(green) - x(medium), 2)},
             {"band": "green", "x": x(green), "w": round(width - x(green), 2)}]
    return {
        "width": width, "zones": zones,
        "ci": None if not ci else {"x": x(ci[0]), "w": max(round(x(ci[1]) - x(ci[0]), 2), 1.0)},
        "mean": None if value is None else x(value),
        "micro": None if micro is None else x(micro),
    }


def label_bars(labels: Mapping[str, int]) -> list[dict[str, Any]]:
    """A stacked bar each for citation and reference labels (:func:`stacked_bars`), kind
    capitalised (the template adds what each label means, ``LABEL_TEXT``)."""
    return [{**bar, "kind": bar["kind"].capitalize()} for bar in stacked_bars(labels)]


def distributions(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A histogram chart per metric from ``metrics.json``'s ``histograms``; each bar coloured
    by the band zone its lower edge lies in, the mean marked."""
    width, height = 240.0, 80.0
    bounds = run_bands(metrics)
    out = []
    for m in run_metrics(metrics):
        hist = (metrics.get("histograms") or {}).get(m.name) or {}
        counts = [int(c) for c in hist.get("counts") or []]
        low, high = float(hist.get("low", 0.0)), float(hist.get("high", 1.0))
        step, bw = (high - low) / max(len(counts), 1), width / max(len(counts), 1)
        top = max(counts, default=0) or 1
        bars = []
        for i, count in enumerate(counts):
            h, edge = round(height * count / top, 2), low + i * step
            bars.append({"x": round(i * bw, 2), "y": round(height - h, 2), "w": round(bw - 1, 2),
                         "h": h, "count": count, "band": band(edge, bounds) or "none",
                         "range": f"{edge:.2f}–{edge + step:.2f}"
                                  + (f" (incl. {high:.2f})" if i == len(counts) - 1 else "")})
        mean = (metrics.get("metrics") or {}).get(m.name)
        out.append({"key": m.name, "name": m.title, "bars": bars, "width": width,
                    "height": height, "n": sum(counts),
                    "undefined": int(hist.get("undefined") or 0),
                    "mean_x": None if mean is None else round(min(max(mean, 0), 1) * width, 2)})
    return out


def failed_list(metrics: Mapping[str, Any], shown: int) -> tuple[int, list[dict[str, str]]]:
    """The number of failed cases and the first `shown` of ``failed.listed`` (errors clipped
    for the page)."""
    failed = metrics.get("failed") or {}
    count = int(failed.get("count", metrics.get("n_errors") or 0))
    listed = [{"id": str(f.get("id")), "error": clip(f.get("error"), 2000)}
              for f in (failed.get("listed") or [])[:max(shown, 0)]]
    return count, listed


_IDENTITY = {  # a field of the run's identity: its section of ``metrics.json`` and key there
    "started_at": ("run", "started_at"), "version": ("run", "ragcite_version"),
    "dataset_path": ("dataset", "path"), "dataset_digest": ("dataset", "digest"),
    "threshold": ("threshold", "value"), "threshold_level": ("threshold", "level"),
    "zero_division": ("scoring", "zero_division"),
    "require_same_source": ("scoring", "require_same_source"),
    "confidence": ("bootstrap", "confidence"),
}


def identity(metrics: Mapping[str, Any], result_dir: Path,
             tracking_link: str | None) -> dict[str, Any]:
    """What the run is: its name, dataset, model, matcher, threshold, scoring settings."""
    def sec(name: str) -> Mapping[str, Any]:
        return metrics.get(name) or {}

    boot = sec("bootstrap")
    return {
        **{name: sec(section).get(key) for name, (section, key) in _IDENTITY.items()},
        "name": sec("run").get("name") or result_dir.name,
        "dataset": sec("dataset").get("name") or "unknown",
        "model": sec("model").get("name") or "unknown",
        "model_params": params_text(sec("model").get("identity")),
        "matcher": sec("matcher").get("name") or "unknown",
        "matcher_params": params_text(sec("matcher").get("identity")),
        "normalization": ", ".join(sec("scoring").get("source_normalization") or []),
        "bootstrap": (f"{int(boot['resamples'])} resamples, "
                      f"{100 * float(boot['confidence']):g}% percentile"
                      if boot.get("resamples") is not None and boot.get("confidence") is not None
                      else None),
        "tracking_link": tracking_link,
        "tracking_href": safe_href(tracking_link),
        "coverage": metrics.get("coverage") or None,
    }

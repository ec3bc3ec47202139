"""Bands of metric values (SPEC 6); each metric's band texts are declared with it
(:attr:`Metric.band_text <runner.scoring.metrics.Metric.band_text>`)."""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_BANDS: dict[str, float] = {"green": 0.75, "medium": 0.25}
"""Lower bounds: green ≥ 0.75, medium ≥ 0.25, red below."""


def band(value: float | None, bands: Mapping[str, float] = DEFAULT_BANDS) -> str | None:
    """``green`` when value ≥ bands['green'], ``medium`` when ≥ bands['medium'], else ``red``.

    Returns None for an undefined value.
    """
    if value is None:
        return None
    return "green" if value >= bands["green"] else "medium" if value >= bands["medium"] else "red"

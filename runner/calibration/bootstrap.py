"""Seeded bootstrap intervals of the calibration figures.

A resample draws ``n_pos`` positive and ``n_neg`` negative pairs with replacement (stratified
by label, so every resample has both and its ROC area is defined). Pairs with the same
similarity and label are interchangeable, so a resample is fully described by how many were
drawn at each distinct similarity: multinomial counts with the observed frequencies as
probabilities, drawn for all resamples at once (:func:`resample_counts`). The same seed gives
the same intervals.

An interval is the percentile interval ``[q_{(1−c)/2}, q_{(1+c)/2}]`` of a figure over the
resamples (undefined values left out), widened when needed to contain the estimate itself
(a skewed figure on a small set can put the estimate outside its percentile interval).
"""

from __future__ import annotations

import numpy as np


def resample_counts(pos: np.ndarray, neg: np.ndarray, resamples: int,
                    seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``resamples`` stratified resamples of the positive and negative counts per distinct
    similarity (shape ``(resamples, k)`` each)."""
    rng = np.random.default_rng(seed)

    def draw(counts: np.ndarray) -> np.ndarray:
        n = int(counts.sum())
        if n == 0:
            return np.zeros((resamples, len(counts)))
        return rng.multinomial(n, counts / n, size=resamples).astype(np.float64)

    return draw(pos), draw(neg)


def interval(samples: np.ndarray, estimate: float, confidence: float) -> list[float] | None:
    """The percentile interval of `samples`, containing `estimate`; None when the estimate
    or every sample is undefined."""
    defined = samples[np.isfinite(samples)]
    if not np.isfinite(estimate) or defined.size == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(defined, [tail, 100 - tail])
    return [float(min(lo, estimate)), float(max(hi, estimate))]

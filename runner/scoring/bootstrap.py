"""The project's one bootstrap: seeded percentile intervals over resampled items.

Items with the same value are interchangeable, so a resample is fully described by how many
were drawn of each distinct value: multinomial counts with the observed frequencies as
probabilities, drawn for all resamples at once (:func:`resample_counts`). Run figures
(:func:`runner.scoring.aggregate.bootstrap_ci`, and through it ``ragcite-compare``) draw one
stratum per metric column; calibration (:func:`bootstrap`) draws the true and the false pairs
as two strata, so every resample has both labels. The same seed gives the same intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np


def resample_counts(rng: np.random.Generator, counts: np.ndarray,
                    resamples: int) -> np.ndarray:
    """``resamples`` draws, with replacement, of as many items as `counts` holds: how many of
    each distinct value each resample drew (shape ``(resamples, len(counts))``)."""
    n = int(counts.sum())
    if n == 0:
        return np.zeros((resamples, len(counts)))
    return rng.multinomial(n, counts / n, size=resamples).astype(np.float64)


def interval(samples: np.ndarray, confidence: float,
             estimate: float | None = None) -> list[float] | None:
    """The percentile interval ``[q_{(1−c)/2}, q_{(1+c)/2}]`` of the defined `samples`, widened
    to contain `estimate` when one is given (a skewed figure on a small set can put it outside);
    None when no sample (or the estimate given) is defined."""
    defined = samples[np.isfinite(samples)]
    if defined.size == 0 or (estimate is not None and not np.isfinite(estimate)):
        return None
    alpha = (1.0 - confidence) / 2.0
    low, high = (float(q) for q in np.quantile(defined, [alpha, 1.0 - alpha]))
    return [low, high] if estimate is None else [min(low, estimate), max(high, estimate)]


def bootstrap(statistic: Callable[..., Mapping[str, float]], strata: Sequence[np.ndarray],
              estimate: Mapping[str, float], resamples: int, confidence: float,
              seed: int) -> dict[str, list[float] | None]:
    """Percentile intervals of the figures `statistic` computes from resampled counts.

    Args:
        statistic: The figures of one resample, called with one count array per stratum.
        strata: The observed count of each distinct value, per stratum (each resampled to its
            own size).
        estimate: The figures on the data itself; each interval contains its estimate.
        resamples: Bootstrap resamples.
        confidence: Two-sided coverage, e.g. 0.95 → the 2.5th and 97.5th percentiles.
        seed: Seeds the resampling.

    Returns:
        One ``[low, high]`` (or None when undefined) per key of `estimate`.
    """
    rng = np.random.default_rng(seed)
    draws = [resample_counts(rng, counts, resamples) for counts in strata]
    samples = [statistic(*(d[b] for d in draws)) for b in range(resamples)]
    return {k: interval(np.array([s[k] for s in samples], dtype=np.float64), confidence, v)
            for k, v in estimate.items()}

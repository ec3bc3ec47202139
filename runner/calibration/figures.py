"""A matcher's calibration figures from its similarities and people's labels.

:func:`calibrate` summarises the pairs per distinct similarity once and hands those counts to
each metric family: :mod:`~runner.calibration.roc`, :mod:`~runner.calibration.confusion`,
:mod:`~runner.calibration.best`, then the same for every bootstrap resample at once
(:mod:`~runner.calibration.bootstrap`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runner.calibration.best import balanced_accuracies, best_threshold, paste_value
from runner.calibration.bootstrap import interval, resample_counts
from runner.calibration.confusion import RATE_KEYS, confusion, rates
from runner.calibration.roc import auc

FIGURE_KEYS = ("auc", *RATE_KEYS, "best_threshold", "best_balanced_accuracy")
"""The figures of a matcher that carry a bootstrap interval."""
COUNT_KEYS = ("tp", "fp", "tn", "fn", "n_pos", "n_neg")
MIN_PER_LABEL = 10
"""The true and the false pairs a recommended threshold needs, at least, of each: with fewer,
one pair moves its label's rate by more than 0.1 and the balanced accuracy by more than 0.05."""


def label_counts(similarities: np.ndarray,
                 labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct similarities (ascending) and the positive and negative pairs at each."""
    values, codes = np.unique(similarities, return_inverse=True)
    k = len(values)
    pos = np.bincount(codes[labels], minlength=k).astype(np.float64)
    neg = np.bincount(codes[~labels], minlength=k).astype(np.float64)
    return values, pos, neg


def _number(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def _figures(values: np.ndarray, pos: np.ndarray, neg: np.ndarray, threshold: float,
             bounds: tuple[float, float]) -> dict[str, np.ndarray]:
    """Every figure of :data:`FIGURE_KEYS`, for one row or a stack of resampled rows."""
    counts = confusion(values, pos, neg, threshold)
    out = {"auc": auc(pos, neg), **rates(**counts)}
    ba = balanced_accuracies(pos, neg)
    rows = ba.reshape(-1, ba.shape[-1])
    best = np.array([best_threshold(values, row, bounds)[:2] for row in rows])
    out["best_threshold"] = best[:, 0].reshape(ba.shape[:-1])
    out["best_balanced_accuracy"] = best[:, 1].reshape(ba.shape[:-1])
    return out


def withheld(counts: dict[str, int], auc: float | None, auc_interval: list[float] | None,
             confidence: float) -> str | None:
    """Why the labels cannot support recommending a threshold, or None when they can: fewer
    than :data:`MIN_PER_LABEL` true or false pairs, an AUC not above 0.5 (the matcher ranks
    true pairs no higher than false ones), or an AUC interval that includes 0.5 (the labels
    cannot tell the matcher from chance; only when intervals were computed)."""
    n_pos, n_neg = counts["n_pos"], counts["n_neg"]
    if min(n_pos, n_neg) < MIN_PER_LABEL or auc is None:
        return (f"too few labels: {n_pos} true and {n_neg} false pairs; a recommendation "
                f"needs at least {MIN_PER_LABEL} of each")
    if auc <= 0.5:
        return (f"the matcher ranks true pairs no higher than false ones: AUC {auc:.3f} is not "
                f"above 0.5 (chance)")
    if auc_interval is not None and auc_interval[0] <= 0.5:
        return (f"the AUC's {confidence:.0%} interval [{auc_interval[0]:.3f}, "
                f"{auc_interval[1]:.3f}] includes 0.5: these labels cannot tell the matcher "
                f"from chance")
    return None


def calibrate(similarities: np.ndarray, labels: np.ndarray, threshold: float,
              bounds: tuple[float, float] = (0.0, 1.0), resamples: int = 1000,
              confidence: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """The calibration figures of one matcher (the ``matchers.<name>`` entry of
    ``calibration.json``, less its name and identity).

    Args:
        similarities: One similarity per labelled pair.
        labels: The people's labels, in the same order.
        threshold: The threshold in effect (``scoring.threshold``).
        bounds: The matcher's similarity range (the best threshold stays inside it).
        resamples: Bootstrap resamples (0: no intervals).
        confidence: The intervals' two-sided coverage.
        seed: Seeds the resampling.

    Returns:
        The figures, their ``intervals``, the ``counts`` behind them, ``paste``, the best
        threshold as the shortest decimal that decides the pairs the same way, and
        ``withheld``, why the labels cannot support recommending it (:func:`withheld`).
    """
    sims = np.asarray(similarities, dtype=np.float64)
    labels = np.asarray(labels, dtype=bool)
    values, pos, neg = label_counts(sims, labels)
    point = {k: float(v) for k, v in _figures(values, pos, neg, threshold, bounds).items()}
    counts = {k: int(v) for k, v in confusion(values, pos, neg, threshold).items()}
    counts.update(n_pos=int(pos.sum()), n_neg=int(neg.sum()))
    best, _, lo, hi = best_threshold(values, balanced_accuracies(pos, neg), bounds)
    ci: dict[str, list[float] | None] = dict.fromkeys(FIGURE_KEYS)
    if resamples > 0:
        bpos, bneg = resample_counts(pos, neg, resamples, seed)
        samples = _figures(values, bpos, bneg, threshold, bounds)
        ci = {k: interval(samples[k], point[k], confidence) for k in FIGURE_KEYS}
    return {
        "n_pairs": len(sims), "threshold": float(threshold),
        **{k: _number(point[k]) for k in FIGURE_KEYS},
        "best_interval": None if math.isnan(best) else [lo, hi],
        "paste": None if math.isnan(best) else paste_value(best, lo, hi),
        "intervals": ci, "counts": counts,
        "withheld": withheld(counts, _number(point["auc"]), ci["auc"], confidence),
        "bootstrap": {"resamples": int(resamples), "confidence": float(confidence),
                      "seed": int(seed), "method": "percentile, stratified by label"},
    }

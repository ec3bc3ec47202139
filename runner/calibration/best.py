"""The threshold that maximises balanced accuracy, in one pass over the distinct similarities.

With the distinct similarities ``v_0 < … < v_{k-1}``, a threshold decides the same pairs
anywhere in ``(v_{j-1}, v_j]``: the pairs at or above ``v_j`` match. So there are ``k + 1``
candidates, ``j = 0 … k`` (``j = k``: nothing matches), and suffix sums give each one's
``tp_j`` and ``fp_j`` at once:

    balanced_accuracy_j = ½ (tp_j / n_pos + 1 − fp_j / n_neg)

The best candidates form runs of consecutive ``j`` (one interval of thresholds each); the
widest run wins (the lowest on a tie) and the threshold is the middle of its interval, the
value farthest from both neighbouring similarities. Candidate ``j = 0`` spans
``[low, v_0]`` and ``j = k`` spans ``(v_{k-1}, high]`` (``low``, ``high``: the matcher's
similarity range; ``j = k`` is left out when ``v_{k-1} = high``).
"""

from __future__ import annotations

import numpy as np


def balanced_accuracies(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """The balanced accuracy of each candidate ``j = 0 … k`` (shape ``(..., k + 1)``)."""
    zero = np.zeros((*pos.shape[:-1], 1))
    tp = np.concatenate([np.cumsum(pos[..., ::-1], axis=-1)[..., ::-1], zero], axis=-1)
    fp = np.concatenate([np.cumsum(neg[..., ::-1], axis=-1)[..., ::-1], zero], axis=-1)
    n_pos, n_neg = pos.sum(axis=-1, keepdims=True), neg.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        # One division of whole numbers, as in runner.calibration.confusion.rates.
        return np.asarray((tp * n_neg + (n_neg - fp) * n_pos) / (2 * n_pos * n_neg),
                          dtype=np.float64)


def intervals(values: np.ndarray, bounds: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """The lower and upper end of each candidate's interval of thresholds."""
    low, high = bounds
    lower = np.concatenate([[min(low, values[0])], values])
    upper = np.concatenate([values, [high]])
    return lower, upper


def best_threshold(values: np.ndarray, ba: np.ndarray,
                   bounds: tuple[float, float]) -> tuple[float, float, float, float]:
    """The best threshold of one row of candidate balanced accuracies.

    Args:
        values: The distinct similarities, ascending.
        ba: :func:`balanced_accuracies` of one row (``k + 1`` candidates).
        bounds: The matcher's similarity range.

    Returns:
        ``(threshold, balanced accuracy, lower end, upper end)`` of the chosen interval; NaNs
        when the balanced accuracy is undefined (no positive or no negative pair).
    """
    lower, upper = intervals(values, bounds)
    usable = np.isfinite(ba)
    if values[-1] >= bounds[1]:
        usable[-1] = False  # nothing can match: no threshold above the highest similarity
    if not usable.any():
        return (float("nan"),) * 4
    top = ba[usable].max()
    best = usable & (ba >= top - 1e-12)
    edges = np.diff(np.concatenate([[0], best.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    widths = upper[ends] - lower[starts]
    run = int(np.argmax(widths))  # the first of the widest
    lo, hi = float(lower[starts[run]]), float(upper[ends[run]])
    return (lo + hi) / 2, float(top), lo, hi


def paste_value(threshold: float, lo: float, hi: float) -> float:
    """The shortest decimal (2 to 6 places) that decides the pairs as `threshold` does: inside
    ``(lo, hi]`` (``[lo, hi]`` when ``lo = hi``); the threshold itself when none is."""
    for places in range(2, 7):
        value = round(threshold, places)
        if lo < value <= hi or value == lo == hi:
            return value
    return threshold

"""Figures of the decisions at one threshold: a pair matches when its similarity is ``>=`` it.

With ``tp`` (labelled true, matched), ``fp`` (false, matched), ``tn`` (false, not matched) and
``fn`` (true, not matched), ``n = tp + fp + tn + fn``:

- ``recall = tp / (tp + fn)``; ``precision = tp / (tp + fp)``;
  ``f1 = 2 · precision · recall / (precision + recall)``;
- ``balanced_accuracy = ½ (tp / (tp + fn) + tn / (tn + fp))``;
- Cohen's ``kappa = (p_o − p_e) / (1 − p_e)`` with the observed agreement
  ``p_o = (tp + tn) / n`` and the agreement expected by chance
  ``p_e = ((tp + fp)(tp + fn) + (tn + fn)(tn + fp)) / n²``.

A figure whose denominator is zero is NaN (written as null). Counts may carry leading axes
(bootstrap resamples).
"""

from __future__ import annotations

import numpy as np

RATE_KEYS = ("balanced_accuracy", "precision", "recall", "f1", "kappa")


def confusion(values: np.ndarray, pos: np.ndarray, neg: np.ndarray,
              threshold: float) -> dict[str, np.ndarray]:
    """``tp``, ``fp``, ``tn``, ``fn`` at `threshold`, from the positive and negative pairs at
    each distinct similarity (``values``, ascending; ``pos``/``neg`` of shape ``(..., k)``)."""
    hit = values >= threshold
    tp, fp = (pos * hit).sum(axis=-1), (neg * hit).sum(axis=-1)
    return {"tp": tp, "fp": fp, "tn": neg.sum(axis=-1) - fp, "fn": pos.sum(axis=-1) - tp}


def kappa(tp: np.ndarray, fp: np.ndarray, tn: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """Cohen's kappa of two yes/no raters from their 2×2 table (see the module)."""
    tp, fp, tn, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, tn, fn))
    # The same ratio multiplied out, one division of whole numbers (exact to the last bit):
    # κ = 2 (tp·tn − fn·fp) / ((tp + fp)(fp + tn) + (tp + fn)(fn + tn)); 0/0 when p_e = 1.
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(2 * (tp * tn - fn * fp)
                          / ((tp + fp) * (fp + tn) + (tp + fn) * (fn + tn)), dtype=np.float64)


def rates(tp: np.ndarray, fp: np.ndarray, tn: np.ndarray,
          fn: np.ndarray) -> dict[str, np.ndarray]:
    """The figures of :data:`RATE_KEYS` from the counts (see the module)."""
    tp, fp, tn, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, tn, fn))
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = tp / (tp + fn)
        precision = tp / (tp + fp)
        # One division of whole numbers: exact to the last bit (0.6, not 0.6000000000000001).
        balanced = (tp * (tn + fp) + tn * (tp + fn)) / (2 * (tp + fn) * (tn + fp))
        f1 = 2 * tp / (2 * tp + fp + fn)
    return {"balanced_accuracy": balanced, "precision": precision,
            "recall": recall, "f1": f1, "kappa": kappa(tp, fp, tn, fn)}

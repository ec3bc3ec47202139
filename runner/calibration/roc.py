"""ROC area and curve of similarities against labels.

Every function takes the labels summarised per distinct similarity: ``values`` (ascending,
shape ``(k,)``) and the number of positive and negative pairs at each value, ``pos`` and ``neg``
of shape ``(..., k)``; leading axes are bootstrap resamples, computed at once.
"""

from __future__ import annotations

import numpy as np


def auc(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """The area under the ROC curve, ties counted half.

    ``AUC = U / (n_pos · n_neg)`` with the Mann-Whitney statistic
    ``U = Σ over positive pairs of (#negatives with a lower similarity + ½ #negatives with the
    same similarity)``: the chance that a random positive pair scores above a random negative
    one, a tie counting one half. NaN without a positive or a negative pair.
    """
    below = np.cumsum(neg, axis=-1) - neg
    u = (pos * (below + 0.5 * neg)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(u / (pos.sum(axis=-1) * neg.sum(axis=-1)), dtype=np.float64)


def roc_curve(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ROC curve's corners, from (0, 0) to (1, 1): lowering the threshold past each distinct
    similarity from the highest, ``FPR = fp / n_neg`` and ``TPR = tp / n_pos`` of the pairs at
    or above it (one row of `pos` and `neg`). Joining them by straight lines gives the area of
    :func:`auc`."""
    tp = np.concatenate([[0], np.cumsum(pos[::-1])])
    fp = np.concatenate([[0], np.cumsum(neg[::-1])])
    with np.errstate(invalid="ignore", divide="ignore"):
        return fp / max(fp[-1], 1), tp / max(tp[-1], 1)

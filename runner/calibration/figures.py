"""A matcher's calibration figures from its similarities and people's labels, and the
annotators' agreement with each other; the statistics are scikit-learn's.

The pairs are summarised once per distinct similarity (``values``, ascending; ``pos`` and
``neg``: the true and false pairs at each), given to scikit-learn as weights. A pair matches
when its similarity is ``>=`` the threshold. The ROC area: ``auc`` of ``roc_curve`` (what
``roc_auc_score`` computes; ties count half). At the threshold in effect:
``confusion_matrix``, ``balanced_accuracy_score`` (½ (tp/(tp+fn) + tn/(tn+fp))),
``cohen_kappa_score``, precision, recall and F1.

The best threshold maximises balanced accuracy over the ``k + 1`` candidates ``j = 0 … k``
(pairs at or above ``v_j`` match; ``j = k``: nothing matches), read off ``roc_curve``: the best
candidates form runs of consecutive ``j`` (one interval of thresholds each); the widest run
wins (the lowest on a tie) and the threshold is the middle of its interval. Candidate ``0``
spans ``[low, v_0]`` and ``k`` spans ``(v_{k-1}, high]`` (the matcher's similarity range; ``k``
is left out when ``v_{k-1} = high``). Intervals: the project's bootstrap
(:mod:`runner.scoring.bootstrap`), the true and the false pairs resampled apart. A figure whose
denominator is zero is NaN (written as null).

Annotators: Cohen's kappa (two) or Fleiss' kappa (more; ``P_i = (Σ_j n_ij² − m) / (m (m − 1))``,
``P̄_e = Σ_j p_j²``, ``κ = (P̄ − P̄_e) / (1 − P̄_e)``) on the items all of them labelled.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import sklearn
from sklearn.metrics import (
    auc,
    balanced_accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    roc_curve,
)

from runner.calibration.pairs import LabelledPair, annotators
from runner.scoring.bootstrap import bootstrap

FIGURE_KEYS = ("auc", "balanced_accuracy", "precision", "recall", "f1", "kappa",
               "best_threshold", "best_balanced_accuracy")
"""The figures of a matcher that carry a bootstrap interval."""
MIN_PER_LABEL = 10
"""The true and the false pairs a recommended threshold needs, at least, of each: with fewer,
one pair moves its label's rate by more than 0.1 and the balanced accuracy by more than 0.05."""
NAN = float("nan")
BEST = ("best_threshold", "best_balanced_accuracy", "low", "high")


def best_threshold(fpr: np.ndarray, tpr: np.ndarray, cuts: np.ndarray,
                   bounds: tuple[float, float]) -> tuple[float, float, float, float]:
    """``(threshold, balanced accuracy, lower end, upper end)`` of the best interval, from
    ``roc_curve``'s corners (see the module)."""
    ba, seen = ((tpr - fpr + 1) / 2)[::-1], cuts[1:][::-1]  # ascending: j = 0 … k
    lower = np.concatenate([[min(bounds[0], seen[0])], seen])
    upper = np.concatenate([seen, [bounds[1]]])
    usable = np.ones(len(ba), dtype=bool)
    usable[-1] = seen[-1] < bounds[1]  # nothing can match only below the range's top
    top = ba[usable].max()
    best = usable & (ba >= top - 1e-12)
    edges = np.diff(np.concatenate([[0], best.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    run = int(np.argmax(upper[ends] - lower[starts]))  # the first of the widest
    lo, hi = float(lower[starts[run]]), float(upper[ends[run]])
    return (lo + hi) / 2, float(ba[starts[run]]), lo, hi


def paste_value(threshold: float, lo: float, hi: float) -> float:
    """The shortest decimal (2 to 6 places) that decides the pairs as `threshold` does: inside
    ``(lo, hi]`` (``[lo, hi]`` when ``lo = hi``); the threshold itself when none is."""
    for places in range(2, 7):
        value = round(threshold, places)
        if lo < value <= hi or value == lo == hi:
            return value
    return threshold


def figures(values: np.ndarray, pos: np.ndarray, neg: np.ndarray, threshold: float,
            bounds: tuple[float, float]) -> dict[str, float]:
    """Every figure of :data:`FIGURE_KEYS`, the counts at `threshold` and the best interval's
    ends (see the module)."""
    w = np.concatenate([pos, neg])  # an entry per value and label drawn
    y = np.repeat([True, False], len(values))[w > 0]
    s, w = np.tile(values, 2)[w > 0], w[w > 0]
    pred = s >= threshold
    with warnings.catch_warnings():  # one label: its undefined figures are NaN
        warnings.simplefilter("ignore")
        tn, fp, fn, tp = (float(c) for c in confusion_matrix(
            y, pred, labels=[False, True], sample_weight=w).ravel())
        out = {"kappa": float(cohen_kappa_score(y, pred, sample_weight=w)), "tp": tp,
               "fp": fp, "tn": tn, "fn": fn, **dict.fromkeys(FIGURE_KEYS[:2] + BEST, NAN)}
        if y.any() and not y.all():
            fpr, tpr, cuts = roc_curve(y, s, sample_weight=w, drop_intermediate=False)
            out.update(zip(BEST, best_threshold(fpr, tpr, cuts, bounds)), auc=float(auc(fpr, tpr)),
                       balanced_accuracy=float(balanced_accuracy_score(y, pred,
                                                                       sample_weight=w)))
    with np.errstate(invalid="ignore", divide="ignore"):
        out.update(precision=float(np.float64(tp) / (tp + fp)),
                   recall=float(np.float64(tp) / (tp + fn)),
                   f1=float(np.float64(2 * tp) / (2 * tp + fp + fn)))
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


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


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
    values, codes = np.unique(sims, return_inverse=True)  # pairs per distinct similarity
    pos, neg = (np.bincount(codes[x], minlength=len(values)).astype(np.float64)
                for x in (labels, ~labels))
    point = figures(values, pos, neg, threshold, bounds)
    counts = {k: int(point[k]) for k in ("tp", "fp", "tn", "fn")}
    counts.update(n_pos=int(pos.sum()), n_neg=int(neg.sum()))
    best, lo, hi = point["best_threshold"], point["low"], point["high"]
    ci: dict[str, list[float] | None] = dict.fromkeys(FIGURE_KEYS)
    if resamples > 0:
        with sklearn.config_context(skip_parameter_validation=True, assume_finite=True):
            ci = bootstrap(lambda p, n: figures(values, p, n, threshold, bounds), (pos, neg),
                           {k: point[k] for k in FIGURE_KEYS}, resamples, confidence, seed)
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


def fleiss_kappa(table: np.ndarray) -> float:
    """Fleiss' kappa of an ``(N items, categories)`` table of rater counts, the same number of
    raters per item (see the module)."""
    table = np.asarray(table, dtype=np.float64)
    m = table[0].sum()
    p_bar = (((table * table).sum(axis=1) - m) / (m * (m - 1))).mean()
    p_e = float(((table.sum(axis=0) / table.sum()) ** 2).sum())
    return NAN if p_e >= 1 else float((p_bar - p_e) / (1 - p_e))


def annotator_agreement(pairs: Sequence[LabelledPair]) -> dict[str, Any] | None:
    """The annotators' kappa with each other, or None with fewer than two named annotators
    or no item labelled by all of them (pairs are the same item when their
    :attr:`~runner.calibration.pairs.LabelledPair.item` is)."""
    names = annotators(list(pairs))
    labels: dict[tuple[Any, ...], dict[str, bool]] = {}
    for pair in pairs:
        if pair.annotator is not None:
            labels.setdefault(pair.item, {}).setdefault(pair.annotator, pair.label)
    shared = [by for by in labels.values() if len(by) == len(names)]
    if len(names) < 2 or not shared:
        return None
    if len(names) == 2:
        a, b = ([by[name] for by in shared] for name in names)
        method, value = "cohen", float(cohen_kappa_score(a, b, labels=[False, True]))
    else:
        yes = np.array([sum(by.values()) for by in shared])
        method, value = "fleiss", fleiss_kappa(np.stack([yes, len(names) - yes], axis=1))
    return {"method": method, "kappa": None if math.isnan(value) else value,
            "annotators": names, "n_items": len(shared)}

"""Annotators' agreement with each other: the ceiling a matcher can be held to.

Pairs are the same item when their case, sources and texts are equal
(:attr:`LabelledPair.item <runner.calibration.pairs.LabelledPair.item>`).

- Two annotators: Cohen's kappa on the items both labelled,
  ``κ = (p_o − p_e) / (1 − p_e)`` (:func:`runner.calibration.confusion.kappa`).
- More: Fleiss' kappa on the items all of them labelled. With ``N`` items, ``m`` raters and
  ``n_ij`` the raters who put item ``i`` in category ``j``:
  ``P_i = (Σ_j n_ij² − m) / (m (m − 1))``, ``P̄ = mean P_i``, ``p_j = Σ_i n_ij / (N m)``,
  ``P̄_e = Σ_j p_j²`` and ``κ = (P̄ − P̄_e) / (1 − P̄_e)``.

NaN (null) when chance agreement is 1 (everyone gave every item the same label).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from runner.calibration.confusion import kappa
from runner.calibration.pairs import LabelledPair, annotators


def fleiss_kappa(table: np.ndarray) -> float:
    """Fleiss' kappa of an ``(N items, categories)`` table of rater counts, the same number of
    raters per item (see the module)."""
    table = np.asarray(table, dtype=np.float64)
    m = table[0].sum()
    p_i = ((table * table).sum(axis=1) - m) / (m * (m - 1))
    p_j = table.sum(axis=0) / table.sum()
    p_bar, p_e = p_i.mean(), float((p_j * p_j).sum())
    return float("nan") if p_e >= 1 else float((p_bar - p_e) / (1 - p_e))


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two raters' yes/no labels of the same items."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    return float(kappa((a & b).sum(), (~a & b).sum(), (~a & ~b).sum(), (a & ~b).sum()))


def annotator_agreement(pairs: Sequence[LabelledPair]) -> dict[str, Any] | None:
    """The annotators' kappa with each other, or None with fewer than two named annotators
    or no item labelled by all of them."""
    names = annotators(list(pairs))
    if len(names) < 2:
        return None
    labels: dict[tuple[Any, ...], dict[str, bool]] = {}
    for pair in pairs:
        if pair.annotator is not None:
            labels.setdefault(pair.item, {}).setdefault(pair.annotator, pair.label)
    shared = [by for by in labels.values() if len(by) == len(names)]
    if not shared:
        return None
    if len(names) == 2:
        a = np.array([by[names[0]] for by in shared])
        b = np.array([by[names[1]] for by in shared])
        method, value = "cohen", cohen_kappa(a, b)
    else:
        yes = np.array([sum(by.values()) for by in shared])
        method, value = "fleiss", fleiss_kappa(np.stack([yes, len(names) - yes], axis=1))
    return {"method": method, "kappa": None if np.isnan(value) else value,
            "annotators": names, "n_items": len(shared)}

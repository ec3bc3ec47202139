"""The calibration figures on the hand-labelled fixture (tests/calibration/conftest.py works
them out), the annotators' kappas by hand, and the bootstrap intervals.

The figures are scikit-learn's: its balanced accuracy (the mean of the two recalls, 0.4 and
0.8) and Cohen's kappa (``1 − Σ w·observed / Σ w·expected``) sum in another order than the one
exact division of the hand formulas, so they land a unit or two in the last place off the decimal:
0.6000000000000001 for 0.6 and 0.19999999999999996 for 0.2 (``ULP``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from runner.calibration.figures import (
    FIGURE_KEYS,
    annotator_agreement,
    calibrate,
    fleiss_kappa,
    paste_value,
)
from runner.calibration.html import charts, render_calibration
from runner.calibration.job import run_calibration
from runner.calibration.pairs import LabelledPair, load_pairs
from runner.matchers.ngram import NgramMatcher
from tests.calibration.conftest import FIXTURE, LABELS, SIMILARITIES, ULP


def test_the_fixture_similarities_are_the_ones_worked_out_by_hand() -> None:
    pairs = load_pairs(FIXTURE)
    sims = NgramMatcher(n=1).similarities([(p.reference, p.citation) for p in pairs])
    assert sims == SIMILARITIES
    assert [p.label for p in pairs] == LABELS


def test_hand_computed_figures_at_the_default_threshold() -> None:
    out = calibrate(np.array(SIMILARITIES), np.array(LABELS), 0.5, resamples=0)
    assert out["auc"] == 0.78  # U = 10 + 4.5 + 3 + 2 = 19.5 over 5 · 5, ties counted half
    assert out["counts"] == {"tp": 4, "fp": 3, "tn": 2, "fn": 1, "n_pos": 5, "n_neg": 5}
    assert out["balanced_accuracy"] == ULP(0.6)  # (4/5 + 2/5) / 2
    assert out["recall"] == 0.8
    assert out["precision"] == 4 / 7
    assert out["f1"] == 2 / 3  # 2·4 / (2·4 + 3 + 1)
    assert out["kappa"] == ULP(0.2)  # (0.6 − 0.5) / (1 − 0.5)


def test_the_best_threshold_is_the_middle_of_the_widest_best_interval() -> None:
    out = calibrate(np.array(SIMILARITIES), np.array(LABELS), 0.5, resamples=0)
    # 0.7 on (0, 0.25] and on (0.5, 1]: the wider run wins, its middle is 0.75.
    assert out["best_threshold"] == 0.75
    assert out["best_interval"] == [0.5, 1.0]
    assert out["best_balanced_accuracy"] == 0.7
    assert out["paste"] == 0.75


def test_one_best_run_gives_the_middle_between_neighbouring_similarities() -> None:
    # Sorted: 0.2 F, 0.4 F, 0.6 T, 0.9 T: only (0.4, 0.6] separates them; its middle is 0.5.
    out = calibrate(np.array([0.6, 0.2, 0.9, 0.4]), np.array([True, False, True, False]), 0.3,
                    resamples=0)
    assert (out["best_threshold"], out["best_balanced_accuracy"]) == (0.5, 1.0)
    assert out["auc"] == 1.0
    # At 0.3: 0.4 is a false match: tp 2, fp 1, tn 1 → BA (1 + 0.5)/2.
    assert out["balanced_accuracy"] == 0.75


def test_a_threshold_of_all_ties_has_auc_one_half() -> None:
    out = calibrate(np.array([0.5, 0.5, 0.5]), np.array([True, False, True]), 0.5, resamples=0)
    assert out["auc"] == 0.5
    # Everything matches: no true negative, so precision 2/3 and kappa 0 (p_o = p_e = 2/3).
    assert out["precision"] == 2 / 3 and out["kappa"] == 0.0


def test_undefined_figures_are_null() -> None:
    out = calibrate(np.array([0.1, 0.9]), np.array([True, True]), 0.5, resamples=50)
    assert out["auc"] is None and out["balanced_accuracy"] is None
    assert out["best_threshold"] is None and out["intervals"]["auc"] is None
    assert out["recall"] == 0.5 and out["precision"] == 1.0


def test_the_roc_curve_runs_from_zero_to_one_through_each_distinct_similarity(
        tmp_path: Path) -> None:
    # Lowering the threshold past 1, 0.75, 0.5, 0.25, 0: (fpr, tpr) after each.
    fpr = [0.0, 0.0, 0.2, 0.6, 0.6, 1.0]
    tpr = [0.0, 0.4, 0.6, 0.8, 1.0, 1.0]
    roc = charts({"similarities": SIMILARITIES, "labels": LABELS})["roc"]
    assert roc is not None and roc["points"] == list(zip(fpr, tpr))
    # The trapezoids under it give the AUC: 0.2·0.5 (0.4+0.6)... summed = 0.78.
    assert float(np.trapezoid(tpr, fpr)) == pytest.approx(0.78, abs=1e-15)
    # The page draws it on a 260-unit square 34 units in, with the dot of threshold 0.5 at
    # (0.6, 0.8) and the ring of the best threshold 0.75 at (0.2, 0.6).
    cfg = {"calibrate": {"labels": str(FIXTURE)}, "seed": 0,
           "matcher": {"_target_": "runner.matchers.ngram.NgramMatcher", "n": 1},
           "scoring": {"threshold": "default", "bootstrap": {"resamples": 0, "confidence": 0.95}},
           "cache": {"enabled": False}}
    run_calibration(cfg, tmp_path, "ngram")
    html = render_calibration(tmp_path).read_text(encoding="utf-8")
    points = " ".join(f"{34 + x * 260:.1f},{34 + (1 - y) * 260:.1f}" for x, y in zip(fpr, tpr))
    assert f'<polyline data-roc="ngram" points="{points}"' in html
    assert '<circle cx="190.0" cy="86.0" r="4.5" class="ink"><title>threshold 0.5: TPR 0.800, ' \
           'FPR 0.600</title></circle>' in html
    assert '<circle cx="86.0" cy="138.0" r="7" fill="none" class="stroke-ink" ' \
           'stroke-width="1.5"><title>best threshold 0.750: TPR 0.600, FPR 0.200</title>' in html


def test_bootstrap_intervals_are_deterministic_for_a_seed_and_contain_the_estimate() -> None:
    rng = np.random.default_rng(7)
    sims = np.round(rng.random(60), 1)  # few distinct values: many ties
    labels = rng.random(60) < sims
    one = calibrate(sims, labels, 0.5, resamples=400, seed=3)
    assert one == calibrate(sims, labels, 0.5, resamples=400, seed=3)
    other = calibrate(sims, labels, 0.5, resamples=400, seed=4)
    assert other["intervals"] != one["intervals"]
    for key in FIGURE_KEYS:
        lo, hi = one["intervals"][key]
        assert lo <= one[key] <= hi, key
        assert lo < hi, key


def test_the_fixture_intervals_contain_their_estimates() -> None:
    out = calibrate(np.array(SIMILARITIES), np.array(LABELS), 0.5, resamples=200, seed=0)
    for key in FIGURE_KEYS:
        lo, hi = out["intervals"][key]
        assert lo <= out[key] <= hi, key


def test_paste_value_is_the_shortest_decimal_deciding_alike() -> None:
    assert paste_value(0.6234, 0.6201, 0.6267) == 0.623  # 0.62 is outside (0.6201, 0.6267]
    assert paste_value(0.5, 0.4, 0.6) == 0.5
    assert paste_value(0.61234567, 0.612345, 0.6123461) == 0.612346


def test_fleiss_kappa_by_hand() -> None:
    # 3 raters, yes counts 3, 0, 2, 1: P_i = 1, 1, 1/3, 1/3 → P̄ = 2/3; p_yes = 6/12 → P̄_e = 0.5;
    # κ = (2/3 − 1/2)/(1/2) = 1/3.
    table = np.array([[3, 0], [0, 3], [2, 1], [1, 2]])
    assert fleiss_kappa(table) == pytest.approx(1 / 3, abs=1e-15)


def _pair(ref: str, label: bool, who: str) -> LabelledPair:
    return LabelledPair(reference=ref, citation="c", label=label, annotator=who)


def test_annotator_agreement_uses_cohen_for_two_and_fleiss_for_more() -> None:
    # ana: T T T F F F; bo: T T F F F T. Both yes 2, both no 2, 1 each way: p_o = 4/6,
    # p_e = (3·3 + 3·3)/36 = 0.5, κ = (2/3 − 1/2)/(1/2) = 1/3.
    a = [True, True, True, False, False, False]
    b = [True, True, False, False, False, True]
    pairs = [_pair(f"r{i}", x, "ana") for i, x in enumerate(a)]
    pairs += [_pair(f"r{i}", x, "bo") for i, x in enumerate(b)]
    two = annotator_agreement(pairs)
    assert two is not None and two["method"] == "cohen" and two["n_items"] == 6
    assert two["kappa"] == pytest.approx(1 / 3, abs=1e-15)
    yes = {"r0": 3, "r1": 0, "r2": 2, "r3": 1}
    three = [_pair(r, i < n, who) for r, n in yes.items() for i, who in enumerate("xyz")]
    three.append(_pair("only-x", True, "x"))  # not labelled by all three: left out
    out = annotator_agreement(three)
    assert out is not None and (out["method"], out["n_items"]) == ("fleiss", 4)
    assert out["annotators"] == ["x", "y", "z"]
    assert out["kappa"] == pytest.approx(1 / 3, abs=1e-15)
    assert annotator_agreement(pairs[:6]) is None  # one annotator

"""The hand-labelled fixture of the calibration tests and its similarities worked out by hand.

``tests/fixtures/calibration/hand.jsonl``: 10 pairs of four-word passages, labelled by hand.
Under ``matcher=ngram matcher.n=1`` a pair's similarity is the words the two passages share
over four (every passage has four distinct words):

====  ==========  =====
pair  similarity  label
====  ==========  =====
1     1.00        true
2     1.00        true   (the same words, reordered)
3     0.75        true
4     0.75        false  (a tie across labels)
5     0.50        true
6     0.50        false
7     0.50        false
8     0.25        true
9     0.00        false
10    0.00        false
====  ==========  =====

5 positive and 5 negative pairs. The figures (see each test for the working):

- AUC: U = 2·5 (pairs 1, 2: every negative below) + (4 + ½) (pair 3: four below, pair 4 tied)
  + (2 + 2·½) (pair 5: 9 and 10 below, 6 and 7 tied) + 2 (pair 8) = 19.5; AUC = 19.5 / 25 = 0.78.
- At ngram's default threshold 0.5 (matches: pairs 1-7): tp 4, fp 3, tn 2, fn 1; recall 0.8,
  specificity 0.4, balanced accuracy 0.6, precision 4/7, F1 = 8/12 = 2/3;
  kappa: p_o = 6/10, p_e = (7·5 + 3·5)/100 = 0.5, κ = 0.1/0.5 = 0.2.
- Best threshold: the candidates (thresholds deciding alike) and their balanced accuracy:
  [0, 0] 0.5, (0, 0.25] (1 + 0.4)/2 = 0.7, (0.25, 0.5] 0.6, (0.5, 0.75] (0.6 + 0.8)/2 = 0.7,
  (0.75, 1] (0.4 + 1)/2 = 0.7. Best 0.7 in two runs, (0, 0.25] (width 0.25) and (0.5, 1]
  (width 0.5): the wider wins, and its middle is 0.75.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.reports.conftest import browser, open_page  # noqa: F401  (Chromium, as the reports)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "hand.jsonl"
SIMILARITIES = [1.0, 1.0, 0.75, 0.75, 0.5, 0.5, 0.5, 0.25, 0.0, 0.0]
LABELS = [True, True, True, False, True, False, False, True, False, False]


def ULP(value: float) -> Any:
    """`value`, give or take two units in the last place: scikit-learn's balanced accuracy and
    kappa of the fixture (tests/calibration/test_metrics.py)."""
    return pytest.approx(value, rel=5e-16, abs=0)

"""Per-case metric math (SPEC 5) and the zero-division policies."""

from __future__ import annotations

import pytest

from runner.scoring.case import ScoringOptions
from runner.scoring.metrics import METRIC_KEYS, f1, precision, recall
from tests.scoring.oracle import context_metrics, source_metrics


def test_metric_keys() -> None:
    assert METRIC_KEYS == ("context_recall", "context_precision", "context_f1",
                           "source_recall", "source_precision", "source_f1")


def test_recall_and_precision_fractions() -> None:
    assert recall(2, 3) == 2 / 3  # 2 of 3 references matched
    assert precision(1, 4, expected=3) == 1 / 4  # 1 of 4 citations matched
    assert recall(0, 5) == 0.0
    assert precision(3, 3, expected=0) == 1.0


@pytest.mark.parametrize(("p", "r", "expected"), [
    (1.0, 1.0, 1.0),
    (0.5, 1.0, 2 * 0.5 * 1.0 / 1.5),  # 2PR/(P+R) = 1/1.5 = 2/3
    (1 / 3, 1 / 3, 1 / 3),  # equal P and R -> F1 = P
    (0.0, 0.0, 0.0),  # P + R = 0 -> 0
    (0.0, 1.0, 0.0),  # 0 / 1
])
def test_f1(p: float, r: float, expected: float) -> None:
    assert f1(p, r) == pytest.approx(expected, abs=0, rel=1e-15)


def test_f1_undefined_when_either_side_is() -> None:
    assert f1(None, 1.0) is None
    assert f1(1.0, None) is None


@pytest.mark.parametrize(("policy", "expected"), [
    ("auto", 1.0), ("nan", None), ("zero", 0.0), ("one", 1.0)])
def test_recall_with_nothing_expected(policy: str, expected: float | None) -> None:
    assert recall(0, 0, policy) == expected


@pytest.mark.parametrize(("policy", "nothing_expected", "something_expected"), [
    ("auto", 1.0, 0.0),  # auto: 1.0 only when nothing was expected either
    ("nan", None, None),
    ("zero", 0.0, 0.0),
    ("one", 1.0, 1.0),
])
def test_precision_with_nothing_cited(policy: str, nothing_expected: float | None,
                                      something_expected: float | None) -> None:
    assert precision(0, 0, 0, policy) == nothing_expected
    assert precision(0, 0, 2, policy) == something_expected


def test_unknown_policy() -> None:
    with pytest.raises(ValueError) as exc:
        ScoringOptions(zero_division="ignore")
    assert str(exc.value) == ("scoring.zero_division must be one of auto, nan, zero, one, got "
                              "'ignore'")


def test_context_metrics_duplicates_count_twice() -> None:
    # 2 references, one matched -> recall 1/2. Citations: the same matched passage twice plus a
    # miss -> precision 2/3. F1 = 2 * (2/3) * (1/2) / (2/3 + 1/2) = (2/3) / (7/6) = 4/7.
    m = context_metrics([True, False], [True, True, False])
    assert m["context_recall"] == 0.5
    assert m["context_precision"] == 2 / 3
    assert m["context_f1"] == pytest.approx(4 / 7, rel=1e-15)


@pytest.mark.parametrize(("policy", "expected"), [
    # No references and no citations: recall and precision both hit the zero-division rule.
    ("auto", (1.0, 1.0, 1.0)),
    ("nan", (None, None, None)),
    ("zero", (0.0, 0.0, 0.0)),
    ("one", (1.0, 1.0, 1.0)),
])
def test_context_metrics_nothing_at_all(policy: str, expected: tuple[float | None, ...]) -> None:
    m = context_metrics([], [], policy)
    assert (m["context_recall"], m["context_precision"], m["context_f1"]) == expected


@pytest.mark.parametrize(("policy", "expected"), [
    # 2 references, no citations: recall 0/2 = 0; precision has an empty denominator.
    ("auto", (0.0, 0.0, 0.0)),  # precision 0.0 because something was expected; F1 P+R=0 -> 0
    ("nan", (0.0, None, None)),  # F1 undefined with P undefined
    ("zero", (0.0, 0.0, 0.0)),
    ("one", (0.0, 1.0, 0.0)),  # F1 = 2*1*0/(1+0) = 0
])
def test_context_metrics_no_citations(policy: str, expected: tuple[float | None, ...]) -> None:
    m = context_metrics([False, False], [], policy)
    assert (m["context_recall"], m["context_precision"], m["context_f1"]) == expected


@pytest.mark.parametrize(("policy", "expected"), [
    # No references, 2 citations: precision 0/2 = 0 (nothing to match); recall empty.
    ("auto", (1.0, 0.0, 0.0)),  # F1 = 2*0*1/(0+1) = 0
    ("nan", (None, 0.0, None)),
    ("zero", (0.0, 0.0, 0.0)),
    ("one", (1.0, 0.0, 0.0)),
])
def test_context_metrics_no_references(policy: str, expected: tuple[float | None, ...]) -> None:
    m = context_metrics([], [False, False], policy)
    assert (m["context_recall"], m["context_precision"], m["context_f1"]) == expected


def test_source_metrics_are_set_based() -> None:
    # Seed example 3: expected {DS, RW, AU}, cited {DS, RW, IT}: hits 2 -> 2/3 and 2/3.
    m = source_metrics({"ds", "rw", "au"}, {"ds", "rw", "it"})
    assert m["source_recall"] == 2 / 3
    assert m["source_precision"] == 2 / 3
    assert m["source_f1"] == pytest.approx(2 / 3, rel=1e-15)


def test_source_metrics_partial() -> None:
    # expected {a, b}, cited {a}: recall 1/2, precision 1/1, F1 = 2*1*0.5/1.5 = 2/3.
    m = source_metrics({"a", "b"}, {"a"})
    assert (m["source_recall"], m["source_precision"]) == (0.5, 1.0)
    assert m["source_f1"] == pytest.approx(2 / 3, rel=1e-15)


@pytest.mark.parametrize(("policy", "nothing", "cited_only", "expected_only"), [
    # (recall, precision) for: {} vs {}, {} vs {a}, {a} vs {}.
    ("auto", (1.0, 1.0), (1.0, 0.0), (0.0, 0.0)),
    ("nan", (None, None), (None, 0.0), (0.0, None)),
    ("zero", (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
    ("one", (1.0, 1.0), (1.0, 0.0), (0.0, 1.0)),
])
def test_source_metrics_zero_division(policy: str, nothing: tuple[float | None, ...],
                                      cited_only: tuple[float | None, ...],
                                      expected_only: tuple[float | None, ...]) -> None:
    def rp(exp: set[str], cit: set[str]) -> tuple[float | None, float | None]:
        m = source_metrics(exp, cit, policy)
        return m["source_recall"], m["source_precision"]

    assert rp(set(), set()) == nothing
    assert rp(set(), {"a"}) == cited_only
    assert rp({"a"}, set()) == expected_only

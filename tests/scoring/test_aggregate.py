"""Run-level figures (SPEC 5): macro means, micro figures, bootstrap intervals, label counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runner.matchers import NgramMatcher
from runner.results import CaseResult
from runner.scoring.aggregate import Aggregator, aggregate, bootstrap_ci, macro_mean, micro_metrics
from runner.scoring.case import ScoringOptions, case_pairs, error_case, score_case
from runner.scoring.metrics import METRIC_KEYS
from tests.helpers import VPN, case, seed_example_1, seed_example_2, seed_example_3


def scored(*cases_, zero_division: str = "auto") -> list[CaseResult]:
    m = NgramMatcher()
    opts = ScoringOptions(zero_division=zero_division)
    out = []
    for c in cases_:
        pairs = case_pairs(c, c.response, opts)
        out.append(score_case(c, c.response, dict(zip(pairs, m.similarities(pairs))), opts))
    return out


def test_macro_mean() -> None:
    assert macro_mean([1.0, 0.0, 0.5]) == 0.5  # (1 + 0 + 0.5) / 3
    assert macro_mean([None, 1.0, 0.0]) == 0.5  # None left out: (1 + 0) / 2
    assert macro_mean([None, None]) is None
    assert macro_mean([]) is None


def test_micro_versus_macro_on_two_cases() -> None:
    # Seed example 1: 1/1 refs, 1/1 cits | 1/1 expected, 1/1 cited sources.
    # Seed example 3: 1/3 refs, 1/3 cits | 2/3 expected, 2/3 cited sources.
    result = aggregate(scored(seed_example_1(), seed_example_3()))
    # Macro: mean of per-case values.
    assert result.metrics["context_recall"] == pytest.approx((1 + 1 / 3) / 2, rel=1e-15)  # 2/3
    assert result.metrics["context_precision"] == pytest.approx(2 / 3, rel=1e-15)
    assert result.metrics["context_f1"] == pytest.approx(2 / 3, rel=1e-15)  # (1 + 1/3) / 2
    assert result.metrics["source_recall"] == pytest.approx((1 + 2 / 3) / 2, rel=1e-15)  # 5/6
    assert result.metrics["source_precision"] == pytest.approx(5 / 6, rel=1e-15)
    # Micro: pooled counts. Context: (1 + 1) / (1 + 3) = 2/4 for refs and for cits.
    # Sources: (1 + 2) / (1 + 3) = 3/4 for expected and for cited.
    assert result.micro == {"context_recall": 0.5, "context_precision": 0.5, "context_f1": 0.5,
                            "source_recall": 0.75, "source_precision": 0.75, "source_f1": 0.75}
    assert result.counts == {"references": 4, "references_matched": 2, "citations": 4,
                             "citations_matched": 2, "expected_sources": 4, "cited_sources": 4,
                             "sources_hit": 3}


def test_micro_f1_comes_from_pooled_precision_and_recall() -> None:
    counts = {"references": 4, "references_matched": 1, "citations": 2, "citations_matched": 2,
              "expected_sources": 2, "cited_sources": 1, "sources_hit": 1}
    m = micro_metrics(counts)
    # Context: R = 1/4, P = 2/2 = 1 -> F1 = 2 * 1 * 0.25 / 1.25 = 0.4.
    assert (m["context_recall"], m["context_precision"]) == (0.25, 1.0)
    assert m["context_f1"] == pytest.approx(0.4, rel=1e-15)
    # Source: R = 1/2, P = 1/1 -> F1 = 2 * 0.5 / 1.5 = 2/3.
    assert (m["source_recall"], m["source_precision"]) == (0.5, 1.0)
    assert m["source_f1"] == pytest.approx(2 / 3, rel=1e-15)


@pytest.mark.parametrize(("policy", "expected"), [
    # Pools with nothing at all: every denominator empty.
    ("auto", 1.0), ("nan", None), ("zero", 0.0), ("one", 1.0)])
def test_micro_zero_division(policy: str, expected: float | None) -> None:
    counts = dict.fromkeys(("references", "references_matched", "citations",
                            "citations_matched", "expected_sources", "cited_sources",
                            "sources_hit"), 0)
    assert micro_metrics(counts, policy) == dict.fromkeys(METRIC_KEYS, expected)


def test_nan_values_are_left_out_of_the_means() -> None:
    # Case 1 has no references and no citations: all six undefined under `nan`.
    # Case 2 is seed example 3: 1/3 and 2/3.
    result = aggregate(scored(case([], [], id="empty"), seed_example_3(), zero_division="nan"),
                       zero_division="nan")
    assert result.metrics["context_recall"] == 1 / 3  # mean over the one defined value
    assert result.metrics["source_precision"] == 2 / 3
    assert result.n_scored == 2
    # The interval of a single defined value is that value.
    assert result.ci["context_recall"] == [1 / 3, 1 / 3]


def test_metric_undefined_everywhere_is_none() -> None:
    result = aggregate(scored(case([], [], id="empty"), zero_division="nan"), zero_division="nan")
    assert result.metrics == dict.fromkeys(METRIC_KEYS)
    assert result.ci == dict.fromkeys(METRIC_KEYS)
    assert result.micro == dict.fromkeys(METRIC_KEYS)


def test_errors_are_counted_and_excluded() -> None:
    ok = scored(seed_example_1(), seed_example_2())
    failed_c = case([("A", VPN)], [("A", VPN)], id="bad", error="timeout")
    failed = error_case(failed_c, failed_c.response, "timeout")
    result = aggregate([ok[0], failed, ok[1]])
    assert (result.n_cases, result.n_scored, result.n_errors) == (3, 2, 1)
    assert result.error_rate == 1 / 3
    # Means over the two scored cases only: context recall (1 + 0) / 2, source (1 + 1) / 2.
    assert result.metrics["context_recall"] == 0.5
    assert result.metrics["source_recall"] == 1.0
    # Pooled counts ignore the failed case: 2 references, 1 matched.
    assert (result.counts["references"], result.counts["references_matched"]) == (2, 1)
    assert [c.id for c in result.cases] == ["seed-1", "bad", "seed-2"]


def test_all_cases_failed() -> None:
    c = case([("A", "x")], None)
    result = aggregate([error_case(c, None, "no response for this case")])
    assert (result.n_cases, result.n_scored, result.n_errors) == (1, 0, 1)
    assert result.error_rate == 1.0
    assert result.metrics == dict.fromkeys(METRIC_KEYS)
    assert result.ci == dict.fromkeys(METRIC_KEYS)
    # Nothing was scored, so nothing is pooled: no 1.0 from the zero-division rule.
    assert result.micro == dict.fromkeys(METRIC_KEYS)


def test_empty_run() -> None:
    result = aggregate([])
    assert (result.n_cases, result.n_scored, result.n_errors, result.error_rate) == (0, 0, 0, 0.0)
    assert result.metrics == dict.fromkeys(METRIC_KEYS)


def test_label_counts() -> None:
    result = aggregate(scored(seed_example_2(), seed_example_3()))
    # Example 2: wrong_passage / passage_missed. Example 3: supported, wrong_passage,
    # unexpected_source / cited, passage_missed, source_missed.
    assert result.labels == {
        "citation_supported": 1, "citation_wrong_passage": 2, "citation_unexpected_source": 1,
        "reference_cited": 1, "reference_passage_missed": 2, "reference_source_missed": 1,
    }


def test_bootstrap_is_deterministic_for_a_seed_and_contains_the_mean() -> None:
    rng = np.random.default_rng(123)
    values = rng.random((40, 6))
    a = bootstrap_ci(values, resamples=500, seed=7)
    b = bootstrap_ci(values, resamples=500, seed=7)
    assert a == b
    assert bootstrap_ci(values, resamples=500, seed=8) != a
    for k, interval in enumerate(a):
        assert interval is not None
        low, high = interval
        mean = float(values[:, k].mean())
        assert low < mean < high


def test_bootstrap_two_values() -> None:
    # Two cases, 0 and 1: a resample's mean is 0 (p 1/4), 0.5 (p 1/2) or 1 (p 1/4), so the
    # 2.5th and 97.5th percentiles of 1000 resample means are exactly 0 and 1.
    (interval,) = bootstrap_ci(np.array([[0.0], [1.0]]), resamples=1000, seed=0)
    assert interval == [0.0, 1.0]


def test_bootstrap_constant_column_and_undefined_column() -> None:
    values = np.array([[0.5, math.nan], [0.5, math.nan], [0.5, math.nan]])
    assert bootstrap_ci(values, resamples=200) == [[0.5, 0.5], None]


def test_bootstrap_ignores_undefined_values_within_a_column() -> None:
    # Defined values 1, 1 and an undefined one: every resample mean that exists is 1.
    values = np.array([[1.0], [math.nan], [1.0]])
    assert bootstrap_ci(values, resamples=200) == [[1.0, 1.0]]


def test_bootstrap_without_cases_or_resamples() -> None:
    assert bootstrap_ci(np.empty((0, 2)), resamples=100) == [None, None]
    assert bootstrap_ci(np.ones((3, 2)), resamples=0) == [None, None]


def test_aggregate_records_bootstrap_settings_and_uses_the_seed() -> None:
    results = scored(seed_example_1(), seed_example_2(), seed_example_3())
    a = aggregate(results, resamples=300, confidence=0.9, seed=5)
    b = aggregate(results, resamples=300, confidence=0.9, seed=5)
    assert a.ci == b.ci
    assert a.bootstrap == {"resamples": 300, "confidence": 0.9, "seed": 5,
                           "method": "percentile"}
    # Context recall values 1, 0, 1/3: mean 4/9 inside the interval.
    low, high = a.ci["context_recall"]  # type: ignore[misc]
    assert a.metrics["context_recall"] == pytest.approx(4 / 9, rel=1e-15)
    assert low <= 4 / 9 <= high


def test_aggregator_streams_and_can_drop_cases() -> None:
    agg = Aggregator(keep_cases=False)
    for r in scored(seed_example_1(), seed_example_2()):
        agg.add(r)
    result = agg.result()
    assert result.cases == []
    assert result.n_scored == 2
    # Context precision: (1 + 0) / 2.
    assert result.metrics["context_precision"] == 0.5


def test_merged_aggregators_equal_one_over_all_cases() -> None:
    # Cases 1-2 in one aggregator, an error and case 3 in another (as two worker processes
    # would): merged, every figure equals aggregating all four in order.
    ok = scored(seed_example_1(), seed_example_2(), seed_example_3())
    failed_c = case([("A", VPN)], [("A", VPN)], id="bad", error="timeout")
    failed = error_case(failed_c, failed_c.response, "timeout")
    whole = aggregate([ok[0], ok[1], failed, ok[2]], resamples=200, seed=7)

    first = Aggregator(resamples=200, seed=7)
    first.extend(ok[:2])
    second = first.empty()
    assert (second.n_cases, second.rows, second.resamples, second.seed) == (0, [], 200, 7)
    second.extend([failed, ok[2]])
    first.merge(second)
    merged = first.result()
    assert merged.to_dict() == whole.to_dict()
    assert [c.id for c in merged.cases] == ["seed-1", "seed-2", "bad", "seed-3"]
    # Counts by hand: references 1 + 1 + 3 = 5, citations 1 + 1 + 3 = 5; one error.
    assert (merged.n_cases, merged.n_errors) == (4, 1)
    assert (merged.counts["references"], merged.counts["citations"]) == (5, 5)
    assert merged.labels["citation_supported"] == 2

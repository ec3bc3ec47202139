"""Run-level figures (SPEC 5): macro means, micro figures, bootstrap intervals, label counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runner.matchers import NgramMatcher
from runner.results import CaseResult
from runner.scoring.aggregate import Aggregator, bootstrap_ci, ids_digest
from runner.scoring.case import ScoringOptions, error_case
from runner.scoring.labels import diagnose
from runner.scoring.metrics import METRIC_KEYS, declared
from tests.helpers import VPN, case, seed_example_1, seed_example_2, seed_example_3
from tests.scoring.oracle import add_case, add_cases, aggregate, case_pairs, macro_mean, score_case


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


def micro_metrics(counts: dict[str, int], policy: str = "auto") -> dict[str, float | None]:
    """The declared formulas applied to pooled counts, as the aggregator's micro figures are."""
    return {m.name: m.value(counts, policy) for m in declared(METRIC_KEYS)}


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
        "citation_other_source": 0,
        "reference_cited": 1, "reference_passage_missed": 2, "reference_source_missed": 1,
    }
    # Each over its kind: 4 citations (1 + 3), 4 references (1 + 3).
    assert result.label_shares == {
        "citation_supported": 0.25, "citation_wrong_passage": 0.5,
        "citation_unexpected_source": 0.25, "citation_other_source": 0.0,
        "reference_cited": 0.25, "reference_passage_missed": 0.5, "reference_source_missed": 0.25}
    # 2 of 4 citations are wrong passages, more than the 1 supported and the 1 unexpected.
    assert result.diagnosis == "wrong_passages"
    assert result.to_dict()["label_shares"] == result.label_shares
    empty = aggregate([])
    assert empty.label_shares == dict.fromkeys(result.label_shares)
    assert empty.diagnosis == "nothing"


@pytest.mark.parametrize(("labels", "finding"), [
    ({}, "nothing"),
    ({"reference_source_missed": 2}, "no_citations"),
    ({"citation_supported": 3, "citation_wrong_passage": 1, "reference_cited": 3,
      "reference_passage_missed": 1}, "mostly_right"),                 # 3/4 and 3/4
    ({"citation_supported": 1, "citation_unexpected_source": 1}, "wrong_documents"),  # a tie
    ({"citation_supported": 2, "citation_wrong_passage": 1, "reference_passage_missed": 2,
      "reference_source_missed": 1}, "wrong_passages"),  # more passages missed than sources
    ({"citation_supported": 3, "citation_wrong_passage": 1, "reference_cited": 1,
      "reference_source_missed": 2}, "incomplete"),      # 3/4 right, 1 of 3 references cited
    ({"citation_supported": 2, "citation_wrong_passage": 1, "reference_cited": 1,
      "reference_source_missed": 1}, "mixed"),          # 2/3 right, no failure dominates
])
def test_diagnosis_by_hand(labels: dict[str, int], finding: str) -> None:
    assert diagnose(labels) == finding


def test_scored_digest_names_the_scored_ids_in_any_order_and_batches() -> None:
    import runner

    one, two = seed_example_1(), seed_example_2()
    bad = case([("A", VPN)], [("A", VPN)], id="bad", error="HTTP 500")
    digests = {runner.evaluate(cases, bootstrap_resamples=0, batch_size=size).scored_digest
               for cases, size in (([one, two], 2), ([two, bad, one], 1), ([bad, one, two], 3))}
    # The failed case is not scored: one digest, the sum of the two ids' hashes modulo 2**64.
    assert digests == {f"{(ids_digest(['seed-1']) + ids_digest(['seed-2'])) % 2**64:016x}"}
    assert runner.evaluate([one], bootstrap_resamples=0).scored_digest != digests.pop()


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
        add_case(agg, r)
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
    add_cases(first, ok[:2])
    second = first.empty()
    assert (second.n_cases, second.rows, second.resamples, second.seed) == (0, [], 200, 7)
    add_cases(second, [failed, ok[2]])
    first.merge(second)
    merged = first.result()
    assert merged.to_dict() == whole.to_dict()
    assert [c.id for c in merged.cases] == ["seed-1", "seed-2", "bad", "seed-3"]
    # Counts by hand: references 1 + 1 + 3 = 5, citations 1 + 1 + 3 = 5; one error.
    assert (merged.n_cases, merged.n_errors) == (4, 1)
    assert (merged.counts["references"], merged.counts["citations"]) == (5, 5)
    assert merged.labels["citation_supported"] == 2


# --- what the reports read from metrics.json: histograms, bands, failed cases -------------------


def test_histograms_by_hand() -> None:
    # Per-case context recall: seed-1 1.0 (bin floor(20 * 1.0) = 20, the last: 19), seed-2 0.0
    # (bin 0), seed-3 1/3 (bin floor(6.67) = 6). Source recall: 1.0, 1.0, 2/3 (bin 13).
    # The failed case is in no bin and not undefined: it is not scored.
    failed_c = case([("A", VPN)], [("A", VPN)], id="bad", error="timeout")
    result = aggregate([*scored(seed_example_1(), seed_example_2(), seed_example_3()),
                        error_case(failed_c, failed_c.response, "timeout")], resamples=0)
    hist = result.histograms
    assert set(hist) == set(METRIC_KEYS)
    # Each bin's band is its lower edge's: 0.0-0.20 red, 0.25-0.70 medium, 0.75-0.95 green.
    assert hist["context_recall"] == {"low": 0.0, "high": 1.0, "bins": 20,
                                      "counts": [1] + [0] * 5 + [1] + [0] * 12 + [1],
                                      "undefined": 0, "defined": 3,
                                      "bands": ["red"] * 5 + ["medium"] * 10 + ["green"] * 5}
    assert hist["source_recall"]["counts"] == [0] * 13 + [1] + [0] * 5 + [2]
    assert result.to_dict()["histograms"] == hist


def test_histograms_count_undefined_values() -> None:
    # zero_division=nan: a case with a reference and no citation has context recall 0/1 = 0 and
    # context precision 0/0, undefined; seed-1 defines both (1.0).
    nocit = case([("a.pdf", VPN)], [], id="nocit")
    result = aggregate(scored(seed_example_1(), nocit, zero_division="nan"),
                       zero_division="nan", resamples=0)
    assert result.histograms["context_precision"]["counts"] == [0] * 19 + [1]
    assert result.histograms["context_precision"]["undefined"] == 1
    assert result.histograms["context_recall"]["counts"] == [1] + [0] * 18 + [1]
    assert result.histograms["context_recall"]["undefined"] == 0


def test_histogram_bins_by_hand() -> None:
    from runner.scoring.aggregate import histogram

    # floor(v * 20): 0.0, 0.04 -> bin 0; 0.05 -> 1; 0.5 -> 10; 0.99 -> 19; 1.0 -> 20, clipped to
    # 19; a negative value -> bin 0 and one above 1 -> bin 19.
    counts = histogram([0.0, 0.04, 0.05, 0.5, 0.99, 1.0, -0.2, 1.3], bins=20)
    assert counts == [3, 1] + [0] * 8 + [1] + [0] * 8 + [3]
    assert histogram([], bins=4) == [0, 0, 0, 0]
    assert all(isinstance(c, int) for c in counts)


def test_bands_of_the_macro_means() -> None:
    # Macro means over seed-1..3: context recall (1 + 0 + 1/3) / 3 = 4/9 = 0.444; source recall
    # (1 + 1 + 2/3) / 3 = 8/9 = 0.889.
    cases = scored(seed_example_1(), seed_example_2(), seed_example_3())
    default = aggregate(cases, resamples=0)
    assert default.metrics["context_recall"] == pytest.approx(4 / 9)
    assert default.bands["context_recall"] == "medium"      # 0.25 <= 0.444 < 0.75
    assert default.bands["source_recall"] == "green"        # 0.889 >= 0.75
    strict = aggregate(cases, resamples=0, bands={"green": 0.9, "medium": 0.5})
    assert strict.bands["context_recall"] == "red"          # 0.444 < 0.5
    assert strict.bands["source_recall"] == "medium"        # 0.5 <= 0.889 < 0.9
    assert aggregate([], resamples=0).bands == dict.fromkeys(METRIC_KEYS)
    assert strict.to_dict()["bands"] == strict.bands


def _failed(cid: str, error: str) -> CaseResult:
    c = case([("A", VPN)], [("A", VPN)], id=cid, error=error)
    return error_case(c, c.response, error)


def test_failed_cases_listed_in_case_order_up_to_the_limit() -> None:
    ok = scored(seed_example_1(), seed_example_2())
    agg = Aggregator(resamples=0, max_failed_listed=2)
    add_cases(agg, [_failed("f1", "timeout"), ok[0], _failed("f2", "HTTP 500"), ok[1],
                _failed("f3", "boom")])
    result = agg.result()
    assert result.failed == {"count": 3, "listed": [{"id": "f1", "error": "timeout"},
                                                    {"id": "f2", "error": "HTTP 500"}]}
    assert result.to_dict()["failed"] == result.failed
    assert aggregate(ok, resamples=0).failed == {"count": 0, "listed": []}


def test_failed_cases_keep_their_order_across_merged_chunks() -> None:
    first = Aggregator(resamples=0, max_failed_listed=3)
    add_cases(first, [_failed("a1", "x"), _failed("a2", "y")])
    second = first.empty()
    assert second.max_failed_listed == 3
    add_cases(second, [_failed("b1", "z"), _failed("b2", "w")])
    first.merge(second)
    result = first.result()
    assert result.failed["count"] == 4
    assert [f["id"] for f in result.failed["listed"]] == ["a1", "a2", "b1"]


def test_failed_cases_of_batches_are_listed() -> None:
    # runner.evaluate adds BatchResults (add_batch): the error records of failed responses and
    # of cases without a response are listed, in case order, without scoring them.
    import runner

    cases = [seed_example_1(), case([("A", VPN)], None, id="no-response"), seed_example_2(),
             case([("A", VPN)], [("A", VPN)], id="bad", error="HTTP 500")]
    result = runner.evaluate(cases, bootstrap_resamples=0, batch_size=2)
    assert result.failed == {"count": 2, "listed": [
        {"id": "no-response", "error": "no response for this case"},
        {"id": "bad", "error": "HTTP 500"}]}

"""`runner.evaluate` (SPEC 8): the public API end to end, without Hydra."""

from __future__ import annotations

import doctest
import importlib

import pytest

import runner
from runner.data.models import Citation, Response
from runner.errors import RagciteError
from runner.evaluate import matcher_from_name, score_stream
from runner.matchers import NgramMatcher, PairError, SubstringMatcher
from runner.scoring.case import ScoringOptions
from runner.scoring.metrics import METRIC_KEYS
from tests.helpers import (
    REMOTE_REQUEST,
    SEED_FILE,
    VPN,
    TableMatcher,
    case,
    seed_example_1,
    seed_example_3,
)

# `runner.evaluate` is the function; the module is reached through importlib.
evaluate_module = importlib.import_module("runner.evaluate")

SEED_EXPECTED = {
    # (context recall, precision, F1 | source recall, precision, F1), from the seed.
    "seed-1": (1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
    "seed-2": (0.0, 0.0, 0.0, 1.0, 1.0, 1.0),
    "seed-3": (1 / 3, 1 / 3, 1 / 3, 2 / 3, 2 / 3, 2 / 3),
}


@pytest.mark.parametrize("matcher", ["ngram", "substring"])
def test_seed_examples_from_file(matcher: str) -> None:
    result = runner.evaluate(runner.load_cases(SEED_FILE), matcher=matcher)
    for c in result.cases:
        got = tuple(c.metrics[k] for k in METRIC_KEYS)
        assert got == pytest.approx(SEED_EXPECTED[c.id], rel=1e-15)
        # Recall and precision are exact fractions, not just close.
        assert c.metrics["context_recall"] == SEED_EXPECTED[c.id][0]
        assert c.metrics["source_precision"] == SEED_EXPECTED[c.id][4]
    # Rounded as the seed prints them: (0.33, 0.33 | 0.67, 0.67).
    third = result.cases[2].metrics
    assert [round(third[k], 2) for k in ("context_recall", "context_precision",  # type: ignore[arg-type]
                                         "source_recall", "source_precision")] == [
        0.33, 0.33, 0.67, 0.67]
    # Macro means over the three cases: context (1 + 0 + 1/3) / 3 = 4/9,
    # source (1 + 1 + 2/3) / 3 = 8/9.
    assert result.metrics["context_recall"] == pytest.approx(4 / 9, rel=1e-15)
    assert result.metrics["context_precision"] == pytest.approx(4 / 9, rel=1e-15)
    assert result.metrics["source_recall"] == pytest.approx(8 / 9, rel=1e-15)
    assert result.metrics["source_precision"] == pytest.approx(8 / 9, rel=1e-15)
    # Micro: refs (1 + 0 + 1) / (1 + 1 + 3) = 2/5; sources (1 + 1 + 2) / (1 + 1 + 3) = 4/5.
    assert result.micro["context_recall"] == 2 / 5
    assert result.micro["source_recall"] == 4 / 5
    assert (result.n_cases, result.n_scored, result.n_errors) == (3, 3, 0)
    assert result.cases[2].explanations["context_recall"] == (
        "Only the Data Security Policy.pdf passage matches its ground-truth reference (1 of 3). "
        "The Remote Work Policy.pdf citation uses a wrong passage, and Acceptable Use Policy.pdf "
        "is not cited at all.")


def test_matcher_instance_and_threshold() -> None:
    # Paraphrase similarity 6/14 = 3/7 ~ 0.43 (see test_ngram): below 0.5, above 0.4.
    cit = ("Employees must submit a remote work request at least five business days before the "
           "start date.")
    c = case([("A", REMOTE_REQUEST)], [("A", cit)])
    matcher = NgramMatcher()
    # No threshold: the matcher's default level, 0.5 for ngram.
    assert runner.evaluate([c], matcher=matcher).metrics["context_recall"] == 0.0
    assert runner.evaluate([c], matcher=matcher, threshold=0.4).metrics["context_recall"] == 1.0
    assert runner.evaluate([c], matcher=matcher, threshold=3 / 7).cases[0].matched == [[True]]
    # Levels are the matcher's own values: ngram lenient 0.3 matches, strict 0.75 does not.
    assert runner.evaluate([c], threshold="lenient").cases[0].matched == [[True]]
    assert runner.evaluate([c], threshold="strict").extra["threshold"] == {
        "value": 0.75, "level": "strict", "index": 0}


def test_several_thresholds_from_one_pass_equal_single_runs() -> None:
    cit = ("Employees must submit a remote work request at least five business days before the "
           "start date.")
    cases = [*runner.load_cases(SEED_FILE), case([("A", REMOTE_REQUEST)], [("A", cit)], id="p")]
    several = runner.evaluate(cases, thresholds=[0.3, "default", 0.9], bootstrap_resamples=50)
    assert [r.extra["threshold"]["value"] for r in several] == [0.3, 0.5, 0.9]
    for result, t in zip(several, [0.3, 0.5, 0.9]):
        alone = runner.evaluate(cases, threshold=t, bootstrap_resamples=50)
        assert result.cases == alone.cases
        assert (result.metrics, result.ci, result.micro, result.labels) == (
            alone.metrics, alone.ci, alone.micro, alone.labels)
    # The paraphrase (3/7) matches at 0.3 only.
    assert [r.cases[3].matched for r in several] == [[[True]], [[False]], [[False]]]


@pytest.mark.parametrize(("threshold", "message"), [
    (1.5, "scoring.threshold: 1.5 is outside [0, 1], the similarities this matcher gives"),
    (float("nan"), "scoring.threshold: nan is not a number; give one in [0, 1], the "
                   "similarities this matcher gives"),
    ("loose", "scoring.threshold: 'loose' is neither a number nor a level (strict, default, "
              "lenient)"),
])
def test_bad_thresholds_are_refused(threshold: object, message: str) -> None:
    with pytest.raises(RagciteError) as exc:
        runner.evaluate([seed_example_1()], threshold=threshold)  # type: ignore[arg-type]
    assert str(exc.value) == message


def test_matcher_from_name() -> None:
    assert isinstance(matcher_from_name("ngram"), NgramMatcher)
    assert matcher_from_name("ngram", n=2) == NgramMatcher(n=2)
    assert isinstance(matcher_from_name("substring"), SubstringMatcher)
    with pytest.raises(ValueError) as exc:
        matcher_from_name("fuzzy")
    assert str(exc.value) == ("unknown matcher 'fuzzy': expected a module runner.matchers.fuzzy "
                              "with a class FuzzyMatcher")
    # The module exists but has no TextMatcher class.
    with pytest.raises(ValueError, match="unknown matcher 'text'"):
        matcher_from_name("text")
    # `base` holds the abstract BaseMatcher, which scores nothing.
    with pytest.raises(ValueError, match="unknown matcher 'base'"):
        matcher_from_name("base")


def test_responses_mapping_replaces_stored_responses() -> None:
    c1, c3 = seed_example_1(), seed_example_3()
    # Case 1 gets a response citing nothing; case 3 has no entry -> an error case.
    result = runner.evaluate([c1, c3], responses={"seed-1": Response()})
    first, third = result.cases
    # No citations, 1 reference: recall 0/1; precision 0.0 (auto: something was expected).
    assert (first.metrics["context_recall"], first.metrics["context_precision"]) == (0.0, 0.0)
    assert third.error == "no response for this case"
    assert (result.n_scored, result.n_errors) == (1, 1)


def test_case_without_stored_response_is_an_error() -> None:
    result = runner.evaluate([case([("A", "x")], None)])
    assert result.cases[0].error == "no response for this case"
    assert result.n_errors == 1
    assert result.metrics == dict.fromkeys(METRIC_KEYS)


def test_failed_response_and_pair_error_are_excluded() -> None:
    good = case([("A", VPN)], [("A", VPN)], id="good")
    failed = case([("A", VPN)], [("A", VPN)], id="failed", error="rate limited")
    broken = case([("A", VPN)], [("A", "unlucky")], id="broken")
    matcher = TableMatcher(table={(VPN, VPN): 1.0, (VPN, "unlucky"): PairError("HTTP 503")})
    result = runner.evaluate([good, failed, broken], matcher=matcher)
    assert [c.error for c in result.cases] == [
        None, "rate limited", "matcher failed on reference 0 / citation 0: HTTP 503"]
    assert (result.n_cases, result.n_scored, result.n_errors) == (3, 1, 2)
    for c in result.cases[1:]:
        assert c.metrics == dict.fromkeys(METRIC_KEYS)
    # Only the good case counts: every figure 1/1.
    assert result.metrics == dict.fromkeys(METRIC_KEYS, 1.0)
    assert result.micro == dict.fromkeys(METRIC_KEYS, 1.0)
    assert result.labels["citation_supported"] == 1


@pytest.mark.parametrize(("policy", "expected"), [
    ("auto", 1.0), ("nan", None), ("zero", 0.0), ("one", 1.0)])
def test_zero_division_option(policy: str, expected: float | None) -> None:
    result = runner.evaluate([case([], [])], zero_division=policy)
    assert result.cases[0].metrics == dict.fromkeys(METRIC_KEYS, expected)
    assert result.metrics == dict.fromkeys(METRIC_KEYS, expected)


def test_require_same_source_option() -> None:
    c = case([("A", VPN)], [("B", VPN)])
    assert runner.evaluate([c]).metrics["context_recall"] == 1.0
    assert runner.evaluate([c], require_same_source=True).metrics["context_recall"] == 0.0


def test_bands_option() -> None:
    c = seed_example_3()
    assert runner.evaluate([c]).cases[0].bands["source_recall"] == "medium"  # 2/3 < 0.75
    banded = runner.evaluate([c], bands={"green": 0.6, "medium": 0.3})
    assert banded.cases[0].bands["source_recall"] == "green"  # 2/3 >= 0.6
    assert banded.cases[0].bands["context_recall"] == "medium"  # 1/3 >= 0.3


def test_bootstrap_options_are_deterministic() -> None:
    cases = runner.load_cases(SEED_FILE)
    a = runner.evaluate(cases, bootstrap_resamples=250, confidence=0.8, seed=3)
    b = runner.evaluate(cases, bootstrap_resamples=250, confidence=0.8, seed=3)
    assert a.ci == b.ci
    assert a.bootstrap == {"resamples": 250, "confidence": 0.8, "seed": 3,
                           "method": "percentile"}


def test_distinct_pairs_are_scored_once_per_batch() -> None:
    # Two cases quote the same pair; an empty reference needs no similarity at all.
    c1 = case([("A", "alpha"), ("A", "")], [("A", "alpha")], id="1")
    c2 = case([("A", "alpha")], [("A", "alpha"), ("A", "beta")], id="2")
    matcher = TableMatcher(default=1.0)
    runner.evaluate([c1, c2], matcher=matcher)
    assert matcher.calls == [[("alpha", "alpha"), ("alpha", "beta")]]
    # batch_size=1: one call per case.
    matcher = TableMatcher(default=1.0)
    runner.evaluate([c1, c2], matcher=matcher, batch_size=1)
    assert matcher.calls == [[("alpha", "alpha")], [("alpha", "alpha"), ("alpha", "beta")]]


def test_batch_size_does_not_change_results() -> None:
    cases = runner.load_cases(SEED_FILE)
    whole = runner.evaluate(cases, batch_size=10_000)
    single = runner.evaluate(cases, batch_size=1)
    assert whole.metrics == single.metrics
    assert whole.cases == single.cases


def test_score_stream_progress_and_order() -> None:
    cases = runner.load_cases(SEED_FILE)
    seen: list[int] = []
    out = list(score_stream(((c, c.response) for c in cases), NgramMatcher(),
                            ScoringOptions(), batch_size=2, on_batch=seen.append))
    assert [r.id for r in out] == ["seed-1", "seed-2", "seed-3"]
    assert seen == [2, 1]  # batches of 2 and 1 cases


def test_accepts_a_generator_of_cases() -> None:
    result = runner.evaluate(runner.iter_cases(SEED_FILE))
    assert result.n_cases == 3


def test_duplicate_citations_through_evaluate() -> None:
    c = case([("A", VPN)], [("A", VPN), ("A", VPN)])
    result = runner.evaluate([c])
    # Both copies match: precision 2/2; counts pool both citations.
    assert result.cases[0].metrics["context_precision"] == 1.0
    assert result.counts["citations"] == 2
    assert result.labels["citation_supported"] == 2


def test_public_api() -> None:
    assert runner.evaluate is evaluate_module.evaluate
    assert runner.Citation is Citation
    for name in runner.__all__:
        assert hasattr(runner, name)


def test_docstring_example() -> None:
    failures, tests = doctest.testmod(evaluate_module, verbose=False)
    assert (failures, tests > 0) == (0, True)


def test_a_run_result_pickles_and_keeps_its_explanations() -> None:
    # Scored cases hold their source normaliser (for explanations written on first read); the
    # whole result still pickles, and a copy writes the same sentences.
    import pickle

    result = runner.evaluate(runner.load_cases(SEED_FILE))
    copy = pickle.loads(pickle.dumps(result))
    assert [c.to_dict() for c in copy.cases] == [c.to_dict() for c in result.cases]
    assert copy.cases[1].explanations == result.cases[1].explanations

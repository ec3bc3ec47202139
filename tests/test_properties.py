"""Property tests (hypothesis): ranges, order invariance, self-matching, symmetry."""

from __future__ import annotations

from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runner
from runner.data.models import Case, Citation, Reference, Response
from runner.matchers import Matcher, NgramMatcher, SubstringMatcher
from runner.matchers.text import fold
from runner.results import read_cases, write_result
from runner.scoring.metrics import METRIC_KEYS, ZERO_DIVISION_POLICIES
from tests.matchers.test_text import token_stretches

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# A small vocabulary so that random passages overlap often enough to match.
WORDS = ["alpha", "beta", "gamma", "delta", "the", "A", "Café", "５"]
SOURCES = ["A.pdf", "a.pdf ", "B.pdf", "docs/C.pdf"]

words = st.lists(st.sampled_from(WORDS), min_size=0, max_size=7)
passages = st.builds(
    lambda first, second, marker: " ".join(first) + (f" {marker} " + " ".join(second)
                                                     if second else ""),
    words, words, st.sampled_from(["…", "...", "...."]))
references = st.builds(Reference, source=st.sampled_from(SOURCES), content=passages)
citations = st.builds(Citation, source=st.sampled_from(SOURCES), content=passages)
policies = st.sampled_from(ZERO_DIVISION_POLICIES)
matchers = st.sampled_from(["ngram", "substring"])


@st.composite
def cases(draw: st.DrawFn) -> Case:
    refs = draw(st.lists(references, max_size=4))
    cits = draw(st.lists(citations, max_size=5))
    expected = draw(st.one_of(st.none(), st.lists(st.sampled_from(SOURCES), max_size=3)))
    data = {"id": "p", "query": "q", "references": refs, "response": Response(citations=cits)}
    if expected is not None:
        data["expected_sources"] = expected
    return Case(**data)


@SETTINGS
@given(c=cases(), policy=policies, matcher=matchers,
       threshold=st.floats(min_value=0.01, max_value=1.0))
def test_every_metric_is_in_range(c: Case, policy: str, matcher: str, threshold: float) -> None:
    result = runner.evaluate([c], matcher=matcher, threshold=threshold, zero_division=policy,
                             bootstrap_resamples=20)
    for key in METRIC_KEYS:
        value = result.cases[0].metrics[key]
        if value is None:
            assert policy == "nan"  # only the nan policy leaves values undefined
        else:
            assert 0.0 <= value <= 1.0
        for figure in (result.metrics[key], result.micro[key]):
            assert figure is None or 0.0 <= figure <= 1.0
        interval = result.ci[key]
        if interval is not None:
            assert 0.0 <= interval[0] <= interval[1] <= 1.0


@SETTINGS
@given(c=cases(), data=st.data(), policy=policies, matcher=matchers)
def test_invariant_under_reordering(c: Case, data: st.DataObject, policy: str,
                                    matcher: str) -> None:
    assert c.response is not None
    refs = data.draw(st.permutations(c.references))
    cits = data.draw(st.permutations(c.response.citations))
    shuffled = c.model_copy(update={"references": refs,
                                    "response": Response(citations=cits)})
    a = runner.evaluate([c], matcher=matcher, zero_division=policy, bootstrap_resamples=0)
    b = runner.evaluate([shuffled], matcher=matcher, zero_division=policy,
                        bootstrap_resamples=0)
    assert a.cases[0].metrics == b.cases[0].metrics
    assert a.cases[0].counts == b.cases[0].counts
    assert sorted(a.cases[0].citation_labels) == sorted(b.cases[0].citation_labels)
    assert sorted(a.cases[0].reference_labels) == sorted(b.cases[0].reference_labels)


@SETTINGS
@given(c=cases(), data=st.data())
def test_macro_invariant_under_reordering_cases(c: Case, data: st.DataObject) -> None:
    others = [c.model_copy(update={"id": f"p{i}"}) for i in range(3)]
    assert others[0].response is not None
    others[1] = others[1].model_copy(update={"response": Response()})
    order = data.draw(st.permutations(others))
    a = runner.evaluate(others, bootstrap_resamples=0)
    b = runner.evaluate(order, bootstrap_resamples=0)
    assert a.micro == b.micro
    assert a.labels == b.labels
    for key in METRIC_KEYS:
        x, y = a.metrics[key], b.metrics[key]
        assert (x is None and y is None) or abs(x - y) < 1e-12  # type: ignore[operator]


nonblank = st.text(min_size=1, max_size=60).filter(lambda t: t.strip() != "")


@SETTINGS
@given(text=nonblank.filter(lambda t: fold(t) != ""))  # invisible characters only: blank
def test_identical_citation_matches_under_substring(text: str) -> None:
    m = SubstringMatcher()
    assert m.similarities([(text, text)]) == [1.0]
    assert_case_matches(text, m)


@SETTINGS
@given(text=nonblank.filter(lambda t: token_stretches(t) != []))
def test_identical_citation_matches_under_ngram(text: str) -> None:
    # (A passage without any word token has no n-gram and similarity 0, SPEC 4.2.)
    for n in (1, 2, 3, 5):
        m = NgramMatcher(n=n)
        assert m.similarities([(text, text)]) == [1.0]
        assert_case_matches(text, m)


def assert_case_matches(text: str, matcher: Matcher) -> None:
    c = Case(id="1", query="q", references=[Reference(source="S", content=text)],
             response=Response(citations=[Citation(source="S", content=text)]))
    for threshold in (matcher.levels["default"], 1.0):
        result = runner.evaluate([c], matcher=matcher, threshold=threshold,
                                 require_same_source=True, bootstrap_resamples=0)
        assert result.cases[0].matched == [[True]]
        assert result.metrics == dict.fromkeys(METRIC_KEYS, 1.0)


@SETTINGS
@given(a=passages, b=passages, n=st.integers(min_value=1, max_value=4))
def test_ngram_similarity_is_symmetric_and_bounded(a: str, b: str, n: int) -> None:
    m = NgramMatcher(n=n)
    ab, ba = m.similarities([(a, b), (b, a)])
    assert ab == ba
    assert 0.0 <= ab <= 1.0  # type: ignore[operator]


@SETTINGS
@given(a=passages, b=passages)
def test_substring_similarity_is_zero_or_one(a: str, b: str) -> None:
    assert SubstringMatcher().similarities([(a, b)])[0] in (0.0, 1.0)


@SETTINGS
@given(c=cases(), low=st.floats(min_value=0.0, max_value=1.0),
       high=st.floats(min_value=0.0, max_value=1.0))
def test_raising_the_threshold_never_adds_matches(c: Case, low: float, high: float) -> None:
    low, high = min(low, high), max(low, high)
    a = runner.evaluate([c], threshold=low, bootstrap_resamples=0).cases[0]
    b = runner.evaluate([c], threshold=high, bootstrap_resamples=0).cases[0]
    for row_a, row_b in zip(a.matched, b.matched):
        for x, y in zip(row_a, row_b):
            assert x or not y  # matched at the high threshold -> matched at the low one
    assert b.counts["references_matched"] <= a.counts["references_matched"]


@settings(max_examples=40, deadline=None)
@given(cs=st.lists(cases(), min_size=1, max_size=4), policy=policies)
def test_cases_file_round_trip(cs: list[Case], policy: str) -> None:
    cs = [c.model_copy(update={"id": str(i)}) for i, c in enumerate(cs)]
    result = runner.evaluate(cs, zero_division=policy, bootstrap_resamples=0)
    with TemporaryDirectory() as tmp:
        write_result(Path(tmp), result)
        assert list(read_cases(Path(tmp))) == result.cases


@settings(max_examples=40, deadline=None)
@given(cs=st.lists(cases(), min_size=1, max_size=4), policy=policies,
       thresholds=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=4,
                           unique=True))
def test_thresholds_decided_in_one_pass_equal_runs_of_their_own(
        cs: list[Case], policy: str, thresholds: list[float]) -> None:
    cs = [c.model_copy(update={"id": str(i)}) for i, c in enumerate(cs)]
    together = runner.evaluate(cs, thresholds=thresholds, zero_division=policy,
                               bootstrap_resamples=20)
    assert list(together) == thresholds  # by threshold, in the order given
    for threshold, result in together.items():
        alone = runner.evaluate(cs, threshold=threshold, zero_division=policy,
                                bootstrap_resamples=20)
        assert result.cases == alone.cases
        assert result.to_dict() | {"threshold": None} == alone.to_dict() | {"threshold": None}

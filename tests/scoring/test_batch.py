"""The batch scorer (runner.scoring.batch) equals the oracle scoring each case on its own
(tests/scoring/oracle.py, score_case)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.data.models import Case
from runner.matchers import Matcher, NgramMatcher, SubstringMatcher
from runner.results import table
from runner.scoring.case import ScoringOptions
from runner.scoring.metrics import COUNT_KEYS
from tests.helpers import TableMatcher, case, failing, score_batch
from tests.scoring.oracle import add_cases, case_pairs, score_case

# Few distinct texts and sources, so that cases share pairs, repeat citations, leave passages
# blank and differ in source spelling only (normalisation).
TEXTS = st.sampled_from(["the cat sat on the mat", "a dog barked at the moon", "", "  ",
                         "the cat sat", "moon … mat", "Café au lait, s'il vous plaît"])
SOURCES = st.sampled_from(["A.pdf", "a.pdf ", "B.pdf", "C", "b.PDF"])
PASSAGES = st.lists(st.tuples(SOURCES, TEXTS), max_size=4)


@st.composite
def cases(draw: Any, index: int) -> Case:
    expected = draw(st.one_of(st.none(), st.lists(SOURCES, max_size=3)))
    cits = draw(st.one_of(PASSAGES, st.none()))
    error = draw(st.sampled_from([None, None, None, "timeout"])) if cits is not None else None
    return case(draw(PASSAGES), cits, id=f"c{index}", expected=expected, error=error)


@st.composite
def batches(draw: Any) -> list[Case]:
    n = draw(st.integers(0, 6))
    return [draw(cases(i)) for i in range(n)]


def one_by_one(batch: list[Case], matcher: Matcher, options: ScoringOptions) -> list[Any]:
    out = []
    for c in batch:
        pairs = case_pairs(c, c.response, options)
        sims = dict(zip(pairs, matcher.similarities(pairs))) if pairs else {}
        out.append(score_case(c, c.response, sims, options))
    return out


def assert_same(batch: list[Case], matcher: Matcher, options: ScoringOptions) -> None:
    together = score_batch([(c, c.response) for c in batch], matcher, options)
    alone = one_by_one(batch, matcher, options)
    assert [r.to_dict() for r in together] == [r.to_dict() for r in alone]
    # The batch's cases.parquet rows, built from its arrays, are the oracle's records' rows.
    schema = table.decisions_schema(options.metrics, COUNT_KEYS)
    assert together.table(schema).equals(table.from_rows(map(table.decision_row, alone), schema))
    # Its passages.parquet rows, from the same arrays, are the oracle's records' rows too.
    assert together.passages().equals(table.from_rows(map(table.passage_row, alone),
                                                      table.PASSAGES_SCHEMA))


@settings(max_examples=150, deadline=None)
@given(batch=batches(), same_source=st.booleans(), threshold=st.sampled_from([0.0, 0.3, 0.5, 1.0]),
       zero_division=st.sampled_from(["auto", "nan", "zero", "one"]))
def test_batch_equals_one_by_one_ngram(batch: list[Case], same_source: bool, threshold: float,
                                       zero_division: str) -> None:
    options = ScoringOptions(threshold=threshold, zero_division=zero_division,
                             require_same_source=same_source)
    assert_same(batch, NgramMatcher(n=2), options)


@settings(max_examples=60, deadline=None)
@given(batch=batches(), same_source=st.booleans())
def test_batch_equals_one_by_one_substring(batch: list[Case], same_source: bool) -> None:
    assert_same(batch, SubstringMatcher(), ScoringOptions(threshold=0.5,
                                                          require_same_source=same_source))


def test_a_failed_pair_makes_only_its_cases_errors_naming_the_first_failed_pair() -> None:
    ok = case([("A", "x"), ("A", "y")], [("A", "x"), ("B", "z")], id="ok")
    bad = case([("A", "x"), ("A", "w")], [("A", "x"), ("A", "w")], id="bad")
    # (w, w) fails; in row-major order of "bad" it is reference 1 / citation 1.
    matcher = TableMatcher(table={("x", "x"): 1.0, ("w", "w"): failing("quota exceeded"),
                                  ("w", "x"): 0.0, ("x", "w"): 0.0})
    options = ScoringOptions()
    together = score_batch([(ok, ok.response), (bad, bad.response)], matcher, options)
    # One call for the batch, each distinct pair once: (x,x) (x,z) (y,x) (y,z) of "ok" and
    # (x,w) (w,x) (w,w) of "bad" ((x,x) again is not asked twice).
    assert len(matcher.calls) == 1 and sorted(matcher.calls[0]) == sorted([
        ("x", "x"), ("x", "z"), ("y", "x"), ("y", "z"), ("x", "w"), ("w", "x"), ("w", "w")])
    assert [r.error for r in together] == [
        None, "matcher failed on reference 1 / citation 1: quota exceeded"]
    assert together[0].metrics["context_recall"] == 0.5  # x matched, y not
    assert_same([ok, bad], matcher, options)


def test_no_case_and_only_error_cases() -> None:
    assert score_batch([], NgramMatcher(), ScoringOptions()) == []
    c1 = case([("A", "x")], None, id="1")
    c2 = case([("A", "x")], [("A", "x")], id="2", error="boom")
    out = score_batch([(c1, None), (c2, c2.response)], NgramMatcher(), ScoringOptions())
    assert [r.error for r in out] == ["no response for this case", "boom"]
    assert_same([c1, c2], NgramMatcher(), ScoringOptions())


@settings(max_examples=60, deadline=None)
@given(batch=batches(), zero_division=st.sampled_from(["auto", "nan", "zero", "one"]))
def test_batch_sums_aggregate_as_the_cases_one_by_one(batch: list[Case],
                                                      zero_division: str) -> None:
    from runner.scoring.aggregate import Aggregator

    options = ScoringOptions(zero_division=zero_division)
    items = [(c, c.response) for c in batch]
    by_batch = Aggregator(zero_division, resamples=50, seed=1)
    by_batch.add_batch(score_batch(items, NgramMatcher(n=2), options))
    by_case = Aggregator(zero_division, resamples=50, seed=1)
    add_cases(by_case, score_batch(items, NgramMatcher(n=2), options))
    a, b = by_batch.result(), by_case.result()
    assert (a.n_cases, a.n_scored, a.n_errors, a.counts, a.labels) == (
        b.n_cases, b.n_scored, b.n_errors, b.counts, b.labels)
    assert repr((a.metrics, a.ci, a.micro)) == repr((b.metrics, b.ci, b.micro))
    assert list(a.cases) == list(b.cases)


def test_records_are_built_on_first_read() -> None:
    scored = case([("A", "the cat sat on the mat")], [("A", "the cat sat on the mat")], id="s")
    failed = case([("A", "x")], [("A", "x")], id="f", error="timeout")
    lazy = score_batch([(scored, scored.response), (failed, failed.response)],
                       NgramMatcher(), ScoringOptions())
    assert lazy._records is None  # sums only, so far
    assert (len(lazy), lazy.n_errors, lazy.rows) == (2, 1, [(1.0, 1.0, 1.0, 1.0, 1.0, 1.0)])
    assert lazy.labels["citation_supported"] == 1 and lazy.counts["references_matched"] == 1
    assert lazy[1].error == "timeout" and lazy._records is None  # an error needs no build
    assert lazy[-2].id == "s" and lazy._records is not None
    assert lazy[0] is lazy[0]  # built once
    assert [c.id for c in lazy[::-1]] == ["f", "s"]


def test_case_list_reads_across_parts_like_a_list() -> None:
    from runner.scoring.aggregate import CaseList

    cases = [score_case(c, c.response, {}, ScoringOptions()) for c in (
        case([], [], id="a"), case([], [], id="b"), case([], [], id="c"))]
    joined = CaseList([cases[:1], [], cases[1:]])
    assert len(joined) == 3 and joined == cases and list(joined) == cases
    assert [joined[i].id for i in (0, 1, 2, -1, -3)] == ["a", "b", "c", "c", "a"]
    assert [c.id for c in joined[1:]] == ["b", "c"]
    assert joined != cases[:2] and CaseList() == []
    with pytest.raises(IndexError):
        joined[3]


class _CountingMatcher(NgramMatcher):
    """ngram, counting the pairs it is asked for."""

    asked: int = 0

    def similarities(self, pairs):  # type: ignore[no-untyped-def]
        self.asked += len(pairs)
        return super().similarities(pairs)

    def similarity_array(self, texts, a, b):  # type: ignore[no-untyped-def]
        return None


@settings(max_examples=60, deadline=None)
@given(batch=batches(), thresholds=st.lists(st.sampled_from([0.0, 0.2, 0.3, 0.5, 0.9, 1.0]),
                                            min_size=1, max_size=4, unique=True),
       same_source=st.booleans())
def test_thresholds_of_one_pass_score_as_from_scratch(
        batch: list[Case], thresholds: list[float], same_source: bool) -> None:
    # The batch is laid out and its similarities asked for once; each threshold's records and
    # sums equal scoring that threshold alone.
    from runner.scoring.batch import score_batch_thresholds

    items = [(c, c.response) for c in batch]
    matcher = _CountingMatcher(n=2)
    decided = score_batch_thresholds(items, matcher, ScoringOptions(
        require_same_source=same_source), thresholds)
    once = matcher.asked
    assert len(decided) == len(thresholds)
    for t, again in zip(thresholds, decided):
        options = ScoringOptions(threshold=t, require_same_source=same_source)
        fresh = score_batch(items, NgramMatcher(n=2), options)
        assert [c.to_dict() for c in again] == [c.to_dict() for c in fresh]
        assert (again.rows, again.counts, again.labels) == (fresh.rows, fresh.counts,
                                                            fresh.labels)
    alone = _CountingMatcher(n=2)
    score_batch(items, alone, ScoringOptions(require_same_source=same_source))
    assert once == alone.asked  # one threshold or several: the same pairs, asked once

"""The in-memory similarity memo (runner/memo.py) and its use by the scoring workers."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from runner.data.models import Case, Citation, Reference, Response
from runner.matchers import NgramMatcher
from runner.memo import LineMemo, SimilarityMemo
from runner.parallel import score_parallel
from runner.scoring.aggregate import Aggregator
from runner.scoring.case import ScoringOptions

A = np.array([0, 1], dtype=np.int64)
B = np.array([1, 0], dtype=np.int64)


def test_a_key_names_exactly_one_computation() -> None:
    key = SimilarityMemo.key("sim-1", ["ab", "c"], A, B)
    assert key == SimilarityMemo.key("sim-1", ["ab", "c"], A.copy(), B.copy())
    others = [
        SimilarityMemo.key("sim-2", ["ab", "c"], A, B),     # another matcher identity
        SimilarityMemo.key("sim-1", ["a", "bc"], A, B),     # texts joined alike, split apart
        SimilarityMemo.key("sim-1", ["ab", "c", ""], A, B),  # one more text
        SimilarityMemo.key("sim-1", ["ab", "c"], B, A),     # the pairs swapped
        SimilarityMemo.key("sim-1", ["ab", "c"], A[:1], np.array([1, 0, 1])),  # a | b moved
    ]
    assert len({key, *others}) == 6


def test_values_are_kept_read_only_and_the_oldest_leave_first() -> None:
    memo = SimilarityMemo(max_bytes=3 * 8 * 2)  # room for three 2-value arrays
    values = np.array([0.5, 1.0])
    memo.put(b"k0", values)
    values[0] = 9.0  # the memo kept a copy
    stored = memo.get(b"k0")
    assert stored is not None and stored.tolist() == [0.5, 1.0]
    with pytest.raises(ValueError):
        stored[0] = 0.0
    for i in (1, 2, 3):
        memo.put(f"k{i}".encode(), np.array([i / 10, i / 10]))
    assert len(memo) == 3 and memo.get(b"k0") is None  # k0 left for k3
    assert memo.get(b"k3").tolist() == [0.3, 0.3]  # type: ignore[union-attr]
    memo.put(b"big", np.zeros(7))  # larger than the whole bound: not kept
    assert memo.get(b"big") is None and len(memo) == 3


def test_entries_except_returns_what_was_put_since_the_keys_were_taken() -> None:
    memo = SimilarityMemo()
    memo.put(b"a", np.array([0.1]))
    memo.put(b"a", np.array([0.9]))  # a key is stored once
    assert {k: v.tolist() for k, v in memo.entries_except(set()).items()} == {b"a": [0.1]}
    known = memo.keys()
    assert known == {b"a"}
    memo.put(b"b", np.array([0.2]))
    assert list(memo.entries_except(known)) == [b"b"]
    assert memo.entries_except(memo.keys()) == {}
    other = SimilarityMemo()
    other.update({b"a": np.array([0.1]), b"b": np.array([0.2])})
    assert len(other) == 2


def _case(i: int) -> Case:
    # Reference "the cat sat on mat i" (4 trigrams) and two citations: the same words
    # (similarity 1.0) and "a cat sat on the hat i" (5 trigrams), which shares one trigram
    # ("cat sat on") with the reference: 1 / min(4, 5) = 0.25.
    ref = f"the cat sat on mat {i}"
    return Case(id=str(i), query="q", references=[Reference(source="s.pdf", content=ref)],
                response=Response(citations=[Citation(source="s.pdf", content=ref),
                                             Citation(source="s.pdf",
                                                      content=f"a cat sat on the hat {i}")]))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork workers: Linux only")
def test_workers_send_what_they_computed_and_a_second_run_reads_it() -> None:
    cases = [_case(i) for i in range(6)]
    responses = [c.response for c in cases]
    options = ScoringOptions(threshold=0.5, zero_division="auto", require_same_source=False,
                             source_normalization=("casefold",),
                             bands={"green": 0.75, "medium": 0.25})
    agg = Aggregator("auto", 10, 0.95, 0, keep_cases=False)
    memo = SimilarityMemo()

    def run() -> tuple[bytes, list[tuple[int, int]]]:
        lines, counts = b"", []
        for chunk in score_parallel(
                cases, responses, NgramMatcher(), options, 2, agg.empty(), chunk=2,
                memo=memo):
            lines += b"".join(chunk.lines)
            counts.append((chunk.similarities.hits, chunk.similarities.computed))
            memo.update(chunk.computed)
        return lines, counts

    first, first_counts = run()
    # Three chunks of two cases; each case has 2 distinct pairs.
    assert first_counts == [(0, 4), (0, 4), (0, 4)]
    assert len(memo) == 3
    stored = sorted(v.tolist() for v in memo.entries_except(set()).values())
    assert stored == [[1.0, 0.25, 1.0, 0.25]] * 3  # per chunk: 2 cases x 2 pairs
    second, second_counts = run()
    assert second_counts == [(4, 0), (4, 0), (4, 0)]
    assert second == first


def _options(threshold: float) -> ScoringOptions:
    return ScoringOptions(threshold=threshold, zero_division="auto", require_same_source=False,
                          source_normalization=("casefold",),
                          bands={"green": 0.75, "medium": 0.25})


def _score(cases: list[Case], threshold: float,
           lines: LineMemo | None) -> tuple[bytes, list[int]]:
    """Score like a sweep job: the lines written, and each chunk's lines taken from `lines`."""
    responses = [c.response for c in cases]
    out, reused, start = b"", [], 0
    for chunk in score_parallel(cases, responses, NgramMatcher(), _options(threshold), 2,
                                Aggregator("auto", 10, 0.95, 0, keep_cases=False), chunk=2,
                                lines=lines):
        out += b"".join(chunk.lines)
        reused.append(chunk.reused)
        end = start + len(chunk.lines)
        if lines is not None:
            lines.store(start, cases[start:end], responses[start:end], chunk.decisions,
                        chunk.lines)
        start = end
    return out, reused


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork workers: Linux only")
def test_a_line_is_reused_only_for_the_same_case_response_and_decisions() -> None:
    # Each case: one reference, two citations of similarity 1.0 and 0.25 (see _case). At
    # 0.5 and 0.6 the decisions are [[True, False]]; at 0.2 [[True, True]].
    cases = [_case(i) for i in range(6)]
    memo = LineMemo()
    memo.begin("job")
    first, reused = _score(cases, 0.5, memo)
    assert reused == [0, 0, 0] and len(memo) == 6
    same, reused = _score(cases, 0.6, memo)  # the same decisions: every line reused
    assert reused == [2, 2, 2]
    assert same == first == _score(cases, 0.6, None)[0]
    lower, reused = _score(cases, 0.2, memo)  # every decision changed: every line built
    assert reused == [0, 0, 0]
    assert lower == _score(cases, 0.2, None)[0] != first
    # An equal case is as good as the same object; another answer is another line.
    copies = [c.model_copy(deep=True) for c in cases]
    copies[3] = copies[3].model_copy(update={"response": copies[3].response.model_copy(  # type: ignore[union-attr]
        update={"answer": "another answer"})})
    again, reused = _score(copies, 0.2, memo)
    assert reused == [2, 1, 2]
    assert again == _score(copies, 0.2, None)[0]
    assert b'"answer":"another answer"' in again.splitlines()[3]


def test_the_line_memo_starts_over_for_another_namespace_and_keeps_within_its_bound() -> None:
    memo = LineMemo(max_bytes=10)
    memo.begin("a")
    memo.store(0, ["c0", "c1", "c2"], ["r0", "r1", "r2"], [b"d", None, b"d"],
               [b"12345\n", b"67890\n", b"abcde\n"])
    # c1 failed (no decisions): not kept; c2 would pass the 10 bytes: not kept.
    assert len(memo) == 1
    assert memo.line(0, "c0", "r0", b"d") == b"12345\n"
    assert memo.line(0, "c0", "r0", b"e") is None  # other decisions
    assert memo.line(0, "cX", "r0", b"d") is None  # another case
    assert memo.line(0, "c0", "rX", b"d") is None  # another response
    assert memo.line(2, "c2", "r2", b"d") is None
    memo.begin("a")  # the same namespace: kept
    assert len(memo) == 1
    memo.begin("b")
    assert len(memo) == 0


def test_a_job_is_warm_only_after_a_whole_job_under_its_namespace_kept_every_line() -> None:
    # begin() is True when the job before, under the same namespace, offered every case's line
    # (finish) and none was dropped for the bound: then every similarity and line is memoised.
    memo = LineMemo(max_bytes=10)
    assert memo.begin("a") is False  # nothing before
    memo.store(0, ["c0"], ["r0"], [b"d"], [b"12345\n"])
    assert memo.begin("a") is False  # the job before did not finish
    memo.store(0, ["c0", "c1"], ["r0", "r1"], [b"d", None], [b"12345\n", b"x\n"])
    memo.finish()
    assert memo.begin("a") is True  # finished; the failed case is not a dropped line
    memo.finish()
    assert memo.begin("b") is False  # another namespace
    memo.store(0, ["c0", "c1"], ["r0", "r1"], [b"d", b"d"], [b"12345\n", b"67890\n"])
    memo.finish()
    assert memo.begin("b") is False  # the second line passed the bound: dropped
    memo.finish()
    assert memo.begin("b") is True  # this job stored nothing new and dropped nothing
    memo.clear()
    assert memo.begin("b") is False

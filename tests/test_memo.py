"""The in-memory similarity memo (runner/memo.py) and its use by the scoring workers."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from runner.data.models import Case, Citation, Reference, Response
from runner.matchers import NgramMatcher
from runner.memo import SimilarityMemo
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
        for chunk_lines, _, sims, computed in score_parallel(
                cases, responses, NgramMatcher(), options, 2, agg.empty(), chunk=2,
                memo=memo):
            lines += chunk_lines
            counts.append((sims.hits, sims.computed))
            memo.update(computed)
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

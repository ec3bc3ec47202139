"""Score a run's cases on several cores (the CLI's scoring stage; ``scoring.workers``).

Scoring with an offline matcher is CPU-bound Python. The worker processes are forked once the
cases and responses are loaded, so they inherit them (and the matcher) without pickling any;
each worker takes a contiguous range of cases, computes its similarities, scores the cases and
returns them already serialised as ``cases.jsonl`` lines together with its own
:class:`~runner.scoring.aggregate.Aggregator` of them, which the parent merges. The parent
writes the lines in case order, so the output is byte for byte what one process writes.

Only matchers that declare ``cacheable = False`` (computed locally, faster than a cache lookup)
are scored this way, and only where ``fork`` is the safe default (Linux): API matchers keep their
own concurrency, cache and usage counters in the parent process.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from runner._gc import gc_paused
from runner.cache import CacheStats
from runner.data.models import Case, Response
from runner.matchers.base import Matcher, for_workload
from runner.memo import LineMemo, SimilarityMemo
from runner.scoring.aggregate import Aggregator
from runner.scoring.batch import PreparedBatches
from runner.scoring.case import ScoringOptions

# Set in the parent just before the workers are forked; read by the workers only.
_JOB: dict[str, Any] = {}


def resolve_workers(requested: int | None, matcher: Matcher, n_cases: int) -> int:
    """How many processes score a run.

    Args:
        requested: ``scoring.workers``: a number, or None/0 for automatic: one per CPU of
            this machine (at most 8) for runs of 2,000 cases or more, else 1 (forking costs
            more than it saves on a small run).
        matcher: The run's matcher; only ``cacheable = False`` matchers go parallel.
        n_cases: Cases in the run.

    Returns:
        1 for the serial path, else the number of worker processes.
    """
    if getattr(matcher, "cacheable", True) or not sys.platform.startswith("linux"):
        return 1
    if requested:
        return max(1, min(int(requested), n_cases))
    if n_cases < 2_000:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def count_pairs(cases: Sequence[Case], responses: Sequence[Response | None]) -> int:
    """(reference, citation) pairs of a run: the matcher's workload (blank ones included)."""
    return sum(len(c.references) * len(r.citations)
               for c, r in zip(cases, responses) if r is not None)


def _for_workers(matcher: Matcher, cases: Sequence[Case],
                 responses: Sequence[Response | None], workers: int) -> Matcher:
    """`matcher` as each worker process runs it.

    ``threads=1`` when it has that setting and there are several workers (the worker processes
    already use every core; threads on top would only contend for them), set up for one
    worker's share of the pairs (:func:`~runner.matchers.base.for_workload`).
    """
    if workers > 1 and dataclasses.is_dataclass(matcher) and any(
            f.name == "threads" for f in dataclasses.fields(matcher)):
        matcher = dataclasses.replace(matcher, threads=1)
    return for_workload(matcher, count_pairs(cases, responses) // max(workers, 1))


@dataclasses.dataclass(frozen=True)
class SimilarityCounts:
    """Similarities of one chunk: read from the memo (`hits`) and `computed`."""

    hits: int
    computed: int


@dataclasses.dataclass
class ChunkResult:
    """What a worker returns for one chunk of cases.

    Attributes:
        lines: Each case's ``cases.jsonl`` line, in order.
        decisions: Each case's decisions (:meth:`BatchResults.json_lines
            <runner.scoring.batch.BatchResults.json_lines>`; None for a failed case), for the
            job's :class:`~runner.memo.LineMemo`.
        aggregator: The chunk's cases aggregated.
        similarities: Similarities read from the memo and computed.
        computed: The computed similarity arrays by memo key (for the caller's memo).
        reused: Lines taken from the line memo.
    """

    lines: list[bytes]
    decisions: list[bytes | None]
    aggregator: Aggregator
    similarities: SimilarityCounts
    computed: dict[bytes, np.ndarray]
    reused: int = 0


def _work(bounds: tuple[int, int]) -> ChunkResult:
    from runner.evaluate import score_batches
    from runner.pipeline import CachedMatcher

    start, end = bounds
    cases: Sequence[Case] = _JOB["cases"]
    responses: Sequence[Response | None] = _JOB["responses"]
    memo: SimilarityMemo | None = _JOB["memo"]
    line_memo: LineMemo | None = _JOB["lines"]
    prepared: PreparedBatches | None = _JOB["prepared"]
    found_before = prepared.hit_pairs if prepared is not None else 0
    known = memo.keys() if memo is not None else set()  # what this chunk adds goes back
    lines: list[bytes] = []
    decisions: list[bytes | None] = []
    reused = 0
    agg: Aggregator = _JOB["aggregator"].empty()
    stats = CacheStats()
    matcher = CachedMatcher(_JOB["matcher"], None, stats, memo)  # counts what it computes

    def reuse_from(memo: LineMemo) -> Callable[[int, bytes], bytes | None]:
        def reuse(pos: int, decided: bytes) -> bytes | None:
            nonlocal reused
            i = offset + pos
            line = memo.line(i, cases[i], responses[i], decided)
            reused += line is not None
            return line
        return reuse

    reuse = reuse_from(line_memo) if line_memo is not None else None

    # A worker runs a local matcher and makes no reference cycles: the collector stays off for
    # the whole chunk (with it on, its collections cost a quarter of the scoring time).
    offset = start
    with gc_paused():
        for batch in score_batches(zip(cases[start:end], responses[start:end]), matcher,
                                   _JOB["options"], batch_size=end - start, prepared=prepared):
            agg.add_batch(batch)
            batch_lines, batch_decisions = batch.json_lines(reuse)
            lines.extend(batch_lines)
            decisions.extend(batch_decisions)
            offset += len(batch)
    if prepared is not None:  # similarities taken with the batches found prepared
        stats.add("similarities", prepared.hit_pairs - found_before, 0)
    counts = SimilarityCounts(stats.hits.get("similarities", 0),
                              stats.computed.get("similarities", 0))
    return ChunkResult(lines, decisions, agg, counts,
                       memo.entries_except(known) if memo is not None else {}, reused)


def score_parallel(cases: Sequence[Case], responses: Sequence[Response | None],
                   matcher: Matcher, options: ScoringOptions, workers: int,
                   aggregator: Aggregator, chunk: int = 2_500,
                   on_chunk: Callable[[int], None] | None = None,
                   memo: SimilarityMemo | None = None,
                   lines: LineMemo | None = None,
                   prepared: PreparedBatches | None = None) -> Iterator[ChunkResult]:
    """Score every case in `workers` forked processes (in this one for 1), in order.

    The chunks are the same either way, so a chunk's similarities are memoised under the same
    key (:meth:`SimilarityMemo.key <runner.memo.SimilarityMemo.key>`) and the lines come out
    byte for byte the same: a sweep job whose similarities the memo holds already is scored
    here, without forking workers and sending every line back through a pipe.

    Args:
        cases, responses: The run's cases and their responses (same length).
        matcher: A local matcher (see :func:`resolve_workers`).
        options: Scoring options.
        workers: Number of processes; 1 scores in this process (same chunks, same output).
        aggregator: An empty aggregator with the run's settings; each chunk's cases are
            added to a copy of it (:meth:`Aggregator.merge` combines them).
        chunk: Cases per task.
        on_chunk: Called with the number of cases of each finished chunk (a progress bar).
        memo: Similarities of earlier jobs (:mod:`runner.memo`), read by the workers; None
            reads and keeps nothing.
        lines: The previous job's lines (:class:`~runner.memo.LineMemo`, begun with this
            job's namespace), read by the workers; the caller stores this job's. None reads
            none.
        prepared: The threshold-free parts of the chunks scored before in this process, read
            and added to when scoring here (``workers`` 1); None keeps none.

    Yields:
        Per chunk, in case order, its :class:`ChunkResult`.
    """
    ranges = [(i, min(i + chunk, len(cases))) for i in range(0, len(cases), chunk)]
    _JOB.update(cases=cases, responses=responses,
                matcher=_for_workers(matcher, cases, responses, workers), options=options,
                aggregator=aggregator, memo=memo, lines=lines,
                prepared=prepared if workers <= 1 else None)
    try:
        if workers <= 1:
            for bounds in ranges:
                out = _work(bounds)
                yield out
                if on_chunk is not None:
                    on_chunk(bounds[1] - bounds[0])
            return
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(workers) as pool:
            for (start, end), out in zip(ranges, pool.imap(_work, ranges)):
                yield out
                if on_chunk is not None:
                    on_chunk(end - start)
    finally:
        _JOB.clear()

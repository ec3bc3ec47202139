"""Score a run's cases on several cores (the scoring stage of a job; ``scoring.workers``).

Scoring with an offline matcher is CPU-bound Python. The worker processes are forked once the
cases and responses are loaded, so they inherit them (and the matcher) without pickling any;
each worker takes a contiguous range of cases, computes its similarities once, decides every
threshold of the job and returns the chunk's columns (an Arrow table of its passages, and one
of its decisions per threshold: :mod:`runner.results.table`) with one
:class:`~runner.scoring.aggregate.Aggregator` per threshold, which the parent merges. The
parent writes the tables in case order, so the output is what one process writes.

Only local matchers (:class:`~runner.matchers.base.Local`: computed here, faster than a cache
lookup) are scored this way, and only where ``fork`` is the safe default (Linux): API matchers
keep their own concurrency, cache and usage counters in the parent process.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

from runner._gc import gc_paused
from runner.data.models import Case, Response
from runner.evaluate import count_pairs
from runner.matchers.base import Local, Matcher, for_workload
from runner.results import table
from runner.scoring.aggregate import Aggregator
from runner.scoring.batch import score_batch_thresholds
from runner.scoring.case import ScoringOptions
from runner.scoring.metrics import COUNT_KEYS


def resolve_workers(requested: int | None, matcher: Matcher, n_cases: int) -> int:
    """How many processes score a run.

    Args:
        requested: ``scoring.workers``: a number, or None/0 for automatic: one per CPU of
            this machine (at most 8) for runs of 2,000 cases or more, else 1 (forking costs
            more than it saves on a small run).
        matcher: The run's matcher; only local matchers go parallel.
        n_cases: Cases in the run.

    Returns:
        1 for the serial path, else the number of worker processes.
    """
    if not isinstance(matcher, Local) or not sys.platform.startswith("linux"):
        return 1
    if requested:
        return max(1, min(int(requested), n_cases))
    return 1 if n_cases < 2_000 else max(1, min(os.cpu_count() or 1, 8))


@dataclasses.dataclass
class ChunkResult:
    """What one chunk of cases gives.

    Attributes:
        passages: The cases' rows of ``passages.parquet``, in order.
        cases: Their rows of ``cases.parquet``, in order, at each threshold one after another:
            one table (a worker pickles it in a tenth of the time of one table a threshold).
        aggregators: Per threshold, the chunk's cases aggregated.
    """

    passages: pa.Table
    cases: pa.Table
    aggregators: list[Aggregator]


def score_chunk(cases: Sequence[Case], responses: Sequence[Response | None], matcher: Matcher,
                options: ScoringOptions, thresholds: Sequence[float], aggregator: Aggregator,
                bounds: tuple[int, int]) -> ChunkResult:
    """Score the cases of `bounds` (start, end) at every threshold."""
    start, end = bounds
    aggs = [aggregator.empty() for _ in thresholds]
    schema = table.decisions_schema(options.metrics, COUNT_KEYS, packed=True)
    # A local matcher makes no reference cycles: the collector stays off for the whole chunk
    # (with it on, its collections cost a quarter of the scoring time).
    if options.excerpts is not None:  # the chunk's cases that show their quotes' excerpts
        options = dataclasses.replace(options, excerpts=max(options.excerpts - start, 0))
    with gc_paused():
        scored = score_batch_thresholds(list(zip(cases[start:end], responses[start:end])),
                                        matcher, options, thresholds)
        for agg, batch in zip(aggs, scored):
            agg.add_batch(batch)
        return ChunkResult(scored[0].passages(), pa.concat_tables(
            [b.table(schema) for b in scored]).combine_chunks(), aggs)


# The run's score_chunk with everything but the bounds, which a forked pool's workers inherit
# (set only while it runs; never pickled).
_FORKED: list[Callable[[tuple[int, int]], ChunkResult]] = []


def _work(bounds: tuple[int, int]) -> ChunkResult:
    return _FORKED[0](bounds)


def _worker_start() -> None:
    """A worker ends on SIGTERM (the pool's own shutdown) with the default action: a handler
    inherited from the parent (ragcite's, which stops a run cleanly) could leave it waiting
    on the pool's queue lock. Its garbage collector stays off: it only scores, which makes
    no reference cycles (runner._gc), and it ends with its batch; a collection would walk
    the chunk's records and touch the inherited pages (about 45 ms a chunk at 100,000 cases)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    gc.disable()


def score_parallel(cases: Sequence[Case], responses: Sequence[Response | None],
                   matcher: Matcher, options: ScoringOptions, thresholds: Sequence[float],
                   workers: int, aggregator: Aggregator, chunk: int = 2_500,
                   forked: Callable[[], None] = lambda: None) -> Iterator[ChunkResult]:
    """Score every case in `workers` forked processes (in this one for 1), in order.

    Args:
        cases, responses: The run's cases and their responses (same length).
        matcher: A local matcher (see :func:`resolve_workers`).
        options: Scoring options.
        thresholds: The thresholds to decide.
        workers: Number of processes; 1 scores in this process (same chunks, same output).
        aggregator: An empty aggregator with the run's settings; each chunk's cases are
            added to copies of it (:meth:`Aggregator.merge` combines them).
        chunk: Cases per task.
        forked: Called once the workers are forked and at work (at once for 1): what the
            caller does then runs beside their scoring and is not inherited by any worker.

    Yields:
        Per chunk, in case order, its :class:`ChunkResult`.
    """
    ranges = [(i, min(i + chunk, len(cases))) for i in range(0, len(cases), chunk)]
    per_process = count_pairs(cases, responses) // max(workers, 1)
    job = functools.partial(score_chunk, cases, responses,
                            for_workload(matcher, per_process, workers), options, thresholds,
                            aggregator)
    if workers <= 1:
        forked()
        yield from map(job, ranges)
        return
    _FORKED[:] = [job]
    pa.array([])  # pyarrow imports pandas at its first array from a list: once, not per worker
    try:
        with multiprocessing.get_context("fork").Pool(workers, _worker_start) as pool:
            chunks = pool.imap(_work, ranges)  # at work from now on
            forked()
            yield from chunks
            pool.close()  # every chunk is back: the workers exit on their own
            pool.join()
    finally:
        _FORKED.clear()

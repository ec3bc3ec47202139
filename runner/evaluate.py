"""`runner.evaluate`: score cases and their responses, without Hydra (SPEC 8)."""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from runner._gc import gc_paused
from runner.data.models import Case, Response
from runner.matchers.base import BaseMatcher, Matcher, for_workload
from runner.parallel import count_pairs
from runner.results import CaseResult, RunResult
from runner.scoring.aggregate import Aggregator
from runner.scoring.bands import DEFAULT_BANDS
from runner.scoring.batch import BatchResults, PreparedBatches, score_batch_lazy
from runner.scoring.case import ScoringOptions
from runner.scoring.sources import DEFAULT_STEPS


def matcher_from_name(name: str, **kwargs: Any) -> Matcher:
    """Build a matcher by its config name: ``"ngram"`` → ``runner.matchers.ngram.NgramMatcher``.

    The same naming rule links ``matcher=ngram`` on the command line, ``conf/matcher/ngram.yaml``
    and the class, so there is no registry to keep in sync.

    Raises:
        ValueError: No such matcher module or class.
    """
    class_name = "".join(part.capitalize() for part in name.split("_")) + "Matcher"
    try:
        module = importlib.import_module(f"runner.matchers.{name}")
        cls = getattr(module, class_name)
    except (ImportError, AttributeError):
        cls = None
    if cls is None or cls is BaseMatcher:  # `base` names the abstract helper, not a matcher
        raise ValueError(f"unknown matcher {name!r}: expected a module runner.matchers.{name} "
                         f"with a class {class_name}")
    matcher: Matcher = cls(**kwargs)
    return matcher


def with_threshold(matcher: Matcher, threshold: float | None) -> Matcher:
    """A copy of `matcher` with another threshold (the matcher itself when None)."""
    if threshold is None:
        return matcher
    clone = copy.copy(matcher)
    clone.threshold = float(threshold)
    return clone


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def score_batches(
    items: Iterable[tuple[Case, Response | None]],
    matcher: Matcher,
    options: ScoringOptions,
    batch_size: int = 10_000,
    on_batch: Callable[[int], None] | None = None,
    prepared: PreparedBatches | None = None,
) -> Iterator[BatchResults]:
    """Score (case, response) pairs batch by batch, each distinct pair's similarity once.

    A :class:`~runner.scoring.batch.BatchResults` carries the batch's run-level sums (for
    :meth:`Aggregator.add_batch <runner.scoring.aggregate.Aggregator.add_batch>`) and builds
    its per-case records when one is first read.

    Args:
        items: Cases with their responses (``None`` when the system produced none).
        matcher: Any :class:`Matcher`; it receives the distinct pairs of a whole batch at once.
        options: Scoring options (its threshold is used, not the matcher's).
        batch_size: Cases per batch; bounds memory on large runs.
        on_batch: Called with the number of cases after each batch is consumed (progress bars).
        prepared: Threshold-free parts of batches scored before
            (:class:`~runner.scoring.batch.PreparedBatches`), read and added to.

    Yields:
        The scored batches, in input order.
    """
    for batch in _batches(items, batch_size):
        yield score_batch_lazy(batch, matcher, options, prepared)
        if on_batch is not None:
            on_batch(len(batch))


def score_stream(
    items: Iterable[tuple[Case, Response | None]],
    matcher: Matcher,
    options: ScoringOptions,
    batch_size: int = 10_000,
    on_batch: Callable[[int], None] | None = None,
) -> Iterator[CaseResult]:
    """:func:`score_batches`, case by case.

    Yields:
        One :class:`CaseResult` per input, in input order.
    """
    for results in score_batches(items, matcher, options, batch_size, on_batch):
        yield from results


def evaluate(
    cases: Iterable[Case],
    matcher: str | Matcher = "ngram",
    threshold: float | None = None,
    *,
    responses: Mapping[str, Response] | None = None,
    zero_division: str = "auto",
    require_same_source: bool = False,
    source_normalization: Sequence[str] = DEFAULT_STEPS,
    bands: Mapping[str, float] | None = None,
    bootstrap_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    batch_size: int = 10_000,
) -> RunResult:
    """Score cases and return the run-level and per-case results.

    Args:
        cases: The cases; each needs a stored ``response`` unless `responses` has it.
        matcher: A matcher name (``"substring"``, ``"ngram"``, ...) with its defaults, or a
            configured instance such as ``NgramMatcher(n=2, threshold=0.4)``.
        threshold: Overrides the matcher's threshold.
        responses: Responses keyed by case id, used instead of stored ones.
        zero_division: ``auto``, ``nan``, ``zero`` or ``one`` (SPEC 5).
        require_same_source: Only same-source citations can match a reference.
        source_normalization: Source normalisation steps (SPEC 3).
        bands: Lower bounds of the ``green`` and ``medium`` bands.
        bootstrap_resamples, confidence, seed: The bootstrap confidence intervals.
        batch_size: Cases scored per matcher call.

    Returns:
        A :class:`RunResult`; ``result.metrics["context_f1"]``, ``result.cases[0].metrics``.

    Example:
        >>> import runner
        >>> case = runner.Case(id="1", query="q",
        ...     references=[runner.Reference(source="a.pdf", content="the cat sat on the mat")],
        ...     response=runner.Response(citations=[
        ...         runner.Citation(source="a.pdf", content="the cat sat on the mat")]))
        >>> runner.evaluate([case]).metrics["context_recall"]
        1.0
    """
    m = matcher_from_name(matcher) if isinstance(matcher, str) else matcher
    m = with_threshold(m, threshold)
    options = ScoringOptions(
        threshold=float(m.threshold), zero_division=zero_division,
        require_same_source=require_same_source,
        source_normalization=tuple(source_normalization),
        bands=dict(bands or DEFAULT_BANDS),
    )
    pairs: Iterable[tuple[Case, Response | None]] = (
        (c, responses.get(c.id) if responses is not None else c.response) for c in cases)
    if isinstance(cases, Sequence):  # its size is known: the matcher can plan for it
        stored = [r for _, r in pairs]
        m = for_workload(m, count_pairs(cases, stored))
        pairs = zip(cases, stored)
    agg = Aggregator(zero_division, bootstrap_resamples, confidence, seed, bands=options.bands)
    # Automatic garbage collection stays off while this run allocates its results (see
    # runner._gc): with millions of live objects every full collection walks all of them, which
    # made scoring 100,000 cases several times slower. Reference cycles a matcher may leave
    # behind are collected as usual once the collector resumes.
    with gc_paused():
        for scored in score_batches(pairs, m, options, batch_size):
            # The sums go to the aggregator now; a case's record is built when it is read.
            agg.add_batch(scored)
        return agg.result()

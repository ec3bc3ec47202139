"""`runner.evaluate`: score cases and their responses, without Hydra (SPEC 8).

Example:
    >>> import runner
    >>> case = runner.Case(id="1", query="q",
    ...     references=[runner.Reference(source="a.pdf", content="the cat sat on the mat")],
    ...     response=runner.Response(citations=[
    ...         runner.Citation(source="a.pdf", content="the cat sat on the mat")]))
    >>> runner.evaluate([case]).metrics["context_recall"]
    1.0
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import Any

from runner._gc import gc_paused
from runner.data import inputs
from runner.data.citations import Tally, with_offsets
from runner.data.models import Case, Response
from runner.matchers.base import BaseMatcher, Matcher, for_workload, similarity_range
from runner.results import RunResult, ThresholdResults
from runner.scoring.aggregate import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, Aggregator
from runner.scoring.bands import DEFAULT_BANDS
from runner.scoring.batch import DEFAULT_BATCH_SIZE, score_batch_thresholds
from runner.scoring.case import ScoringOptions
from runner.scoring.fidelity import Locator
from runner.scoring.sources import DEFAULT_STEPS
from runner.scoring.thresholds import Threshold, resolve_thresholds

DEFAULT_MATCHER = "ngram"
"""The matcher of ``evaluate`` and of the config (``matcher: ngram`` in conf/config.yaml)."""


def matcher_from_name(name: str, **kwargs: Any) -> Matcher:
    """Build a matcher by its config name: ``"ngram"`` → ``runner.matchers.ngram.NgramMatcher``.

    The same naming rule links ``matcher=ngram`` on the command line, ``conf/matcher/ngram.yaml``
    and the class, so there is no registry to keep in sync.

    Raises:
        ValueError: No such matcher module or class.
    """
    class_name = "".join(part.capitalize() for part in name.split("_")) + "Matcher"
    try:
        cls = getattr(importlib.import_module(f"runner.matchers.{name}"), class_name, None)
    except ImportError:
        cls = None
    if cls is None or cls is BaseMatcher:  # `base` names the abstract helper, not a matcher
        raise ValueError(f"unknown matcher {name!r}: expected a module runner.matchers.{name} "
                         f"with a class {class_name}")
    return cls(**kwargs)


def count_pairs(cases: Sequence[Case], responses: Sequence[Response | None]) -> int:
    """(reference, citation) pairs of a run: the matcher's workload (blank ones included)."""
    return sum(len(c.references) * len(r.citations)
               for c, r in zip(cases, responses) if r is not None)


def evaluate(
    cases: Iterable[inputs.CaseLike],
    matcher: str | Matcher = DEFAULT_MATCHER,
    threshold: float | str | None = None,
    *,
    thresholds: Sequence[float | str] | None = None,
    responses: Mapping[str, inputs.ResponseLike] | Iterable[Mapping[str, Any]] | None = None,
    zero_division: str = "auto",
    require_same_source: bool = False,
    source_normalization: Sequence[str] = DEFAULT_STEPS,
    bands: Mapping[str, float] | None = None,
    bootstrap_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    batch_size: int = DEFAULT_BATCH_SIZE,
    knowledge_base: Mapping[str, str] | None = None,
) -> Any:
    """Score cases and return the run-level and per-case results.

    Args:
        cases: :class:`Case` objects or dicts in the canonical shape (a dict without ``id``
            gets its 1-based position); each needs a ``response`` unless `responses` has it.
        matcher: A matcher name (``"substring"``, ``"ngram"``, ...) with its defaults, or a
            configured instance such as ``NgramMatcher(n=2)``.
        threshold: A number or a level (``"strict"``, ``"default"``, ``"lenient"``: the
            matcher's own value); None is the matcher's ``default`` level.
        thresholds: Several thresholds, decided from one pass (a mapping is returned).
        responses: Responses (or dicts) by case id, or records ``{"id", "answer", ...}``.
        zero_division: ``auto``, ``nan``, ``zero`` or ``one`` (SPEC 5).
        require_same_source: Only same-source citations can match a reference.
        source_normalization: Source normalisation steps (SPEC 3).
        bands: Lower bounds of the ``green`` and ``medium`` bands.
        bootstrap_resamples, confidence, seed: The bootstrap confidence intervals.
        batch_size: Cases scored per matcher call.
        knowledge_base: Each source's text, for offsets (SPEC 2.1) and quote fidelity (6.1).

    Returns:
        A :class:`RunResult` (``result.metrics["context_f1"]``, ``result.to_pandas()``); with
        `thresholds`, a :class:`~runner.results.ThresholdResults` (``results[0.5]``).

    Raises:
        RagciteError: A threshold the matcher cannot take; an invalid case or response
            (``cases[3].query: ...``); no response at all.
        DataError: A citation given by offsets that the knowledge base does not hold.
    """
    m = matcher_from_name(matcher) if isinstance(matcher, str) else matcher
    spec: Any = list(thresholds) if thresholds is not None else (
        "default" if threshold is None else threshold)
    decided = resolve_thresholds(spec, m.levels, similarity_range(m))
    options = ScoringOptions(decided[0].value, zero_division, require_same_source,
                             tuple(source_normalization), dict(bands or DEFAULT_BANDS))
    empty = Aggregator(zero_division, bootstrap_resamples, confidence, seed, bands=options.bands)
    out = _score_inputs(cases, responses, m, options, decided, empty, batch_size, knowledge_base)
    return ThresholdResults(out) if thresholds is not None else out[0]


def _score_inputs(cases: Iterable[inputs.CaseLike],
                  responses: Mapping[str, inputs.ResponseLike] | Iterable[Mapping[str, Any]] | None,
                  matcher: Matcher, options: ScoringOptions, decided: Sequence[Threshold],
                  empty: Aggregator, batch_size: int, texts: Mapping[str, str] | None
                  ) -> list[RunResult]:
    """Validate the inputs (dicts become cases and responses) and score them at every threshold
    of `decided`: one result each, each quote located in `texts` unless None. A list stays
    a list (its size known, the matcher plans for it), a stream a stream."""
    if texts is not None:
        options.fidelity = Locator(texts.items(), options.normalizer)
    valid: Iterable[Case] = (list(inputs.iter_as_cases(cases)) if isinstance(cases, Sequence)
                             else inputs.iter_as_cases(cases))  # a list: checked first
    table = inputs.as_responses(responses) if responses is not None else None
    first_id, answered, tally = None, 0, Tally()  # counted as the cases pass

    def pair(c: Case) -> tuple[Case, Response | None]:
        nonlocal first_id, answered
        response = with_offsets(table.get(c.id) if table is not None else c.response,
                                lambda: texts or {}, "cases", f"case {c.id!r}")
        tally.add([response])
        first_id, answered = first_id or c.id, answered + (response is not None)
        return c, response

    pairs: Iterable[tuple[Case, Response | None]] = map(pair, valid)
    if isinstance(cases, Sequence):
        pairs = list(pairs)
        matcher = for_workload(matcher, count_pairs(*zip(*pairs)) if pairs else 0)
    aggs = [empty.empty() for _ in decided]
    # Automatic garbage collection stays off while this run allocates its results (see
    # runner._gc): with millions of live objects every full collection walks all of them, which
    # made scoring 100,000 cases several times slower. Reference cycles a matcher may leave
    # behind are collected as usual once the collector resumes.
    it = iter(pairs)
    with gc_paused():
        while batch := list(islice(it, batch_size)):  # one matcher call per batch
            for agg, one in zip(aggs, score_batch_thresholds(batch, matcher, options,
                                                             [t.value for t in decided])):
                agg.add_batch(one)  # the sums now; a case's record is built when it is read
        results = [agg.result() for agg in aggs]
    for t, result in zip(decided, results):
        result.extra.update(threshold=t.to_dict(), dangling=tally.figure())
    if warning := tally.warning():
        logging.getLogger("ragcite").warning("ragcite: warning: %s", warning)
    if first_id is not None and not answered:
        raise inputs.no_response_error(results[0].n_cases, table is not None, first_id)
    return results

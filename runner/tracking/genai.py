"""ragcite's metrics as MLflow GenAI scorers, for ``mlflow.genai.evaluate(data, scorers=...)``.

One scorer per declared metric (:data:`runner.scoring.metrics.METRICS`), each scoring one row
with :func:`runner.evaluate`: its value, the case's explanation of it as the rationale, and the
counts its formula reads as metadata. A row is one case in the data model's terms (SPEC 2):

* ``inputs``: ``{"query": ...}`` (and, optionally, the case's ``"id"``);
* ``outputs``: the response, ``{"answer": ..., "citations": [{"source", "content"}, ...]}``;
* ``expectations``: ``{"references": [{"source", "content"}, ...]}`` (none: an empty list)
  and, optionally, ``"expected_sources"`` (else the distinct sources of the references).

Other keys of a row's dicts are left to other scorers.

A row that cannot be scored (a malformed field, a response with an ``error``, a pair the
matcher cannot compare) is an error :class:`~mlflow.entities.Feedback`, never a value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from mlflow.entities import Feedback
from mlflow.genai.scorers import Scorer, scorer

from runner.errors import RagciteError
from runner.evaluate import DEFAULT_MATCHER, evaluate, matcher_from_name
from runner.matchers.base import Matcher
from runner.scoring.metrics import METRIC_KEYS, METRICS, Metric

# Where a field of the case made from a row is in the row, for the error messages.
_IN_ROW = {"response": "outputs", "query": "inputs.query", "id": "inputs.id"}


def scorers(matcher: str | Matcher = DEFAULT_MATCHER, threshold: float | str | None = None,
            metrics: Iterable[str] | None = None, **options: Any) -> list[Scorer]:
    """The scorers of `metrics` (default: every declared metric), deciding matches with
    `matcher` at `threshold` (a number or a level; None: the matcher's ``default`` level).

    Args:
        matcher: A matcher name or a configured instance, built once here.
        threshold: The threshold every row is decided at.
        metrics: The metric names to score (a scorer each, named as the metric); by default
            the six built-in metrics, as a run scores them.
        **options: The other scoring options of :func:`runner.evaluate` (``zero_division``,
            ``require_same_source``, ``source_normalization``).

    Raises:
        RagciteError: An unknown metric, or a threshold or option the matcher cannot take
            (checked here, before any row).
    """
    built = matcher_from_name(matcher) if isinstance(matcher, str) else matcher
    settings = {"matcher": built, "threshold": threshold, "bootstrap_resamples": 0, **options}
    evaluate([], **settings)  # refuses a bad threshold or option now, not on every row
    names = list(METRIC_KEYS if metrics is None else metrics)  # the six built-in, as a run
    if unknown := [n for n in names if n not in METRICS]:
        raise RagciteError(f"unknown metric {', '.join(unknown)}: expected one of "
                           f"{', '.join(METRICS)}")
    return [_scorer(METRICS[name], settings) for name in names]


def _scorer(metric: Metric, settings: Mapping[str, Any]) -> Scorer:
    """The scorer of `metric` under `settings` (the arguments of :func:`runner.evaluate`)."""

    def score(inputs: dict[str, Any], outputs: dict[str, Any],
              expectations: dict[str, Any]) -> Feedback:
        case = {**{k: v for k, v in inputs.items() if k in ("id", "query")}, "response": outputs,
                **{k: v for k, v in (expectations or {}).items()
                   if k in ("references", "expected_sources")}}
        try:
            scored = evaluate([case], **settings).cases[0]
            error = scored.error
        except RagciteError as exc:  # a malformed field, named as in the row
            error = re.sub(r"^cases\[0\]\.(\w+)",
                           lambda m: _IN_ROW.get(m[1], f"expectations.{m[1]}"), str(exc))
        if error is not None:
            return Feedback(name=metric.name, error=f"not scored: {error}")
        return Feedback(name=metric.name, value=scored.metrics[metric.name],
                        rationale=scored.explanations.get(str(metric.explains)),
                        metadata={k: str(scored.counts[k]) for k in metric.counts})

    return scorer(score, name=metric.name, description=metric.about)

"""A scored case's record: the scoring options, error cases, figures and explanations."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.data.models import Case, Response
from runner.results import CaseResult
from runner.scoring.bands import DEFAULT_BANDS, band
from runner.scoring.explain import Facts
from runner.scoring.metrics import COUNT_KEYS, METRIC_KEYS, ZERO_DIVISION_POLICIES, declared
from runner.scoring.sources import DEFAULT_STEPS, SourceNormalizer


@dataclass
class ScoringOptions:
    """How matches are decided and scores computed (the ``scoring`` config group).

    Attributes:
        threshold: Similarity at or above which a pair matches.
        zero_division: ``auto``, ``nan``, ``zero`` or ``one`` (see :mod:`runner.scoring.metrics`).
        require_same_source: A citation can only match a reference of the same source.
        source_normalization: Steps of :mod:`runner.scoring.sources`.
        bands: Lower bounds of the ``green`` and ``medium`` bands.
        metrics: The names of the declared metrics to compute (:mod:`runner.scoring.metrics`).
    """

    threshold: float = 0.5
    zero_division: str = "auto"
    require_same_source: bool = False
    source_normalization: tuple[str, ...] = DEFAULT_STEPS
    bands: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_BANDS))
    metrics: tuple[str, ...] = METRIC_KEYS

    def __post_init__(self) -> None:
        if self.zero_division not in ZERO_DIVISION_POLICIES:
            raise ValueError(f"scoring.zero_division must be one of "
                             f"{', '.join(ZERO_DIVISION_POLICIES)}, got {self.zero_division!r}")
        self.normalizer: Callable[[str], str] = SourceNormalizer(self.source_normalization)


def error_case(case: Case, response: Response | None, error: str,
               metrics: Sequence[str] = METRIC_KEYS) -> CaseResult:
    """A case that could not be scored: it carries its error and no metric values."""
    fields = case.model_dump(exclude={"response"})
    return CaseResult(**fields, response=response.model_dump() if response is not None else None,
                      metrics=dict.fromkeys(metrics), bands=dict.fromkeys(metrics), error=error)


# (metrics, bands, the metric values as a row with NaN for undefined) of one count pattern.
Figures = tuple[dict[str, float | None], dict[str, str | None], tuple[float, ...]]


def figures_of(counts: tuple[int, ...], zero_division: str, bands: Mapping[str, float],
               metrics: Sequence[str] = METRIC_KEYS) -> Figures:
    """The metrics, bands and metric row of a case with these counts (SPEC 5).

    The metrics depend only on a case's counts (in :data:`~runner.scoring.metrics.COUNT_KEYS`
    order), and few count patterns occur, so each pattern is computed once (a pure function's
    memo) by the declared formulas. Callers copy the dicts into each case's own.
    """
    return _figures(tuple(counts), zero_division, tuple(bands.items()), tuple(metrics))


@functools.lru_cache(maxsize=65_536)
def _figures(counts: tuple[int, ...], zero_division: str, bands: tuple[tuple[str, float], ...],
             names: tuple[str, ...]) -> Figures:
    c = dict(zip(COUNT_KEYS, counts))
    metrics = {m.name: m.value(c, zero_division) for m in declared(names)}
    return (metrics, {k: band(v, dict(bands)) for k, v in metrics.items()},
            tuple(math.nan if v is None else v for v in metrics.values()))


class ExplainedLater(CaseResult):
    """A scored case whose plain-language explanations are written on first use.

    The sentences (about half the cost of scoring a case) follow from the case's own fields, so
    they are built when ``explanations`` is first read (``to_dict`` when ``cases.jsonl`` is
    written, a report, the caller) and kept; a caller that only wants the figures never pays
    for them. Reads, equality, ``repr`` and ``to_dict`` see the same values as eager scoring.
    """

    normalizer: Callable[[str], str]

    @classmethod
    def from_fields(cls, fields: dict[str, Any],
                    normalizer: Callable[[str], str]) -> ExplainedLater:
        """A scored case from a dict holding every field but ``explanations``, without the
        dataclass ``__init__`` (the batch scorer's hot path: one dict per case, no copies)."""
        case = cls.__new__(cls)
        fields["_explanations"] = None
        fields["normalizer"] = normalizer
        case.__dict__ = fields
        return case

    @property
    def explanations(self) -> dict[str, str]:
        """The six explanations (built on first read)."""
        state = self.__dict__
        out: dict[str, str] | None = state.get("_explanations")
        if out is None:
            out = state["_explanations"] = self._explain()
        return out

    @explanations.setter
    def explanations(self, value: dict[str, str]) -> None:
        # The dataclass __init__ passes the field's default ({}): that means "not built yet".
        self.__dict__["_explanations"] = value or None

    def _explain(self) -> dict[str, str]:
        norm = self.normalizer
        ref_sources = [r["source"] for r in self.references]
        response = self.response or {}
        cit_sources = [c["source"] for c in response.get("citations", ())]
        ref_src = [norm(s) for s in ref_sources]
        cit_src = [norm(s) for s in cit_sources]
        expected_display: dict[str, str] = {}
        for s in self.expected_sources:
            expected_display.setdefault(norm(s), s)
        cited_display: dict[str, str] = {}
        for s, shown in zip(cit_src, cit_sources):
            cited_display.setdefault(s, shown)
        c_labels = self.citation_labels
        wrong_sources = {s for s, lab in zip(cit_src, c_labels) if lab == "wrong_passage"}
        facts = Facts(
            self.metrics, ref_sources, self.reference_labels, cit_sources, c_labels,
            list(expected_display.values()), [k in cited_display for k in expected_display],
            list(cited_display.values()), [k in expected_display for k in cited_display],
            [s in wrong_sources for s in ref_src])
        return {m.explains: m.explain(facts) for m in declared(self.metrics) if m.explains}

"""What every scored case shares: the scoring options, and the record of a case that could not be
scored."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.data.models import Case, Response
from runner.results import CaseResult, table
from runner.scoring.bands import DEFAULT_BANDS
from runner.scoring.fidelity import Locator
from runner.scoring.metrics import METRIC_KEYS, ZERO_DIVISION_POLICIES
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
        fidelity: The job's documents to locate quotes in (SPEC 6.1); None: not checked.
        excerpts: The cases, from the first, whose located quotes carry the excerpt of their
            document a report shows (the report's ``max_cases``); None: all.
    """

    threshold: float = 0.5
    zero_division: str = "auto"
    require_same_source: bool = False
    source_normalization: tuple[str, ...] = DEFAULT_STEPS
    bands: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_BANDS))
    metrics: tuple[str, ...] = METRIC_KEYS
    fidelity: Locator | None = None
    excerpts: int | None = None

    def __post_init__(self) -> None:
        if self.zero_division not in ZERO_DIVISION_POLICIES:
            raise ValueError(f"scoring.zero_division must be one of "
                             f"{', '.join(ZERO_DIVISION_POLICIES)}, got {self.zero_division!r}")
        self.normalizer: Callable[[str], str] = SourceNormalizer(self.source_normalization)


#: What a case's record keeps of its response (the columns of passages.parquet).
STORED: dict[str, Any] = {**{f.name: True for f in table.RESPONSE},
                          "citations": {"__all__": {f.name for f in table.CITATION}}}


def error_case(case: Case, response: Response | None, error: str,
               metrics: Sequence[str] = METRIC_KEYS) -> CaseResult:
    """A case that could not be scored: it carries its error and no metric values."""
    return CaseResult(
        id=case.id, query=case.query,
        references=[{"source": r.source, "content": r.content} for r in case.references],
        expected_sources=list(case.expected_sources),
        response=response.model_dump(include=STORED) if response is not None else None,
        metadata=dict(case.metadata),
        metrics=dict.fromkeys(metrics), bands=dict.fromkeys(metrics),
        error=error,
    )

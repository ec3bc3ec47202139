"""Score one case: match matrix → metrics, labels, bands and explanations."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.data.models import Case, Response
from runner.matchers.base import PairError, Similarity, TextPair
from runner.results import CaseResult
from runner.scoring.bands import DEFAULT_BANDS, band
from runner.scoring.explain import explain_case
from runner.scoring.labels import citation_labels, reference_labels
from runner.scoring.metrics import METRIC_KEYS, context_metrics, source_metrics
from runner.scoring.predicate import Rule, decide_rule, needed_pairs
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
    """

    threshold: float = 0.5
    zero_division: str = "auto"
    require_same_source: bool = False
    source_normalization: tuple[str, ...] = DEFAULT_STEPS
    bands: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_BANDS))

    def __post_init__(self) -> None:
        self.normalizer: Callable[[str], str] = SourceNormalizer(self.source_normalization)


def _response_dict(response: Response) -> dict[str, Any]:
    return {
        "answer": response.answer,
        "citations": [{"source": c.source, "content": c.content} for c in response.citations],
        "usage": response.usage,
        "latency_s": response.latency_s,
        "error": response.error,
    }


def case_pairs(case: Case, response: Response | None, options: ScoringOptions) -> list[TextPair]:
    """The text pairs whose similarities scoring this case needs (none for a failed case)."""
    if response is None or response.error is not None:
        return []
    return list(needed_pairs(case.references, response.citations, options.normalizer,
                             options.require_same_source))


def error_case(case: Case, response: Response | None, error: str) -> CaseResult:
    """A case that could not be scored: it carries its error and no metric values."""
    return CaseResult(
        id=case.id, query=case.query,
        references=[{"source": r.source, "content": r.content} for r in case.references],
        expected_sources=list(case.expected_sources),
        response=_response_dict(response) if response is not None else None,
        metadata=dict(case.metadata),
        metrics=dict.fromkeys(METRIC_KEYS), bands=dict.fromkeys(METRIC_KEYS),
        error=error,
    )


def score_case(case: Case, response: Response | None,
               sims: Mapping[TextPair, Similarity], options: ScoringOptions) -> CaseResult:
    """Score one case given the similarities of its needed pairs.

    Args:
        case: The test case.
        response: The system's response; ``None`` or one with ``error`` makes an error case.
        sims: Similarity per (reference text, citation text) pair; must cover
            :func:`case_pairs`.
        options: Threshold and scoring options.

    Returns:
        The scored case, or an error case when the response failed or a needed similarity is a
        :class:`PairError`.
    """
    if response is None:
        return error_case(case, None, "no response for this case")
    if response.error is not None:
        return error_case(case, response, response.error)
    norm = options.normalizer
    refs, cits = case.references, response.citations
    ref_src = [norm(r.source) for r in refs]
    cit_src = [norm(c.source) for c in cits]
    threshold = options.threshold
    similarity: list[list[float | None]] = []
    matched: list[list[bool]] = []
    for i, ref in enumerate(refs):
        srow: list[float | None] = []
        mrow: list[bool] = []
        for j, cit in enumerate(cits):
            rule = decide_rule(ref, cit, ref_src[i], cit_src[j], options.require_same_source)
            if rule is Rule.SIMILARITY:
                sim = sims[(ref.content, cit.content)]
                if isinstance(sim, PairError):
                    return error_case(case, response,
                                      f"matcher failed on reference {i} / citation {j}: "
                                      f"{sim.message}")
                srow.append(sim)
                mrow.append(sim >= threshold)
            else:
                srow.append(None)
                mrow.append(rule is Rule.EMPTY_REFERENCE and ref_src[i] == cit_src[j])
        similarity.append(srow)
        matched.append(mrow)
    ref_matched = [any(row) for row in matched]
    cit_matched = [any(matched[i][j] for i in range(len(refs))) for j in range(len(cits))]

    expected_display: dict[str, str] = {}
    for s in case.expected_sources:
        expected_display.setdefault(norm(s), s)
    cited_display: dict[str, str] = {}
    for c, s in zip(cits, cit_src):
        cited_display.setdefault(s, c.source)
    expected, cited = set(expected_display), set(cited_display)

    metrics = {**context_metrics(ref_matched, cit_matched, options.zero_division),
               **source_metrics(expected, cited, options.zero_division)}
    c_labels = citation_labels(cit_matched, cit_src, expected)
    r_labels = reference_labels(ref_matched, ref_src, cited)
    counts = {
        "references": len(refs), "references_matched": sum(ref_matched),
        "citations": len(cits), "citations_matched": sum(cit_matched),
        "expected_sources": len(expected), "cited_sources": len(cited),
        "sources_hit": len(expected & cited),
    }
    wrong_sources = {s for s, lab in zip(cit_src, c_labels) if lab == "wrong_passage"}
    explanations = explain_case(
        metrics,
        [r.source for r in refs], r_labels, [c.source for c in cits], c_labels,
        list(expected_display.values()), [k in cited for k in expected_display],
        list(cited_display.values()), [k in expected for k in cited_display],
        ref_wrong_cited=[s in wrong_sources for s in ref_src],
    )
    return CaseResult(
        id=case.id, query=case.query,
        references=[{"source": r.source, "content": r.content} for r in refs],
        expected_sources=list(case.expected_sources),
        response=_response_dict(response), metadata=dict(case.metadata),
        similarity=similarity, matched=matched,
        citation_labels=c_labels, reference_labels=r_labels,
        metrics=metrics, counts=counts,
        bands={k: band(v, options.bands) for k, v in metrics.items()},
        explanations=explanations,
    )

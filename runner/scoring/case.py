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
    # Field values straight from the model's __dict__: pydantic attribute access is slow, and
    # this runs for every case.
    rd = response.__dict__
    return {
        "answer": rd["answer"],
        "citations": [{"source": (d := c.__dict__)["source"], "content": d["content"]}
                      for c in rd["citations"]],
        "usage": rd["usage"],
        "latency_s": rd["latency_s"],
        "error": rd["error"],
    }


def _blank(text: str) -> bool:
    # Same as `not text.strip()`, without building the stripped copy.
    return not text or text.isspace()


def case_pairs(case: Case, response: Response | None, options: ScoringOptions) -> list[TextPair]:
    """The text pairs whose similarities scoring this case needs (none for a failed case).

    These are the pairs that reach step 4 of the predicate (:mod:`runner.scoring.predicate`):
    a non-blank reference and a non-blank citation, of the same source under
    ``require_same_source``.
    """
    if response is None or response.error is not None:
        return []
    refs = [(d["source"], d["content"]) for d in (r.__dict__ for r in case.references)]
    cits = [(d["source"], d["content"]) for d in (c.__dict__ for c in response.citations)]
    if options.require_same_source:
        norm = options.normalizer
        cits_n = [(norm(s), t) for s, t in cits if not _blank(t)]
        return [(rt, ct) for rs, rt in refs if not _blank(rt)
                for rsn in (norm(rs),) for cs, ct in cits_n if cs == rsn]
    cit_texts = [t for _, t in cits if not _blank(t)]
    return [(rt, ct) for _, rt in refs if not _blank(rt) for ct in cit_texts]


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
    # This runs once per case: model fields are read once from __dict__ (pydantic attribute
    # access is slow), and the predicate of runner.scoring.predicate is applied inline.
    norm = options.normalizer
    cd = case.__dict__
    refs = [r.__dict__ for r in cd["references"]]
    ref_sources = [d["source"] for d in refs]
    ref_texts = [d["content"] for d in refs]
    cits = [c.__dict__ for c in response.__dict__["citations"]]
    cit_sources = [d["source"] for d in cits]
    cit_texts = [d["content"] for d in cits]
    ref_src = [norm(s) for s in ref_sources]
    cit_src = [norm(s) for s in cit_sources]
    n_cit = len(cits)
    threshold = options.threshold
    same_source = options.require_same_source
    cit_ok = [not _blank(t) for t in cit_texts]
    all_ok = all(cit_ok)
    similarity: list[list[Any]] = []
    matched: list[list[bool]] = []
    try:
        for rt, rs in zip(ref_texts, ref_src):
            if _blank(rt):  # step 1: matched by any citation of the same source
                similarity.append([None] * n_cit)
                matched.append([rs == s for s in cit_src])
            elif all_ok and not same_source:  # step 4 for every citation
                srow: list[Any] = [sims[(rt, ct)] for ct in cit_texts]
                similarity.append(srow)
                matched.append([s >= threshold for s in srow])
            else:  # steps 2 and 3 leave some pairs without a similarity
                srow = [sims[(rt, ct)] if ok and (not same_source or rs == cs) else None
                        for ct, cs, ok in zip(cit_texts, cit_src, cit_ok)]
                similarity.append(srow)
                matched.append([s is not None and s >= threshold for s in srow])
    except TypeError:
        # A similarity that cannot be compared: the first PairError in row-major order makes
        # an error case; anything else is a matcher bug and raises as it would have.
        for i, srow in enumerate(similarity):
            for j, sim in enumerate(srow):
                if isinstance(sim, PairError):
                    return error_case(case, response,
                                      f"matcher failed on reference {i} / citation {j}: "
                                      f"{sim.message}")
                if sim is not None:
                    sim >= threshold  # noqa: B015 - raises the original TypeError
        raise
    ref_matched = [True in row for row in matched]
    cit_matched = [True in col for col in zip(*matched)] if matched else [False] * n_cit

    expected_display: dict[str, str] = {}
    for s in cd["expected_sources"]:
        expected_display.setdefault(norm(s), s)
    cited_display: dict[str, str] = {}
    for s, shown in zip(cit_src, cit_sources):
        cited_display.setdefault(s, shown)
    expected, cited = set(expected_display), set(cited_display)

    zero_division = options.zero_division
    metrics = {**context_metrics(ref_matched, cit_matched, zero_division),
               **source_metrics(expected, cited, zero_division)}
    c_labels = citation_labels(cit_matched, cit_src, expected)
    r_labels = reference_labels(ref_matched, ref_src, cited)
    counts = {
        "references": len(refs), "references_matched": sum(ref_matched),
        "citations": n_cit, "citations_matched": sum(cit_matched),
        "expected_sources": len(expected), "cited_sources": len(cited),
        "sources_hit": len(expected & cited),
    }
    wrong_sources = {s for s, lab in zip(cit_src, c_labels) if lab == "wrong_passage"}
    explanations = explain_case(
        metrics,
        ref_sources, r_labels, cit_sources, c_labels,
        list(expected_display.values()), [k in cited for k in expected_display],
        list(cited_display.values()), [k in expected for k in cited_display],
        ref_wrong_cited=[s in wrong_sources for s in ref_src],
    )
    bands = options.bands
    return CaseResult(
        id=cd["id"], query=cd["query"],
        references=[{"source": s, "content": t} for s, t in zip(ref_sources, ref_texts)],
        expected_sources=list(cd["expected_sources"]),
        response=_response_dict(response), metadata=dict(cd["metadata"]),
        similarity=similarity, matched=matched,
        citation_labels=c_labels, reference_labels=r_labels,
        metrics=metrics, counts=counts,
        bands={k: band(v, bands) for k, v in metrics.items()},
        explanations=explanations,
    )

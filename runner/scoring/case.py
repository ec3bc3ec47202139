"""Score one case: match matrix → metrics, labels, bands and explanations."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.data.models import Case, Response
from runner.matchers.base import PairError, Similarity, TextPair
from runner.results import CaseResult
from runner.scoring.bands import DEFAULT_BANDS, band
from runner.scoring.explain import explain_case
from runner.scoring.labels import citation_labels, reference_labels
from runner.scoring.metrics import COUNT_KEYS, METRIC_KEYS, context_metrics, source_metrics
from runner.scoring.predicate import needed_pairs
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


def case_pairs(case: Case, response: Response | None, options: ScoringOptions) -> list[TextPair]:
    """The text pairs whose similarities scoring this case needs (none for a failed case).

    These are the pairs that reach step 4 of the predicate (:mod:`runner.scoring.predicate`).
    """
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
    return _score(case, response, sims, options)


# (metrics, bands, the metric values as a row with NaN for undefined) of one count pattern.
Figures = tuple[dict[str, float | None], dict[str, str | None], tuple[float, ...]]


def figures_of(counts: tuple[int, ...], zero_division: str,
               bands: Mapping[str, float]) -> Figures:
    """The metrics, bands and metric row of a case with these counts (SPEC 5).

    The metrics depend only on a case's counts (in :data:`~runner.scoring.metrics.COUNT_KEYS`
    order), and few count patterns occur, so each pattern is computed once (a pure function's
    memo) with the pure metric functions. Callers copy the dicts into each case's own.
    """
    return _figures(tuple(counts), zero_division, tuple(bands.items()))


@functools.lru_cache(maxsize=65_536)
def _figures(counts: tuple[int, ...], zero_division: str,
             bands: tuple[tuple[str, float], ...]) -> Figures:
    refs, refs_matched, cits, cits_matched, n_exp, n_cited, n_hits = counts
    # Source metrics depend on the set sizes only: stand-in sets of the right sizes.
    expected = {f"e{i}" for i in range(n_exp - n_hits)} | {f"h{i}" for i in range(n_hits)}
    cited = {f"c{i}" for i in range(n_cited - n_hits)} | {f"h{i}" for i in range(n_hits)}
    metrics = {
        **context_metrics([True] * refs_matched + [False] * (refs - refs_matched),
                          [True] * cits_matched + [False] * (cits - cits_matched),
                          zero_division),
        **source_metrics(expected, cited, zero_division)}
    return (metrics, {k: band(v, dict(bands)) for k, v in metrics.items()},
            tuple(math.nan if v is None else v for v in metrics.values()))


def _match_rows(ref_texts: list[str], ref_src: list[str], cit_texts: list[str],
                cit_src: list[str], sims: Mapping[TextPair, Similarity],
                options: ScoringOptions, similarity: list[list[Any]]) -> list[list[bool]]:
    """The predicate of :mod:`runner.scoring.predicate`, row by row: fills `similarity` (None
    where no similarity is needed) and returns the match matrix.

    Raises:
        TypeError: A similarity cannot be compared with the threshold (a PairError).
    """
    threshold, same_source = options.threshold, options.require_same_source
    cit_ok = [bool(t) and not t.isspace() for t in cit_texts]
    all_ok = False not in cit_ok
    matched: list[list[bool]] = []
    for rt, rs in zip(ref_texts, ref_src):
        if not rt or rt.isspace():  # step 1: matched by any citation of the same source
            similarity.append([None] * len(cit_texts))
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
    return matched


def _pair_error(similarity: list[list[Any]], threshold: float) -> str | None:
    """The message of the first PairError in row-major order, or None. Anything else that
    cannot be compared is a matcher bug and raises its TypeError."""
    for i, srow in enumerate(similarity):
        for j, sim in enumerate(srow):
            if isinstance(sim, PairError):
                return f"matcher failed on reference {i} / citation {j}: {sim.message}"
            if sim is not None:
                sim >= threshold  # noqa: B015 - raises the original TypeError
    return None


def _score(case: Case, response: Response, sims: Mapping[TextPair, Similarity],
           options: ScoringOptions) -> CaseResult:
    norm = options.normalizer
    cd = case.__dict__
    refs = [{"source": (d := r.__dict__)["source"], "content": d["content"]}
            for r in cd["references"]]
    resp = _response_dict(response)
    ref_texts = [r["content"] for r in refs]
    ref_src = [norm(r["source"]) for r in refs]
    cit_texts = [c["content"] for c in resp["citations"]]
    cit_src = [norm(c["source"]) for c in resp["citations"]]
    similarity: list[list[Any]] = []
    try:
        matched = _match_rows(ref_texts, ref_src, cit_texts, cit_src, sims, options, similarity)
    except TypeError:
        message = _pair_error(similarity, options.threshold)
        if message is None:
            raise
        return error_case(case, response, message)
    ref_matched = [True in row for row in matched]
    cit_matched = [True in col for col in zip(*matched)] if matched else [False] * len(cit_texts)
    expected = set(map(norm, cd["expected_sources"]))
    cited = set(cit_src)
    counts = (len(ref_texts), sum(ref_matched), len(cit_texts), sum(cit_matched), len(expected),
              len(cited), len(expected & cited))
    metrics, bands, _ = figures_of(counts, options.zero_division, options.bands)
    result = ExplainedLater(
        id=cd["id"], query=cd["query"], references=refs,
        expected_sources=list(cd["expected_sources"]), response=resp,
        metadata=dict(cd["metadata"]), similarity=similarity, matched=matched,
        citation_labels=citation_labels(cit_matched, cit_src, expected,
                                        _own_source(matched, ref_src, cit_src)),
        reference_labels=reference_labels(ref_matched, ref_src, cited),
        metrics=dict(metrics), counts=dict(zip(COUNT_KEYS, counts)), bands=dict(bands),
    )
    result.normalizer = norm
    return result


def _own_source(matched: list[list[bool]], ref_src: list[str],
                cit_src: list[str]) -> list[bool]:
    """Whether each citation matches some reference of its own (normalised) source."""
    return [any(row[j] and rs == cs for row, rs in zip(matched, ref_src))
            for j, cs in enumerate(cit_src)]


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
        return explain_case(
            self.metrics,
            ref_sources, self.reference_labels, cit_sources, c_labels,
            list(expected_display.values()), [k in cited_display for k in expected_display],
            list(cited_display.values()), [k in expected_display for k in cited_display],
            ref_wrong_cited=[s in wrong_sources for s in ref_src],
        )

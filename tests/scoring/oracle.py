"""The test oracle: SPEC 4-6 scored one case at a time in plain Python.

The product has one scorer, the vectorised one (:mod:`runner.scoring.batch`); this module
scores a case with the same rules written the plainest way (the predicate step by step, the
metrics from match flags and sets, the labels from their definitions), and the tests check that
the two agree on every field of every case (``tests/scoring/test_batch.py``,
``tests/test_properties.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from enum import Enum
from typing import Any

from runner.data.models import Case, Citation, Reference, Response
from runner.matchers.base import PairError, Similarity, TextPair
from runner.results import CaseResult, RunResult
from runner.scoring.aggregate import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    Aggregator,
    ids_digest,
)
from runner.scoring.bands import DEFAULT_BANDS, band
from runner.scoring.case import ScoringOptions, error_case
from runner.scoring.metrics import COUNT_KEYS
from runner.scoring.records import ExplainedLater


class Rule(Enum):
    """Which step of the predicate (SPEC 4.1) decides a pair."""

    EMPTY_REFERENCE = 1
    DIFFERENT_SOURCE = 2
    EMPTY_CITATION = 3
    SIMILARITY = 4


def decide_rule(ref: Reference, cit: Citation, ref_src: str, cit_src: str,
                require_same_source: bool) -> Rule:
    """The predicate step that decides the pair (sources already normalised)."""
    if not ref.content.strip():
        return Rule.EMPTY_REFERENCE
    if require_same_source and ref_src != cit_src:
        return Rule.DIFFERENT_SOURCE
    if not cit.content.strip():
        return Rule.EMPTY_CITATION
    return Rule.SIMILARITY


def needed_pairs(references: Sequence[Reference], citations: Sequence[Citation],
                 normalize: Callable[[str], str],
                 require_same_source: bool) -> Iterator[tuple[str, str]]:
    """Yield the (reference text, citation text) pairs whose similarity the predicate needs."""
    for ref in references:
        for cit in citations:
            rule = decide_rule(ref, cit, normalize(ref.source), normalize(cit.source),
                               require_same_source)
            if rule is Rule.SIMILARITY:
                yield ref.content, cit.content


def recall(hits: int, expected: int, zero_division: str = "auto") -> float | None:
    """hits / expected; with nothing expected: 1.0 (auto), None (nan), 0.0 (zero), 1.0 (one)."""
    if expected:
        return hits / expected
    return {"auto": 1.0, "nan": None, "zero": 0.0, "one": 1.0}[zero_division]


def precision(hits: int, cited: int, expected: int, zero_division: str = "auto") -> float | None:
    """hits / cited; with nothing cited: under ``auto`` 1.0 if nothing was expected, else 0.0."""
    if cited:
        return hits / cited
    if zero_division == "auto":
        return 1.0 if expected == 0 else 0.0
    return {"nan": None, "zero": 0.0, "one": 1.0}[zero_division]


def f1(p: float | None, r: float | None) -> float | None:
    """2PR / (P + R); 0.0 when P + R = 0; None when either is undefined."""
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def context_metrics(ref_matched: Sequence[bool], cit_matched: Sequence[bool],
                    zero_division: str = "auto") -> dict[str, float | None]:
    """Context recall, precision and F1 from per-reference and per-citation match flags."""
    r = recall(sum(ref_matched), len(ref_matched), zero_division)
    p = precision(sum(cit_matched), len(cit_matched), len(ref_matched), zero_division)
    return {"context_recall": r, "context_precision": p, "context_f1": f1(p, r)}


def source_metrics(expected: set[str], cited: set[str],
                   zero_division: str = "auto") -> dict[str, float | None]:
    """Source recall |S_exp ∩ S_cit| / |S_exp|, precision |S_cit ∩ S_exp| / |S_cit|, and F1."""
    hits = len(expected & cited)
    r = recall(hits, len(expected), zero_division)
    p = precision(hits, len(cited), len(expected), zero_division)
    return {"source_recall": r, "source_precision": p, "source_f1": f1(p, r)}


def citation_labels(cit_matched: Sequence[bool], cit_sources: Sequence[str],
                    expected: set[str], cit_own: Sequence[bool] | None = None) -> list[str]:
    """Each citation's label (SPEC 6): ``supported`` if it matches a reference of its own
    source, ``other_source`` if it matches only references of other sources, else
    ``wrong_passage`` when its source is expected, else ``unexpected_source``."""
    own = cit_matched if cit_own is None else cit_own
    return [
        ("supported" if mine else "other_source") if ok
        else ("wrong_passage" if src in expected else "unexpected_source")
        for ok, mine, src in zip(cit_matched, own, cit_sources)
    ]


def reference_labels(ref_matched: Sequence[bool], ref_sources: Sequence[str],
                     cited: set[str]) -> list[str]:
    """``cited`` if some citation matches the reference; else ``passage_missed`` when its
    source was cited; else ``source_missed``."""
    return [
        "cited" if ok else ("passage_missed" if src in cited else "source_missed")
        for ok, src in zip(ref_matched, ref_sources)
    ]


def case_pairs(case: Case, response: Response | None, options: ScoringOptions) -> list[TextPair]:
    """The text pairs whose similarities scoring this case needs (none for a failed case)."""
    if response is None or response.error is not None:
        return []
    return list(needed_pairs(case.references, response.citations, options.normalizer,
                             options.require_same_source))


def score_case(case: Case, response: Response | None,
               sims: Mapping[TextPair, Similarity], options: ScoringOptions) -> CaseResult:
    """Score one case given the similarities of its needed pairs (:func:`case_pairs`)."""
    if response is None:
        return error_case(case, None, "no response for this case")
    if response.error is not None:
        return error_case(case, response, response.error)
    norm = options.normalizer
    ref_src = [norm(r.source) for r in case.references]
    cit_src = [norm(c.source) for c in response.citations]
    similarity: list[list[Any]] = []
    matched: list[list[bool]] = []
    for ref, rs in zip(case.references, ref_src):
        srow: list[Any] = []
        mrow: list[bool] = []
        for cit, cs in zip(response.citations, cit_src):
            rule = decide_rule(ref, cit, rs, cs, options.require_same_source)
            sim = sims[(ref.content, cit.content)] if rule is Rule.SIMILARITY else None
            if isinstance(sim, PairError):
                i, j = len(similarity), len(srow)
                return error_case(case, response, f"matcher failed on reference {i} / "
                                                  f"citation {j}: {sim.message}")
            srow.append(sim)
            mrow.append(rs == cs if rule is Rule.EMPTY_REFERENCE
                        else sim is not None and sim >= options.threshold)
        similarity.append(srow)
        matched.append(mrow)
    ref_matched = [any(row) for row in matched]
    cit_matched = [any(row[j] for row in matched) for j in range(len(cit_src))]
    own = [any(row[j] and rs == cs for row, rs in zip(matched, ref_src))
           for j, cs in enumerate(cit_src)]
    expected = set(map(norm, case.expected_sources))
    cited = set(cit_src)
    metrics = {**context_metrics(ref_matched, cit_matched, options.zero_division),
               **source_metrics(expected, cited, options.zero_division)}
    counts = (len(ref_src), sum(ref_matched), len(cit_src), sum(cit_matched), len(expected),
              len(cited), len(expected & cited))
    return ExplainedLater.from_fields({
        "id": case.id, "query": case.query,
        "references": [{"source": r.source, "content": r.content} for r in case.references],
        "expected_sources": list(case.expected_sources),
        "response": {"answer": response.answer,
                     "citations": [{"source": c.source, "content": c.content, "claim": c.claim}
                                   for c in response.citations],
                     "usage": response.usage, "latency_s": response.latency_s, "error": None,
                     "dangling": response.dangling},
        "metadata": dict(case.metadata), "similarity": similarity, "matched": matched,
        "citation_labels": citation_labels(cit_matched, cit_src, expected, own),
        "reference_labels": reference_labels(ref_matched, ref_src, cited),
        "metrics": metrics, "counts": dict(zip(COUNT_KEYS, counts)),
        "bands": {k: band(v, options.bands) for k, v in metrics.items()}, "error": None,
    }, norm)


def macro_mean(values: Sequence[float | None]) -> float | None:
    """Mean of the defined values; None when none is defined."""
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


def add_case(agg: Aggregator, case: CaseResult) -> None:
    """Count one scored case into `agg`, as its batch would be (an error case is counted but
    not scored)."""
    agg.n_cases += 1
    if agg.keep_cases:
        if not agg._parts or not isinstance(agg._parts[-1], list):
            agg._parts.append([])
        agg._parts[-1].append(case)  # type: ignore[attr-defined]
    if case.error is not None:
        agg._add(0, 1, [{"id": case.id, "error": str(case.error)}], (), {}, {}, (), 0)
        return
    agg.digest = (agg.digest + ids_digest([case.id])) % 2**64
    agg.rows.append([math.nan if (v := case.metrics[k]) is None else v for k in agg.metrics])
    for k in COUNT_KEYS:
        agg.counts[k] += case.counts[k]
    for lab in case.citation_labels:
        agg.labels[f"citation_{lab}"] += 1
    for lab in case.reference_labels:
        agg.labels[f"reference_{lab}"] += 1


def add_cases(agg: Aggregator, cases: Iterable[CaseResult]) -> None:
    """Count many cases into `agg`."""
    for case in cases:
        add_case(agg, case)


def aggregate(cases: Iterable[CaseResult], zero_division: str = "auto",
              resamples: int = DEFAULT_RESAMPLES, confidence: float = DEFAULT_CONFIDENCE,
              seed: int = 0, *, bands: Mapping[str, float] | None = None) -> RunResult:
    """Aggregate scored cases, one at a time, into run-level figures."""
    agg = Aggregator(zero_division, resamples, confidence, seed,
                     bands=DEFAULT_BANDS if bands is None else bands)
    add_cases(agg, cases)
    return agg.result()

"""Score a whole batch of cases at once: the predicate, counts and labels as array operations.

This is the hot path of ``runner.evaluate`` and of every run; :func:`runner.scoring.case.score_case`
scores one case with the same rules in plain Python, and ``tests/scoring/test_batch.py`` checks
that the two agree on every field of every case.

The batch is laid out flat:

* every reference and every citation of the batch gets a position, case after case;
* a *slot* is one (reference, citation) pair of one case, row-major within the case
  (reference i, citation j), so case k's slots are ``R_k * C_k`` consecutive positions;
* texts and normalised sources become integer ids (equal ids ⇔ equal strings), so the predicate
  of :mod:`runner.scoring.predicate` is an elementwise expression over slots, and "matched by
  some citation" / "matches some reference" / "source in the case's set" are bincounts and
  sorted-set lookups over ``case * n_ids + id`` codes.

Only the building of the per-case records (lists and dicts for ``cases.jsonl``) stays a Python
loop, from lists converted once per batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import numpy as np

from runner._gc import gc_paused
from runner.data.models import Case, Response
from runner.matchers.base import Matcher, PairError
from runner.results import CaseResult
from runner.scoring.bands import band
from runner.scoring.case import _FIGURES, ExplainedLater, ScoringOptions, error_case
from runner.scoring.labels import CITATION_LABELS, REFERENCE_LABELS
from runner.scoring.metrics import context_metrics, source_metrics

_SUPPORTED, _WRONG_PASSAGE, _UNEXPECTED = range(3)  # indexes into CITATION_LABELS
_CITED, _PASSAGE_MISSED, _SOURCE_MISSED = range(3)  # indexes into REFERENCE_LABELS


def _ids(values: list[str], index: dict[str, int]) -> np.ndarray:
    """Integer ids of `values` (new values are added to `index`)."""
    setdefault = index.setdefault
    return np.fromiter([setdefault(v, len(index)) for v in values], dtype=np.int64,
                       count=len(values))


def _source_ids(values: list[str], norm: Callable[[str], str], raw: dict[str, int],
                index: dict[str, int]) -> np.ndarray:
    """Ids of the normalised sources of `values`; `raw` memoises raw name → id."""
    get = raw.get
    out = [get(v, -1) for v in values]
    if -1 in out:  # names not seen before: normalise each once
        for p, v in enumerate(values):
            if out[p] == -1:
                i = raw.get(v)
                if i is None:
                    i = raw[v] = index.setdefault(norm(v), len(index))
                out[p] = i
    return np.array(out, dtype=np.int64)


def _similarities(matcher: Matcher, texts: list[str], a: np.ndarray,
                  b: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """Similarity of each pair (texts[a[p]], texts[b[p]]) and the failed pairs' messages."""
    fast = getattr(matcher, "similarity_array", None)
    if callable(fast):
        return np.asarray(fast(texts, a, b), dtype=np.float64), {}
    pairs = list(zip(map(texts.__getitem__, a.tolist()), map(texts.__getitem__, b.tolist())))
    values = matcher.similarities(pairs)
    try:
        return np.fromiter(values, dtype=np.float64, count=len(pairs)), {}
    except (TypeError, ValueError):
        pass
    out = np.empty(len(pairs), dtype=np.float64)
    failed: dict[int, str] = {}
    for p, v in enumerate(values):
        if isinstance(v, PairError):
            out[p] = np.nan
            failed[p] = v.message
        else:
            v >= 0.0  # noqa: B015 - a value that cannot be compared raises as it would have
            out[p] = v
    return out, failed


@dataclass
class _Flat:
    """The scored cases of a batch, their fields read once and laid out flat."""

    rows: list[int] = field(default_factory=list)  # batch positions of the scored cases
    items: list[tuple[Case, Response]] = field(default_factory=list)
    case_fields: list[dict[str, Any]] = field(default_factory=list)
    resp_fields: list[dict[str, Any]] = field(default_factory=list)
    ref_src: list[str] = field(default_factory=list)  # as written
    ref_text: list[str] = field(default_factory=list)
    cit_src: list[str] = field(default_factory=list)
    cit_text: list[str] = field(default_factory=list)
    exp_src: list[str] = field(default_factory=list)
    n_ref: list[int] = field(default_factory=list)
    n_cit: list[int] = field(default_factory=list)
    n_exp: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, batch: Sequence[tuple[Case, Response | None]]) -> _Flat:
        """Flatten the cases that have a response without error (pydantic attribute access is
        slow: the models' ``__dict__`` is read directly)."""
        f = cls()
        rows, items, cfs, rfs = f.rows, f.items, f.case_fields, f.resp_fields
        ref_src, ref_text, cit_src, cit_text = f.ref_src, f.ref_text, f.cit_src, f.cit_text
        exp_src, n_ref, n_cit, n_exp = f.exp_src, f.n_ref, f.n_cit, f.n_exp
        for pos, (case, response) in enumerate(batch):
            if response is None or response.error is not None:
                continue
            cd, rd = case.__dict__, response.__dict__
            rows.append(pos)
            items.append((case, response))
            cfs.append(cd)
            rfs.append(rd)
            refs = [r.__dict__ for r in cd["references"]]
            cits = [c.__dict__ for c in rd["citations"]]
            for d in refs:
                ref_src.append(d["source"])
                ref_text.append(d["content"])
            for d in cits:
                cit_src.append(d["source"])
                cit_text.append(d["content"])
            exp = cd["expected_sources"]
            exp_src.extend(exp)
            n_ref.append(len(refs))
            n_cit.append(len(cits))
            n_exp.append(len(exp))
        return f


def score_batch(batch: Sequence[tuple[Case, Response | None]], matcher: Matcher,
                options: ScoringOptions) -> list[CaseResult]:
    """Score many cases with one matcher call for all their distinct pairs.

    Args:
        batch: Cases with their responses (``None`` when the system produced none).
        matcher: Any :class:`Matcher`. One with a ``similarity_array(texts, a, b)`` method
            (the ``ngram`` matcher) is given text ids instead of string pairs.
        options: Scoring options (its threshold is used, not the matcher's).

    Returns:
        One :class:`CaseResult` per input, in order; a case whose response failed, or whose
        needed pair failed (:class:`PairError`), is an error case.
    """
    norm = options.normalizer
    threshold = options.threshold
    same_source = options.require_same_source
    zero_division = options.zero_division
    bands = options.bands

    with gc_paused():  # allocation-heavy and cycle-free (runner._gc)
        flat = _Flat.of(batch)
    results: list[CaseResult | None] = [None] * len(batch)
    if flat.rows:
        scored = _score_flat(flat, matcher, norm, threshold, same_source, zero_division, bands)
        for k, done in zip(flat.rows, scored):
            results[k] = done
    out: list[CaseResult] = []
    for (case, response), result in zip(batch, results):
        if result is not None:
            out.append(result)
        elif response is None:
            out.append(error_case(case, None, "no response for this case"))
        else:
            out.append(error_case(case, response, str(response.error)))
    return out


def _score_flat(f: _Flat, matcher: Matcher, norm: Callable[[str], str], threshold: float,
                same_source: bool, zero_division: str, bands: Any) -> list[CaseResult]:
    case_fields, resp_fields = f.case_fields, f.resp_fields
    ref_src_raw, ref_text, cit_src_raw, cit_text = f.ref_src, f.ref_text, f.cit_src, f.cit_text
    exp_raw, n_ref_l, n_cit_l, n_exp_l = f.exp_src, f.n_ref, f.n_cit, f.n_exp
    items = f.items
    n_cases = len(case_fields)
    n_ref = np.array(n_ref_l, dtype=np.int64)
    n_cit = np.array(n_cit_l, dtype=np.int64)
    n_exp = np.array(n_exp_l, dtype=np.int64)
    cit_first = np.cumsum(n_cit) - n_cit
    ref_case = np.repeat(np.arange(n_cases, dtype=np.int64), n_ref)
    cit_case = np.repeat(np.arange(n_cases, dtype=np.int64), n_cit)
    exp_case = np.repeat(np.arange(n_cases, dtype=np.int64), n_exp)

    # Texts and normalised sources as ids.
    text_index: dict[str, int] = {}
    ref_tid = _ids(ref_text, text_index)
    cit_tid = _ids(cit_text, text_index)
    texts = list(text_index)
    blank = np.fromiter([not t or t.isspace() for t in texts], dtype=bool, count=len(texts))
    src_index: dict[str, int] = {}
    raw_src: dict[str, int] = {}
    ref_sid = _source_ids(ref_src_raw, norm, raw_src, src_index)
    cit_sid = _source_ids(cit_src_raw, norm, raw_src, src_index)
    exp_sid = _source_ids(exp_raw, norm, raw_src, src_index)
    n_src = max(len(src_index), 1)

    # Slots: reference r of case k pairs with each of the case's citations, in order.
    per_ref = n_cit[ref_case]  # slots of each reference
    slot_ref = np.repeat(np.arange(len(ref_tid), dtype=np.int64), per_ref)
    ref_slot_first = np.cumsum(per_ref) - per_ref
    n_slots = len(slot_ref)
    slot_cit = (cit_first[ref_case[slot_ref]]
                + np.arange(n_slots, dtype=np.int64) - ref_slot_first[slot_ref])
    ref_blank = blank[ref_tid]
    s_ref_blank = ref_blank[slot_ref]
    s_same = ref_sid[slot_ref] == cit_sid[slot_cit]
    # The predicate (runner.scoring.predicate): 1. a blank reference is matched by a citation
    # of its source, without a similarity; 2. under require_same_source another source never
    # matches; 3. a blank citation never matches; 4. else the similarity decides.
    needs_sim = ~s_ref_blank & ~blank[cit_tid[slot_cit]]
    if same_source:
        needs_sim &= s_same
    sim = np.full(n_slots, np.nan)
    failed_slot = np.zeros(n_slots, dtype=bool)
    failed_msg: dict[int, str] = {}
    need = np.flatnonzero(needs_sim)
    if len(need):
        n_texts = len(texts)
        codes = ref_tid[slot_ref[need]] * n_texts + cit_tid[slot_cit[need]]
        distinct, inverse = np.unique(codes, return_inverse=True)
        values, failed = _similarities(matcher, texts, distinct // n_texts,
                                       distinct % n_texts)
        sim[need] = values[inverse.reshape(-1)]
        if failed:
            bad = np.zeros(len(distinct), dtype=bool)
            bad[list(failed)] = True
            hit = bad[inverse.reshape(-1)]
            failed_slot[need[hit]] = True
            for slot, pair in zip(need[hit].tolist(), inverse.reshape(-1)[hit].tolist()):
                failed_msg[slot] = failed[pair]
    matched = np.where(s_ref_blank, s_same, needs_sim & (sim >= threshold))

    # Per reference / citation / case.
    m_cum = np.concatenate([[0], np.cumsum(matched, dtype=np.int64)])
    ref_matched = (m_cum[ref_slot_first + per_ref] - m_cum[ref_slot_first]) > 0
    cit_matched = np.bincount(slot_cit, weights=matched, minlength=len(cit_tid)) > 0
    refs_matched = np.bincount(ref_case, weights=ref_matched, minlength=n_cases).astype(np.int64)
    cits_matched = np.bincount(cit_case, weights=cit_matched, minlength=n_cases).astype(np.int64)
    # Source sets of each case as sorted codes case * n_src + source id.
    expected = np.unique(exp_case * n_src + exp_sid)
    cited = np.unique(cit_case * n_src + cit_sid)
    hits = np.intersect1d(expected, cited, assume_unique=True)
    n_expected = np.bincount(expected // n_src, minlength=n_cases)
    n_cited = np.bincount(cited // n_src, minlength=n_cases)
    n_hits = np.bincount(hits // n_src, minlength=n_cases)
    cit_label = np.where(cit_matched, _SUPPORTED, np.where(
        _member(cit_case * n_src + cit_sid, expected), _WRONG_PASSAGE, _UNEXPECTED))
    ref_label = np.where(ref_matched, _CITED, np.where(
        _member(ref_case * n_src + ref_sid, cited), _PASSAGE_MISSED, _SOURCE_MISSED))

    # --- the records --------------------------------------------------------------------------
    sim_list: list[Any] = sim.tolist()
    for s in np.flatnonzero(~needs_sim).tolist():
        sim_list[s] = None
    matched_list: list[bool] = matched.tolist()
    cit_labels = [CITATION_LABELS[i] for i in cit_label.tolist()]
    ref_labels = [REFERENCE_LABELS[i] for i in ref_label.tolist()]
    counts_rows = zip(n_ref_l, refs_matched.tolist(), n_cit_l, cits_matched.tolist(),
                      n_expected.tolist(), n_cited.tolist(), n_hits.tolist())
    failed_cases = ({int(ref_case[slot_ref[s]]) for s in failed_msg} if failed_msg else set())
    with gc_paused():  # allocation-heavy and cycle-free (runner._gc)
        return _records(items, case_fields, resp_fields, ref_src_raw, ref_text, cit_src_raw,
                        cit_text, n_ref_l, n_cit_l, counts_rows, sim_list, matched_list,
                        cit_labels, ref_labels, failed_cases, failed_msg, norm, zero_division,
                        bands)


def _records(items: list[tuple[Case, Response]], case_fields: list[dict[str, Any]],
             resp_fields: list[dict[str, Any]], ref_src_raw: list[str], ref_text: list[str],
             cit_src_raw: list[str], cit_text: list[str], n_ref_l: list[int],
             n_cit_l: list[int], counts_rows: Any, sim_list: list[Any],
             matched_list: list[bool], cit_labels: list[str], ref_labels: list[str],
             failed_cases: set[int], failed_msg: dict[int, str], norm: Callable[[str], str],
             zero_division: str, bands: Any) -> list[CaseResult]:
    """The per-case records of a batch, from lists converted once (the only per-case loop).

    Everything that is per reference or per citation (its dict, its similarity row) is built
    for the whole batch in one comprehension and sliced per case.
    """
    band_items = tuple(bands.items())
    ref_dicts = [{"source": s, "content": t} for s, t in zip(ref_src_raw, ref_text)]
    cit_dicts = [{"source": s, "content": t} for s, t in zip(cit_src_raw, cit_text)]
    # Row i of a case = its reference i's slots; a reference's slots follow each other.
    row_len = [nc for nr, nc in zip(n_ref_l, n_cit_l) for _ in range(nr)]
    row_end = list(accumulate(row_len))
    sim_rows = [sim_list[e - n:e] for n, e in zip(row_len, row_end)]
    matched_rows = [matched_list[e - n:e] for n, e in zip(row_len, row_end)]
    new = ExplainedLater.from_fields
    out: list[CaseResult] = []
    figures_cache = _FIGURES
    r0 = c0 = s0 = 0
    for k, (cd, rd, counts_t) in enumerate(zip(case_fields, resp_fields, counts_rows)):
        nr, nc = counts_t[0], counts_t[2]
        r1, c1 = r0 + nr, c0 + nc
        if k in failed_cases:
            out.append(_pair_error_case(items[k], failed_msg, s0, s0 + nr * nc, nc))
        else:
            key = (*counts_t, zero_division, *band_items)
            figures = figures_cache.get(key)
            if figures is None:
                figures = _figures(counts_t, zero_division, bands)
                if len(figures_cache) > 50_000:
                    figures_cache.clear()
                figures_cache[key] = figures
            out.append(new({
                "id": cd["id"], "query": cd["query"],
                "references": ref_dicts[r0:r1],
                "expected_sources": list(cd["expected_sources"]),
                "response": {"answer": rd["answer"], "citations": cit_dicts[c0:c1],
                             "usage": rd["usage"], "latency_s": rd["latency_s"],
                             "error": rd["error"]},
                "metadata": dict(cd["metadata"]),
                "similarity": sim_rows[r0:r1], "matched": matched_rows[r0:r1],
                "citation_labels": cit_labels[c0:c1], "reference_labels": ref_labels[r0:r1],
                "metrics": dict(figures[0]), "counts": dict(zip(_COUNT_NAMES, counts_t)),
                "bands": dict(figures[1]), "error": None,
            }, norm))
        r0, c0, s0 = r1, c1, s0 + nr * nc
    return out


_COUNT_NAMES = ("references", "references_matched", "citations", "citations_matched",
                "expected_sources", "cited_sources", "sources_hit")


def _member(codes: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Whether each code is in `sorted_set` (sorted, distinct)."""
    if not len(sorted_set):
        return np.zeros(len(codes), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_set, codes), len(sorted_set) - 1)
    return np.asarray(sorted_set[pos] == codes)


def _figures(counts: tuple[int, ...], zero_division: str,
             bands: Any) -> tuple[dict[str, float | None], dict[str, str | None]]:
    """Metrics and bands of one count pattern (SPEC 5), via the pure metric functions."""
    refs, refs_matched, cits, cits_matched, n_exp, n_cited, n_hits = counts
    ref_flags = [True] * refs_matched + [False] * (refs - refs_matched)
    cit_flags = [True] * cits_matched + [False] * (cits - cits_matched)
    # Source metrics depend on the set sizes only: stand-in sets of the right sizes.
    expected = {f"e{i}" for i in range(n_exp - n_hits)} | {f"h{i}" for i in range(n_hits)}
    cited = {f"c{i}" for i in range(n_cited - n_hits)} | {f"h{i}" for i in range(n_hits)}
    metrics = {**context_metrics(ref_flags, cit_flags, zero_division),
               **source_metrics(expected, cited, zero_division)}
    return metrics, {k: band(v, bands) for k, v in metrics.items()}


def _pair_error_case(item: tuple[Case, Response], failed_msg: dict[int, str], s0: int, s1: int,
                     nc: int) -> CaseResult:
    """The error case of a case with a failed pair: the first one in row-major order."""
    first = min(s for s in failed_msg if s0 <= s < s1)
    i, j = divmod(first - s0, nc)
    return error_case(item[0], item[1], f"matcher failed on reference {i} / citation {j}: "
                                        f"{failed_msg[first]}")

"""Score a whole batch of cases at once: the predicate, counts and labels as array operations.

This is the product's one scorer; the tests' oracle (``tests/scoring/oracle.py``) scores one
case with the same rules in plain Python, and ``tests/scoring/test_batch.py`` checks that the two
agree on every field of every case.

The batch is laid out flat:

* every reference and every citation of the batch gets a position, case after case;
* a *slot* is one (reference, citation) pair of one case, row-major within the case
  (reference i, citation j), so case k's slots are ``R_k * C_k`` consecutive positions;
* texts and normalised sources become integer ids (equal ids ⇔ equal strings), so the predicate
  of :mod:`runner.scoring.predicate` is an elementwise expression over slots, and "matched by
  some citation" / "matches some reference" / "source in the case's set" are bincounts and
  sorted-set lookups over ``case * n_ids + id`` codes.

The rows of ``passages.parquet`` and each threshold's rows of ``cases.parquet`` are cut from
these arrays (:meth:`BatchResults.passages <runner.scoring.records.BatchResults.passages>`,
:meth:`BatchResults.table <runner.scoring.records.BatchResults.table>`); the per-case records of
``result.cases`` are those rows read back, built only when one is read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate, islice

import numpy as np

from runner._gc import gc_paused
from runner.data.models import Case, Response
from runner.matchers.base import FastPath, Matcher, PairError
from runner.scoring.aggregate import ids_digest
from runner.scoring.case import ScoringOptions, error_case
from runner.scoring.fidelity import Found, Locator, label_counts
from runner.scoring.records import BatchResults, Scored

DEFAULT_BATCH_SIZE = 10_000
"""Cases scored per matcher call (and answered per adapter call): bounds a batch's memory."""

_SUPPORTED, _WRONG_PASSAGE, _UNEXPECTED, _OTHER_SOURCE = range(4)  # into CITATION_LABELS
_CITED, _PASSAGE_MISSED, _SOURCE_MISSED = range(3)  # indexes into REFERENCE_LABELS


def _ids(values: list[str], index: dict[str, int]) -> np.ndarray:
    """Integer ids of `values` (new values are added to `index`)."""
    setdefault = index.setdefault
    return np.fromiter([setdefault(v, len(index)) for v in values], dtype=np.int64,
                       count=len(values))


def _source_ids(values: list[str], norm: Callable[[str], str], raw: dict[str, int],
                index: dict[str, int]) -> np.ndarray:
    """Ids of the normalised sources of `values`; `raw` memoises raw name → id."""
    for v in values:
        if v not in raw:  # a name not seen before: normalised once
            raw[v] = index.setdefault(norm(v), len(index))
    return np.fromiter(map(raw.__getitem__, values), dtype=np.int64, count=len(values))


def _similarities(matcher: Matcher, texts: list[str], a: np.ndarray,
                  b: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """Similarity of each pair (texts[a[p]], texts[b[p]]) and the failed pairs' messages."""
    fast = matcher.similarity_array(texts, a, b) if isinstance(matcher, FastPath) else None
    if fast is not None:
        return np.asarray(fast, dtype=np.float64), {}
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


class _Flat:
    """The scored cases of a batch (those with a response without error), their fields read
    once and laid out flat (pydantic attribute access is slow: the models' ``__dict__`` is read
    directly)."""

    def __init__(self, batch: Sequence[tuple[Case, Response | None]]) -> None:
        self.rows: list[int] = []  # batch positions of the scored cases
        self.items: list[tuple[Case, Response]] = []
        for pos, (case, response) in enumerate(batch):
            if response is not None and response.error is None:
                self.rows.append(pos)
                self.items.append((case, response))
        self.case_fields = [case.__dict__ for case, _ in self.items]
        self.resp_fields = [response.__dict__ for _, response in self.items]
        refs = [r.__dict__ for cd in self.case_fields for r in cd["references"]]
        cits = [c.__dict__ for rd in self.resp_fields for c in rd["citations"]]
        # The fields of every reference and citation, as written, one list each.
        self.ref_src, self.ref_text = ([d[k] for d in refs] for k in ("source", "content"))
        self.cit_src, self.cit_text, self.cit_claim = (
            [d[k] for d in cits] for k in ("source", "content", "claim"))
        self.exp_src = [s for cd in self.case_fields for s in cd["expected_sources"]]
        self.n_ref = [len(cd["references"]) for cd in self.case_fields]
        self.n_cit = [len(rd["citations"]) for rd in self.resp_fields]
        self.n_exp = [len(cd["expected_sources"]) for cd in self.case_fields]


def score_batch_thresholds(batch: Sequence[tuple[Case, Response | None]], matcher: Matcher,
                           options: ScoringOptions,
                           thresholds: Sequence[float]) -> list[BatchResults]:
    """Score a batch at several thresholds: laid out and its similarities computed once
    (:class:`_Prepared`), then decided at each threshold (:func:`_decide`).

    The decisions, counts, labels and the run-level sums are computed at once
    (:class:`BatchResults` has them for :meth:`Aggregator.add_batch
    <runner.scoring.aggregate.Aggregator.add_batch>`), and the tables of the results files are
    cut from the arrays; the per-case records (lists and dicts: most of a batch's memory) are
    built for the whole batch when one of them is read. A case whose response failed, or whose
    needed pair failed (:class:`PairError`), is an error case.

    Args:
        batch: Cases with their responses (``None`` when the system produced none).
        matcher: Any :class:`Matcher`; it sees each distinct pair of the batch once. One with a
            ``similarity_array(texts, a, b)`` method (the ``ngram`` matcher) is given text ids
            instead of string pairs.
        options: Scoring options (their ``threshold`` is not used here).
        thresholds: The thresholds to decide.

    Returns:
        One :class:`BatchResults` per threshold, in order; each is exactly what scoring the
        batch at that threshold alone gives.
    """
    with gc_paused():  # allocation-heavy and cycle-free (runner._gc)
        flat = _Flat(batch)
    prep = _Prepared(flat, matcher, options) if flat.rows else None
    where = [-1] * len(batch)
    for k, pos in enumerate(flat.rows):
        where[pos] = k
    errors = {pos: error_case(case, response, "no response for this case" if response is None
                              else str(response.error), options.metrics)
              for pos, (case, response) in enumerate(batch) if where[pos] < 0}
    return [BatchResults(where, errors,
                         _decide(prep, options, float(t)) if prep is not None else None,
                         prep.digest if prep is not None else 0)  # the same at every threshold
            for t in thresholds]


class _Prepared:
    """The part of a batch's scoring that does not depend on the threshold: its flat layout,
    text and source ids, slots, the predicate's inputs and the similarities."""

    def __init__(self, f: _Flat, matcher: Matcher, options: ScoringOptions) -> None:
        """Lay out a batch, look up its similarities and locate its quotes: everything before
        the threshold."""
        norm, same_source = options.normalizer, options.require_same_source
        self.fidelity = (None if options.fidelity is None
                         else _locate(f, options.fidelity, options.excerpts))
        n_cases = len(f.case_fields)
        n_cit = np.array(f.n_cit, dtype=np.int64)
        cit_first = np.cumsum(n_cit) - n_cit
        # The case of each reference, citation and expected source.
        ref_case, cit_case, exp_case = (np.repeat(np.arange(n_cases, dtype=np.int64), n)
                                        for n in (f.n_ref, n_cit, f.n_exp))

        # Texts and normalised sources as ids.
        text_index: dict[str, int] = {}
        ref_tid, cit_tid = (_ids(texts, text_index) for texts in (f.ref_text, f.cit_text))
        texts = list(text_index)
        blank = np.fromiter([not t or t.isspace() for t in texts], dtype=bool, count=len(texts))
        src_index: dict[str, int] = {}
        raw_src: dict[str, int] = {}
        ref_sid, cit_sid, exp_sid = (_source_ids(sources, norm, raw_src, src_index)
                                     for sources in (f.ref_src, f.cit_src, f.exp_src))
        n_src = max(len(src_index), 1)

        # Slots: reference r of case k pairs with each of the case's citations, in order.
        per_ref = n_cit[ref_case]  # slots of each reference
        slot_ref = np.repeat(np.arange(len(ref_tid), dtype=np.int64), per_ref)
        ref_slot_first = np.cumsum(per_ref) - per_ref
        slot_cit = (cit_first[ref_case[slot_ref]]
                    + np.arange(len(slot_ref), dtype=np.int64) - ref_slot_first[slot_ref])
        s_ref_blank = blank[ref_tid[slot_ref]]
        s_same = ref_sid[slot_ref] == cit_sid[slot_cit]
        # The predicate (runner.scoring.predicate): 1. a blank reference is matched by a
        # citation of its source, without a similarity; 2. under require_same_source another
        # source never matches; 3. a blank citation never matches; 4. else the similarity
        # decides.
        needs_sim = ~s_ref_blank & ~blank[cit_tid[slot_cit]]
        if same_source:
            needs_sim &= s_same
        pair_codes = ref_tid[slot_ref] * len(texts) + cit_tid[slot_cit]
        self.sim, self.failed_msg = _slot_similarities(matcher, texts, pair_codes, needs_sim)
        self.failed = {int(ref_case[slot_ref[s]]) for s in self.failed_msg}  # their cases
        self.found = None if self.fidelity is None else label_counts(  # the same at every threshold
            f for f, k in zip(self.fidelity, cit_case.tolist()) if k not in self.failed)
        self.digest = ids_digest(cd["id"] for k, cd in enumerate(f.case_fields)
                                 if k not in self.failed)
        self.flat, self.n_cases, self.n_cits = f, n_cases, len(cit_tid)
        self.fields = [(cd["id"], cd["query"], cd["expected_sources"], cd["metadata"],
                        rd["answer"], rd["usage"], rd["latency_s"], rd["dangling"])  # records read
                       for cd, rd in zip(f.case_fields, f.resp_fields)]
        self.ref_case, self.cit_case = ref_case, cit_case
        self.per_ref, self.ref_slot_first, self.slot_cit = per_ref, ref_slot_first, slot_cit
        self.s_ref_blank, self.s_same, self.needs_sim = s_ref_blank, s_same, needs_sim
        self.source_counts, self.cit_expected, self.ref_cited = _source_sets(
            (exp_case, exp_sid), (cit_case, cit_sid), (ref_case, ref_sid), n_src, n_cases)


def _source_sets(exp: tuple[np.ndarray, np.ndarray], cit: tuple[np.ndarray, np.ndarray],
                 ref: tuple[np.ndarray, np.ndarray], n_src: int,
                 n_cases: int) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """What no threshold changes of the cases' sources (each a case and a source id): per case
    how many sources are expected, cited and both; whether each citation's source is expected
    and each reference's source cited. A case's sources are sorted codes case * n_src + id."""
    expected, cited = (np.unique(case * n_src + sid) for case, sid in (exp, cit))
    hits = np.intersect1d(expected, cited, assume_unique=True)
    return ([np.bincount(codes // n_src, minlength=n_cases).tolist()
             for codes in (expected, cited, hits)], np.isin(cit[0] * n_src + cit[1], expected),
            np.isin(ref[0] * n_src + ref[1], cited))


def _locate(f: _Flat, knowledge_base: Locator, cases: int | None) -> list[Found]:
    """Each citation's fidelity (SPEC 6.1): located in the documents its response carries, or
    in the knowledge base when it carries none (the batch's together); those of the first
    `cases` cases (None: all) with their excerpt."""
    carried = [rd["documents"] for rd, n in zip(f.resp_fields, f.n_cit) for _ in range(n)]
    shown = sum(f.n_cit[:cases])  # the first quotes, and the knowledge base's among them:
    found = iter(knowledge_base.labels([s for s, d in zip(f.cit_src, carried) if not d],
                                       [t for t, d in zip(f.cit_text, carried) if not d],
                                       sum(not d for d in carried[:shown])))
    out: list[Found] = []
    for rd, n, first in zip(f.resp_fields, f.n_cit, accumulate([0, *f.n_cit])):
        out += (Locator(((d.source, d.text) for d in rd["documents"]), knowledge_base.norm)
                .labels(f.cit_src[first:first + n], f.cit_text[first:first + n],
                        max(shown - first, 0))
                if rd["documents"] else islice(found, n))
    return out


def _slot_similarities(matcher: Matcher, texts: list[str], pair_codes: np.ndarray,
                       needs_sim: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """The similarity of every slot that needs one (NaN elsewhere), each distinct pair asked
    for once, and the failed slots' messages.

    Args:
        matcher: The matcher.
        texts: The batch's distinct texts.
        pair_codes: Per slot, ``reference text id * len(texts) + citation text id``.
        needs_sim: Per slot, whether the match rules need its similarity.
    """
    sim = np.full(len(pair_codes), np.nan)
    need = np.flatnonzero(needs_sim)
    if not len(need):
        return sim, {}
    distinct, inverse = np.unique(pair_codes[need], return_inverse=True)
    inverse = inverse.reshape(-1)
    values, failed = _similarities(matcher, texts, distinct // len(texts), distinct % len(texts))
    sim[need] = values[inverse]
    hit = np.isin(inverse, list(failed))  # the slots of the failed pairs
    return sim, dict(zip(need[hit].tolist(), map(failed.__getitem__, inverse[hit].tolist())))


def _decide(p: _Prepared, options: ScoringOptions, threshold: float) -> Scored:
    """The decisions, counts and labels of a prepared batch at `threshold`."""
    f, n_cases = p.flat, p.n_cases
    matched = np.where(p.s_ref_blank, p.s_same, p.needs_sim & (p.sim >= threshold))

    # Per reference / citation / case.
    m_cum = np.concatenate([[0], np.cumsum(matched, dtype=np.int64)])
    ref_matched = (m_cum[p.ref_slot_first + p.per_ref] - m_cum[p.ref_slot_first]) > 0
    cit_matched = np.bincount(p.slot_cit, weights=matched, minlength=p.n_cits) > 0
    refs_matched = np.bincount(p.ref_case, weights=ref_matched, minlength=n_cases)
    cits_matched = np.bincount(p.cit_case, weights=cit_matched, minlength=n_cases)
    # A matched citation whose every match is a reference of another source: other_source.
    cit_own = np.bincount(p.slot_cit, weights=matched & p.s_same, minlength=p.n_cits) > 0
    cit_label = np.where(cit_matched, np.where(cit_own, _SUPPORTED, _OTHER_SOURCE),
                         np.where(p.cit_expected, _WRONG_PASSAGE, _UNEXPECTED))
    ref_label = np.where(ref_matched, _CITED,
                         np.where(p.ref_cited, _PASSAGE_MISSED, _SOURCE_MISSED))
    counts = list(zip(f.n_ref, refs_matched.astype(np.int64).tolist(), f.n_cit,
                      cits_matched.astype(np.int64).tolist(), *p.source_counts))
    return Scored(f.items, p.fields, f.ref_src, f.ref_text, f.cit_src,
                  f.cit_text, f.cit_claim, f.n_ref, f.n_cit, counts, p.sim, matched,
                  cit_label, ref_label, p.ref_case, p.cit_case, p.failed, p.failed_msg, options,
                  p.fidelity, p.found)

"""The results of a decided batch (:class:`Scored`, :class:`BatchResults`) as the two tables
of the results files, cut from its arrays: its rows of ``passages.parquet``
(:meth:`BatchResults.passages`) and of a threshold's ``cases.parquet``
(:meth:`BatchResults.table`); a case's figures are memoised per count pattern. A job builds no
per-case record: a case's record (``result.cases`` of :func:`runner.evaluate`) is its rows of
the two tables as a reader reads them back, built for the whole batch when one is first read,
and its explanations are written on first read."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping
from itertools import accumulate
from typing import Any

import numpy as np
import pyarrow as pa

from runner._gc import gc_paused
from runner.data.models import Case, Response
from runner.results import CaseResult, table
from runner.results.sequence import CaseSequence
from runner.scoring.bands import band
from runner.scoring.case import ScoringOptions, error_case
from runner.scoring.explain import Facts
from runner.scoring.labels import CITATION, CITATION_LABELS, REFERENCE, REFERENCE_LABELS
from runner.scoring.metrics import COUNT_KEYS, declared
from runner.scoring.sources import DEFAULT_STEPS, SourceNormalizer

# (metrics, bands, the metric values as a row with NaN for undefined) of one count pattern.
Figures = tuple[dict[str, float | None], dict[str, str | None], tuple[float, ...]]


@functools.lru_cache(maxsize=65_536)
def _figures(counts: tuple[int, ...], zero_division: str, bands: tuple[tuple[str, float], ...],
             names: tuple[str, ...]) -> Figures:
    """The metrics, bands and metric row of a case with these counts (SPEC 5).

    The metrics depend only on a case's counts (in :data:`~runner.scoring.metrics.COUNT_KEYS`
    order), and few count patterns occur, so each pattern is computed once (a pure function's
    memo) by the declared formulas. Callers copy the dicts into each case's own.
    """
    c = dict(zip(COUNT_KEYS, counts))
    metrics = {m.name: m.value(c, zero_division) for m in declared(names)}
    return (metrics, {k: band(v, dict(bands)) for k, v in metrics.items()},
            tuple(math.nan if v is None else v for v in metrics.values()))


class ExplainedLater(CaseResult):
    """A scored case whose plain-language explanations are written on first use.

    The sentences (about half the cost of scoring a case) follow from the case's own fields, so
    they are built when ``explanations`` is first read (the caller; the results files do not
    store them) and kept; a caller that only wants the figures never pays
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
            out = state["_explanations"] = explain_record({**state, "labels": self.labels},
                                                          self.normalizer)
        return out


def result_normalizer(metrics: Mapping[str, Any]) -> Callable[[str], str]:
    """The source normalisation of a written result (its ``metrics.json`` ``scoring``), which
    its cases' explanations are made with."""
    return SourceNormalizer((metrics.get("scoring") or {}).get("source_normalization",
                                                               DEFAULT_STEPS))


def explain_record(case: Mapping[str, Any], normalizer: Callable[[str], str]) -> dict[str, str]:
    """A case's plain-language explanations from its record (the keys of
    :func:`runner.results.iter_records`: sources, labels and metrics); none for a failed case.
    The results files do not store them: a reader makes them with the run's source
    normalisation (``metrics.json`` ``scoring.source_normalization``)."""
    if case.get("error") is not None:
        return {}
    ref_sources = [r["source"] for r in case["references"]]
    response = case.get("response") or {}
    cit_sources = [c["source"] for c in response.get("citations", ())]
    ref_src = [normalizer(s) for s in ref_sources]
    cit_src = [normalizer(s) for s in cit_sources]
    expected_display: dict[str, str] = {}
    for s in case["expected_sources"]:
        expected_display.setdefault(normalizer(s), s)
    cited_display: dict[str, str] = {}
    for s, shown in zip(cit_src, cit_sources):
        cited_display.setdefault(s, shown)
    c_labels = case["labels"]["citations"]
    wrong_sources = {s for s, lab in zip(cit_src, c_labels) if lab == "wrong_passage"}
    facts = Facts(
        case["metrics"], ref_sources, case["labels"]["references"], cit_sources, c_labels,
        list(expected_display.values()), [k in cited_display for k in expected_display],
        list(cited_display.values()), [k in expected_display for k in cited_display],
        [s in wrong_sources for s in ref_src])
    return {m.explains: m.explain(facts) for m in declared(case["metrics"]) if m.explains}


class Scored:
    """The decided cases of a batch: flat arrays, run-level sums, and the way to records."""

    def __init__(self, items: list[tuple[Case, Response]], fields: list[tuple[Any, ...]],
                 ref_src: list[str], ref_text: list[str],
                 cit_src: list[str], cit_text: list[str], cit_claim: list[str],
                 n_ref: list[int], n_cit: list[int],
                 counts_rows: list[tuple[int, ...]], sim: np.ndarray,
                 matched: np.ndarray, cit_label: np.ndarray, ref_label: np.ndarray,
                 ref_case: np.ndarray, cit_case: np.ndarray, failed: set[int],
                 failed_msg: dict[int, str], options: ScoringOptions,
                 fidelity: list[dict[str, Any]] | None = None,
                 found: dict[str, int] | None = None) -> None:
        # The failed cases' error records now (they need the models); of the others only the
        # field values are kept, so the models can be freed once scored.
        slot_first = list(accumulate((nr * nc for nr, nc in zip(n_ref, n_cit)), initial=0))
        self.failed = {k: _pair_error_case(items[k], failed_msg, slot_first[k], slot_first[k + 1],
                                           n_cit[k], options.metrics) for k in sorted(failed)}
        self.fields = fields  # the same list at every threshold (batch._Prepared)
        self.cit_claim = cit_claim
        self.ref_src, self.ref_text, self.cit_src, self.cit_text = (ref_src, ref_text, cit_src,
                                                                    cit_text)
        self.sim, self.matched = sim, matched
        self.cit_label = cit_label.astype(np.int8)
        self.ref_label = ref_label.astype(np.int8)
        self.norm, self.metrics = options.normalizer, options.metrics
        bands, names = tuple(options.bands.items()), tuple(options.metrics)
        # Each distinct count pattern (``patterns``) once; per case its pattern's number.
        index = {c: i for i, c in enumerate(dict.fromkeys(counts_rows))}
        self.patterns = [(c, _figures(c, options.zero_division, bands, names)) for c in index]
        self.pattern = np.fromiter(map(index.__getitem__, counts_rows), np.int64, len(counts_rows))
        # Run-level sums over the cases that are not failed.
        self.ok_case = ok_case = ~np.isin(np.arange(len(n_ref)), list(failed))
        self.ref_case, self.cit_case = ref_case, cit_case
        self.rows = [self.patterns[i][1][2] for k, i in enumerate(self.pattern.tolist())
                     if k not in failed]
        self.totals = totals = np.array(counts_rows, dtype=np.int64).reshape(len(counts_rows), 7)
        self.counts = dict(zip(COUNT_KEYS, totals[ok_case].sum(axis=0).tolist()))
        cit_counts = np.bincount(self.cit_label[ok_case[cit_case]],
                                 minlength=len(CITATION_LABELS)).tolist()
        ref_counts = np.bincount(self.ref_label[ok_case[ref_case]],
                                 minlength=len(REFERENCE_LABELS)).tolist()
        self.labels = {lab.key: v for lab, v in zip((*CITATION, *REFERENCE),
                                                     cit_counts + ref_counts)}
        self.fidelity = fidelity  # `found`: counted once a batch as labels fidelity_<name>
        self.labels.update(found or {})  # (the aggregate splits them off)

    def passages(self) -> pa.Table:
        """The rows of ``passages.parquet`` of the cases not failed, in case order, built from
        the laid-out arrays and one list per field: what :func:`table.passage_row` gives for
        each record, without building the records."""
        ok, arrow, text, found = self.ok_case, table.arrow, pa.string(), table.FOUND
        ok_ref, ok_cit = ok[self.ref_case], ok[self.cit_case]
        n_ref, n_cit = self.totals[ok, 0], self.totals[ok, 2]
        row_len = self.totals[self.ref_case, 2]  # each reference's row of similarities
        kept = [f for f, keep in zip(self.fields, ok.tolist()) if keep]
        ids, queries, expected, metadata, answers, usage, latency, dangling = (
            list(column) for column in zip(*kept)) if kept else [[]] * 8
        refs, cits = (pa.StructArray.from_arrays([arrow(v, text) for v in values], fields=list(
            kind)).filter(keep) for kind, values, keep in (
            (table.PASSAGE, (self.ref_src, self.ref_text), ok_ref),
            (table.CITATION, (self.cit_src, self.cit_text, self.cit_claim), ok_cit)))
        sim = pa.array(self.sim, from_pandas=True).filter(np.repeat(ok_ref, row_len))
        return pa.Table.from_arrays([
            arrow(ids, text), arrow(queries, text), _lists(refs, n_ref), _lists(arrow(
                [s for e in expected for s in e], text), np.array([len(e) for e in expected])),
            pa.StructArray.from_arrays([
                arrow(answers, text), _lists(cits, n_cit),
                arrow(list(map(table.json_text, usage)), text), pa.array(latency, pa.float64()),
                pa.nulls(len(ids), text), pa.array(dangling, pa.int64())],
                fields=list(table.RESPONSE)),
            arrow(list(map(table.json_text, metadata)), text),
            _lists(_lists(sim, row_len[ok_ref]), n_ref),
            pa.nulls(len(ids), pa.list_(found)) if self.fidelity is None else _lists(
                arrow(self.fidelity, found).filter(ok_cit), n_cit)],
            schema=table.PASSAGES_SCHEMA)


def _pair_error_case(item: tuple[Case, Response], failed_msg: dict[int, str], s0: int, s1: int,
                     nc: int, metrics: tuple[str, ...]) -> CaseResult:
    """The error case of a case with a failed pair: the first one in row-major order."""
    first = min(s for s in failed_msg if s0 <= s < s1)
    i, j = divmod(first - s0, nc)
    return error_case(item[0], item[1], f"matcher failed on reference {i} / citation {j}: "
                                        f"{failed_msg[first]}", metrics)


class BatchResults(CaseSequence):
    """The results of one batch, in input order; records are built on first read.

    Attributes:
        n_errors: Cases that failed (no response, a failed response or a failed pair).
        rows: Each scored case's six metric values (NaN where undefined), in case order.
        counts: The scored cases' counts, summed.
        labels: The scored cases' citation and reference labels, counted
            (``citation_supported``, ...).
        digest: The scored cases' ids digest (:func:`runner.scoring.aggregate.ids_digest`).
    """

    def __init__(self, where: list[int], errors: dict[int, CaseResult],
                 scored: Scored | None, digest: int = 0) -> None:
        self._where = where
        self._errors = errors
        self._scored = scored
        self._records: list[CaseResult] | None = None
        self.n_errors = len(errors) + (len(scored.failed) if scored is not None else 0)
        self.rows = scored.rows if scored is not None else []
        self.counts = scored.counts if scored is not None else dict.fromkeys(COUNT_KEYS, 0)
        self.labels = scored.labels if scored is not None else {}
        self.digest = digest

    def __len__(self) -> int:
        return len(self._where)

    def _at(self, pos: int) -> CaseResult:
        if self._where[pos] < 0:  # failed before scoring: no record is built
            return self._errors[pos]
        if self._records is None:
            with gc_paused():  # without `select` every record is built
                self._records = self._read_back()
        return self._records[pos]

    def _read_back(self) -> list[CaseResult]:
        """Every case's record, in case order: a scored case's is its rows of the two tables as
        a reader gets them back (:func:`table.decoded`), a failed case's its error record."""
        failed, s = self.error_cases(), self._scored
        if s is None:
            return list(failed)
        decided = self.table(table.decisions_schema(s.metrics, COUNT_KEYS)).to_pylist()
        return [next(failed) if row["error"] is not None else ExplainedLater.from_fields(
            table.decoded({**shared, **row}), s.norm)
            for shared, row in zip(self.passages().to_pylist(), decided)]

    def table(self, schema: pa.Schema) -> pa.Table:
        """The batch's rows of ``cases.parquet`` (`schema`: :func:`table.decisions_schema`), in
        case order, built from the decided arrays without building the records: what
        :func:`table.decision_row` gives for each record."""
        s, where = self._scored, np.array(self._where, dtype=np.int64)
        if s is None:  # every case failed before scoring
            return table.from_rows(map(table.decision_row, self), schema)
        ok = (where >= 0) & s.ok_case[where]
        ok_ref, ok_cit, n_cit = s.ok_case[s.ref_case], s.ok_case[s.cit_case], s.totals[:, 2]
        n_refs, n_cits = (np.where(ok, s.totals[where, i], 0) for i in (0, 2))
        row_len = n_cit[s.ref_case]  # each reference's row of matched bits
        bits = pa.array(s.matched[np.repeat(ok_ref, row_len)])
        # The metrics, counts and bands of each count pattern once; a failed case's: none.
        blank = dict.fromkeys(f.name for f in schema.field("metrics").type)
        patterns = [{"metrics": fig[0], "counts": dict(zip(COUNT_KEYS, c)), "bands": fig[1]}
                    for c, fig in s.patterns]
        patterns.append({"metrics": blank, "counts": None, "bands": blank})
        codes = np.full(len(where), len(s.patterns))
        codes[ok] = s.pattern[where[ok]]
        figs = pa.array(patterns, pa.struct([schema.field(k) for k in (
            "metrics", "counts", "bands")]), from_pandas=True).take(codes).flatten()
        errors: list[dict[str, str | None]] = [{"error": None}] * len(where)
        for pos, case in zip(np.flatnonzero(~ok).tolist(), self.error_cases()):
            errors[pos] = {"error": case.error}
        error = pa.nulls(len(where), pa.string()) if ok.all() else table.from_rows(
            errors, pa.schema([schema.field("error")])).column(0)
        word = schema.field("citation_labels").type.value_type  # text, or its codes (packed)
        return pa.Table.from_arrays([
            _lists(_lists(bits, row_len[ok_ref]), n_refs),
            _lists(pa.array(CITATION_LABELS, word).take(s.cit_label[ok_cit]), n_cits),
            _lists(pa.array(REFERENCE_LABELS, word).take(s.ref_label[ok_ref]), n_refs),
            *figs, error],
            schema=schema)

    def passages(self) -> pa.Table:
        """The batch's rows of ``passages.parquet``, in case order: the scored cases' from the
        decided arrays (:meth:`Scored.passages`), the failed cases' from their error records."""
        s, where = self._scored, np.array(self._where, dtype=np.int64)
        failed = table.from_rows(map(table.passage_row, self.error_cases()),
                                 table.PASSAGES_SCHEMA)
        if s is None or not failed.num_rows:
            return failed if s is None else s.passages()
        late = (where < 0) | ~s.ok_case[where]  # the failed rows go after the others: put back
        return pa.concat_tables([s.passages(), failed]).take(np.argsort(np.argsort(
            late, kind="stable")))

    def error_cases(self) -> Iterator[CaseResult]:
        """The failed cases' records, in case order (the scored ones are not built)."""
        failed = self._scored.failed if self._scored is not None else {}
        for pos, k in enumerate(self._where):
            if k < 0:
                yield self._errors[pos]
            elif k in failed:
                yield failed[k]


def _lists(values: pa.Array, lengths: np.ndarray) -> pa.ListArray:
    """`values` cut into consecutive lists of `lengths`."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.ListArray.from_arrays(offsets, values)

"""Run-level figures (SPEC 5): macro means, micro figures, bootstrap intervals, label counts.

Cases that carry an error are counted in ``n_errors`` and excluded from every figure.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from itertools import accumulate, chain, islice
from typing import TYPE_CHECKING, Any

import numpy as np

from runner.results import CaseResult, RunResult
from runner.results.sequence import CaseSequence
from runner.scoring.bands import DEFAULT_BANDS, band
from runner.scoring.bootstrap import interval, resample_counts
from runner.scoring.labels import CHECKED, CITATION, REFERENCE, diagnose, shares
from runner.scoring.metrics import COUNT_KEYS, METRIC_KEYS, declared

DEFAULT_RESAMPLES = 1000
"""Bootstrap resamples of the macro means' confidence intervals."""
MAX_RESAMPLES = 1_000_000
"""The most resamples a setting may ask for (a million means of each metric take 48 MB)."""
DEFAULT_CONFIDENCE = 0.95
"""Two-sided coverage of those intervals."""

if TYPE_CHECKING:
    from runner.scoring.records import BatchResults

HIST_BINS = 20
"""Bins of the per-metric histograms in ``metrics.json`` (0.05 wide)."""
MAX_FAILED_LISTED = 500
"""Failed cases listed by id and error in ``metrics.json`` (``failed.listed``)."""


def histogram(values: Sequence[float] | np.ndarray, bins: int = HIST_BINS) -> list[int]:
    """Counts of `values` in `bins` equal bins over [0, 1]; 1.0 falls in the last bin.

    Value v falls in bin ``floor(v * bins)``; values outside [0, 1] (a raw cosine below 0) are
    clipped into the end bins.
    """
    index = np.clip(np.floor(np.asarray(values, dtype=float) * bins), 0, bins - 1)
    return np.bincount(index.astype(np.int64), minlength=bins).tolist()


def histograms(values: np.ndarray, names: Sequence[str] = METRIC_KEYS, bins: int = HIST_BINS,
               bands: Mapping[str, float] = DEFAULT_BANDS) -> dict[str, dict[str, Any]]:
    """Per metric (`names`, the columns of `values`, NaN = undefined): its defined values
    binned over [0, 1] (:func:`histogram`), how many are defined and undefined, and the band of
    each bin's lower edge (`bands`)."""
    edges = [band(i * (1.0 / bins), bands) for i in range(bins)]
    return {key: {"low": 0.0, "high": 1.0, "bins": bins,
                  "counts": histogram(defined := col[~np.isnan(col)], bins),
                  "undefined": int(col.size - defined.size), "defined": int(defined.size),
                  "bands": edges} for key, col in zip(names, values.T)}


def ids_digest(ids: Iterable[str]) -> int:
    """The sum modulo 2**64 of a 64-bit hash of each id: the same for the same ids in any
    order and batches (``metrics.json`` → ``scored_digest``)."""
    return sum(int.from_bytes(hashlib.blake2b(i.encode("utf-8"), digest_size=8).digest(),
                              "little") for i in ids) % 2**64


def bootstrap_ci(values: np.ndarray, resamples: int = DEFAULT_RESAMPLES,
                 confidence: float = DEFAULT_CONFIDENCE,
                 seed: int = 0) -> list[list[float] | None]:
    """Percentile bootstrap intervals of the column means of `values`.

    A resample draws n cases with replacement; its mean for a column is the mean of the defined
    values among the drawn cases. Each interval depends only on its own column, and cases with
    the same value in that column are interchangeable, so a resample of a column is fully
    described by how many times each *distinct value* was drawn: multinomial counts with the
    values' frequencies as probabilities. When every column has few distinct values (the usual
    case: metric values are small fractions), the counts are drawn directly, per column, which
    gives exactly the distribution of case resampling at a cost that does not grow with the
    number of cases (1000 resamples of 100,000 cases take milliseconds). Otherwise the cases
    themselves are resampled.

    Args:
        values: Shape (n_cases, n_metrics); NaN marks an undefined value, left out of a mean.
        resamples: Number of bootstrap resamples (cases drawn with replacement).
        confidence: Two-sided coverage, e.g. 0.95 → the 2.5th and 97.5th percentiles.
        seed: Seeds the resampling, so the interval is reproducible.

    Returns:
        One ``[low, high]`` per column, or None for a column with no defined value.
    """
    n, m = values.shape
    out: list[list[float] | None] = [None] * m
    if n == 0 or resamples <= 0:
        return out
    defined = ~np.isnan(values)
    rng = np.random.default_rng(seed)
    distinct = [np.unique(values[:, k], return_counts=True) for k in range(m)]  # NaNs: one
    means = np.empty((resamples, m))
    if all(len(u) * 8 <= n for u, _ in distinct):
        for k, (uniq, sizes) in enumerate(distinct):
            ok = ~np.isnan(uniq)
            draws = resample_counts(rng, sizes, resamples)
            with np.errstate(invalid="ignore", divide="ignore"):
                means[:, k] = ((draws[:, ok] * uniq[ok]).sum(axis=1)
                               / draws[:, ok].sum(axis=1))
    else:
        filled = np.where(defined, values, 0.0)
        mask = defined.astype(np.float64)
        for b in range(resamples):
            # Multiplicity of each case in this resample; the resampled mean is a weighted mean.
            w = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                means[b] = (w @ filled) / (w @ mask)
    return [interval(means[:, k], confidence) if defined[:, k].any() else None
            for k in range(m)]


class CaseList(CaseSequence):
    """The cases of a run as one read-only sequence over its parts (lists and batches).

    A batch builds its records when one of them is first read, so a run whose cases are never
    looked at never pays for them. Equal to a list of the same cases.
    """

    def __init__(self, parts: Sequence[Sequence[CaseResult]] = ()) -> None:
        self._parts = [p for p in parts if len(p)]
        self._starts = list(accumulate((len(p) for p in self._parts), initial=0))

    def __len__(self) -> int:
        return self._starts[-1]

    def _at(self, pos: int) -> CaseResult:
        part = bisect_right(self._starts, pos) - 1
        return self._parts[part][pos - self._starts[part]]

    def __iter__(self) -> Iterator[CaseResult]:
        return chain.from_iterable(self._parts)


@dataclass
class Aggregator:
    """Accumulates scored batches and produces the run-level :class:`RunResult`.

    Args:
        zero_division: The empty-denominator policy for the micro figures.
        resamples, confidence, seed: Bootstrap settings (see :func:`bootstrap_ci`).
        keep_cases: Keep every :class:`CaseResult` in ``RunResult.cases``.
        bands: Lower bounds of the green and medium bands (``RunResult.bands``).
        max_failed_listed: Failed cases listed by id and error (``RunResult.failed``), the
            first ones in case order.
        metrics: The names of the declared metrics the cases carry, in order.
    """

    zero_division: str = "auto"
    resamples: int = DEFAULT_RESAMPLES
    confidence: float = DEFAULT_CONFIDENCE
    seed: int = 0
    keep_cases: bool = True
    _: KW_ONLY
    bands: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_BANDS))
    max_failed_listed: int = MAX_FAILED_LISTED
    metrics: tuple[str, ...] = METRIC_KEYS
    # The state: the first failed cases (id, error), each scored case's metric row, the sums.
    failed_listed: list[dict[str, str]] = field(default_factory=list, init=False)
    rows: list[Sequence[float]] = field(default_factory=list, init=False)
    counts: dict[str, int] = field(init=False, default_factory=lambda: dict.fromkeys(COUNT_KEYS, 0))
    labels: dict[str, int] = field(init=False, default_factory=lambda: {
        lab.key: 0 for lab in (*CITATION, *REFERENCE)})
    n_cases: int = field(default=0, init=False)
    n_errors: int = field(default=0, init=False)
    digest: int = field(default=0, init=False)  # ids_digest of the scored cases
    _parts: list[Sequence[CaseResult]] = field(default_factory=list, init=False)  # kept cases

    def add_batch(self, batch: BatchResults) -> None:
        """Count a scored batch from its sums (the same as adding its cases one by one)."""
        failed = ({"id": c.id, "error": str(c.error)} for c in batch.error_cases())
        self._add(len(batch), batch.n_errors, failed if batch.n_errors else (), batch.rows,
                  batch.counts, batch.labels, [batch], batch.digest)

    def empty(self) -> Aggregator:
        """A new aggregator with the same settings and no cases."""
        return replace(self)

    def merge(self, other: Aggregator) -> None:
        """Add the cases of another aggregator (added after this one's, in order).

        The result is the same as adding the other's cases here one by one, so cases scored in
        separate processes aggregate exactly as in one.
        """
        self._add(other.n_cases, other.n_errors, other.failed_listed, other.rows, other.counts,
                  other.labels, other._parts, other.digest)

    def _add(self, n_cases: int, n_errors: int, failed: Iterable[dict[str, str]],
             rows: Sequence[Sequence[float]], counts: Mapping[str, int], labels: Mapping[str, int],
             parts: Sequence[Sequence[CaseResult]], digest: int) -> None:
        """Count cases; list failed ones (id and error) until ``max_failed_listed`` are."""
        self.n_cases += n_cases
        self.digest = (self.digest + digest) % 2**64
        self.n_errors += n_errors
        room = max(self.max_failed_listed - len(self.failed_listed), 0)
        self.failed_listed.extend(islice(failed, room))
        self.rows.extend(rows)
        if self.keep_cases:
            self._parts.extend(parts)
        for sums, added in ((self.counts, counts), (self.labels, labels)):
            for k, v in added.items():
                sums[k] = sums.get(k, 0) + v

    def result(self) -> RunResult:
        """The run-level figures of every case added so far."""
        names = self.metrics
        values = np.array(self.rows, dtype=np.float64).reshape(len(self.rows), len(names))
        metrics: dict[str, float | None] = {
            key: float(d.mean()) if (d := col[~np.isnan(col)]).size else None
            for key, col in zip(names, values.T)}
        ci = bootstrap_ci(values, self.resamples, self.confidence, self.seed)
        checked = sum(self.labels.get(CHECKED[1] + name, 0) for name in CHECKED[2])
        return RunResult(
            metrics=metrics, ci=dict(zip(names, ci)),
            # With no scored case there is nothing to pool: the micro figures are undefined
            # (the zero-division rule would otherwise report a perfect 1.0 under `auto`).
            # Micro: each declared formula applied to the pooled counts.
            micro=({m.name: m.value(self.counts, self.zero_division) for m in declared(names)}
                   if self.rows else dict.fromkeys(names)),
            labels={k: v for k, v in self.labels.items() if not k.startswith("fidelity_")},
            fidelity={k[9:]: v for k, v in self.labels.items() if k.startswith("fidelity_")},
            counts=dict(self.counts), fidelity_checked=checked,
            n_cases=self.n_cases, n_scored=len(self.rows), n_errors=self.n_errors,
            bootstrap={"resamples": self.resamples, "confidence": self.confidence,
                       "seed": self.seed, "method": "percentile"},
            histograms=histograms(values, names, bands=self.bands),
            label_shares=shares(self.labels, {**self.counts, "fidelitys": checked}),
            scored_digest=f"{self.digest:016x}", diagnosis=diagnose(self.labels),
            bands={key: band(value, self.bands) for key, value in metrics.items()},
            failed={"count": self.n_errors, "listed": list(self.failed_listed)},
            cases=CaseList(self._parts) if self.keep_cases else [])


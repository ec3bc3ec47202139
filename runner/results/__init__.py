"""The results contract: what a job writes, and the one way to read it back.

A job decides one or more thresholds from one pass over its cases. It writes
``passages.parquet`` (what no threshold changes, once per job) and a *result folder* per
threshold (the job's folder itself when it decides one, else ``t0.5``-like subfolders) with
``metrics.json`` (a :class:`RunResult`), ``cases.parquet`` and ``config.yaml``; ``job.json``,
written last, lists the result folders. The fields: docs/results.md. Tracking, reports, sweep
summaries and re-scoring read these files through :func:`read_result`, :func:`iter_records`,
:func:`iter_decisions` and :func:`read_results`; they never recompute a figure.
``SCHEMA_VERSION`` (``metrics.json``, ``job.json``) and ``CASES_VERSION`` (the per-case tables)
change whenever a field changes meaning.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pydantic import ValidationError

from runner.data.errors import DataError
from runner.data.limits import check_value
from runner.data.loading import validation_to_data_error
from runner.data.models import Figures
from runner.data.readers import parse_document
from runner.data.text import check_file
from runner.results import table
from runner.results.jsonio import dumps_strict

if TYPE_CHECKING:  # pandas (0.2 s): pyarrow imports it with a job's first table, not runner
    import pandas as pd

SCHEMA_VERSION = 2
CASES_VERSION = table.CASES_VERSION
METRICS_FILE = "metrics.json"
CASES_FILE = "cases.parquet"
PASSAGES_FILE = "passages.parquet"
CONFIG_FILE = "config.yaml"
JOB_FILE = "job.json"
REPORT_FILE = "report.html"  # a result's page (a job of several thresholds: one in its folder)
PASSAGE_KEYS = ("id", "query", "references", "expected_sources", "response", "metadata",
                "similarity", "fidelity")
DECISION_KEYS = ("matched", "labels", "metrics", "counts", "bands", "error")
_FIGURES = ("n_cases", "n_scored", "n_errors", "error_rate", "metrics", "ci", "micro", "labels",
            "counts", "bootstrap", "bands", "histograms", "label_shares", "diagnosis",
            "scored_digest", "fidelity", "fidelity_checked")  # metrics.json, in order


@dataclass(eq=False)
class CaseResult:
    """Everything known about one case after scoring.

    ``similarity[i][j]`` is the similarity of reference i and citation j (``None`` when the
    predicate decided the pair without one, SPEC 4.1); ``matched[i][j]`` is the match decision.
    ``metrics`` values are ``None`` where undefined; all are ``None`` when ``error`` is set.
    """

    id: str
    query: str
    references: list[dict[str, str]]
    expected_sources: list[str]
    response: dict[str, Any] | None
    metadata: dict[str, Any] = field(default_factory=dict)
    similarity: list[list[float | None]] = field(default_factory=list)
    matched: list[list[bool]] = field(default_factory=list)
    citation_labels: list[str] = field(default_factory=list)
    reference_labels: list[str] = field(default_factory=list)
    metrics: dict[str, float | None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    bands: dict[str, str | None] = field(default_factory=dict)
    error: str | None = None
    fidelity: list[dict[str, Any]] | None = None

    def __eq__(self, other: object) -> bool:
        # Field by field, for any CaseResult: a scored case (a subclass that writes its
        # explanations on first use) equals the same record read back from its files.
        if not isinstance(other, CaseResult):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(CaseResult))

    @property
    def labels(self) -> dict[str, list[str]]:
        """Citation and reference labels together, as :func:`iter_records` gives them."""
        return {"citations": self.citation_labels, "references": self.reference_labels}

    def to_dict(self) -> dict[str, Any]:
        """The record as :func:`iter_records` gives it (the keys of both tables)."""
        return {k: getattr(self, k) for k in (*PASSAGE_KEYS, *DECISION_KEYS)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseResult:
        """Read back a record written by :meth:`to_dict`."""
        labels = data.get("labels") or {}
        given = {f.name: data[f.name] for f in fields(cls) if data.get(f.name) is not None}
        return cls(**{"response": None, **given, "citation_labels": labels.get("citations", []),
                      "reference_labels": labels.get("references", [])})


@dataclass
class RunResult:
    """Run-level figures (SPEC 5 and 7) plus, in memory, the per-case results.

    Attributes:
        metrics: Macro mean of each of the six metrics over scored cases (``None`` if no case
            defines it).
        ci: ``[low, high]`` percentile bootstrap interval of each macro mean.
        micro: Each metric from counts pooled over scored cases.
        labels: Counts of every citation and reference label.
        n_cases, n_scored, n_errors: Cases seen, scored, and failed (not scored).
        counts: Pooled counts behind the micro figures.
        histograms: Per metric, the per-case values of the scored cases in equal bins over
            [0, 1] (``{"low", "high", "bins", "counts", "undefined"}``; see
            :func:`runner.scoring.aggregate.histogram`).
        bands: The band of each macro mean under the run's bands (None when undefined).
        failed: ``{"count": n, "listed": [{"id", "error"}, ...]}``: the failed cases, the
            first few of them listed in case order.
        label_shares: Each label's count over its kind's items (None when there is none).
        diagnosis: The main finding of the label counts (``runner.scoring.labels.diagnose``).
        scored_digest: A digest of the scored cases' ids (equal ids, equal digest).
        fidelity: Each fidelity label's count (SPEC 6.1); empty when fidelity is off.
        fidelity_checked: The quotes checked: counted by every fidelity label but unchecked.
        extra: Anything else the runner records (config summary, timings, usage, gates).
        cases: The per-case results (not part of ``metrics.json``).
    """

    metrics: dict[str, float | None]
    ci: dict[str, list[float] | None]
    micro: dict[str, float | None]
    labels: dict[str, int]
    n_cases: int
    n_scored: int
    n_errors: int
    counts: dict[str, int] = field(default_factory=dict)
    bootstrap: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    histograms: dict[str, dict[str, Any]] = field(default_factory=dict)
    bands: dict[str, str | None] = field(default_factory=dict)
    failed: dict[str, Any] = field(default_factory=dict)
    label_shares: dict[str, float | None] = field(default_factory=dict)
    diagnosis: str | None = None
    scored_digest: str | None = None
    fidelity: dict[str, int] = field(default_factory=dict)
    fidelity_checked: int = 0
    cases: Sequence[CaseResult] = field(default_factory=list, repr=False)

    @property
    def error_rate(self) -> float:
        """n_errors / n_cases (0 for an empty run)."""
        return self.n_errors / self.n_cases if self.n_cases else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The content of ``metrics.json``."""
        return {"schema_version": SCHEMA_VERSION, "complete": True,
                **{k: getattr(self, k) for k in _FIGURES},
                "failed": self.failed or {"count": self.n_errors, "listed": []}, **self.extra}

    def to_pandas(self, per: str | None = None) -> pd.DataFrame:
        """The cases as a DataFrame, built by the code that writes them, so it equals
        ``runner.read_results`` of the written folder: one row per case (``threshold``,
        ``id``, each metric, each count, ``citation_labels``, ``reference_labels``,
        ``error``); with `per` ``"citation"`` or ``"reference"``, one row per labelled
        citation or reference (``threshold``, ``id``, its position, ``source``, ``content``,
        ``label``)."""
        threshold = (self.extra.get("threshold") or {}).get("value")
        return table.frame(*_tables(self), threshold, per).to_pandas()


class ThresholdResults(dict[float, RunResult]):
    """The results of one evaluation at several thresholds, by threshold value, in the order
    given (``results[0.5].metrics``; iterating gives the thresholds)."""

    def __init__(self, results: Sequence[RunResult]) -> None:
        super().__init__((float(r.extra["threshold"]["value"]), r) for r in results)

    def to_pandas(self, per: str | None = None) -> pd.DataFrame:
        """Every threshold's :meth:`RunResult.to_pandas`, one after another (the ``threshold``
        column tells them apart)."""
        return pa.concat_tables([table.frame(*_tables(r), t, per) for t, r in self.items()]
                                ).to_pandas()


def passages_path(result_dir: str | Path, metrics: dict[str, Any] | None = None) -> Path:
    """The ``passages.parquet`` a result folder's cases belong to (``files.passages``)."""
    folder = Path(result_dir)
    data = metrics if metrics is not None else read_metrics(folder / METRICS_FILE)
    return folder / str((data.get("files") or {}).get("passages", PASSAGES_FILE))


def iter_decisions(result_dir: str | Path, checked: bool = False,
                   metrics: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """The ``cases.parquet`` rows of a result folder (``id``, ``metrics``, ``labels``, ...),
    with the case ids of its passages file and without its passages: what a reader that only
    counts or bins figures needs (`checked`: the columns checked, :func:`table.check_table`).

    Raises:
        ValueError: The two files do not hold the same number of cases.
    """
    folder = Path(result_dir)
    if checked:
        table.check_table(folder / CASES_FILE, passages=False)
    ids = table.iter_rows(passages_path(folder, metrics), ["id"])
    n = 0
    for n, row in enumerate(table.iter_rows(folder / CASES_FILE), 1):
        shared = next(ids, None)
        if shared is None:
            raise ValueError(f"{folder / CASES_FILE}: case {n} is not in the passages file")
        labels = {"citations": row.pop("citation_labels"),
                  "references": row.pop("reference_labels")}
        yield {"id": shared["id"], **row, "counts": row["counts"] or {}, "labels": labels}
    if next(ids, None) is not None:
        raise ValueError(f"{folder / CASES_FILE}: {n} cases, but the passages file has more")


def iter_records(result_dir: str | Path, metrics: dict[str, Any] | None = None,
                 checked: bool = False) -> Iterator[dict[str, Any]]:
    """Every case of a result folder as one record (the keys of :meth:`CaseResult.to_dict`):
    its ``passages.parquet`` row joined with its ``cases.parquet`` row (`checked`: both files'
    columns checked, for a reader of folders from elsewhere).

    Raises:
        ValueError: The two files do not hold the same number of cases.
    """
    folder = Path(result_dir)
    path = passages_path(folder, metrics)
    if checked:
        table.check_table(path, passages=True)
    # The decisions first: they check that the two files hold as many cases.
    for decided, shared in zip(iter_decisions(folder, checked, metrics), table.iter_rows(path)):
        shared.update(decided)
        yield shared


def read_cases(result_dir: str | Path) -> Iterator[CaseResult]:
    """Stream the cases of a result folder as :class:`CaseResult` records, the columns checked
    (a metric is a number in [0, 1] or null: :func:`table.check_table`)."""
    return map(CaseResult.from_dict, iter_records(result_dir, checked=True))


def _tables(result: RunResult) -> tuple[pa.Table, pa.Table]:
    """A result's cases as its passages and decisions tables, as written (the decisions' columns
    named by the result's metrics and counts)."""
    counts = list(result.counts) or next((list(c.counts) for c in result.cases if c.counts), [])
    return (table.from_rows(map(table.passage_row, result.cases), table.PASSAGES_SCHEMA),
            table.from_rows(map(table.decision_row, result.cases),
                            table.decisions_schema(list(result.metrics), counts)))


def read_results(folder: str | Path, per: str | None = None) -> pd.DataFrame:
    """Read a results folder as a DataFrame: a result folder, or a job folder deciding one
    threshold or several (its result folders, one after another).

    Args:
        folder: The folder.
        per: None: one row per case (``threshold``, ``id``, each metric, each count, the
            labels, the error); ``"citation"`` or ``"reference"``: one row per labelled
            citation or reference (``threshold``, ``id``, its position, ``source``,
            ``content``, ``label``).

    Raises:
        ValueError: Not a results folder, or its files do not agree.
    """
    root = Path(folder)
    dirs = [root] if (root / METRICS_FILE).is_file() else result_dirs(root)
    if not dirs:
        raise ValueError(f"{folder}: not a results folder (no {METRICS_FILE} or {JOB_FILE})")
    columns = {None: ["id"], "citation": ["id", "response"], "reference": ["id", "references"]}
    frames = []
    for result_dir in dirs:
        metrics = read_result(result_dir)
        path = passages_path(result_dir, metrics)
        passages = table.open_table(path).read(columns=columns.get(per, ["id"]))
        decided = table.open_table(result_dir / CASES_FILE).read()
        threshold = (metrics.get("threshold") or {}).get("value")
        frames.append(table.frame(passages, decided, threshold, per))
    return pa.concat_tables(frames).to_pandas()


def write_result(result_dir: str | Path, result: RunResult,
                 passages: str = PASSAGES_FILE) -> Path:
    """Write a result held in memory (its cases included) as a result folder.

    Args:
        result_dir: The folder (made if needed).
        result: A result with its cases, e.g. from :func:`runner.evaluate`.
        passages: Where its passages go, relative to the folder; a file outside the folder
            (``../passages.parquet``) is left as it is when it exists (another threshold wrote
            it).

    Returns:
        The folder.
    """
    folder = Path(result_dir)
    folder.mkdir(parents=True, exist_ok=True)
    shared, decided = _tables(result)
    if (folder / passages).parent == folder or not (folder / passages).exists():
        table.write_table(folder / passages, shared)
    table.write_table(folder / CASES_FILE, decided)
    result.extra["files"] = {"passages": passages, "cases": CASES_FILE}
    write_metrics(folder / METRICS_FILE, result)
    return folder


def write_job(job_dir: str | Path, results: Sequence[str]) -> None:
    """Write ``job.json``, last: the job's result folders (relative), which makes it complete."""
    _write_whole(Path(job_dir) / JOB_FILE,
                 {"schema_version": SCHEMA_VERSION, "results": list(results)})


def result_dirs(job_dir: str | Path) -> list[Path]:
    """The result folders of a finished job, in its threshold order ([] if it did not finish)."""
    folder = Path(job_dir)
    path = folder / JOB_FILE
    data = parse_document(path, "json") if path.is_file() else {}
    return [(folder / name) if name != "." else folder for name in data.get("results", [])]


def require_complete(result_dir: str | Path) -> None:
    """Refuse a result folder whose job did not finish: no ``job.json`` (its own, or its job
    folder's for one threshold of several) lists it. A reader of finished results calls it;
    the job's own reports, written before ``job.json``, do not.

    Raises:
        ValueError: One line naming the folder.
    """
    folder = Path(result_dir).resolve()
    if folder not in (*result_dirs(folder), *result_dirs(folder.parent)):
        raise ValueError(f"{result_dir}: incomplete: no {JOB_FILE} lists this result folder (its "
                         "job stopped before its last file); run the job again")


def write_metrics(path: str | Path, result: RunResult | dict[str, Any]) -> None:
    """Write ``metrics.json`` atomically (a partial file never looks complete)."""
    _write_whole(Path(path), result.to_dict() if isinstance(result, RunResult) else result)


def _write_whole(target: Path, data: Any) -> None:
    """Write `data` as strict JSON to `target` whole or not at all (a temporary file renamed)."""
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(dumps_strict(data), encoding="utf-8")
    tmp.replace(target)


def read_result(result_dir: str | Path) -> dict[str, Any]:
    """The ``metrics.json`` of a result folder (checked: see :func:`read_metrics`)."""
    return read_metrics(Path(result_dir) / METRICS_FILE)


def read_metrics(path: str | Path) -> dict[str, Any]:
    """Read a ``metrics.json`` file as a data file is read (:mod:`runner.data.readers`), checking
    its schema version and its figures (:class:`Figures`).

    Raises:
        DataError: The file is missing, not a file, not JSON, or a figure is out of its range.
        ValueError: The file was written by an incompatible version.
    """
    check_file(Path(path))
    data = parse_document(Path(path), "json")
    check_value(data, str(path), None)  # NaN, Infinity, nesting
    if not isinstance(data, dict):
        raise DataError(str(path), None, None, f"expected an object, got {type(data).__name__}")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ValueError(f"{path}: schema_version {version!r} is not supported "
                         f"(this ragcite reads version {SCHEMA_VERSION})")
    try:
        Figures.model_validate(data)
    except ValidationError as exc:
        raise validation_to_data_error(exc, str(path), None) from None
    return dict(data)

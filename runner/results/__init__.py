"""The results contract: what a job writes, and the one way to read it back.

A job decides one or more thresholds from one pass over its cases. It writes ``passages.jsonl``
(what no threshold changes, once per job) and a *result folder* per threshold (the job's folder
itself when it decides one, else ``t0.5``-like subfolders) with ``metrics.json`` (a
:class:`RunResult`), ``cases.jsonl`` and ``config.yaml``; ``job.json``, written last, lists the
result folders. The fields: docs/results.md. Tracking, reports, sweep summaries and re-scoring
read these files through :func:`read_result`, :func:`iter_records` and :func:`iter_decisions`;
they never recompute a figure. ``SCHEMA_VERSION`` and ``CASES_VERSION`` change whenever a field
changes meaning.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, overload

from pydantic import BaseModel, ValidationError

from runner.data.errors import DataError
from runner.data.limits import check_value
from runner.data.loading import validation_to_data_error
from runner.data.models import Decisions, Figures, Passages
from runner.data.readers import parse_document
from runner.data.text import check_file
from runner.results.jsonio import dumps_strict, json_line, parse_line

SCHEMA_VERSION = 2
CASES_VERSION = 2
METRICS_FILE = "metrics.json"
CASES_FILE = "cases.jsonl"
PASSAGES_FILE = "passages.jsonl"
CONFIG_FILE = "config.yaml"
JOB_FILE = "job.json"
PASSAGE_KEYS = ("id", "query", "references", "expected_sources", "response", "metadata",
                "similarity")
DECISION_KEYS = ("id", "matched", "labels", "metrics", "counts", "bands", "explanations",
                 "error")
_FIGURES = ("n_cases", "n_scored", "n_errors", "error_rate", "metrics", "ci", "micro", "labels",
            "counts", "bootstrap", "bands", "histograms", "label_shares", "diagnosis",
            "scored_digest")  # metrics.json, in order


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
    explanations: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    def __eq__(self, other: object) -> bool:
        # Field by field, for any CaseResult: a scored case (a subclass that writes its
        # explanations on first use) equals the same record read back from cases.jsonl.
        if not isinstance(other, CaseResult):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(CaseResult))

    @property
    def labels(self) -> dict[str, list[str]]:
        """Citation and reference labels together, as written to ``cases.jsonl``."""
        return {"citations": self.citation_labels, "references": self.reference_labels}

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready record written as one line of ``cases.jsonl``."""
        return {k: getattr(self, k) for k in (*PASSAGE_KEYS, *DECISION_KEYS[1:])}

    def passages_dict(self) -> dict[str, Any]:
        """The threshold-free part of the record: one line of ``passages.jsonl``."""
        return {"v": CASES_VERSION, **{k: getattr(self, k) for k in PASSAGE_KEYS}}

    def decisions_dict(self) -> dict[str, Any]:
        """The part that depends on the threshold: one line of ``cases.jsonl``."""
        return {"v": CASES_VERSION, **{k: getattr(self, k) for k in DECISION_KEYS}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseResult:
        """Read back a record written by :meth:`to_dict`."""
        labels = data.get("labels") or {}
        given = {f.name: data[f.name] for f in fields(cls) if data.get(f.name) is not None}
        return cls(**{"response": None, **given, "citation_labels": labels.get("citations", []),
                      "reference_labels": labels.get("references", [])})


class CaseSequence(Sequence[CaseResult]):
    """A read-only sequence of scored cases whose records may be built on demand.

    Subclasses implement ``__len__`` and ``_at(pos)`` for ``0 <= pos < len(self)``; indexing
    (negative indexes, slices), iteration and equality with a list of the same cases follow.
    """

    def _at(self, pos: int) -> CaseResult:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> CaseResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[CaseResult]: ...

    def __getitem__(self, index: int | slice) -> CaseResult | list[CaseResult]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(len(self)))]
        return self._at(range(len(self))[index])  # negative indexes; IndexError out of range

    def __iter__(self) -> Iterator[CaseResult]:
        return map(self._at, range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (CaseSequence, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} cases)"


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


def read_lines(path: Path, check: type[BaseModel] | None = None) -> Iterator[dict[str, Any]]:
    """The records of a JSONL results file, checking their format version and, with `check`,
    their fields (:class:`DataError` names the file, line and field)."""
    with path.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = parse_line(line)
            except ValueError as exc:  # not JSON, or not UTF-8
                raise DataError(str(path), f"line {n}", None,
                                f"malformed JSON ({getattr(exc, 'msg', exc)})") from None
            if not isinstance(record, dict) or record.get("v") != CASES_VERSION:
                version = record.get("v") if isinstance(record, dict) else None
                raise ValueError(f"{path}, line {n}: cases format {version!r} is not supported "
                                 f"(this ragcite reads version {CASES_VERSION})")
            if check is not None:
                try:
                    check.model_validate(record)
                except ValidationError as exc:
                    raise validation_to_data_error(exc, str(path), f"line {n}") from None
            del record["v"]
            yield record


def passages_path(result_dir: str | Path, metrics: dict[str, Any] | None = None) -> Path:
    """The ``passages.jsonl`` a result folder's cases belong to (``files.passages``)."""
    folder = Path(result_dir)
    data = metrics if metrics is not None else read_metrics(folder / METRICS_FILE)
    return folder / str((data.get("files") or {}).get("passages", PASSAGES_FILE))


def iter_decisions(result_dir: str | Path, checked: bool = False) -> Iterator[dict[str, Any]]:
    """The ``cases.jsonl`` records of a result folder (``id``, ``metrics``, ``labels``, ...),
    without the passages: what a reader that only counts or bins figures needs."""
    return read_lines(Path(result_dir) / CASES_FILE, Decisions if checked else None)


def iter_records(result_dir: str | Path, metrics: dict[str, Any] | None = None,
                 checked: bool = False) -> Iterator[dict[str, Any]]:
    """Every case of a result folder as one record (the keys of :meth:`CaseResult.to_dict`):
    its ``passages.jsonl`` line joined with its ``cases.jsonl`` line (`checked`: each line
    checked as :class:`~runner.data.models.Passages` and :class:`~runner.data.models.Decisions`
    say, for a reader of folders from elsewhere).

    Raises:
        ValueError: The two files do not list the same cases in the same order.
    """
    folder = Path(result_dir)
    passages = read_lines(passages_path(folder, metrics), Passages if checked else None)
    for n, decided in enumerate(iter_decisions(folder, checked), 1):
        shared = next(passages, None)
        if shared is None or shared["id"] != decided["id"]:
            found = None if shared is None else shared["id"]
            raise ValueError(f"{folder / CASES_FILE}, case {n}: id {decided['id']!r} does not "
                             f"match the passages file ({found!r})")
        shared.update(decided)
        yield shared


def read_cases(result_dir: str | Path) -> Iterator[CaseResult]:
    """Stream the cases of a result folder as :class:`CaseResult` records, each line checked
    (a metric is a number in [0, 1] or null: :class:`~runner.data.models.Decisions`)."""
    return map(CaseResult.from_dict, iter_records(result_dir, checked=True))


def write_lines(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    """Write records as JSON lines (streamed)."""
    with Path(path).open("wb") as fh:
        fh.writelines(map(json_line, records))


def write_result(result_dir: str | Path, result: RunResult,
                 passages: str = PASSAGES_FILE) -> Path:
    """Write a result held in memory (its cases included) as a result folder.

    Args:
        result_dir: The folder (made if needed).
        result: A result with its cases, e.g. from :func:`runner.evaluate`.
        passages: Where its passages go, relative to the folder; a file outside the folder
            (``../passages.jsonl``) is left as it is when it exists (another threshold wrote it).

    Returns:
        The folder.
    """
    folder = Path(result_dir)
    folder.mkdir(parents=True, exist_ok=True)
    shared = folder / passages
    if shared.parent == folder or not shared.exists():
        write_lines(shared, (c.passages_dict() for c in result.cases))
    write_lines(folder / CASES_FILE, (c.decisions_dict() for c in result.cases))
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

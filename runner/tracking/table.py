"""The per-case table of a run, for the MLflow UI (``cases_table.json``).

The file is the JSON MLflow writes for ``mlflow.log_table`` (pandas' ``split`` orientation
without an index: ``{"columns": [...], "data": [[...], ...]}``), written row by row so memory
stays flat at any number of cases; the run's ``mlflow.loggedArtifacts`` tag lists it as a table,
so the MLflow UI and ``MlflowClient.load_table`` read it as one.
"""

from __future__ import annotations

import json
import tempfile
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from runner.results import iter_decisions, iter_records, passages_path, read_lines
from runner.scoring.metrics import METRIC_KEYS

TABLE_FILE = "cases_table.json"
DEFAULT_TABLE_ROWS = 20_000
"""Cases in a run's table by default (the first ones): the MLflow UI shows a table, not a run's
every case, which its ``cases.jsonl`` and ``passages.jsonl`` artifacts hold."""
TABLE_COLUMNS = ("id", "query", "answer", "n_references", "n_citations", *METRIC_KEYS,
                 "citation_labels", "reference_labels", "error")
"""The columns of the per-case table."""


def case_row(record: dict[str, Any]) -> list[Any]:
    """One case's row (:data:`TABLE_COLUMNS`) from its record (passage and decisions joined)."""
    return [*passage_cells(record), *decision_cells(record)]


def passage_cells(record: dict[str, Any]) -> list[Any]:
    """A row's cells that come from the case's ``passages.jsonl`` line (no threshold)."""
    response = record.get("response") or {}
    return [str(record["id"]), record.get("query"), response.get("answer"),
            len(record.get("references") or []), len(response.get("citations") or [])]


def decision_cells(record: dict[str, Any]) -> list[Any]:
    """A row's cells that come from the case's ``cases.jsonl`` line (its threshold's)."""
    metrics = record.get("metrics") or {}
    labels = record.get("labels") or {}
    return [*(metrics.get(name) for name in METRIC_KEYS),
            ", ".join(labels.get("citations") or []),
            ", ".join(labels.get("references") or []),
            record.get("error")]


def _row_json(row: list[Any]) -> bytes:
    try:
        return orjson.dumps(row)
    except TypeError:  # a lone surrogate in a text: the standard library escapes it
        return json.dumps(row, separators=(",", ":")).encode("utf-8")


def passage_parts(result_dir: Path, rows: int | None = None) -> list[bytes]:
    """Each case's passage cells (the first `rows` cases) as JSON without the closing bracket
    (``[id,query,...``), shared by the tables of every threshold of a job."""
    records = islice(read_lines(passages_path(result_dir)), rows)
    return [_row_json(passage_cells(r))[:-1] for r in records]


def write_table(result_dir: Path, path: Path, parts: list[bytes] | None = None,
                rows: int | None = None) -> None:
    """Write the table of `result_dir` (its first `rows` cases; None: all) to `path`, row by
    row (with `parts`, from :func:`passage_parts` of its job, only its ``cases.jsonl`` is
    read)."""
    with path.open("wb") as fh:
        fh.write(b'{"columns":' + orjson.dumps(list(TABLE_COLUMNS)) + b',"data":[')
        if parts is None:
            lines = (_row_json(case_row(r)) for r in islice(iter_records(result_dir), rows))
        else:
            lines = (part + b"," + _row_json(decision_cells(d))[1:]
                     for part, d in zip(parts, islice(iter_decisions(result_dir), rows),
                                        strict=True))
        for n, row in enumerate(lines):
            fh.write(b"," + row if n else row)
        fh.write(b"]}")


def log_case_table(mlflow: Any, run_id: str, result_dir: Path,
                   parts: list[bytes] | None = None, rows: int | None = None) -> None:
    """Log the table of `result_dir` (its first `rows` cases) to run `run_id` as the table
    ``cases_table.json``."""
    with tempfile.TemporaryDirectory(prefix="ragcite-table-") as tmp:
        path = Path(tmp) / TABLE_FILE
        write_table(result_dir, path, parts, rows)
        mlflow.log_artifact(run_id, str(path))
    tag = "mlflow.loggedArtifacts"
    logged = json.loads(mlflow.get_run(run_id).data.tags.get(tag, "[]"))
    entry = {"path": TABLE_FILE, "type": "table"}
    if entry not in logged:
        mlflow.set_tag(run_id, tag, json.dumps([*logged, entry]))

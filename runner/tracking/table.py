"""The per-case table of a run, for the MLflow UI (``cases_table.json``).

The file is the JSON MLflow writes for ``mlflow.log_table`` (pandas' ``split`` orientation
without an index: ``{"columns": [...], "data": [[...], ...]}``), written row by row so memory
stays flat at any number of cases; the run's ``mlflow.loggedArtifacts`` tag lists it as a table,
so the MLflow UI and ``MlflowClient.load_table`` read it as one. Built from the job's
``passages.parquet``, it is logged once per job, with the job's first threshold (its decisions):
the other thresholds' runs hold only their narrow ``cases.parquet``.
"""

from __future__ import annotations

import json
import tempfile
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from runner.results import iter_decisions, passages_path
from runner.results.table import iter_rows
from runner.scoring.metrics import METRIC_KEYS

TABLE_FILE = "cases_table.json"
# Cases in a run's table by default (the first ones): the MLflow UI shows a table, not a run's every
# case, which its ``cases.parquet`` and ``passages.parquet`` artifacts hold.
DEFAULT_TABLE_ROWS = 20_000
# The columns of the per-case table.
TABLE_COLUMNS = ("id", "query", "answer", "n_references", "n_citations", *METRIC_KEYS,
                 "citation_labels", "reference_labels", "error")


def passage_cells(record: dict[str, Any]) -> list[Any]:
    """A row's cells that come from the case's ``passages.parquet`` row (no threshold)."""
    response = record.get("response") or {}
    return [str(record["id"]), record.get("query"), response.get("answer"),
            len(record.get("references") or []), len(response.get("citations") or [])]


def write_table(result_dir: Path, path: Path, rows: int | None = None) -> None:
    """Write the table of `result_dir` (its first `rows` cases; None: all) to `path`, row by
    row.

    Raises:
        ValueError: ``passages.parquet`` and ``cases.parquet`` hold different numbers of cases.
    """
    pairs = zip(islice(iter_rows(passages_path(result_dir)), rows),
                islice(iter_decisions(result_dir), rows), strict=True)
    with path.open("wb") as fh:
        fh.write(b'{"columns":' + orjson.dumps(list(TABLE_COLUMNS)) + b',"data":[')
        for n, (record, decided) in enumerate(pairs):
            metrics, labels = decided.get("metrics") or {}, decided.get("labels") or {}
            cells = [*passage_cells(record), *(metrics.get(name) for name in METRIC_KEYS),
                     ", ".join(labels.get("citations") or []),
                     ", ".join(labels.get("references") or []), decided.get("error")]
            fh.write((b"," if n else b"") + orjson.dumps(cells))
        fh.write(b"]}")


def log_case_table(mlflow: Any, run_id: str, result_dir: Path, rows: int | None = None) -> None:
    """Log the table of `result_dir` (its first `rows` cases) to run `run_id` as the table
    ``cases_table.json``."""
    with tempfile.TemporaryDirectory(prefix="ragcite-table-") as tmp:
        write_table(result_dir, Path(tmp) / TABLE_FILE, rows)
        mlflow.log_artifact(run_id, str(Path(tmp) / TABLE_FILE))
    tag, entry = "mlflow.loggedArtifacts", {"path": TABLE_FILE, "type": "table"}
    logged = json.loads(mlflow.get_run(run_id).data.tags.get(tag, "[]"))
    if entry not in logged:
        mlflow.set_tag(run_id, tag, json.dumps([*logged, entry]))

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
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from runner.results import CASES_FILE, passages_path
from runner.results.table import open_table
from runner.scoring.metrics import METRIC_KEYS

TABLE_FILE = "cases_table.json"
# Cases in a run's table by default (the first ones): the MLflow UI shows a table, not a run's every
# case, which its ``cases.parquet`` and ``passages.parquet`` artifacts hold.
DEFAULT_TABLE_ROWS = 20_000
# The columns of the per-case table.
TABLE_COLUMNS = ("id", "query", "answer", "n_references", "n_citations", *METRIC_KEYS,
                 "citation_labels", "reference_labels", "error")


def _rows(path: Path, columns: list[str]) -> Iterator[tuple[Any, ...]]:
    """Per row of the results table `path`, its cells of the MLflow table (:func:`_cells`)."""
    with open_table(path) as file:
        for batch in file.iter_batches(4_096, columns=columns, use_threads=False):
            yield from zip(*(column.to_pylist() for column in _cells(batch)))


def _cells(batch: pa.RecordBatch) -> list[pa.Array]:
    """A batch's cells: of ``cases.parquet`` (a threshold's), or of ``passages.parquet``."""
    if "metrics" in batch.schema.names:
        return [*(pc.struct_field(batch.column("metrics"), name) for name in METRIC_KEYS),
                *(pc.binary_join(batch.column(name), ", ").fill_null("") for name in (
                    "citation_labels", "reference_labels")), batch.column("error")]
    response = batch.column("response")
    return [batch.column("id"), batch.column("query"), pc.struct_field(response, "answer"),
            pc.list_value_length(batch.column("references")),
            pc.list_value_length(pc.struct_field(response, "citations")).fill_null(0)]


def write_table(result_dir: Path, path: Path, rows: int | None = None) -> None:
    """Write the table of `result_dir` (its first `rows` cases; None: all) to `path`, a batch
    of rows at a time, reading only the columns it shows.

    Raises:
        ValueError: ``passages.parquet`` and ``cases.parquet`` hold different numbers of cases.
    """
    passages = ["id", "query", "response.answer", *(f"{name}.list.element.source" for name in (
        "references", "response.citations"))]  # a list's lengths without its texts
    pairs = zip(islice(_rows(passages_path(result_dir), passages), rows), islice(_rows(
        result_dir / CASES_FILE, ["metrics", "citation_labels", "reference_labels", "error"]),
        rows), strict=True)
    with path.open("wb") as fh:
        fh.write(b'{"columns":' + orjson.dumps(list(TABLE_COLUMNS)) + b',"data":[')
        for n, (shared, decided) in enumerate(pairs):
            fh.write((b"," if n else b"") + orjson.dumps([*shared, *decided]))
        fh.write(b"]}")


def log_case_table(mlflow: Any, run_id: str, result_dir: Path, rows: int | None = None) -> None:
    """Log the table of `result_dir` (its first `rows` cases) to run `run_id` as the table
    ``cases_table.json``."""
    with tempfile.TemporaryDirectory(prefix="ragcite-table-") as tmp:
        write_table(result_dir, Path(tmp) / TABLE_FILE, rows)
        mlflow.log_artifact(run_id, str(Path(tmp) / TABLE_FILE))
    # The run is ragcite's own: its one logged table (what MLflow's log_table would list).
    mlflow.set_tag(run_id, "mlflow.loggedArtifacts", json.dumps([{"path": TABLE_FILE,
                                                                   "type": "table"}]))

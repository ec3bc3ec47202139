"""The per-case table (runner.tracking.table), built from a result folder's records."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from runner.results import CASES_FILE, PASSAGES_FILE, SCHEMA_VERSION, write_metrics
from runner.results import table as results_table
from runner.tracking.table import (
    TABLE_COLUMNS,
    TABLE_FILE,
    log_case_table,
    write_table,
)
from tests.tracking.conftest import client, download_text, sqlite_uri
from tests.tracking.jobs import make_job


def test_rows_are_the_records_of_the_result_folder(tmp_path: Path) -> None:
    # A query that is not ASCII and a case that could not be scored.
    (folder,) = make_job(tmp_path / "job", [0.3])
    for name, edit in ((PASSAGES_FILE, _no_response), (CASES_FILE, _failed)):
        old = pq.read_table(folder / name)
        rows = old.to_pylist()
        edit(rows)
        results_table.write_table(folder / name, pa.Table.from_pylist(rows, old.schema))
    write_table(folder, tmp_path / TABLE_FILE)
    table = json.loads((tmp_path / TABLE_FILE).read_text(encoding="utf-8"))
    assert table["columns"] == list(TABLE_COLUMNS) == [
        "id", "query", "answer", "n_references", "n_citations", "context_recall",
        "context_precision", "context_f1", "source_recall", "source_precision", "source_f1",
        "citation_labels", "reference_labels", "error"]
    assert table["data"] == [
        ["exact", "q", "", 1, 1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, "supported", "cited", None],
        ["mixed", "bad \ufffd text", "", 1, 1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, "supported",
         "cited", None],
        ["few", "q", None, 1, 0, None, None, None, None, None, None, "wrong_passage",
         "passage_missed", "TimeoutError: no answer"]]
    # The first rows only.
    write_table(folder, tmp_path / "two.json", rows=2)
    assert json.loads((tmp_path / "two.json").read_text())["data"] == table["data"][:2]


def _no_response(rows: list[dict[str, object]]) -> None:
    rows[1]["query"] = "bad \ufffd text"
    rows[2]["response"] = None


def _failed(rows: list[dict[str, object]]) -> None:
    rows[2].update(metrics=dict.fromkeys(rows[2]["metrics"]),  # type: ignore[call-overload]
                   error="TimeoutError: no answer")


def test_a_result_without_cases_logs_an_empty_table(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    results_table.write_table(folder / PASSAGES_FILE, results_table.from_rows(
        [], results_table.PASSAGES_SCHEMA))
    results_table.write_table(folder / CASES_FILE, results_table.from_rows(
        [], results_table.decisions_schema(["context_recall"], ["references"])))
    write_metrics(folder / "metrics.json", {"schema_version": SCHEMA_VERSION, "files": {
        "passages": PASSAGES_FILE, "cases": CASES_FILE}})
    uri = sqlite_uri(tmp_path)
    c = client(uri)
    run_id = c.create_run(c.create_experiment("t", (tmp_path / "art").as_uri())).info.run_id
    log_case_table(c, run_id, folder)
    log_case_table(c, run_id, folder)  # again: listed once
    assert json.loads(download_text(uri, run_id, TABLE_FILE, tmp_path / "dl")) == {
        "columns": list(TABLE_COLUMNS), "data": []}
    assert json.loads(c.get_run(run_id).data.tags["mlflow.loggedArtifacts"]) == [
        {"path": TABLE_FILE, "type": "table"}]

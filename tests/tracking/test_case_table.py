"""The per-case table (runner.tracking.table), built from a result folder's records."""

from __future__ import annotations

import json
from pathlib import Path

from runner.results import (
    CASES_VERSION,
    SCHEMA_VERSION,
    iter_decisions,
    write_lines,
    write_metrics,
)
from runner.tracking.table import (
    TABLE_COLUMNS,
    TABLE_FILE,
    log_case_table,
    passage_parts,
    write_table,
)
from tests.tracking.conftest import client, download_text, sqlite_uri
from tests.tracking.jobs import make_job


def test_rows_are_the_records_of_the_result_folder(tmp_path: Path) -> None:
    # A lone surrogate in a query (orjson refuses it: that row goes through the standard
    # library) and a case that could not be scored.
    (folder,) = make_job(tmp_path / "job", [0.3])
    passages = [json.loads(line) for line in (folder / "passages.jsonl").read_text().splitlines()]
    passages[1]["query"] = "bad \ud800 text"
    passages[2]["response"] = None
    # Written as ASCII JSON (results.json_line cannot write a lone surrogate as UTF-8).
    (folder / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages),
                                           encoding="utf-8")
    decisions = [{"v": CASES_VERSION, **d} for d in iter_decisions(folder)]
    decisions[2].update(metrics={k: None for k in decisions[2]["metrics"]},
                        error="TimeoutError: no answer")
    write_lines(folder / "cases.jsonl", decisions)
    write_table(folder, tmp_path / TABLE_FILE)
    table = json.loads((tmp_path / TABLE_FILE).read_text(encoding="utf-8"))
    assert table["columns"] == list(TABLE_COLUMNS) == [
        "id", "query", "answer", "n_references", "n_citations", "context_recall",
        "context_precision", "context_f1", "source_recall", "source_precision", "source_f1",
        "citation_labels", "reference_labels", "error"]
    assert table["data"] == [
        ["exact", "q", "", 1, 1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, "supported", "cited", None],
        ["mixed", "bad \ud800 text", "", 1, 1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, "supported",
         "cited", None],
        ["few", "q", None, 1, 0, None, None, None, None, None, None, "wrong_passage",
         "passage_missed", "TimeoutError: no answer"]]
    # The first rows only, and the same rows from a job's shared passage cells.
    write_table(folder, tmp_path / "two.json", rows=2)
    assert json.loads((tmp_path / "two.json").read_text())["data"] == table["data"][:2]
    write_table(folder, tmp_path / "parts.json", passage_parts(folder, 2), rows=2)
    assert json.loads((tmp_path / "parts.json").read_text())["data"] == table["data"][:2]


def test_a_result_without_cases_logs_an_empty_table(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    write_lines(folder / "passages.jsonl", [])
    write_lines(folder / "cases.jsonl", [])
    write_metrics(folder / "metrics.json", {"schema_version": SCHEMA_VERSION, "files": {
        "passages": "passages.jsonl", "cases": "cases.jsonl"}})
    uri = sqlite_uri(tmp_path)
    c = client(uri)
    run_id = c.create_run(c.create_experiment("t", (tmp_path / "art").as_uri())).info.run_id
    log_case_table(c, run_id, folder)
    log_case_table(c, run_id, folder)  # again: listed once
    assert json.loads(download_text(uri, run_id, TABLE_FILE, tmp_path / "dl")) == {
        "columns": list(TABLE_COLUMNS), "data": []}
    assert json.loads(c.get_run(run_id).data.tags["mlflow.loggedArtifacts"]) == [
        {"path": TABLE_FILE, "type": "table"}]

"""The per-case MLflow table (runner.tracking.mlflow.log_case_table), on a real sqlite store."""

from __future__ import annotations

import json
from pathlib import Path

from runner.tracking.mlflow import TABLE_COLUMNS, TABLE_FILE, RowMemo, log_case_table
from tests.tracking.conftest import client, download_text


def _line(id_: str, query: str, error: str | None = None) -> str:
    # A cases.jsonl record with the fields the table reads.
    return json.dumps({"id": id_, "query": query,
                       "references": [{"source": "a.pdf", "content": "x"}] * 2,
                       "response": {"answer": "ans", "citations": [{"source": "a.pdf",
                                                                    "content": "x"}]},
                       "labels": {"citations": ["supported"],
                                  "references": ["cited", "passage_missed"]},
                       "metrics": {"context_recall": 0.5, "context_precision": 1.0},
                       "error": error})


def test_rows_are_written_one_by_one_and_read_back_as_the_table(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    c = client(uri)
    run_id = c.create_run(c.create_experiment("t", str(tmp_path / "art"))).info.run_id
    cases = tmp_path / "cases.jsonl"
    # A lone surrogate (orjson refuses it: that row goes through the standard library), a
    # blank line (skipped) and a failed case.
    cases.write_text(_line("a", "first") + "\n\n" + _line("b", "bad \ud800 text") + "\n"
                     + _line("c", "third", error="TimeoutError: no answer") + "\n",
                     encoding="utf-8")
    log_case_table(c, run_id, cases)
    table = json.loads(download_text(uri, run_id, TABLE_FILE, tmp_path / "dl"))
    assert table["columns"] == list(TABLE_COLUMNS)
    rows = [dict(zip(table["columns"], row)) for row in table["data"]]
    assert [(r["id"], r["query"], r["n_references"], r["n_citations"], r["error"])
            for r in rows] == [("a", "first", 2, 1, None), ("b", "bad \ud800 text", 2, 1, None),
                               ("c", "third", 2, 1, "TimeoutError: no answer")]
    assert rows[0]["context_recall"] == 0.5 and rows[0]["source_f1"] is None
    assert rows[0]["reference_labels"] == "cited, passage_missed"
    assert json.loads(c.get_run(run_id).data.tags["mlflow.loggedArtifacts"]) == [
        {"path": TABLE_FILE, "type": "table"}]


def test_a_run_without_cases_logs_an_empty_table(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    c = client(uri)
    run_id = c.create_run(c.create_experiment("t", str(tmp_path / "art"))).info.run_id
    cases = tmp_path / "cases.jsonl"
    cases.write_text("", encoding="utf-8")
    log_case_table(c, run_id, cases)
    assert json.loads(download_text(uri, run_id, TABLE_FILE, tmp_path / "dl")) == {
        "columns": list(TABLE_COLUMNS), "data": []}


def test_rows_of_lines_logged_before_are_not_built_again(tmp_path: Path) -> None:
    # The next job of a sweep: two lines as before, one changed (another error), one new.
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    c = client(uri)
    exp = c.create_experiment("t", str(tmp_path / "art"))
    memo = RowMemo()
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join([_line("a", "first"), _line("b", "second"),
                                _line("c", "third")]) + "\n", encoding="utf-8")
    log_case_table(c, c.create_run(exp).info.run_id, cases, memo)
    assert memo.built == 3
    cases.write_text("\n".join([_line("a", "first"), _line("b", "second"),
                                _line("c", "third", error="ValueError: x"),
                                _line("d", "fourth")]) + "\n", encoding="utf-8")
    run_id = c.create_run(exp).info.run_id
    log_case_table(c, run_id, cases, memo)
    assert memo.built == 5  # "a" and "b" found
    table = json.loads(download_text(uri, run_id, TABLE_FILE, tmp_path / "dl"))
    assert [(row[0], row[1], row[-1]) for row in table["data"]] == [
        ("a", "first", None), ("b", "second", None), ("c", "third", "ValueError: x"),
        ("d", "fourth", None)]
    # Past its bound the memo keeps no more rows. Each row here is 88 bytes,
    # ["1","q","ans",2,1,0.5,1.0,null,null,null,null,"supported","cited, passage_missed",null],
    # counted with 64 bytes of overhead: two fit in 400 bytes.
    small = RowMemo(max_bytes=400)
    for line in (b"1", b"2", b"3"):
        assert len(small.row(_line(line.decode(), "q").encode()) or b"") == 88
    assert small.built == 3 and len(small._rows) == 2
    small.row(_line("3", "q").encode())
    assert small.built == 4  # the third was not kept


def test_an_upload_into_a_local_store_is_the_file_as_mlflow_lays_it_down(tmp_path: Path) -> None:
    # runner.tracking.mlflow.upload: into MLflow's local artifact store the bytes are copied by
    # the kernel; the artifact is the same file (bytes, mode, times) at the same place, with no
    # staged copy left, and MLflow lists and downloads it as one it logged itself.
    import os

    from runner.tracking.mlflow import upload

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    c = client(uri)
    run_id = c.create_run(c.create_experiment("t", str(tmp_path / "art"))).info.run_id
    src = tmp_path / "cases.jsonl"
    src.write_bytes(b'{"id":"a"}\n' * 1000)
    os.chmod(src, 0o640)
    os.utime(src, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    upload(c, run_id, src)
    upload(c, run_id, src, "hydra")
    src.write_bytes(b"changed\n")  # a second upload replaces the first
    upload(c, run_id, src, "hydra")
    folder = Path(c.get_run(run_id).info.artifact_uri.removeprefix("file://"))
    top, nested = folder / "cases.jsonl", folder / "hydra" / "cases.jsonl"
    assert top.read_bytes() == b'{"id":"a"}\n' * 1000 and nested.read_bytes() == b"changed\n"
    assert (top.stat().st_mode & 0o777, top.stat().st_mtime_ns) == (
        0o640, 1_700_000_000_000_000_000)
    assert sorted(p.name for p in folder.rglob("*")) == ["cases.jsonl", "cases.jsonl", "hydra"]
    assert [f.path for f in c.list_artifacts(run_id)] == ["cases.jsonl", "hydra"]
    assert download_text(uri, run_id, "hydra/cases.jsonl", tmp_path / "dl") == "changed\n"

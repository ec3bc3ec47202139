"""Rows for ``ragcite-compare`` (issue 23, item 6): it checks the folders it reads as ragcite
checks a dataset, and its numeric options have bounds. Each row runs ``python -m
runner.reports.compare`` on result folders written here as a job writes them (docs/results.md);
a bad one is refused with one ``ragcite: error:`` line naming the file and the column (a
table), line and field (``metrics.json``), or the option and what it allows (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runner.results import CASES_FILE, PASSAGES_FILE
from runner.results.table import PASSAGES_SCHEMA, decisions_schema
from runner.scoring.metrics import COUNT_KEYS, METRIC_KEYS
from tests.bad_inputs.table import Row, check, ids, write_files
from tests.conftest import run_cli

MODULE = "runner.reports.compare"


def _parquet(rows: list[dict[str, Any]], schema: pa.Schema, infer: bool = False) -> bytes:
    """`rows` as a results table: each column of `schema` present in every row, of its type
    where its values allow it (with `infer`, where it is not a number either), else of the
    type they have."""
    columns = {}
    for f in schema:
        if all(f.name in r for r in rows):
            values = [r[f.name] for r in rows]
            try:
                if infer and f.name == "metrics":
                    raise pa.ArrowInvalid("not numbers")
                columns[f.name] = pa.array(values, f.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                columns[f.name] = pa.array(values)
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns).replace_schema_metadata({b"ragcite.format": b"4"}), sink)
    return bytes(sink.getvalue().to_pybytes())


def folder(name: str, values: tuple[Any, Any] = (1.0, 0.0), error: str | None = None,
           edit: Callable[[list[dict[str, Any]], list[dict[str, Any]]], None] | None = None,
           **figures: Any) -> dict[str, Any]:
    """Result folder `name`: case c1 scores values[0] on every metric, c2 values[1] (or fails
    with `error`); `edit` changes the passages and decisions rows; `figures` replace keys of
    its metrics.json."""
    metrics = {"schema_version": 2, "n_cases": 2, "n_scored": 2, "n_errors": 0,
               "error_rate": 0.0, "metrics": dict.fromkeys(METRIC_KEYS, 0.5),
               "files": {"passages": PASSAGES_FILE, "cases": CASES_FILE}, **figures}
    passages = [{"id": cid, "query": f"q{n}", "references": [{"source": "a", "content": "x y"}],
                 "expected_sources": ["a"], "response": {"answer": "x", "citations": []},
                 "metadata": "{}", "similarity": [[]], "fidelity": None}
                for n, cid in enumerate(("c1", "c2"), 1)]
    decisions = [{"matched": [[]], "citation_labels": [], "reference_labels": ["source_missed"],
                  "metrics": dict.fromkeys(METRIC_KEYS, value), "counts": None,
                  "bands": dict.fromkeys(METRIC_KEYS), "error": error if cid == "c2" else None}
                 for cid, value in zip(("c1", "c2"), values)]
    if edit is not None:
        edit(passages, decisions)
    return {f"{name}/metrics.json": json.dumps(metrics),
            f"{name}/{CASES_FILE}": _parquet(decisions, decisions_schema(METRIC_KEYS, COUNT_KEYS),
                                             not isinstance(values[0], float)),
            f"{name}/{PASSAGES_FILE}": _parquet(passages, PASSAGES_SCHEMA),
            f"{name}/job.json": json.dumps({"schema_version": 2, "results": ["."]})}


GOOD = folder("A")


def b_with(*args: Any, **figures: Any) -> dict[str, Any]:
    """The good A and a B made by :func:`folder`."""
    return {**GOOD, **folder("B", *args, **figures)}


def edited(table: str, key: str, value: Any) -> dict[str, Any]:
    """The good A and a good B whose `table` (``passages`` or ``decisions``) has `key` set to
    `value` in every row (deleted for ``...``)."""
    def edit(passages: list[dict[str, Any]], decisions: list[dict[str, Any]]) -> None:
        for row in passages if table == "passages" else decisions:
            if value is ...:
                del row[key]
            else:
                row[key] = value
    return b_with(edit=edit)


def no_metrics(*extra: tuple[str, str]) -> dict[str, str]:
    files = b_with()
    del files["B/metrics.json"]
    return {**files, **dict(extra)}


def option(name: str, value: str, allowed: str) -> Row:
    """An option given out of its range: the line names it and what it allows."""
    return Row(f"{name} {value}", ["A", "B", name, value], 2,
               f"ragcite: error: argument {name}: must be {allowed}, got {value}", b_with())


IDS = ["0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"]
FIELD = "ragcite: error: B/cases.parquet: column 'metrics.context_recall': "
RANGE = FIELD + "a value that is not a number in [0, 1]"
TYPE = ("ragcite: error: B/cases.parquet: column 'metrics' is missing or not of type struct<"
        + ", ".join(f"{k}: double" for k in METRIC_KEYS) + ">")
ROWS = [
    # Per-case metrics: numbers in [0, 1] or null.
    Row("a per-case metric above 1", ["A", "B"], 2, RANGE, b_with((2.5, 0.0))),
    Row("a per-case metric below 0", ["A", "B"], 2, RANGE, b_with((-0.25, 0.0))),
    Row("a per-case metric as a string", ["A", "B"], 2, TYPE, b_with(("0.9", "0"))),
    Row("a per-case metric true", ["A", "B"], 2, TYPE, b_with((True, False))),
    Row("a per-case metric NaN", ["A", "B"], 2, RANGE, b_with((float("nan"), 0.0))),
    Row("a per-case metric Infinity", ["A", "B"], 2, RANGE, b_with((float("inf"), 0.0))),
    Row("a per-case metric as a list", ["A", "B"], 2, TYPE, b_with(([1], [0]))),
    # The other fields of a case that a comparison reads.
    Row("a case id as a number", ["A", "B"], 2,
        "ragcite: error: B/passages.parquet: column 'id' is missing or not of type string",
        edited("passages", "id", 1)),
    Row("a case error as a number", ["A", "B"], 2,
        "ragcite: error: B/cases.parquet: column 'error' is missing or not of type string",
        edited("decisions", "error", 3)),
    Row("a label as a number", ["A", "B"], 2,
        "ragcite: error: B/cases.parquet: column 'reference_labels' is missing or not of type "
        "list<item: string>", edited("decisions", "reference_labels", [7])),
    Row("a query as a number", ["A", "B"], 2,
        "ragcite: error: B/passages.parquet: column 'query' is missing or not of type string",
        edited("passages", "query", 2)),
    Row("a reference that is not an object", ["A", "B"], 2,
        "ragcite: error: B/passages.parquet: column 'references' is missing or not of type "
        "list<item: struct<source: string, content: string>>",
        edited("passages", "references", ["x y"])),
    Row("a citation without its source", ["A", "B"], 2,
        "ragcite: error: B/passages.parquet: column 'response.citations.source': a null value",
        edited("passages", "response", {"answer": "x", "citations": [{"content": "x"}]})),
    Row("a passages table without its query", ["A", "B"], 2,
        "ragcite: error: B/passages.parquet: column 'query' is missing or not of type string",
        edited("passages", "query", ...)),
    Row("a cases file that is not Parquet", ["A", "B"], 2,
        "ragcite: error: B/cases.parquet: not a Parquet table",
        {**b_with(), f"B/{CASES_FILE}": "id"}),
    # metrics.json: missing, unreadable, malformed, or a figure out of its range.
    Row("no metrics.json", ["A", "B"], 2, "ragcite: error: B/metrics.json: file not found",
        no_metrics()),
    Row("no metrics.json in a job folder of one threshold", ["A", "B"], 2,
        "ragcite: error: B/metrics.json: file not found",
        no_metrics(("B/job.json", '{"schema_version": 2, "results": ["."]}'))),
    Row("metrics.json is a folder", ["A", "B"], 2,
        "ragcite: error: B/metrics.json: is a directory; expected a file",
        no_metrics(("B/metrics.json/x", ""))),
    Row("metrics.json cut short", ["A", "B"], 2,
        "ragcite: error: B/metrics.json, line 1: malformed JSON (Expecting ',' delimiter at "
        "column 22)", no_metrics(("B/metrics.json", '{"schema_version": 2 "n'))),
    Row("metrics.json not UTF-8", ["A", "B"], 2,
        "ragcite: error: B/metrics.json, line 1: invalid UTF-8 (byte 0xff at column 2); save "
        "the file as UTF-8", {**no_metrics(), "B/metrics.json": b"{\xff}"}),  # type: ignore[dict-item]
    Row("metrics.json not an object", ["A", "B"], 2,
        "ragcite: error: B/metrics.json: expected an object, got list",
        no_metrics(("B/metrics.json", "[2]"))),
    Row("job.json cut short, without metrics.json", ["A", "B"], 2,
        "ragcite: error: B/job.json, line 1: malformed JSON (Expecting property name enclosed in "
        "double quotes at column 2)",
        no_metrics(("B/job.json", "{"))),
    Row("a macro mean above 1", ["A", "B"], 2,
        "ragcite: error: B/metrics.json, field 'metrics.context_f1': Input should be less than "
        "or equal to 1 (got 1.5)",
        b_with(metrics={**dict.fromkeys(METRIC_KEYS, 0.5), "context_f1": 1.5})),
    Row("a macro mean as a string", ["A", "B"], 2,
        "ragcite: error: B/metrics.json, field 'metrics.source_f1': Input should be a valid "
        "number (got '0.9')", b_with(metrics={"source_f1": "0.9"})),
    Row("a macro mean NaN", ["A", "B"], 2,
        "ragcite: error: B/metrics.json, field 'metrics.source_f1': NaN is not allowed (not a "
        "finite number); write null or a number", b_with(metrics={"source_f1": float("nan")})),
    Row("an interval end above 1", ["A", "B"], 2,
        "ragcite: error: B/metrics.json, field 'ci.source_f1[1]': Input should be less than or "
        "equal to 1 (got 2)", b_with(ci={"source_f1": [0.5, 2]})),
    Row("a negative case count", ["A", "B"], 2,
        "ragcite: error: B/metrics.json, field 'n_errors': Input should be greater than or "
        "equal to 0 (got -1)", b_with(n_errors=-1)),
    Row("a threshold as a string", ["A", "B"], 2,
        "ragcite: error: B/metrics.json, field 'threshold.value': Input should be a valid "
        "number (got 'high')", b_with(threshold={"value": "high", "level": None})),
    Row("a label share above 1", ["A", "B"], 2,
        "ragcite: error: B/metrics.json, field 'label_shares.citation_supported': Input should "
        "be less than or equal to 1 (got 1.5)", b_with(label_shares={"citation_supported": 1.5})),
    Row("a scored cases digest as a number", ["A", "B"], 2,
        "ragcite: error: B/metrics.json, field 'scored_digest': Input should be a valid string "
        "(got 7)", b_with(scored_digest=7)),
    Row("a section that is not an object", ["A", "B"], 2,
        "ragcite: error: B/metrics.json, field 'run': Input should be a valid dictionary (got "
        "'x')", b_with(run="x")),
    # Run ids: a tracking URI that cannot be read is one line, and a store is never made.
    Row("run ids in a sqlite store that does not exist", [*IDS, "--tracking-uri",
                                                          "sqlite:///{tmp}/no/mlflow.db"], 2,
        "ragcite: error: sqlite:///{tmp}/no/mlflow.db: no such MLflow store (the file does not "
        "exist)"),
    Row("run ids with a tracking URI that does not parse", [*IDS, "--tracking-uri",
                                                            "http://[::1"], 2,
        "ragcite: error: MLflow tracking URI http://[::1: ValueError: Invalid IPv6 URL"),
    # The options: each number has its range.
    option("--max-new-errors", "-1", "an integer >= 0"),
    option("--max-new-errors", "1.5", "an integer >= 0"),
    option("--max-drop", "-0.1", "a number in [0, 1]"),
    option("--max-drop", "1.5", "a number in [0, 1]"),
    option("--max-drop", "nan", "a number in [0, 1]"),
    option("--max-drop", "inf", "a number in [0, 1]"),
    option("--resamples", "0", "an integer in [1, 1000000]"),
    option("--resamples", "1000001", "an integer in [1, 1000000]"),
    option("--confidence", "1", "a number in (0, 1)"),
    option("--confidence", "nan", "a number in (0, 1)"),
    option("--seed", "-1", "an integer >= 0"),
    option("--top", "-1", "an integer >= 0"),
    option("--top", "ten", "an integer >= 0"),
    option("--timeout", "0", "a number of seconds in (0, 86400]"),
    option("--timeout", "inf", "a number of seconds in (0, 86400]"),
    # Good folders pass the checks: the gate decides (exit 1).
    Row("a case newly failed with --max-new-errors 0", ["A", "B", "--max-new-errors", "0"], 1,
        "ragcite-compare: gate failed: 1 cases fail in B but not in A (max_new_errors 0)",
        b_with((1.0, None), error="HTTP 500")),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_row(row: Row, tmp_path: Path) -> None:
    write_files(tmp_path, row.files)
    args = [a.replace("{tmp}", str(tmp_path)) for a in row.args]
    proc = run_cli(args, tmp_path, env=dict(row.env), module=MODULE, timeout=120)
    check(row, proc, tmp_path)
    if row.status == 2:
        assert not (tmp_path / "outputs").exists()  # stopped before writing anything
        assert not (tmp_path / "no").exists()  # no store made where none was

"""Rows of tracking stores: a tracking server that does not answer, and the default store
created on first use."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bad_inputs.table import Row, ids, run_row

DEAD = "http://127.0.0.1:9"  # the discard port: nothing listens on it here
UNREACHABLE = (f"ragcite: error: tracking: cannot reach the MLflow tracking server at {DEAD} "
               "([Errno 111] Connection refused; timeout 5 s) (set tracking.required=false to "
               "run without it, or tracking=none)")

ROWS = [
    Row("a tracking server that does not answer", ["tracking=mlflow",
        f"tracking.tracking_uri={DEAD}"], 2, UNREACHABLE),
    Row("sweep: a tracking server that does not answer", ["-m", "matcher=substring,ngram",
        "tracking=mlflow", f"tracking.tracking_uri={DEAD}"], 2, UNREACHABLE),
    Row("the default store, created on first use", ["tracking=mlflow"], 0,
        "threshold 0.5: context R/P/F1 0.806/0.283/0.408  source R/P/F1 0.933/0.506/0.613  "
        "(means over 30 scored cases, 0 failed; 25 of 34 ground-truth passages matched; the "
        "system answered 30 of the dataset's 30 cases)"),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_row(row: Row, tmp_path: Path) -> None:
    run_row(row, tmp_path)

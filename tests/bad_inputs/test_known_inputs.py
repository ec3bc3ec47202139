"""Rows that already gave the right status and line before the bad-input work: kept so they
stay that way. Other files of this folder hold the rows of each area."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runner.errors import EXIT_BROKEN_PIPE
from tests.bad_inputs.table import Row, ids, run_row

DEMO = ("threshold 0.5: context R/P/F1 0.806/0.283/0.408  source R/P/F1 0.933/0.506/0.613  "
        "(means over 30 scored cases, 0 failed; 25 of 34 ground-truth passages matched; the "
        "system answered 30 of the dataset's 30 cases)")

ROWS = [
    Row("threshold above the matcher's range", ["threshold=7"], 2,
        "ragcite: error: scoring.threshold: 7 is outside [0, 1], the similarities this "
        "matcher gives"),
    Row("the demo runs", [], 0, DEMO),
    Row("a new model's price", ["+prices.my-model.input=0.3"], 0, DEMO),
    Row("a price with an unknown key", ["+prices.my-model.inptu=0.3"], 2,
        "ragcite: error: prices.my-model.inptu: no such key; a price takes: input, output"),
    Row("a negative price", ["+prices.my-model.input=-1"], 2,
        "ragcite: error: prices.my-model.input: must be a number >= 0, got -1.0"),
    Row("a gate that fails", ["gate.context_recall=0.9"], 1,
        "ragcite: gate failed: context_recall 0.8056 < gate 0.9"),
]


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_row(row: Row, tmp_path: Path) -> None:
    run_row(row, tmp_path)


@pytest.mark.parametrize("args", [["--help"], ["--cfg", "job"]])
def test_a_reader_that_goes_away_stops_the_output_quietly(args: list[str], tmp_path: Path) -> None:
    """``ragcite --help | head``: the pipe's reader is gone before the first write."""
    proc = subprocess.Popen([sys.executable, "-m", "runner.cli", *args], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == EXIT_BROKEN_PIPE == 141
    assert err == ""

"""Rows of `model=http` against a scripted RAG service on 127.0.0.1 (a fresh one per row): a
``Retry-After`` over ``model.max_retry_after`` fails the case at once, saying so, one within it
is waited out, and an out-of-range ceiling is refused before any request."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bad_inputs.table import ids
from tests.bad_inputs.test_api_faults import (
    ERR,
    HTTP,
    NONE,
    FaultRow,
    nothing,
    row,
    run_fault_row,
    script,
)
from tests.openai_server import FakeOpenAI, Scripted

RAG = "/rag"
TOO_LONG = ("the service failed: HTTP {status}: Retry-After {after} s exceeds the ceiling of "
            "{ceiling} s (model.max_retry_after); not retried")
REFS = ("model.citations='refs[].{source: doc, content: quote}'", "model.max_retries=4")

ROWS = [
    row("http model: Retry-After 3600 s on every case, over the default ceiling", HTTP, 3,
        NONE + TOO_LONG.format(status=429, after=3600, ceiling=60),
        script(RAG, Scripted(429, headers={"Retry-After": "3600"}), 2), *REFS,
        requests=(RAG, 2)),
    row("http model: Retry-After 300 s over model.max_retry_after=90", HTTP, 3,
        NONE + TOO_LONG.format(status=503, after=300, ceiling=90),
        script(RAG, Scripted(503, headers={"Retry-After": "300"}), 2), *REFS,
        "model.max_retry_after=90", requests=(RAG, 2)),
    # c1's first request waits 1 s and is sent again, c2's goes through: 3 requests. The
    # service cites nothing, so both cases score 0 (recall 0 of 1 reference each).
    row("http model: Retry-After 1 s is waited out and the cases score", HTTP, 0,
        "threshold 0.5: context R/P/F1 0.000/0.000/0.000  source R/P/F1 0.000/0.000/0.000  "
        "(means over 2 scored cases, 0 failed; 0 of 2 ground-truth passages matched; the "
        "system answered 2 of the dataset's 2 cases)",
        script(RAG, Scripted(503, headers={"Retry-After": "1"})), *REFS, requests=(RAG, 3)),
    row("model.max_retry_after negative (http)", HTTP, 2,
        ERR + "model.max_retry_after: must be a number of seconds in [0, 120], got -1.0",
        nothing, "model.max_retry_after=-1", requests=(RAG, 0)),
]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


@pytest.mark.parametrize("fault", ROWS, ids=ids([f.row for f in ROWS]))
def test_row(fault: FaultRow, server: FakeOpenAI, tmp_path: Path) -> None:
    start = time.monotonic()
    run_fault_row(fault, server, tmp_path)
    if fault.row.status == 3:  # a long Retry-After (or the ceiling, 60 or 90 s) is never slept
        assert time.monotonic() - start < 45  # the command's start-up included, under load

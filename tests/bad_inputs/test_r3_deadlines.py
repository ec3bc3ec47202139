"""Rows of servers that trickle: the real command line against the scripted OpenAI-compatible
server on 127.0.0.1, whose reply arrives one byte every 50 ms (each read well within any read
timeout; the whole reply would take ten minutes).

A component's ``timeout`` is a deadline on each request attempt, the whole reply included: past
it the pair or case fails with one line (here every one, so exit 3), after the retries asked
for, and the run ends in seconds, not when the server is done."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bad_inputs.table import ids
from tests.bad_inputs.test_api_faults import (
    ANSWER,
    CHAT,
    EMB,
    EMBED,
    HTTP,
    JUDGE,
    NONE,
    PAIR,
    FaultRow,
    row,
    run_fault_row,
    script,
)
from tests.openai_server import FakeOpenAI, Scripted

# Ten thousand bytes of leading white space, then a reply: 500 s at one byte per 50 ms.
TRICKLE = Scripted(200, body=b" " * 10_000 + b"{}", trickle=0.05)
TIMED_OUT = "APITimeoutError: Request timed out."
BOUND_S = 60.0  # the CLI's start included; without the deadline a row takes 500 s or more

ROWS = [
    row("embeddings: a trickling server, past matcher.timeout", EMBED, 3,
        NONE + PAIR + TIMED_OUT, script(EMB, TRICKLE, 9), "matcher.timeout=1",
        requests=(EMB, 1)),
    row("llm judge: a trickling server, past matcher.timeout", JUDGE, 3,
        NONE + PAIR + "llm judge call failed: " + TIMED_OUT, script(CHAT, TRICKLE, 9),
        "matcher.timeout=1", requests=(CHAT, 2)),
    row("openai model: a trickling server, past model.timeout", ANSWER, 3,
        NONE + "openai call failed: " + TIMED_OUT, script(CHAT, TRICKLE, 9),
        "model.timeout=1", requests=(CHAT, 2)),
    row("http model: a trickling service, past model.timeout", HTTP, 3,
        NONE + "the service failed: ReadTimeout: no complete reply within 1.5 s",
        script("/rag", TRICKLE, 9), "model.timeout=1.5", requests=("/rag", 2)),
    row("http model: a trickling service, past model.timeout, retried once", HTTP, 3,
        NONE + "the service failed: ReadTimeout: no complete reply within 1 s",
        script("/rag", TRICKLE, 9), "model.timeout=1", "model.max_retries=1",
        "model.backoff=0", requests=("/rag", 4)),
]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


@pytest.mark.parametrize("fault", ROWS, ids=ids([f.row for f in ROWS]))
def test_row(fault: FaultRow, server: FakeOpenAI, tmp_path: Path) -> None:
    start = time.monotonic()
    run_fault_row(fault, server, tmp_path)  # the line, the status, the requests received
    assert time.monotonic() - start < BOUND_S

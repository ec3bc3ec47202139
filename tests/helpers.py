"""Shared builders and the seed's three worked examples, for the tests."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.data.models import Case, Citation, Reference, Response
from runner.matchers.base import BaseMatcher, Matcher, PairError, Similarity, TextPair
from runner.results import iter_decisions
from runner.results.table import iter_rows
from runner.scoring.batch import score_batch_thresholds
from runner.scoring.case import ScoringOptions
from runner.scoring.records import BatchResults

FIXTURES = Path(__file__).parent / "fixtures"
WAIT_BOUND = 180.0
"""Seconds a test waits for a state (a file, a request, a line) before it fails: generous, as
the suite must pass on a loaded 2-core machine; a state that comes returns at once."""
SEED_FILE = FIXTURES / "seed_examples.jsonl"

# The seed's passages (seed/rag-citation-quality.txt, "Examples").
REMOTE_REQUEST = ("Employees shall submit a remote work request at least five (5) business days "
                  "prior to the requested start date.")
RESIGNATION = ("Employees are required to provide a minimum of four (4) weeks written notice of "
               "resignation.")
PROBATION = ("Employees on probation are not entitled to severance pay upon termination within "
             "the first ninety (90) days of employment.")
VPN = ("Remote workers must use a company-approved VPN at all times when accessing internal "
       "systems from outside the office.")
ENCRYPTION = ("All devices used for remote work must have full-disk encryption and approved "
              "endpoint security software installed.")
PERSONAL_DEVICES = ("Employees must not store confidential company data on personal devices or "
                    "unapproved cloud storage services.")
TRAINING = "Annual security training is mandatory for all employees with access to sensitive data."


def case(refs: Sequence[tuple[str, str]] = (), cits: Sequence[tuple[str, str]] | None = (),
         id: str = "c", expected: Sequence[str] | None = None, error: str | None = None,
         **extra: Any) -> Case:
    """A case from (source, content) tuples; `cits=None` means no stored response."""
    response = None
    if cits is not None:
        response = Response(citations=[Citation(source=s, content=c) for s, c in cits],
                            error=error)
    data: dict[str, Any] = {"id": id, "query": "q",
                            "references": [Reference(source=s, content=c) for s, c in refs],
                            "response": response, **extra}
    if expected is not None:
        data["expected_sources"] = list(expected)
    return Case(**data)


def seed_example_1() -> Case:
    return case([("Remote Work Policy.pdf", REMOTE_REQUEST)],
                [("Remote Work Policy.pdf", REMOTE_REQUEST)], id="seed-1")


def seed_example_2() -> Case:
    return case([("Employment Contract.pdf", RESIGNATION)],
                [("Employment Contract.pdf", PROBATION)], id="seed-2")


def seed_example_3() -> Case:
    return case(
        [("Data Security Policy.pdf", VPN), ("Remote Work Policy.pdf", ENCRYPTION),
         ("Acceptable Use Policy.pdf", PERSONAL_DEVICES)],
        [("Data Security Policy.pdf", VPN), ("Remote Work Policy.pdf", REMOTE_REQUEST),
         ("IT Compliance Handbook.pdf", TRAINING)],
        id="seed-3")


@dataclass
class TableMatcher(BaseMatcher):
    """A matcher whose similarities come from a table; unknown pairs get `default`.

    Records every batch it is asked for, so tests can check what the engine requested.
    """

    table: dict[TextPair, Similarity] = field(default_factory=dict)
    default: Similarity = 0.0
    calls: list[list[TextPair]] = field(default_factory=list)

    def similarities(self, pairs: Sequence[TextPair]) -> list[Similarity]:
        self.calls.append(list(pairs))
        return [self.table.get(p, self.default) for p in pairs]


def failing(message: str = "API down") -> PairError:
    return PairError(message)


def true_in_forked_child(check: Callable[[], bool]) -> bool:
    """What `check` returns in a child forked from this process (a helper object inherited by
    the fork must not be used there)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, b"1" if check() else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(write)
    try:
        return os.read(read, 1) == b"1"
    finally:
        os.close(read)


def wait_until(check: Callable[[], object], what: str, proc: subprocess.Popen[str] | None = None,
               bound: float = WAIT_BOUND) -> None:
    """Return as soon as `check()` is true; fail saying `what` did not happen after `bound`
    seconds, or at once when `proc` (the process that should bring it) has ended."""
    deadline = time.monotonic() + bound
    while not check():
        if proc is not None and proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"{what}: the process ended ({proc.returncode}) before; "
                                 f"its stderr ends: {(err or '')[-3000:]}")
        assert time.monotonic() < deadline, f"{what}: not after {bound:g} s"
        time.sleep(0.05)  # poll the state; the bound above is what limits the wait


def score_batch(batch: Sequence[tuple[Case, Response | None]], matcher: Matcher,
                options: ScoringOptions) -> BatchResults:
    """Score a batch at its options' threshold alone."""
    return score_batch_thresholds(batch, matcher, options, [options.threshold])[0]


def read_decisions(folder: Path) -> list[dict[str, Any]]:
    """A result folder's per-case decisions (``cases.parquet`` with the case ids), as
    :func:`runner.results.iter_decisions` reads them."""
    return list(iter_decisions(folder))


def read_passages(folder: Path) -> list[dict[str, Any]]:
    """A job folder's ``passages.parquet`` rows, as :mod:`runner.results` reads them."""
    return list(iter_rows(folder / "passages.parquet"))


def table_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of a results table, undecoded (two files are compared by their rows)."""
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()

"""Scoring in forked worker processes (runner/scoring/parallel.py, ``scoring.workers``)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from runner.data.models import Case, Citation, Reference, Response
from runner.evaluate import count_pairs
from runner.matchers import NgramMatcher, SubstringMatcher, ngram_numba
from runner.matchers.base import BaseMatcher, Matcher, for_workload
from runner.results import CASES_FILE, PASSAGES_FILE
from runner.scoring.parallel import resolve_workers
from tests.conftest import read_json


def _for_workers(matcher: Matcher, cases: list[Case], responses: list[Response | None],
                 workers: int) -> Matcher:
    """The matcher as each of `workers` processes runs it
    (runner.scoring.parallel.score_parallel)."""
    return for_workload(matcher, count_pairs(cases, responses) // workers, workers)


@dataclass
class _ApiLike(BaseMatcher):
    """Stands for an API matcher: not Local (the default), so never forked."""


def test_only_local_matchers_on_big_enough_runs_go_parallel() -> None:
    cpus = min(os.cpu_count() or 1, 8)
    assert resolve_workers(None, NgramMatcher(), 1_999) == 1
    assert resolve_workers(None, NgramMatcher(), 2_000) == cpus
    assert resolve_workers(0, SubstringMatcher(), 50_000) == cpus
    # An explicit number is taken as it is, at most one worker per case.
    assert resolve_workers(2, NgramMatcher(), 30) == 2
    assert resolve_workers(4, NgramMatcher(), 3) == 3
    assert resolve_workers(1, NgramMatcher(), 50_000) == 1
    # API matchers keep their cache and usage counters in one process.
    assert resolve_workers(4, _ApiLike(), 50_000) == 1
    assert resolve_workers(None, _ApiLike(), 50_000) == 1


def _cases(n_cases: int, n_refs: int, n_cits: int) -> tuple[list[Case], list[Response | None]]:
    cases = [Case(id=str(i), query="q",
                  references=[Reference(source="s", content="r")] * n_refs)
             for i in range(n_cases)]
    responses: list[Response | None] = [
        Response(citations=[Citation(source="s", content="c")] * n_cits)] * n_cases
    return cases, responses


def test_worker_processes_run_the_matcher_on_one_thread() -> None:
    # The processes already take every core: a matcher with a `threads` setting gets 1 there.
    m = NgramMatcher(n=2, threads=0, kernel="numpy")
    cases, responses = _cases(4, 3, 2)
    single = _for_workers(m, cases, responses, 2)
    assert (single.n, single.threads) == (2, 1)  # type: ignore[attr-defined]
    assert _for_workers(m, cases, responses, 1) is m  # one process: as it is
    assert m.threads == 0  # the run's own matcher is unchanged
    other = SubstringMatcher()
    assert _for_workers(other, cases, responses, 2) is other  # no `threads` setting: as it is


@pytest.mark.skipif(not ngram_numba.available(), reason="numba (the `fast` extra) not installed")
def test_workers_decide_the_auto_kernel_on_their_share_of_the_pairs() -> None:
    # 30 x 50 = 1,500 pairs per case; two workers share them. 200 cases: exactly the
    # threshold each.
    n_cases = 2 * ngram_numba.AUTO_MIN_PAIRS // 1_500
    cases, responses = _cases(n_cases, 30, 50)
    assert _for_workers(NgramMatcher(), cases, responses, 2).kernel == "numba"  # type: ignore[attr-defined]
    responses[0] = None  # no response, no pairs: each share falls below the threshold
    below = _for_workers(NgramMatcher(), cases, responses, 2).kernel  # type: ignore[attr-defined]
    assert below == ("numba" if ngram_numba.loaded() else "numpy")
    # A kernel set in the config is kept.
    assert _for_workers(NgramMatcher(kernel="numpy"), cases, responses, 2).kernel == "numpy"  # type: ignore[attr-defined]


def test_two_workers_write_the_same_results_as_one(run_job_in, tmp_path: Path) -> None:
    runs = {}
    for workers in (1, 2):
        (out,) = run_job_in("model=precomputed", "matcher=ngram", "scoring.threshold=[0.3,0.5]",
                            f"scoring.workers={workers}", out=tmp_path / f"w{workers}")[:1]
        runs[workers] = out.folder.parent
    for name in ("t0.3", "t0.5"):
        one, two = (read_json(runs[w] / name / "metrics.json") for w in (1, 2))
        assert (one["execution"]["workers"], two["execution"]["workers"]) == (1, 2)
        assert one["n_cases"] == two["n_cases"] == 30
        assert one["n_scored"] == two["n_scored"] == 30
        for key in ("metrics", "ci", "micro", "labels", "counts", "n_scored", "n_errors"):
            assert one[key] == two[key], key
        # Cases come back in case order, byte for byte as one process writes them.
        assert ((runs[1] / name / CASES_FILE).read_bytes()
                == (runs[2] / name / CASES_FILE).read_bytes())
    assert (runs[1] / PASSAGES_FILE).read_bytes() == (runs[2] / PASSAGES_FILE).read_bytes()


def test_forked_workers_find_pandas_imported_by_their_parent(tmp_path: Path) -> None:
    """pyarrow imports pandas (0.1 s) at the first array it makes from a list: the job imports
    it once before it forks, else every worker of every batch would (20 times at 100,000)."""
    hook = ("import os, sys; parent = os.getpid(); sys.addaudithook(lambda event, args: event =="
            " 'import' and args[0] == 'pandas' and print('pandas', os.getpid() == parent, "
            "flush=True)); from runner.cli import main; main()")
    out = subprocess.run([sys.executable, "-c", hook, "model=precomputed", "matcher=ngram",
                          "scoring.workers=2", "tracking=none", "report=none", "progress=false",
                          f"output_root={tmp_path}", f"cache.dir={tmp_path / 'cache'}"],
                         capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert [line for line in out.splitlines() if line.startswith("pandas")] == ["pandas True"]
    (job,) = (tmp_path / "runs").iterdir()
    assert read_json(job / "metrics.json")["execution"]["workers"] == 2

"""Loading beside scoring (runner/pipeline.py ``_Batches``), the collector kept off the loaded
cases (``gc.freeze``) and the word table built before the scoring workers fork."""

from __future__ import annotations

import gc
import json
import multiprocessing
import subprocess
import sys
import threading
from pathlib import Path

from runner.matchers import NgramMatcher
from runner.matchers.text import word_table
from runner.scoring.parallel import _worker_start
from tests.conftest import only_run_dir, read_json, run_cli
from tests.helpers import read_decisions, read_passages

_GOOD = {"query": "q", "references": [{"source": "a", "content": "the cat sat on the mat"}],
         "citations": [{"source": "a", "content": "the cat sat on a mat"}], "answer": "x"}


def _loading_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "ragcite-load"]


def test_a_bad_line_in_a_later_batch_is_one_located_line_and_no_result(tmp_path: Path) -> None:
    # Batches of 3 scored by two forked workers: line 8 is read while batch 2 is scored (the
    # third batch loads beside it), and reported where that batch would be handed out.
    lines = [json.dumps({"id": str(i), **_GOOD}) for i in range(1, 8)] + ['{"id": "8"}']
    (tmp_path / "c.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = run_cli(["tracking=none", "report=none", "progress=false", "dataset=file",
                    "dataset.path=c.jsonl", "model=precomputed", "matcher=ngram",
                    "scoring.batch_size=3", "scoring.workers=2"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ragcite: error: ")]
    assert errors == ["ragcite: error: c.jsonl, line 8, field 'query': required field is "
                      "missing"]
    assert "Traceback" not in proc.stderr
    run = only_run_dir(tmp_path / "outputs")
    # Nothing looks complete: no result's figures, no job.json.
    assert sorted(p.name for p in run.rglob("*") if p.name in ("metrics.json", "job.json")) == []


def test_overlapped_batches_give_the_same_results_and_leave_nothing(run_job_in,
                                                                    tmp_path: Path) -> None:
    frozen = gc.get_freeze_count()
    runs = {}
    for size in (7, 10_000):  # 30 demo cases: 5 batches loaded beside the scoring, or 1
        (out,) = run_job_in("model=precomputed", "matcher=ngram", "scoring.workers=2",
                            f"scoring.batch_size={size}", out=tmp_path / f"b{size}")
        runs[size] = out.folder
        # No loading thread outlives the job, and the collector sees everything again.
        assert _loading_threads() == []
        assert gc.get_freeze_count() == frozen
        assert gc.isenabled()
    small, whole = (read_json(runs[s] / "metrics.json") for s in (7, 10_000))
    assert small["n_cases"] == whole["n_cases"] == 30
    assert small["execution"]["workers"] == whole["execution"]["workers"] == 2
    for key in ("metrics", "ci", "micro", "labels", "counts", "n_scored", "n_errors"):
        assert small[key] == whole[key], key
    for read in (read_passages, read_decisions):  # every case's record, in order
        assert read(runs[7]) == read(runs[10_000])


def _child_word_table_misses(_: int) -> int:
    before = word_table.cache_info().misses
    word_table()
    return word_table.cache_info().misses - before


def _child_collects(_: int) -> bool:
    return gc.isenabled()


def test_the_word_table_is_built_before_the_workers_fork() -> None:
    word_table.cache_clear()
    NgramMatcher(kernel="numpy").for_workload(1_000, processes=2)  # the parent, before forking
    assert word_table.cache_info().currsize == 1
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.map(_child_word_table_misses, [0]) == [0]  # inherited: not built again


def test_a_worker_keeps_the_collector_off() -> None:
    assert gc.isenabled()
    with multiprocessing.get_context("fork").Pool(1, _worker_start) as pool:
        assert pool.map(_child_collects, [0]) == [False]
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.map(_child_collects, [0]) == [True]  # as inherited, without it


def test_the_process_ends_with_everything_frozen(tmp_path: Path) -> None:
    # The interpreter's last collections skip what is frozen: at exit, every loaded module.
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "1", **_GOOD}) + "\n", encoding="utf-8")
    code = ("import atexit, gc, sys\n"
            "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0))\n"
            "from runner.cli import main\n"
            "sys.argv = ['ragcite', *sys.argv[1:]]\n"
            "main()\n")
    proc = subprocess.run([sys.executable, "-c", code, "tracking=none", "report=none",
                           "progress=false", "dataset=file", "dataset.path=c.jsonl",
                           "model=precomputed"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "frozen at exit: True"

"""The on-disk cache shared by the jobs of a sweep (runner/api/cache.py)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from runner.api.cache import DiskCache
from tests.helpers import WAIT_BOUND


def _open_and_write(directory: str, n: int, barrier: object, errors: object) -> None:
    try:
        barrier.wait()  # type: ignore[attr-defined]
        cache = DiskCache(directory)
        cache.put_many("sims", [(f"k{n}", n)])
        cache.close()
    except Exception as exc:  # reported to the parent, which asserts there is none
        errors.put(f"{type(exc).__name__}: {exc}")  # type: ignore[attr-defined]


def test_many_processes_open_a_new_cache_at_once(tmp_path: Path) -> None:
    # Parallel sweep jobs (joblib, Submitit) open the same new cache at the same moment. Its
    # set-up (WAL mode, the table) is serialised, so none fails with "database is locked"
    # and every job's value is stored.
    ctx = multiprocessing.get_context("fork")
    for attempt in range(5):
        directory = str(tmp_path / f"cache{attempt}")
        barrier, errors = ctx.Barrier(8), ctx.Queue()
        procs = [ctx.Process(target=_open_and_write, args=(directory, n, barrier, errors))
                 for n in range(8)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(WAIT_BOUND)
        found = []
        while not errors.empty():
            found.append(errors.get())
        assert found == []
        assert [p.exitcode for p in procs] == [0] * 8
        cache = DiskCache(directory)
        assert cache.get_many("sims", [f"k{n}" for n in range(8)]) == {
            f"k{n}": n for n in range(8)}
        cache.close()

"""Benchmark the per-case tables: bytes each threshold adds, and ``runner.read_results`` time.

Run from the repository root::

    .venv/bin/python bench/bench_frames.py [--n 100000] [--seed 0] [--repeat 3]

Steps: ``bench/synth.py`` generates `n` cases (made once, in ``bench/results/data/``); one
``ragcite`` child process scores them at thresholds 0.3 and 0.5 (``model=precomputed
matcher=ngram tracking=none report=none``) into a temporary folder. Then:

* ``bytes_per_case``: each threshold's ``cases.parquet`` size over `n` (what an extra threshold
  writes; target of issue 25: at most 64), and ``passages.parquet`` (once per job) over `n`;
* ``read_results_s``: ``runner.read_results`` of the job folder (both thresholds: 2 n rows) and
  of one result folder (n rows), each in a fresh child process, the call alone timed (imports
  excluded), the best of `repeat` (target: under 1 s at 100,000 cases).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TIMED = ("import sys, time, runner; t0 = time.perf_counter(); "
         "frame = runner.read_results(sys.argv[1]); "
         "print(time.perf_counter() - t0, len(frame))")


def read_time(folder: Path, repeat: int) -> tuple[float, int]:
    """The best time of `repeat` fresh processes reading `folder`, and the rows read."""
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", TIMED, str(folder)], check=True,
                             capture_output=True, text=True).stdout.split()
        runs.append((float(out[0]), int(out[1])))
    return min(runs)


def main() -> int:
    from synth import write_jsonl

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = HERE / "results" / "data" / f"synth-n{args.n}-s{args.seed}.jsonl"
    if not data.is_file():
        data.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(data, args.n, seed=args.seed)
    print(f"python {platform.python_version()}, {platform.machine()}, started "
          f"{time.strftime('%H:%M:%S')}")
    with tempfile.TemporaryDirectory(prefix="ragcite-frames-") as tmp:
        job = Path(tmp) / "job"
        t0 = time.perf_counter()
        subprocess.run([str(Path(sys.executable).with_name("ragcite")), "dataset=file",
                        f"dataset.path={data}", "model=precomputed", "matcher=ngram",
                        "tracking=none", "report=none", "progress=false",
                        "scoring.threshold=[0.3,0.5]", f"hydra.run.dir={job}"],
                       check=True, capture_output=True, cwd=tmp)
        run_s = time.perf_counter() - t0
        figures = {
            "n": args.n, "run_s": round(run_s, 2),
            "cases_bytes_per_case": [round((job / t / "cases.parquet").stat().st_size / args.n,
                                           2) for t in ("t0.3", "t0.5")],
            "passages_bytes_per_case": round((job / "passages.parquet").stat().st_size
                                             / args.n, 1),
            "read_results_job_s": read_time(job, args.repeat),
            "read_results_one_s": read_time(job / "t0.5", args.repeat)}
    print(json.dumps(figures, indent=2))
    print(f"finished {time.strftime('%H:%M:%S')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Per-row cost of ragcite's metrics in ``mlflow.genai.evaluate`` against ragcite's batch path.

Run from the repository root::

    .venv/bin/python bench/bench_genai.py [--rows 20] [--workers unset 1] [--batch 10000]
                                          [--json out.json]

The rows are synthetic cases from ``bench/synth.py`` (3 references and 3 stored citations of
~40 words each) in the row shape of ``runner.tracking.genai`` (``inputs``, ``outputs``,
``expectations``). Measured, one after another in this process:

* ``mlflow.genai.evaluate``: the six scorers of ``runner.tracking.genai.scorers()`` on `rows`
  rows, once per ``MLFLOW_GENAI_EVAL_MAX_WORKERS`` value of ``--workers`` (``unset``: MLflow
  sizes its thread pools from its rate limits, 40 threads for the rows and up to 240 for six
  scorers), each on a new sqlite store in a temporary folder (MLflow logs a trace and six
  assessments per row); the scorers' own share: the same rows scored by calling the scorers
  directly;
* ``runner.evaluate``: the batch path on `batch` cases (the same generator, ngram matcher,
  default threshold), in one call.

Each figure is seconds per row (milliseconds where small). No network is used: the store is a
local file and MLflow's telemetry is turned off.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
os.environ.pop("MLFLOW_TRACKING_URI", None)

from synth import generate_cases  # noqa: E402


def _row(case: dict[str, Any]) -> dict[str, Any]:
    """A synthetic case as a row of ``mlflow.genai.evaluate``."""
    return {"inputs": {"id": case["id"], "query": case["query"]},
            "outputs": case["response"],
            "expectations": {"references": case["references"],
                             "expected_sources": case["expected_sources"]}}


def measure(rows: int, workers: list[str], batch: int) -> dict[str, Any]:
    """The figures, in seconds per row."""
    import mlflow
    import pandas as pd

    import runner
    from runner.tracking.genai import scorers

    data = [_row(c) for c in generate_cases(rows, seed=0)]
    made = scorers()
    t0 = time.perf_counter()
    for row in data:
        for one in made:
            one(**row)
    figures: dict[str, Any] = {"rows": rows, "batch": batch,
                               "scorers_direct_s_per_row": (time.perf_counter() - t0) / rows}
    for n in workers:
        os.environ.pop("MLFLOW_GENAI_EVAL_MAX_WORKERS", None)
        if n != "unset":
            os.environ["MLFLOW_GENAI_EVAL_MAX_WORKERS"] = n
        with tempfile.TemporaryDirectory() as tmp:
            mlflow.set_tracking_uri(f"sqlite:///{Path(tmp) / 'mlflow.db'}")
            exp = mlflow.MlflowClient().create_experiment("bench", Path(tmp, "art").as_uri())
            with mlflow.start_run(experiment_id=exp):
                t0 = time.perf_counter()
                mlflow.genai.evaluate(data=pd.DataFrame(data), scorers=made)
                figures[f"genai_evaluate_workers{n}_s_per_row"] = (time.perf_counter() - t0) / rows
    cases = list(generate_cases(batch, seed=0))
    t0 = time.perf_counter()
    runner.evaluate(cases)
    figures["batch_s_per_row"] = (time.perf_counter() - t0) / batch
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20, help="rows for mlflow.genai.evaluate")
    parser.add_argument("--workers", nargs="+", default=["unset", "1"],
                        help="MLFLOW_GENAI_EVAL_MAX_WORKERS values to measure (unset: MLflow's "
                             "own pool sizes)")
    parser.add_argument("--batch", type=int, default=10_000, help="cases for runner.evaluate")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    start = dt.datetime.now(dt.timezone.utc)
    figures = measure(args.rows, args.workers, args.batch)
    figures.update(python=platform.python_version(), cpus=os.cpu_count(),
                   started=start.isoformat(timespec="seconds"), load=os.getloadavg())
    batched = figures["batch_s_per_row"]
    print(f"python {figures['python']}, {figures['cpus']} CPUs, started {figures['started']} "
          f"(load {figures['load'][0]:.2f})")
    for n in args.workers:
        per_row = figures[f"genai_evaluate_workers{n}_s_per_row"]
        print(f"mlflow.genai.evaluate, {args.rows} rows, six scorers, "
              f"MLFLOW_GENAI_EVAL_MAX_WORKERS={n}: {per_row:.3f} s a row "
              f"({per_row / batched:,.0f}x the batch path's)")
    print(f"  the scorers themselves (called directly): "
          f"{figures['scorers_direct_s_per_row'] * 1000:.1f} ms a row")
    print(f"runner.evaluate, {args.batch} cases in one call: {batched * 1000:.3f} ms a row")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

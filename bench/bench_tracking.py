"""What MLflow tracking adds to a run's wall time: `tracking=mlflow` versus `tracking=none`.

Run from the repository root::

    .venv/bin/python bench/bench_tracking.py [--repeats 3] [--sizes demo 10000] [--json out.json]

Scenarios:

* ``demo``: the default ``ragcite`` run (demo dataset, extractive BM25 model, ngram matcher);
* ``<n>``: ``n`` synthetic cases from ``bench/synth.py`` (3 references and 3 stored citations of
  ~40 words each), replayed with ``model=precomputed``, ngram matcher.

Each measurement is the wall time of the real CLI in a fresh child process
(``python -m runner.cli``), including interpreter start-up, with a cold response/similarity
cache (a new ``output_root`` each time) and ``report=none``. ``tracking=mlflow`` is measured on
a warm store (the sqlite database already exists, as it does after a user's first run); the
one-off cost of creating a new store is measured separately (``fresh store``). A second part
times the tracker's own phases in-process on a finished run folder: opening the store
(importing MLflow included), opening the run and logging the params, logging the results
(metrics, artifacts, per-case table, dataset), closing the run.

All outputs go to a temporary folder; the report is printed (and written with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MLFLOW_DISABLE_TELEMETRY": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def _cli(args: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "runner.cli", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"ragcite failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return elapsed


def _scenario_args(name: str, work: Path) -> list[str]:
    base = ["progress=false", "report=none"]
    if name == "demo":
        return base
    n = int(name)
    data = work / f"synth-{n}.jsonl"
    if not data.exists():
        sys.path.insert(0, str(HERE))
        from synth import write_jsonl

        write_jsonl(data, n, seed=0)
    return [*base, "dataset=file", f"dataset.path={data}", "model=precomputed",
            "matcher=ngram"]


_PHASES = """
import json, sys, time
from pathlib import Path
run_dir, store = Path(sys.argv[1]), Path(sys.argv[2])
from runner.tracking.base import make_tracker
cfg = {"tracking": {"_target_": "runner.tracking.mlflow.MlflowTracker",
                    "tracking_uri": f"sqlite:///{store / 'mlflow.db'}",
                    "artifact_location": str(store / "mlartifacts")},
       "experiment": "ragcite", "output_root": str(store)}
out = {}
t = time.perf_counter()
tr = make_tracker(cfg)
tr.check()
out["open store (incl. import)"] = time.perf_counter() - t
t = time.perf_counter()
tr.open(run_dir)
out["open run"] = time.perf_counter() - t
t = time.perf_counter()
tr.log(run_dir)
out["log results"] = time.perf_counter() - t
t = time.perf_counter()
tr.close("FINISHED")
out["close run"] = time.perf_counter() - t
print(json.dumps(out))
"""


def _phases(run_dir: Path, store: Path) -> dict[str, float]:
    """The tracker's phases, timed in a fresh process on a finished run folder."""
    store.mkdir(parents=True, exist_ok=True)
    # Once to create the store, once to measure on the existing store.
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _PHASES, str(run_dir), str(store)],
                              env=_env(), capture_output=True, text=True, check=False,
                              cwd=run_dir)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-3000:])
    phases: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return phases


def bench(name: str, repeats: int, work: Path) -> dict[str, Any]:
    """Wall times of one scenario with and without tracking."""
    args = _scenario_args(name, work)
    store = work / f"store-{name}"
    store.mkdir(exist_ok=True)
    store_args = [f"tracking.tracking_uri=sqlite:///{store / 'mlflow.db'}",
                  f"tracking.artifact_location={store / 'mlartifacts'}"]
    fresh_root = work / f"{name}-fresh"
    fresh = _cli([*args, "tracking=mlflow", f"output_root={fresh_root}"], work)
    none_t: list[float] = []
    mlflow_t: list[float] = []
    for i in range(repeats):  # interleaved, so a load change on the machine hits both
        none_t.append(_cli([*args, "tracking=none", f"output_root={work / f'{name}-n{i}'}"],
                           work))
        mlflow_t.append(_cli([*args, "tracking=mlflow", *store_args,
                              f"output_root={work / f'{name}-m{i}'}"], work))
    run_dir = next((work / f"{name}-n0" / "runs").iterdir())
    n_cases = json.loads((run_dir / "metrics.json").read_text())["n_cases"]
    size_mb = sum(p.stat().st_size for p in run_dir.iterdir() if p.is_file()) / 1e6
    phases = _phases(run_dir, work / f"phases-{name}")
    med_none, med_ml = statistics.median(none_t), statistics.median(mlflow_t)
    return {"scenario": name, "n_cases": n_cases, "run_folder_mb": round(size_mb, 2),
            "none_s": [round(t, 2) for t in none_t], "mlflow_s": [round(t, 2) for t in mlflow_t],
            "median_none_s": round(med_none, 2), "median_mlflow_s": round(med_ml, 2),
            "overhead_s": round(med_ml - med_none, 2),
            "overhead_pct": round(100 * (med_ml - med_none) / med_none, 1),
            "fresh_store_mlflow_s": round(fresh, 2),
            "phases_s": {k: round(v, 3) for k, v in phases.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["demo", "10000"],
                        help="scenarios: 'demo' and/or numbers of synthetic cases")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="ragcite-bench-tracking-") as tmp:
        for name in args.sizes:
            print(f"[{name}] running {args.repeats} x 2 + 1 ...", file=sys.stderr, flush=True)
            results.append(bench(name, args.repeats, Path(tmp)))
    report = {"python": platform.python_version(), "cpus": os.cpu_count(),
              "load_avg_1m": round(os.getloadavg()[0], 2), "results": results}
    for r in results:
        print(f"{r['scenario']:>6}: {r['n_cases']} cases, run folder {r['run_folder_mb']} MB | "
              f"tracking=none {r['median_none_s']:.2f} s, tracking=mlflow "
              f"{r['median_mlflow_s']:.2f} s (median of {len(r['none_s'])}) -> overhead "
              f"{r['overhead_s']:+.2f} s ({r['overhead_pct']:+.1f} %); fresh store "
              f"{r['fresh_store_mlflow_s']:.2f} s")
        print("        phases: " + ", ".join(f"{k} {v:.3f} s" for k, v in r["phases_s"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""End to end, this checkout against another one, in one interleaved run.

Run from the repository root::

    .venv/bin/python bench/bench_ab.py --against old=/tmp/old/.venv/bin/ragcite \\
        [main=/work/main/.venv/bin/ragcite ...] [--against-none] [--sizes 10 100000] \\
        [--repeat 2] [--seed 0] [--work-dir DIR] [--json out.json]

Each round runs, one after the other on the same synthetic file (``bench_scoring.data_file``):
this checkout's ``ragcite`` with the defaults (MLflow on a warm sqlite store, the HTML report),
the same with ``tracking=none report=none``, and each ``--against`` command (``NAME=PATH`` of
another checkout's ``ragcite`` script) with the defaults (and with ``tracking=none report=none``
given ``--against-none``). Every run is the overrides of
``suite.py``'s e2e part, its own empty cache, in a child process reaped with ``os.wait4``:
its wall time, its CPU time (user + system of it and the processes it reaped: the scoring
workers), the cores it kept busy (CPU over wall) and its peak RSS. Ratios are of the fastest of
each kind in this run, so the machine's drift falls on all alike. Each checkout has its own
``output_root`` (its store made by a 1-case run first, not measured).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scoring import data_file  # noqa: E402

NONE = ["tracking=none", "report=none"]


def run_once(command: str, root: Path, data: Path, extra: list[str]) -> dict[str, Any]:
    """One ``ragcite`` run: wall and CPU seconds, cores busy, peak RSS (MiB)."""
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    for key in ("MLFLOW_TRACKING_URI", "PYTHONPATH"):
        env.pop(key, None)
    cache = tempfile.mkdtemp(prefix="cache-", dir=root)
    args = [command, "dataset=file", f"dataset.path={data}", "model=precomputed",
            "matcher=ngram", "progress=false", f"output_root={root}", f"cache.dir={cache}", *extra]
    t0 = time.perf_counter()
    with (root / "last.log").open("wb") as log:
        proc = subprocess.Popen(args, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"{command} {' '.join(extra)} failed ({proc.returncode}): see "
                         f"{root / 'last.log'}")
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "cores": round(cpu / wall, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024), "at": time.strftime("%H:%M:%S")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", nargs="+", required=True,
                        help="NAME=PATH of another checkout's ragcite script")
    parser.add_argument("--against-none", action="store_true",
                        help="also run the other checkout with tracking=none report=none")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100_000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    opts = parser.parse_args()
    this = str(Path(sys.executable).parent / "ragcite")
    work = opts.work_dir or Path(tempfile.mkdtemp(prefix="ragcite-ab-"))
    others = dict(a.split("=", 1) for a in opts.against)
    kinds = {"this": (this, "this", []), "this none": (this, "this", NONE)}
    for name, command in others.items():
        kinds[name] = (command, name, [])
        if opts.against_none:
            kinds[f"{name} none"] = (command, name, NONE)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, start "
          f"{time.strftime('%H:%M:%S')}, load {os.getloadavg()[0]:.2f}; against: {others}")
    for side, command in {"this": this, **others}.items():  # each store made first
        run_once(command, work / side, data_file(1, opts.seed), [])
    out: dict[str, Any] = {"sizes": {}, "against": opts.against, "started": time.ctime()}
    for n in opts.sizes:
        data = data_file(n, opts.seed)
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
        for _ in range(opts.repeat):  # interleaved rounds
            for kind, (command, side, extra) in kinds.items():
                runs[kind].append(run_once(command, work / side, data, extra))
        best = {k: min(v, key=lambda r: r["wall_s"]) for k, v in runs.items()}
        print(f"\n{n:,} cases (best of {opts.repeat})")
        print(f"{'run':<12}{'wall s':>8}{'CPU s':>8}{'cores':>7}{'RSS MB':>8}  at")
        for kind, r in best.items():
            every = ", ".join(f"{x['wall_s']:.2f}" for x in runs[kind])
            print(f"{kind:<12}{r['wall_s']:>8.2f}{r['cpu_s']:>8.2f}{r['cores']:>7.2f}"
                  f"{r['peak_rss_mb']:>8}  {r['at']}  (all: {every})")
        ratios = {f"this / {name}": best["this"]["wall_s"] / best[name]["wall_s"]
                  for name in others}
        ratios["this / this none"] = best["this"]["wall_s"] / best["this none"]["wall_s"]
        for name, value in ratios.items():
            print(f"{name}: {value:.2f}x")
        out["sizes"][str(n)] = {"runs": runs, "best": best,
                                "ratios": {k: round(v, 3) for k, v in ratios.items()}}
    print(f"\nend {time.strftime('%H:%M:%S')}, load {os.getloadavg()[0]:.2f}")
    if opts.json:
        opts.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    if not opts.work_dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

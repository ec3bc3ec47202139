"""Benchmark loading and scoring of synthetic cases (see bench/README.md).

Run from the repository root::

    .venv/bin/python bench/bench_scoring.py [--sizes 10000 100000] [--matchers substring ngram]

Every measurement runs in a fresh child process, so its peak RSS is its own. Stages:

* ``load``: ``runner.load_cases`` of the JSONL file (parsing and validation);
* ``similarity``: ``matcher.similarities`` for every (reference, citation) pair with both
  passages non-blank, in batches of 10,000 cases (as the scoring loop sends them);
* ``evaluate``: ``runner.evaluate(cases, matcher=...)`` on loaded cases, bootstrap at its
  default (similarities, predicate, metrics, labels, explanations and aggregation);
* ``evaluate_5t``: ``runner.evaluate(cases, matcher=..., thresholds=[0.1, 0.3, 0.5, 0.7,
  0.9])``: five thresholds decided from one pass (the similarities computed once).

A matcher is a config name, optionally with the `ngram` kernel: ``ngram:numpy``,
``ngram:numba`` (needs the ``fast`` extra); plain ``ngram`` is ``kernel=auto``.

The data are generated once by ``bench/synth.py`` into ``bench/results/data/`` (git-ignored).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "results" / "data"
STAGES = ("load", "similarity", "evaluate", "evaluate_5t")
THRESHOLDS_5 = (0.1, 0.3, 0.5, 0.7, 0.9)
"""The thresholds of the ``evaluate_5t`` stage (those of ``conf/sweep/thresholds.yaml``)."""


def _peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def _current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except OSError:
        return float("nan")


def data_file(n: int, seed: int, profile: str = "standard") -> Path:
    """The synthetic dataset of `n` cases, made if missing.

    Args:
        n: Cases.
        seed: The generator's seed.
        profile: ``standard`` (3 refs x 3 citations of ~40 words: ``synth-n<N>-s<seed>.jsonl``)
            or ``small`` (1 ref x 1 citation of ~8 words: ``synth-small-n<N>-s<seed>.jsonl``).
    """
    prefix = "synth" if profile == "standard" else f"synth-{profile}"
    path = DATA_DIR / f"{prefix}-n{n}-s{seed}.jsonl"
    if not path.exists():
        sys.path.insert(0, str(HERE))
        from synth import PROFILES, write_jsonl

        DATA_DIR.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        t0 = time.perf_counter()
        write_jsonl(tmp, n, seed=seed, **PROFILES[profile])
        tmp.replace(path)
        print(f"generated {path} ({n} cases) in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)
    return path


def run_child(stage: str, matcher: str, path: str) -> dict[str, Any]:
    """One measurement, in this process. Returns seconds, case count and memory figures."""
    import runner
    from runner.evaluate import matcher_from_name

    if stage == "load":
        gc.collect()
        before = _current_rss_mb()
        t0 = time.perf_counter()
        cases = runner.load_cases(path)
        seconds = time.perf_counter() - t0
        return {"seconds": seconds, "n": len(cases), "rss_before_mb": before,
                "peak_rss_mb": _peak_rss_mb()}

    cases = runner.load_cases(path)
    gc.collect()
    before = _current_rss_mb()
    name, _, kernel = matcher.partition(":")  # "ngram:numba": the ngram matcher's kernel
    m = matcher_from_name(name, **({"kernel": kernel} if kernel else {}))
    if stage == "similarity":
        batches = []
        for start in range(0, len(cases), 10_000):
            batch = []
            for case in cases[start:start + 10_000]:
                cits = case.response.citations if case.response is not None else []
                for ref in case.references:
                    if ref.content.strip():
                        batch.extend((ref.content, c.content) for c in cits if c.content.strip())
            batches.append(batch)
        n_pairs = sum(len(b) for b in batches)
        t0 = time.perf_counter()
        for batch in batches:
            m.similarities(batch)
        seconds = time.perf_counter() - t0
        return {"seconds": seconds, "n": len(cases), "pairs": n_pairs, "rss_before_mb": before,
                "peak_rss_mb": _peak_rss_mb()}

    t0 = time.perf_counter()
    if stage == "evaluate_5t":
        results = runner.evaluate(cases, matcher=m, thresholds=list(THRESHOLDS_5))
        seconds = time.perf_counter() - t0
        return {"seconds": seconds, "n": results[THRESHOLDS_5[0]].n_cases,
                "rss_before_mb": before, "peak_rss_mb": _peak_rss_mb(),
                "thresholds": list(THRESHOLDS_5),
                "context_f1": [r.metrics["context_f1"] for r in results.values()]}
    result = runner.evaluate(cases, matcher=m)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "n": result.n_cases, "rss_before_mb": before,
            "peak_rss_mb": _peak_rss_mb(),
            "context_f1": result.metrics["context_f1"]}


def measure(stage: str, matcher: str, path: Path, repeat: int) -> dict[str, Any]:
    """Best of `repeat` runs of one measurement, each in a fresh child process."""
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", stage, matcher,
             str(path)],
            check=True, capture_output=True, text=True)
        rec = json.loads(out.stdout.strip().splitlines()[-1])
        if best is None or rec["seconds"] < best["seconds"]:
            best = rec
    assert best is not None
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark ragcite loading and scoring.")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--matchers", nargs="+", default=["substring", "ngram"])
    parser.add_argument("--stages", nargs="+", default=list(STAGES), choices=STAGES)
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument("--child", nargs=3, metavar=("STAGE", "MATCHER", "PATH"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        print(json.dumps(run_child(*args.child)))
        return 0

    print(f"# ragcite scoring benchmark: Python {platform.python_version()}, "
          f"{os.cpu_count()} CPU(s), 3 refs x 3 citations of ~40 words per case, single process")
    header = (f"{'stage':<11} {'matcher':<10} {'N':>8} {'seconds':>8} {'cases/s':>9} "
              f"{'RSS before MB':>13} {'peak RSS MB':>11}")
    print(header)
    print("-" * len(header))
    rows = []
    for n in args.sizes:
        path = data_file(n, args.seed)
        for stage in args.stages:
            for matcher in (["-"] if stage == "load" else args.matchers):
                rec = measure(stage, matcher if matcher != "-" else "ngram", path, args.repeat)
                rec.update(stage=stage, matcher=matcher, size=n)
                rows.append(rec)
                print(f"{stage:<11} {matcher:<10} {n:>8} {rec['seconds']:>8.2f} "
                      f"{rec['n'] / rec['seconds']:>9,.0f} {rec['rss_before_mb']:>13.0f} "
                      f"{rec['peak_rss_mb']:>11.0f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

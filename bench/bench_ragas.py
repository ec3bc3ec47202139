"""Side by side: ragcite's `ngram` scoring against RAGAS's non-LLM context metrics, same cases.

RAGAS is never a dependency of ragcite: run this in a separate benchmark environment::

    python3 -m venv /tmp/ragas-venv
    /tmp/ragas-venv/bin/pip install ragas==0.4.3 langchain-community==0.4.1 rapidfuzz
    /tmp/ragas-venv/bin/pip install -e .            # ragcite itself, from the repository root
    /tmp/ragas-venv/bin/python bench/bench_ragas.py --sizes 1000 10000

(ragas 0.4.3 imports only with langchain-community 0.4.1, and its string similarity needs
rapidfuzz, which it does not install. The script sets ``RAGAS_DO_NOT_TRACK=true`` before
importing RAGAS, which otherwise sends usage data.)

The cases come from ``bench/synth.py`` (``generate_cases(n, seed)``: 3 references and 3
citations of ~40 words per case, citations exact, paraphrased, truncated, elided, from the wrong
passage or document, or empty). Each side scores all of them in this one process:

* **ragcite**: ``runner.evaluate(cases, matcher=NgramMatcher(threads=1))``, i.e. its defaults
  on one thread, as RAGAS runs (the default ``threads=0`` would use every core): the six metrics
  (context recall/precision/F1 over passages, source recall/precision/F1 over documents), the
  per-case labels and explanations, and the run-level means, micro figures and bootstrap
  confidence intervals (1000 resamples) — more work than RAGAS does.
* **RAGAS**: per case one ``SingleTurnSample`` (citations as ``retrieved_contexts`` in their
  order, references as ``reference_contexts``, cited sources as ``retrieved_context_ids``, expected
  sources as ``reference_context_ids``) scored by ``NonLLMContextRecall``,
  ``NonLLMContextPrecisionWithReference``, ``IDBasedContextRecall`` and
  ``IDBasedContextPrecision`` through their public ``await metric.single_turn_ascore(sample)``,
  awaited one after another in one event loop (they are CPU-bound: running them concurrently
  would not be faster). ``ragas.evaluate`` is slower still (executor, progress, result frame), so
  this is RAGAS at its fastest public API. (Calling the metrics' internal ``_single_turn_ascore``
  instead was measured too, and is no faster: the inner string-similarity calls still go through
  the public API.) Each metric's own share is printed as "cases/s alone".

"Prepare" is building each side's inputs from the same dicts (ragcite ``Case`` models, RAGAS
``SingleTurnSample``); "score" is the scoring itself; throughput is cases per second of score
time, and of prepare + score. The headline ratio is ragcite's score throughput over RAGAS's.
The sides take turns ``--repeat`` times (default 3) and each keeps its fastest round.

Where the semantics differ (so the figures differ too; docs/scale.md has examples):

* Similarity: RAGAS compares the raw strings with 1 − normalised Levenshtein distance
  (characters; case, Unicode form and whitespace count; every character left out is an edit).
  ragcite's ``ngram`` is token 3-gram overlap measured on the *shorter* passage after NFKC and
  case folding, with ``...``/``…`` as boundaries. A truncated or elided quote of a reference
  scores about 1.0 in ragcite and falls with the share left out in RAGAS (0.57 and 0.48 on
  average on these cases); a paraphrase falls fast in ragcite (a changed word breaks three
  3-grams: 0.35 on average) and slowly in RAGAS (0.68).
* Thresholds: both default to 0.5, but RAGAS's recall counts a reference only when its best
  similarity is strictly *above* the threshold (``>``), its precision when at or above (``>=``);
  ragcite uses ``>=`` everywhere.
* Precision: ``NonLLMContextPrecisionWithReference`` is rank-weighted *average precision* over
  the retrieved contexts (mean of precision@k at the relevant ranks), so order matters and
  irrelevant items after the last relevant one cost nothing: verdicts [1, 0, 0] give 1.0, where
  ragcite's ``context_precision`` (share of citations that match a reference) gives 1/3.
* Empty inputs: RAGAS's text metrics raise when a list is empty (``max()`` of nothing) or give
  NaN (no references for recall); ``IDBasedContext*`` give NaN with a warning. ragcite applies its
  ``scoring.zero_division`` policy (``auto``: recall 1.0 with nothing expected; precision 1.0 with
  nothing cited and nothing expected, else 0.0), and a blank reference matches a citation of the
  same source.
* Sources: the ID-based metrics compare ``str(id)`` exactly, as sets; ragcite normalises source
  names (Unicode NFC, surrounding and repeated whitespace, case) before comparing sets.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

os.environ["RAGAS_DO_NOT_TRACK"] = "true"  # before RAGAS is imported: no usage data is sent
os.environ.setdefault("DO_NOT_TRACK", "true")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synth import generate_cases  # noqa: E402  (bench/ is not a package)

RAGAS_METRICS = ("non_llm_context_recall", "non_llm_context_precision_with_reference",
                 "id_based_context_recall", "id_based_context_precision")


def _mean(values: list[float]) -> float | None:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    return sum(finite) / len(finite) if finite else None


def run_ragcite(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Prepare and score `records` with ragcite's ngram matcher (defaults, on one thread)."""
    import runner
    from runner.data.models import Case
    from runner.matchers import NgramMatcher

    gc.collect()
    t0 = time.perf_counter()
    cases = [Case.model_validate(r) for r in records]
    t1 = time.perf_counter()
    result = runner.evaluate(cases, matcher=NgramMatcher(threads=1))
    t2 = time.perf_counter()
    return {"prepare_s": t1 - t0, "score_s": t2 - t1, "errors": 0,
            "means": {k: result.metrics[k] for k in (
                "context_recall", "context_precision", "source_recall", "source_precision")}}


def _ragas_metrics() -> list[Any]:
    with warnings.catch_warnings():
        # ragas 0.4 points to its new `ragas.metrics.collections` API; these classes are the
        # ones with the single-turn scoring API, and still the documented non-LLM metrics.
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import (
            IDBasedContextPrecision,
            IDBasedContextRecall,
            NonLLMContextPrecisionWithReference,
            NonLLMContextRecall,
        )

    return [NonLLMContextRecall(), NonLLMContextPrecisionWithReference(),
            IDBasedContextRecall(), IDBasedContextPrecision()]


def ragas_sample(record: dict[str, Any]) -> Any:
    """The RAGAS sample of one case: citations as retrieved contexts, references as reference."""
    from ragas import SingleTurnSample

    citations = (record.get("response") or {}).get("citations") or []
    references = record.get("references") or []
    expected = record.get("expected_sources")
    if expected is None:
        expected = list(dict.fromkeys(r["source"] for r in references))
    return SingleTurnSample(
        user_input=record.get("query"),
        retrieved_contexts=[c.get("content") or "" for c in citations],
        reference_contexts=[r.get("content") or "" for r in references],
        retrieved_context_ids=[c.get("source") or "" for c in citations],
        reference_context_ids=list(expected))


def run_ragas(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Prepare and score `records` with the four RAGAS metrics, one await after another."""
    metrics = _ragas_metrics()
    gc.collect()
    t0 = time.perf_counter()
    samples = [ragas_sample(r) for r in records]
    t1 = time.perf_counter()

    clock = time.perf_counter

    async def score_all() -> tuple[dict[str, list[float]], dict[str, float], int]:
        scores: dict[str, list[float]] = {m.name: [] for m in metrics}
        seconds = dict.fromkeys(scores, 0.0)
        errors = 0
        for sample in samples:
            for m in metrics:
                start = clock()
                try:
                    value = await m.single_turn_ascore(sample)
                except Exception:  # RAGAS raises on some empty inputs
                    errors += 1
                    value = float("nan")
                seconds[m.name] += clock() - start
                scores[m.name].append(float(value))
        return scores, seconds, errors

    t2 = clock()
    scores, seconds, errors = asyncio.run(score_all())
    t3 = clock()
    return {"prepare_s": t1 - t0, "score_s": t3 - t2, "errors": errors,
            "metric_s": seconds, "means": {k: _mean(v) for k, v in scores.items()}}


def _rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def bench(n: int, seed: int, repeat: int = 1) -> dict[str, Any]:
    """One size: generate the cases once, score them on each side, return the figures.

    With `repeat` > 1 the sides take turns that many times and each keeps its fastest round
    (the usual defence against a busy machine: noise only ever adds time).
    """
    t0 = time.perf_counter()
    records = list(generate_cases(n, seed=seed))
    gen_s = time.perf_counter() - t0
    out: dict[str, Any] = {"n": n, "seed": seed, "repeat": repeat, "generate_s": gen_s,
                           "sides": {}}
    # Warm-up on a few cases, so that neither side pays its imports and first calls here.
    run_ragcite(records[:50])
    run_ragas(records[:50])
    sides: list[tuple[str, Any]] = [("ragcite ngram", lambda: run_ragcite(records)),
                                    ("ragas", lambda: run_ragas(records))]
    for _ in range(max(1, repeat)):
        for name, fn in sides:
            res = fn()
            best = out["sides"].get(name)
            if best is None or res["score_s"] < best["score_s"]:
                out["sides"][name] = res
    for name, _fn in sides:
        res = out["sides"][name]
        res["score_cases_per_s"] = _rate(n, res["score_s"])
        res["total_cases_per_s"] = _rate(n, res["prepare_s"] + res["score_s"])
        print(f"  {name:15s} prepare {res['prepare_s']:8.2f} s  score {res['score_s']:8.2f} s"
              f"  {res['score_cases_per_s']:10,.0f} cases/s scoring"
              f"  {res['total_cases_per_s']:10,.0f} cases/s with prepare"
              f"  errors {res['errors']}", flush=True)
        for metric, seconds in (res.get("metric_s") or {}).items():
            print(f"  {'':15s}   {metric:42s} {_rate(n, seconds):10,.0f} cases/s alone",
                  flush=True)
    ours = out["sides"]["ragcite ngram"]
    theirs = out["sides"]["ragas"]
    out["ratio_score"] = ours["score_cases_per_s"] / theirs["score_cases_per_s"]
    out["ratio_total"] = ours["total_cases_per_s"] / theirs["total_cases_per_s"]
    print(f"  ratio ragcite/ragas: {out['ratio_score']:.1f}x scoring, "
          f"{out['ratio_total']:.1f}x with prepare", flush=True)
    return out


def print_means(result: dict[str, Any]) -> None:
    """The figures each side gives on the same cases (they differ by design: see the header)."""
    ours = result["sides"]["ragcite ngram"]["means"]
    theirs = result["sides"]["ragas"]["means"]
    pairs = [("context recall", "context_recall", "non_llm_context_recall"),
             ("context precision", "context_precision",
              "non_llm_context_precision_with_reference"),
             ("source recall", "source_recall", "id_based_context_recall"),
             ("source precision", "source_precision", "id_based_context_precision")]
    print(f"  means on n={result['n']}:        ragcite  ragas")
    for label, a, b in pairs:
        va, vb = ours.get(a), theirs.get(b)
        fa = f"{va:.3f}" if isinstance(va, float) else "  -  "
        fb = f"{vb:.3f}" if isinstance(vb, float) else "  -  "
        print(f"    {label:20s} {fa:>7s}  {fb:>5s}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark at each size; print figures and optionally write them as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds per size; each side keeps its fastest (default 3)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    try:
        import ragas
    except ImportError:
        print("bench_ragas: RAGAS is not installed in this environment; see the header of "
              f"{Path(__file__).name} for the benchmark environment", file=sys.stderr)
        return 2
    import runner

    print(f"ragcite {runner.__version__}, ragas {ragas.__version__}, Python "
          f"{platform.python_version()}, {os.cpu_count()} CPUs, one process each", flush=True)
    results = []
    for n in args.sizes:
        print(f"n = {n:,} cases (seed {args.seed}, best of {args.repeat}):", flush=True)
        result = bench(n, args.seed, args.repeat)
        print_means(result)
        results.append(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"python": platform.python_version(),
                                         "ragas": ragas.__version__, "results": results},
                                        indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

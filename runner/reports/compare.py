"""Compare two runs: ``ragcite-compare A B`` writes an HTML report and a JSON summary.

A and B are result folders (``metrics.json``, ``cases.jsonl`` and the passages file
``metrics.json`` names, read with :mod:`runner.results`) or MLflow run ids, whose three artifacts
are downloaded with the MLflow client. Cases are paired by id. For each metric the
report shows both macro means, their difference, and a paired bootstrap confidence interval of
the per-case differences B − A (cases scored in both runs, where both values are defined); then
the cases that changed most.

Gates make it a CI step: the command exits 1 when B is significantly worse than A on a gated
metric, i.e. when the upper end of the paired interval of B − A is below ``-max_drop``::

    ragcite-compare outputs/runs/base outputs/runs/candidate --gate context_f1 --gate source_f1
    ragcite-compare RUN_ID_A RUN_ID_B --tracking-uri sqlite:////abs/mlflow.db --max-drop 0.02

Exit status: 0 when every gate passes, 1 when one fails, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from runner.reports.common import METRIC_KEYS, fmt, signed
from runner.reports.compare_load import CompareError, RunData, load_run, tracking_uri_from
from runner.reports.compare_report import render_compare_report
from runner.results import CaseResult
from runner.scoring.aggregate import bootstrap_ci

COMPARE_SCHEMA_VERSION = 1
__all__ = ["CompareError", "RunData", "check_gates", "compare_runs", "load_run", "main",
           "render_compare_report"]


# --- comparing ----------------------------------------------------------------------------------


def _status(a: CaseResult, b: CaseResult) -> str:
    if a.error is None and b.error is None:
        return "scored"
    if a.error is None:
        return "newly failed"
    if b.error is None:
        return "fixed"
    return "failed in both"


def _params(identity: Any) -> str:
    if not isinstance(identity, dict):
        return ""
    return ", ".join(f"{k}={v}" for k, v in identity.items() if k != "class" and v is not None)


def _side_summary(run: RunData) -> dict[str, Any]:
    m = run.metrics
    matcher = m.get("matcher") or {}
    return {
        "label": run.label, "source": run.source, "link": run.link,
        "name": (m.get("run") or {}).get("name") or run.label,
        "started_at": (m.get("run") or {}).get("started_at"),
        "dataset": (m.get("dataset") or {}).get("name"),
        "digest": (m.get("dataset") or {}).get("digest"),
        "model": (m.get("model") or {}).get("name"),
        "model_params": _params((m.get("model") or {}).get("identity")),
        "matcher_params": _params(matcher.get("identity")),
        "matcher": matcher.get("name"), "threshold": (m.get("threshold") or {}).get("value"),
        "n_cases": m.get("n_cases"), "n_scored": m.get("n_scored"),
        "n_errors": m.get("n_errors"), "error_rate": m.get("error_rate"),
        "metrics": {k: (m.get("metrics") or {}).get(k) for k in METRIC_KEYS},
        "ci": {k: (m.get("ci") or {}).get(k) for k in METRIC_KEYS},
    }


def compare_runs(a: RunData, b: RunData, resamples: int = 2000, confidence: float = 0.95,
                 seed: int = 0, top: int = 50) -> dict[str, Any]:
    """Pair the cases of two runs by id and compare every metric (the ``compare.json`` data).

    Per metric: the macro means of both runs (from their ``metrics.json``), their difference,
    and the mean of the per-case differences B − A over the paired cases with its percentile
    bootstrap interval (cases resampled with replacement, seeded). ``verdict`` is ``worse`` when
    the whole interval is below 0, ``better`` when it is above 0.
    """
    common = [cid for cid in a.cases if cid in b.cases]
    paired = [cid for cid in common if a.cases[cid].error is None and b.cases[cid].error is None]
    diffs = np.full((len(paired), len(METRIC_KEYS)), np.nan)
    for row, cid in enumerate(paired):
        ma, mb = a.cases[cid].metrics, b.cases[cid].metrics
        for k, key in enumerate(METRIC_KEYS):
            va, vb = ma.get(key), mb.get(key)
            if va is not None and vb is not None:
                diffs[row, k] = float(vb) - float(va)
    cis = bootstrap_ci(diffs, resamples, confidence, seed)
    metrics: dict[str, Any] = {}
    for k, key in enumerate(METRIC_KEYS):
        col = diffs[:, k]
        col = col[~np.isnan(col)]
        mean_a = (a.metrics.get("metrics") or {}).get(key)
        mean_b = (b.metrics.get("metrics") or {}).get(key)
        ci = cis[k]
        verdict = "undefined"
        if ci is not None:
            verdict = ("worse" if ci[1] < 0 else "better" if ci[0] > 0
                       else "no significant change")
        metrics[key] = {
            "a": mean_a, "b": mean_b,
            "delta": None if mean_a is None or mean_b is None else mean_b - mean_a,
            "n_paired": int(col.size),
            "paired_mean_delta": float(col.mean()) if col.size else None,
            "ci": ci, "verdict": verdict,
        }
    statuses = {cid: _status(a.cases[cid], b.cases[cid]) for cid in common}
    pairing = {
        "n_a": len(a.cases), "n_b": len(b.cases), "n_common": len(common),
        "n_paired_scored": len(paired),
        "only_a": sum(1 for cid in a.cases if cid not in b.cases),
        "only_b": sum(1 for cid in b.cases if cid not in a.cases),
        "newly_failed": sum(1 for s in statuses.values() if s == "newly failed"),
        "fixed": sum(1 for s in statuses.values() if s == "fixed"),
        "failed_in_both": sum(1 for s in statuses.values() if s == "failed in both"),
    }
    side_a, side_b = _side_summary(a), _side_summary(b)
    return {
        "schema_version": COMPARE_SCHEMA_VERSION,
        "a": side_a, "b": side_b,
        "same_dataset": side_a["digest"] is not None and side_a["digest"] == side_b["digest"],
        "pairing": pairing,
        "bootstrap": {"resamples": resamples, "confidence": confidence, "seed": seed,
                      "method": "paired percentile bootstrap over cases"},
        "metrics": metrics,
        "changed": changed_cases(a, b, common, statuses, top),
    }


def changed_cases(a: RunData, b: RunData, common: Sequence[str], statuses: Mapping[str, str],
                  top: int) -> list[dict[str, Any]]:
    """The `top` cases that changed most: a change of status (newly failed, fixed) first, then
    by the summed absolute change of the six metrics; ties in id order."""
    ranked = []
    for cid in common:
        ca, cb = a.cases[cid], b.cases[cid]
        status = statuses[cid]
        delta: dict[str, float | None] = {}
        total = 0.0
        for key in METRIC_KEYS:
            va, vb = ca.metrics.get(key), cb.metrics.get(key)
            if va is None or vb is None:
                delta[key] = None
                continue
            d = float(vb) - float(va)
            delta[key] = d
            total += abs(d)
        status_rank = 0 if status in ("newly failed", "fixed") else 1
        if status_rank == 1 and total == 0.0:
            continue
        ranked.append((status_rank, -total, cid, status, delta))
    ranked.sort(key=lambda r: (r[0], r[1], r[2]))
    out = []
    for _, neg_total, cid, status, delta in ranked[:max(top, 0)]:
        signs = {d > 0 for d in delta.values() if d is not None and d != 0.0}
        direction = ("worse" if status == "newly failed" else "better" if status == "fixed"
                     else "mixed" if len(signs) > 1 else "better" if signs == {True}
                     else "worse")
        out.append({"id": cid, "status": status, "change": -neg_total, "direction": direction,
                    "delta": delta,
                    "a": {k: a.cases[cid].metrics.get(k) for k in METRIC_KEYS},
                    "b": {k: b.cases[cid].metrics.get(k) for k in METRIC_KEYS}})
    return out


def check_gates(comparison: Mapping[str, Any], gates: Sequence[str],
                max_drop: float | None, max_new_errors: int | None = None) -> dict[str, Any]:
    """Apply the gates: a gated metric fails when B is significantly worse than A by more than
    `max_drop` (the upper end of the paired interval of B − A is below ``-max_drop``), or when no
    paired case defines it. `max_drop` without `gates` gates all six metrics."""
    chosen = list(dict.fromkeys(gates))
    if "all" in chosen:
        chosen = list(METRIC_KEYS)
    if not chosen and max_drop is not None:
        chosen = list(METRIC_KEYS)
    drop = float(max_drop or 0.0)
    failures = []
    for key in chosen:
        entry = comparison["metrics"][key]
        ci = entry["ci"]
        if ci is None:
            failures.append(f"{key}: no case defines it in both runs, so B cannot be shown "
                            "to be no worse than A")
        elif ci[1] < -drop:
            failures.append(
                f"{key}: B is worse than A by more than {drop:g} (paired mean difference "
                f"{signed(entry['paired_mean_delta'], 4)}, "
                f"{100 * comparison['bootstrap']['confidence']:g}% CI "
                f"[{signed(ci[0], 4)}, {signed(ci[1], 4)}] over {entry['n_paired']} cases)")
    newly = comparison["pairing"]["newly_failed"]
    if max_new_errors is not None and newly > max_new_errors:
        failures.append(f"{newly} cases fail in B but not in A (max_new_errors {max_new_errors})")
    return {"metrics": chosen, "max_drop": drop if chosen else max_drop,
            "max_new_errors": max_new_errors, "passed": not failures, "failures": failures,
            "active": bool(chosen) or max_new_errors is not None}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "run"


def _parser() -> argparse.ArgumentParser:
    """The arguments of ``ragcite-compare``."""
    parser = argparse.ArgumentParser(
        prog="ragcite-compare",
        description="Compare two ragcite runs (A = baseline, B = candidate): per-metric "
                    "differences with paired bootstrap intervals, and the cases that changed "
                    "most. Writes an HTML report and a JSON summary.",
        epilog="Gates: a gated metric fails when the upper end of the paired CI of B − A is "
               "below -MAX_DROP (B significantly worse by more than MAX_DROP). Exit status: "
               "0 all gates pass, 1 a gate failed, 2 bad input.")
    parser.add_argument("a", help="baseline: a result folder or an MLflow run id")
    parser.add_argument("b", help="candidate: a result folder or an MLflow run id")
    parser.add_argument("--out", type=Path, default=None,
                        help="the HTML report (default: outputs/compare/A_vs_B.html); "
                             "the JSON summary is written beside it")
    parser.add_argument("--json", type=Path, default=None, dest="json_out",
                        help="the JSON summary (default: the report's path with .json)")
    parser.add_argument("--gate", action="append", default=[], metavar="METRIC",
                        choices=[*METRIC_KEYS, "all"],
                        help="fail when B is significantly worse than A on METRIC "
                             "(repeatable; 'all' = the six metrics)")
    parser.add_argument("--max-drop", type=float, default=None, metavar="D",
                        help="tolerated drop: fail only when B is worse by more than D with "
                             "confidence; alone, it gates all six metrics (default 0)")
    parser.add_argument("--max-new-errors", type=int, default=None, metavar="N",
                        help="fail when more than N cases fail in B but not in A")
    parser.add_argument("--tracking-uri", default=None,
                        help="MLflow tracking URI for run ids (default: MLFLOW_TRACKING_URI, "
                             "else outputs/mlflow.db when present)")
    parser.add_argument("--resamples", type=int, default=2000,
                        help="bootstrap resamples (default 2000)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="two-sided confidence of the intervals (default 0.95)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--top", type=int, default=50,
                        help="changed cases listed in the report (default 50)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``ragcite-compare`` console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not 0.0 < args.confidence < 1.0:
        parser.error("--confidence must be between 0 and 1")
    if args.max_drop is not None and args.max_drop < 0:
        parser.error("--max-drop must not be negative")
    if args.resamples < 1:
        parser.error("--resamples must be at least 1")
    uri = tracking_uri_from(args.tracking_uri)
    try:
        with tempfile.TemporaryDirectory(prefix="ragcite-compare-") as tmp:
            run_a = load_run(args.a, uri, Path(tmp))
            run_b = load_run(args.b, uri, Path(tmp))
        comparison = compare_runs(run_a, run_b, args.resamples, args.confidence, args.seed,
                                  args.top)
        if comparison["pairing"]["n_common"] == 0:
            raise CompareError("the two runs have no case id in common")
        gates = check_gates(comparison, args.gate, args.max_drop, args.max_new_errors)
        comparison["gates"] = gates
        out = args.out or (Path("outputs") / "compare" /
                           f"{_slug(run_a.label)}_vs_{_slug(run_b.label)}.html")
        json_out = args.json_out or out.with_suffix(".json")
        render_compare_report(run_a, run_b, comparison, gates, out, args.max_drop)
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(comparison, indent=2, ensure_ascii=False, default=str)
                            + "\n", encoding="utf-8")
    except CompareError as exc:
        print(f"ragcite-compare: error: {exc}", file=sys.stderr)
        return 2
    _print_summary(comparison, gates, out, json_out)
    return 0 if gates["passed"] else 1


def _print_summary(comparison: Mapping[str, Any], gates: Mapping[str, Any], out: Path,
                   json_out: Path) -> None:
    conf = 100 * comparison["bootstrap"]["confidence"]
    print(f"A: {comparison['a']['name']}   B: {comparison['b']['name']}   "
          f"({comparison['pairing']['n_paired_scored']} paired cases)")
    for key in METRIC_KEYS:
        e = comparison["metrics"][key]
        ci = e["ci"]
        ci_text = f"[{signed(ci[0])}, {signed(ci[1])}]" if ci else "n/a"
        mark = " (gated)" if key in gates["metrics"] else ""
        print(f"  {key:<18} A {fmt(e['a'])}  B {fmt(e['b'])}  Δ {signed(e['delta'])}  "
              f"paired {signed(e['paired_mean_delta'])} {conf:g}% CI {ci_text}  "
              f"{e['verdict']}{mark}")
    for reason in gates["failures"]:
        print(f"ragcite-compare: gate failed: {reason}", file=sys.stderr)
    if gates["active"] and gates["passed"]:
        print("gates passed")
    print(f"report: {out}")
    print(f"summary: {json_out}")


if __name__ == "__main__":
    sys.exit(main())

"""Compare two runs: ``ragcite-compare A B`` writes an HTML report and a JSON summary.

A and B are result folders (``metrics.json``, ``cases.parquet`` and the passages file
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
import contextlib
import math
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from runner.config.constraints import COUNT, SECONDS, Range
from runner.config.folders import file_target, write_problem
from runner.config.naming import model_text, safe_name
from runner.redact import guard_output
from runner.reports import common
from runner.reports.common import METRIC_KEYS, fmt, signed
from runner.reports.compare_load import LOAD_TIMEOUT, CompareError, RunData, load_run, side_names
from runner.reports.diagnosis import label_transitions, share_shifts
from runner.results.jsonio import dumps_strict
from runner.scoring.aggregate import MAX_RESAMPLES, bootstrap_ci
from runner.scoring.records import explain_record, result_normalizer

# --- comparing ----------------------------------------------------------------------------------


_STATUS = {(True, True): "scored", (True, False): "newly failed", (False, True): "fixed",
           (False, False): "failed in both"}  # by (A scored, B scored)


def _values(run: RunData, ids: Sequence[str]) -> np.ndarray:
    """The metrics of the cases `ids`, one row each (nan where undefined)."""
    return np.array([[run.cases[cid].metrics.get(k) for k in METRIC_KEYS] for cid in ids],
                    dtype=float).reshape(len(ids), len(METRIC_KEYS))


def _side_summary(run: RunData) -> dict[str, Any]:
    m = run.metrics
    section = {k: m.get(k) or {} for k in ("run", "dataset", "model", "matcher", "threshold")}
    return {"label": run.label, "source": run.source, "link": run.link,
            "name": section["run"].get("name") or run.label,
            "started_at": section["run"].get("started_at"),
            "dataset": section["dataset"].get("name"), "digest": section["dataset"].get("digest"),
            "model": model_text(section["model"]),  # the model and its system
            "model_params": common.params_text(section["model"].get("identity")),
            "matcher_params": common.params_text(section["matcher"].get("identity")),
            "matcher": section["matcher"].get("name"),
            "threshold": section["threshold"].get("value"),
            **{k: m.get(k) for k in ("n_cases", "n_scored", "n_errors", "error_rate")},
            **{s: {k: (m.get(s) or {}).get(k) for k in METRIC_KEYS} for s in ("metrics", "ci")},
            "coverage": m.get("coverage") or None}


def compare_runs(a: RunData, b: RunData, resamples: int = 2000, confidence: float = 0.95,
                 seed: int = 0, top: int = 50) -> dict[str, Any]:
    """Pair the cases of two runs by id and compare every metric (the ``compare.json`` data).

    Per metric: the macro means of both runs (from their ``metrics.json``), their difference,
    and the mean of the per-case differences B − A over the paired cases with its percentile
    bootstrap interval (cases resampled with replacement, seeded). ``verdict`` is ``worse`` when
    the whole interval is below 0, ``better`` when it is above 0. ``a_common`` and ``b_common``
    are A's and B's means over those same cases.
    """
    common = [cid for cid in a.cases if cid in b.cases]
    statuses = {cid: _STATUS[a.cases[cid].error is None, b.cases[cid].error is None]
                for cid in common}
    paired = [cid for cid in common if statuses[cid] == "scored"]
    values_a, values_b = _values(a, paired), _values(b, paired)
    diffs = values_b - values_a  # nan where either is undefined
    cis = bootstrap_ci(diffs, resamples, confidence, seed)
    metrics: dict[str, Any] = {}
    for k, key in enumerate(METRIC_KEYS):
        both = ~np.isnan(diffs[:, k])
        n = int(both.sum())
        mean_a, mean_b = ((run.metrics.get("metrics") or {}).get(key) for run in (a, b))
        ci = cis[k]
        metrics[key] = {
            "a": mean_a, "b": mean_b,
            "delta": None if mean_a is None or mean_b is None else mean_b - mean_a,
            "n_paired": n, "paired_mean_delta": float(diffs[both, k].mean()) if n else None,
            "ci": ci, "verdict": "undefined" if ci is None else "worse" if ci[1] < 0
            else "better" if ci[0] > 0 else "no significant change",
            # sums in case order, as the means of metrics.json are taken
            "a_common": sum(values_a[both, k].tolist()) / n if n else None,
            "b_common": sum(values_b[both, k].tolist()) / n if n else None}
    count = list(statuses.values()).count
    pairing = {"n_a": len(a.cases), "n_b": len(b.cases), "n_common": len(common),
               "n_paired_scored": len(paired),
               "only_a": len(a.cases) - len(common), "only_b": len(b.cases) - len(common),
               "newly_failed": count("newly failed"), "fixed": count("fixed"),
               "failed_in_both": count("failed in both"),
               "same_cases": ({cid for cid, c in a.cases.items() if c.error is None}
                              == {cid for cid, c in b.cases.items() if c.error is None})}
    side_a, side_b = _side_summary(a), _side_summary(b)
    return {
        "schema_version": 1, "a": side_a, "b": side_b,
        "same_dataset": side_a["digest"] is not None and side_a["digest"] == side_b["digest"],
        "pairing": pairing,
        "bootstrap": {"resamples": resamples, "confidence": confidence, "seed": seed,
                      "method": "paired percentile bootstrap over cases"}, "metrics": metrics,
        "labels": {"shares": share_shifts(a.metrics.get("labels"), b.metrics.get("labels")),
                   "transitions": label_transitions(a.cases, b.cases, paired)},
        "changed": changed_cases(a, b, common, statuses, top)}


def changed_cases(a: RunData, b: RunData, common: Sequence[str], statuses: Mapping[str, str],
                  top: int) -> list[dict[str, Any]]:
    """The `top` cases that changed most: a change of status (newly failed, fixed) first, then
    by the summed absolute change of the six metrics; ties in id order."""
    ranked = []
    for cid, row in zip(common, (_values(b, common) - _values(a, common)).tolist()):
        deltas = [None if math.isnan(d) else d for d in row]  # B − A; None: either undefined
        total = sum(abs(d) for d in deltas if d is not None)
        status_rank = 0 if statuses[cid] in ("newly failed", "fixed") else 1
        if status_rank == 0 or total != 0.0:
            ranked.append((status_rank, -total, cid, deltas))
    out = []
    for _, neg_total, cid, deltas in sorted(ranked)[:max(top, 0)]:
        status = statuses[cid]
        signs = {d > 0 for d in deltas if d is not None and d != 0.0}
        direction = ("worse" if status == "newly failed" else "better" if status == "fixed"
                     else "mixed" if len(signs) > 1 else "better" if signs == {True} else "worse")
        out.append({"id": cid, "status": status, "change": -neg_total, "direction": direction,
                    "delta": dict(zip(METRIC_KEYS, deltas)),
                    **{side: {k: run.cases[cid].metrics.get(k) for k in METRIC_KEYS}
                       for side, run in (("a", a), ("b", b))}})
    return out


def check_gates(comparison: Mapping[str, Any], gates: Sequence[str],
                max_drop: float | None, max_new_errors: int | None = None) -> dict[str, Any]:
    """Apply the gates: a gated metric fails when B is significantly worse than A by more than
    `max_drop` (the upper end of the paired interval of B − A is below ``-max_drop``), or when no
    paired case defines it. `max_drop` without `gates` gates all six metrics."""
    chosen = list(dict.fromkeys(gates))
    if "all" in chosen or (not chosen and max_drop is not None):
        chosen = list(METRIC_KEYS)
    drop = float(max_drop or 0.0)
    failures = []
    for key in chosen:
        entry = comparison["metrics"][key]
        if (ci := entry["ci"]) is None:
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


# --- the report ---------------------------------------------------------------------------------


def render_compare_report(a: RunData, b: RunData, comparison: Mapping[str, Any],
                          output: Path) -> Path:
    """Write the comparison report (HTML) to `output`, its gates checked (``gates``); the
    template lays out the figures of `comparison` and the changed cases of both runs (their
    explanations made here: the results files do not store them)."""
    # Named by what differs (system=…, matcher=…); else by run name, else folder or id.
    named = comparison["a"]["name"] != comparison["b"]["name"]
    side_a, side_b = ({**side, "href": common.safe_href(side.get("link")),
                       "title": side.get("differs") or side["name" if named else "label"]}
                      for side in (comparison["a"], comparison["b"]))
    return common.write_html(output, common.render(
        "report_compare.html.j2",
        title=f"ragcite comparison — {side_a['title']} vs {side_b['title']}",
        A=side_a, B=side_b, cmp=comparison, gates=comparison["gates"], runs=(a, b),
        explained=[{c["id"]: explain_record(run.cases[c["id"]].to_dict(), norm)
                    for c in comparison["changed"]}
                   for run in (a, b) for norm in [result_normalizer(run.metrics)]]))


def output_folder(root: Path, name_a: str, name_b: str) -> Path:
    """A new folder for one comparison: ``<root>/<start stamp>_<A>_vs_<B>``, created here;
    two comparisons, even of the same runs at the same moment, never share one."""
    from runner.config.schema import folder_stamp

    while True:  # a clash: 1 in 65,536 within one microsecond
        folder = root / f"{folder_stamp()}_{safe_name(name_a)}_vs_{safe_name(name_b)}"
        with contextlib.suppress(FileExistsError):
            folder.mkdir(parents=True, exist_ok=False)
            return folder


# --- the command --------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """One ``ragcite: error:`` line for a wrong argument, as for every bad input."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"ragcite: error: {message}\n")



def _parser() -> argparse.ArgumentParser:
    """The arguments of ``ragcite-compare``."""
    parser = _Parser(
        prog="ragcite-compare", usage="%(prog)s [options] a b",
        description="Compare two ragcite runs (A = baseline, B = candidate): per-metric "
                    "differences with paired bootstrap intervals, and the cases that changed "
                    "most. Writes an HTML report and a JSON summary.",
        epilog="Gates: a gated metric fails when the upper end of the paired CI of B − A is "
               "below -MAX_DROP (B significantly worse by more than MAX_DROP). Exit status: "
               "0 all gates pass, 1 a gate failed, 2 bad input.")
    parser.add_argument("a", help="baseline: a result folder or an MLflow run id")
    parser.add_argument("b", help="candidate: a result folder or an MLflow run id")
    parser.add_argument("--out", type=file_target, help="the HTML report (default: compare.html "
                        "in a new folder outputs/compare/<time>_<A>_vs_<B>, A and B named by "
                        "what differs between them); the JSON summary is written beside it")
    parser.add_argument("--json", type=file_target, default=None, dest="json_out",
                        help="the JSON summary (default: the report's path with .json)")
    parser.add_argument("--gate", action="append", default=[], metavar="METRIC",
                        choices=[*METRIC_KEYS, "all"], help="fail when B is significantly "
                        "worse than A on METRIC (repeatable; 'all' = the six metrics)")
    parser.add_argument("--max-drop", type=Range(0, 1), default=None, metavar="D",
                        help="tolerated drop in [0, 1]: fail only when B is worse by more than "
                             "D with confidence; alone, it gates all six metrics (default 0)")
    parser.add_argument("--max-new-errors", type=COUNT, default=None, metavar="N",
                        help="fail when more than N cases fail in B but not in A (N >= 0)")
    parser.add_argument("--tracking-uri", help="MLflow tracking URI for run ids (default: "
                        "MLFLOW_TRACKING_URI, else outputs/mlflow.db when present)")
    parser.add_argument("--timeout", type=SECONDS, metavar="S",
                        default=LOAD_TIMEOUT, help="seconds the download of one MLflow "
                        f"run may take, up to a day (default {LOAD_TIMEOUT:g})")
    parser.add_argument("--resamples", type=Range(1, MAX_RESAMPLES, integer=True),
                        default=2000, help="bootstrap resamples, 1 to 1,000,000 (default 2000)")
    parser.add_argument("--confidence", type=Range(0, 1, open_low=True, open_high=True),
                        default=0.95, help="two-sided confidence of the intervals (default 0.95)")
    parser.add_argument("--seed", type=COUNT, default=0, help="bootstrap seed, >= 0 (default 0)")
    parser.add_argument("--top", type=COUNT, default=50,
                        help="changed cases listed in the report (default 50)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``ragcite-compare`` console script."""
    guard_output(sys.argv[1:] if argv is None else argv)  # no data drives the terminal
    args = _parser().parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="ragcite-compare-",
                                         ignore_cleanup_errors=True) as tmp:
            run_a = load_run(args.a, args.tracking_uri, Path(tmp), args.timeout)
            run_b = load_run(args.b, args.tracking_uri, Path(tmp), args.timeout)
        comparison = compare_runs(run_a, run_b, args.resamples, args.confidence, args.seed,
                                  args.top)
        if comparison["pairing"]["n_common"] == 0:
            raise CompareError(f"the two runs have no case id in common ({len(run_a.cases)} "
                               f"cases in A, {len(run_b.cases)} in B), so no figure can be "
                               "compared on the same cases")
        comparison["gates"] = gates = check_gates(comparison, args.gate, args.max_drop,
                                                  args.max_new_errors)
        differs = side_names((run_a.metrics, run_a.config), (run_b.metrics, run_b.config))
        for side, words in zip(("a", "b"), differs or (None, None)):
            comparison[side]["differs"] = words
        out = args.out or output_folder(
            Path("outputs") / "compare", *(differs or (run_a.label, run_b.label))) / "compare.html"
        json_out = args.json_out or out.with_suffix(".json")
        render_compare_report(run_a, run_b, comparison, out)
        common.write_html(json_out, dumps_strict(comparison))
    except (CompareError, OSError) as exc:
        line = str(exc) if isinstance(exc, CompareError) else write_problem(
            exc, "the report and the summary are each written whole or not at all")
        if line is None:
            raise
        print(f"ragcite: error: {line}", file=sys.stderr)
        return 2
    _print_summary(comparison, out, json_out)
    return 0 if gates["passed"] else 1


def _print_summary(comparison: Mapping[str, Any], out: Path, json_out: Path) -> None:
    conf, gates = 100 * comparison["bootstrap"]["confidence"], comparison["gates"]
    a, b = comparison["a"], comparison["b"]
    print(f"A: {a.get('differs') or a['name']}   B: {b.get('differs') or b['name']}   "
          f"({comparison['pairing']['n_paired_scored']} paired cases)")
    for key in METRIC_KEYS:
        e = comparison["metrics"][key]
        ci_text = f"[{signed(ci[0])}, {signed(ci[1])}]" if (ci := e["ci"]) else "n/a"
        print(f"  {key:<18} A {fmt(e['a'])}  B {fmt(e['b'])}  Δ {signed(e['delta'])}  "
              f"paired {signed(e['paired_mean_delta'])} {conf:g}% CI {ci_text}  "
              f"{e['verdict']}{' (gated)' if key in gates['metrics'] else ''}")
    for reason in gates["failures"]:
        print(f"ragcite-compare: gate failed: {reason}", file=sys.stderr)
    if gates["active"] and gates["passed"]:
        print("gates passed")
    print(f"report: {out}")
    print(f"summary: {json_out}")


if __name__ == "__main__":
    sys.exit(main())

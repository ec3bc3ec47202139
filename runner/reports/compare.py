"""Compare two runs: ``ragcite-compare A B`` writes an HTML report and a JSON summary.

A and B are result folders (``metrics.json``, ``cases.parquet`` and the passages file
``metrics.json`` names, read with :mod:`runner.results`) or MLflow run ids, whose three artifacts
are downloaded with the MLflow client. Cases are paired by id. For each metric the
report shows both macro means, their difference, and a paired bootstrap confidence interval of
the per-case differences B − A (cases scored in both runs, where both values are defined); then
the cases that changed most.

The figures are computed by the comparison stage (:mod:`runner.scoring.paired`); this command
writes them as ``compare.json`` and renders the report from them, each run's bands and the
records of the changed cases, computing no figure.

Gates make it a CI step: the command exits 1 when B is significantly worse than A on a gated
metric, i.e. when the upper end of the paired interval of B − A is below ``-max_drop``::

    ragcite-compare outputs/runs/base outputs/runs/candidate --gate context_f1 --gate source_f1
    ragcite-compare RUN_ID_A RUN_ID_B --tracking-uri sqlite:////abs/mlflow.db --max-drop 0.02

Exit status: 0 when every gate passes, 1 when one fails, 2 on bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from runner.config.constraints import COUNT, SECONDS, Range
from runner.config.folders import file_target, write_problem
from runner.config.naming import safe_name
from runner.redact import guard_output
from runner.reports import common
from runner.reports.common import METRIC_KEYS, fmt, signed
from runner.reports.compare_load import LOAD_TIMEOUT, CompareError, RunData, load_run, side_names
from runner.results.jsonio import dumps_strict
from runner.scoring.aggregate import MAX_RESAMPLES
from runner.scoring.paired import check_gates, compare_runs
from runner.scoring.records import explain_record, result_normalizer

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

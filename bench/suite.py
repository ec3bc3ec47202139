"""The benchmark suite: ragcite's headline figures at several sizes, in one table.

Run from the repository root::

    .venv/bin/python bench/suite.py [--sizes 1000 10000 100000] [--multirun-size 10000]
        [--parts e2e matchers multirun] [--json out.json] [--seed 0]

Every size is a seeded synthetic dataset of ``bench/synth.py`` (3 references and 3 stored
citations of ~40 words per case), made once by ``bench_scoring.data_file`` into
``bench/results/data/`` (git-ignored; ``--data-dir`` elsewhere). Parts (``--parts``, or
``--skip-e2e`` / ``--skip-matchers`` / ``--skip-multirun``):

* ``e2e``: the real ``ragcite`` console script in a child process on the whole file —
  ``dataset=file model=precomputed matcher=ngram``, MLflow on the default store (sqlite under
  ``output_root``) and the HTML report, both defaults — with its wall time (start-up included)
  and its peak RSS (``ru_maxrss`` of that child from ``os.wait4``). Below each run, where its time
  went: ``load``/``model``/``score``/``aggregate`` as ragcite records them in ``metrics.json``
  (``score`` includes writing ``cases.jsonl``), the rest from the run folder's file times
  (marked ``*``): start-up until Hydra wrote ``.hydra/``, the tracker's start (importing MLflow,
  opening the store and the run) until the run began, ``report.html``, and MLflow's logging plus
  the process exit.
* ``matchers``: ``bench_scoring.py``'s ``similarity`` stage for ``substring`` and ``ngram``
  (pairs/s and cases/s of the matcher alone) and its ``evaluate`` stage for ``ngram`` (all of
  ``runner.evaluate``), each in a fresh child process.
* ``multirun``: ``ragcite -m sweep=thresholds`` (five thresholds, ``conf/sweep/thresholds.yaml``)
  against a single run on the same data, both with a cold cache: the wall time of each and their
  ratio. Single runs and sweeps alternate (``--repeat`` of each, the fastest of each compared),
  so that the machine's drift in speed falls on both alike.

The MLflow store is warm by default: one 1-case run creates it first (its time is printed as
``setup``), as after a user's first run; ``--fresh-store`` gives every run a new store instead.
Each run has its own cache folder, so nothing is read from an earlier run. Outputs go to a
temporary folder (``--work-dir`` keeps them). Targets, printed next to the figures: 100,000 cases
end to end under 30 s and 2 GB peak RSS; ``runner.evaluate`` with ``ngram`` on 100,000 cases under
8 s and 1 GB; the 5-threshold multirun under 1.5x a single run. MB are MiB (KiB / 1024).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))



class _BenchScoring(Protocol):
    """What the suite uses of ``bench/bench_scoring.py``."""

    DATA_DIR: Path

    def data_file(self, n: int, seed: int) -> Path: ...

    def measure(self, stage: str, matcher: str, path: Path, repeat: int) -> dict[str, Any]: ...


# Imported by name (bench/ is not a package), so that `mypy bench/suite.py` checks this file and
# its use of bench_scoring against the protocol, not bench_scoring.py itself.
bench_scoring = cast(_BenchScoring, importlib.import_module("bench_scoring"))

PARTS = ("e2e", "matchers", "multirun")

E2E_TARGET_N = 100_000
E2E_MAX_S = 30.0
E2E_MAX_RSS_MB = 2048.0
SCORE_MAX_S = 5.0  # the e2e run's scoring stage (scoring.workers = one per CPU) at 100k
EVAL_TARGET_N = 100_000
EVAL_MAX_S = 8.0
EVAL_MAX_RSS_MB = 1024.0
MULTIRUN_MAX_RATIO = 1.5

MATCHER_STAGES: tuple[tuple[str, str], ...] = (
    ("similarity", "substring"),
    ("similarity", "ngram:numpy"),
    ("similarity", "ngram:numba"),
    ("evaluate", "ngram:numpy"),
    ("evaluate", "ngram:numba"),
)
"""Matcher rows; ``ngram:numba`` (the compiled kernel) only where numba is installed."""

STAGE_LABELS: dict[str, str] = {
    "startup_s": "start-up: interpreter, imports, Hydra*",
    "tracker_start_s": "tracker start: MLflow import, store, run*",
    "load_s": "load",
    "tracking_wait_s": "wait for the MLflow helper",
    "model_s": "model (stored responses)",
    "score_s": "score + write cases.jsonl",
    "aggregate_s": "aggregate",
    "report_s": "report.html (beside MLflow logging)*",
    "tracking_log_exit_s": "MLflow: report artifact + exit*",
    "other_s": "other",
}
"""The stages of an end-to-end run, in order; * = from the run folder's file times."""

_COLUMNS: tuple[tuple[str, str, int, str], ...] = (
    ("part", "part", 8, "<"),
    ("measurement", "measurement", 44, "<"),
    ("n", "N", 7, ">"),
    ("seconds", "seconds", 8, ">"),
    ("cases_per_s", "cases/s", 9, ">"),
    ("pairs_per_s", "pairs/s", 10, ">"),
    ("peak_rss_mb", "peak RSS MB", 11, ">"),
    ("target", "target", 24, "<"),
    ("result", "result", 0, "<"),
)


class SuiteError(RuntimeError):
    """A benchmarked command failed."""


@dataclass
class ChildRun:
    """One finished ``ragcite`` child process.

    Attributes:
        returncode: Its exit status.
        wall_s: Wall time from start to reaped, in seconds.
        peak_rss_mb: Its peak resident set size (``ru_maxrss``), in MiB.
        started: Epoch seconds just before it was started.
        ended: Epoch seconds just after it was reaped.
        stderr_tail: The end of its standard error.
    """

    returncode: int
    wall_s: float
    peak_rss_mb: float
    started: float
    ended: float
    stderr_tail: str


class Table:
    """The suite's one table: rows are printed as they come and kept for the JSON."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    @staticmethod
    def _line(cells: list[str]) -> str:
        parts = []
        for (_, _, width, align), cell in zip(_COLUMNS, cells):
            parts.append(f"{cell:{align}{width}}" if width else cell)
        return "  ".join(parts).rstrip()

    def header(self) -> None:
        """Print the column titles and a rule."""
        line = self._line([title for _, title, _, _ in _COLUMNS])
        print(line)
        print("-" * len(line), flush=True)

    def add(self, part: str, measurement: str, n: int | None = None,
            seconds: float | None = None, cases_per_s: float | None = None,
            pairs_per_s: float | None = None, peak_rss_mb: float | None = None,
            target: str = "", result: str = "") -> None:
        """Print one row and keep it."""
        row: dict[str, Any] = {"part": part, "measurement": measurement, "n": n,
                               "seconds": _round(seconds), "cases_per_s": _round(cases_per_s, 1),
                               "pairs_per_s": _round(pairs_per_s, 1),
                               "peak_rss_mb": _round(peak_rss_mb, 1), "target": target,
                               "result": result}
        self.rows.append(row)
        cells = [part, measurement, "" if n is None else f"{n:,}",
                 "" if seconds is None else f"{seconds:.2f}",
                 "" if cases_per_s is None else f"{cases_per_s:,.0f}",
                 "" if pairs_per_s is None else f"{pairs_per_s:,.0f}",
                 "" if peak_rss_mb is None else f"{peak_rss_mb:,.0f}", target, result]
        print(self._line(cells), flush=True)


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _mark(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def _rss_mb(ru_maxrss: int) -> float:
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    return ru_maxrss / (1024 * 1024) if sys.platform == "darwin" else ru_maxrss / 1024


def _quote(value: str | Path) -> str:
    """A Hydra override value, quoted so that any path parses as one string."""
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def ragcite_command() -> list[str]:
    """The ``ragcite`` console script of this interpreter's environment (else ``-m runner.cli``).

    Returns:
        The command's argument list, without ragcite's own arguments.
    """
    script = Path(sys.executable).parent / "ragcite"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "runner.cli"]


def child_env() -> dict[str, str]:
    """The environment of a ragcite child: this repository first, the default MLflow store."""
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "PYTHONUNBUFFERED": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{path}" if path else str(REPO)
    return env


def run_ragcite(args: list[str], cwd: Path, name: str, timeout: float) -> ChildRun:
    """Run the ``ragcite`` console script and measure its wall time and peak RSS.

    The child is reaped with ``os.wait4``, so the peak RSS is the child's own (with any
    process it reaped itself), not this process's.

    Args:
        args: ragcite's arguments (Hydra overrides, ``-m``).
        cwd: The working folder; its stdout and stderr go to ``<name>.out`` / ``<name>.err``.
        name: A name for the log files.
        timeout: Seconds after which the child is killed.

    Returns:
        The finished run.

    Raises:
        SuiteError: ragcite exited with a non-zero status.
    """
    cwd.mkdir(parents=True, exist_ok=True)
    err_path = cwd / f"{name}.err"
    with (cwd / f"{name}.out").open("wb") as out, err_path.open("wb") as err:
        started = time.time()
        t0 = time.perf_counter()
        proc = subprocess.Popen([*ragcite_command(), *args], cwd=cwd, env=child_env(),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        ended = time.time()
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait again
    tail = err_path.read_text(encoding="utf-8", errors="replace")[-3000:]
    run = ChildRun(proc.returncode, wall, _rss_mb(usage.ru_maxrss), started, ended, tail)
    if run.returncode != 0:
        raise SuiteError(f"ragcite {name} failed with status {run.returncode} "
                         f"(after {wall:.1f} s):\n{tail}")
    return run


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _epoch(iso: Any) -> float | None:
    if not isinstance(iso, str):
        return None
    try:
        return dt.datetime.fromisoformat(iso).timestamp()
    except ValueError:
        return None


def stage_breakdown(run: ChildRun, run_dir: Path, metrics: dict[str, Any]) -> dict[str, float]:
    """Where an end-to-end run's wall time went.

    ``load_s``, ``tracking_wait_s``, ``model_s``, ``score_s`` and ``aggregate_s`` are ragcite's
    own (``metrics.json`` ``timings``); the others are differences of file times in the run
    folder and of the run's ``started_at``; ``other_s`` is what is left of the wall time.

    Args:
        run: The finished child process.
        run_dir: Its run folder.
        metrics: Its ``metrics.json``.

    Returns:
        Seconds per stage, keyed as :data:`STAGE_LABELS`, in that order (missing ones left out).
    """
    timings = metrics.get("timings") or {}
    info = metrics.get("run") or {}
    hydra_t = _mtime(run_dir / ".hydra" / "overrides.yaml")
    started_at = _epoch(info.get("started_at"))
    metrics_t = _mtime(run_dir / "metrics.json")
    report_t = _mtime(run_dir / "report.html")
    found: dict[str, float] = {}
    if hydra_t is not None:
        found["startup_s"] = hydra_t - run.started
        if started_at is not None:
            found["tracker_start_s"] = started_at - hydra_t
    for key in ("load_s", "tracking_wait_s", "model_s", "score_s", "aggregate_s"):
        if isinstance(timings.get(key), (int, float)):
            found[key] = float(timings[key])
    if report_t is not None and metrics_t is not None:
        found["report_s"] = report_t - metrics_t
    last = report_t if report_t is not None else metrics_t
    if last is not None:
        found["tracking_log_exit_s"] = run.ended - last
    found["other_s"] = run.wall_s - sum(found.values())
    return {key: round(found[key], 3) for key in STAGE_LABELS if key in found}


class Suite:
    """Runs the parts and fills the table and the JSON report.

    Args:
        args: The parsed command line.
        work: The folder for ragcite's outputs.
        table: Where the rows go.
    """

    def __init__(self, args: argparse.Namespace, work: Path, table: Table) -> None:
        self.args = args
        self.work = work
        self.table = table
        self.shared_root = work / "root"
        self.e2e_rows: list[dict[str, Any]] = []
        self.store_creation_s: float | None = None

    def _root(self, name: str) -> Path:
        """The ``output_root`` of a run: shared (warm store) or its own (``--fresh-store``)."""
        return self.work / name if self.args.fresh_store else self.shared_root

    def _common(self, path: Path, root: Path, cache: str) -> list[str]:
        return ["dataset=file", f"dataset.path={_quote(path.resolve())}", "model=precomputed",
                "matcher=ngram", "tracking=mlflow", "report=html", "progress=false",
                f"output_root={_quote(root)}",
                f"cache.dir={_quote(root / cache)}"]

    def warm_store(self) -> None:
        """Create the shared MLflow store with a 1-case run (skipped with ``--fresh-store``)."""
        if self.args.fresh_store:
            return
        from synth import write_jsonl

        data = self.work / "warmup-1.jsonl"
        write_jsonl(data, 1, seed=self.args.seed)
        args = [*self._common(data, self.shared_root, "cache-warmup"), "report=none",
                f"hydra.run.dir={_quote(self.shared_root / 'runs' / 'warmup')}"]
        _log("creating the MLflow store (1-case run) ...")
        run = run_ragcite(args, self.work, "warmup", self.args.timeout)
        self.store_creation_s = run.wall_s
        self.table.add("setup", "new MLflow store: a 1-case run", 1, run.wall_s,
                       peak_rss_mb=run.peak_rss_mb, target="(not a target)")

    def single_run(self, n: int, label: str) -> dict[str, Any]:
        """The fastest of ``--repeat`` end-to-end ``ragcite`` runs on the `n`-case file.

        Each run has its own folder and empty cache; ``wall_s_all`` lists every run's time.
        """
        best: dict[str, Any] | None = None
        walls = []
        for attempt in range(max(1, self.args.repeat)):
            rec = self._one_run(n, f"{label}-n{n}" + (f"-r{attempt + 1}" if attempt else ""),
                                label)
            walls.append(rec["wall_s"])
            if best is None or rec["wall_s"] < best["wall_s"]:
                best = rec
        assert best is not None
        best["wall_s_all"] = walls
        return best

    def _one_run(self, n: int, name: str, label: str) -> dict[str, Any]:
        path = bench_scoring.data_file(n, self.args.seed)
        root = self._root(name)
        run_dir = root / "runs" / name
        args = [*self._common(path, root, f"cache-{name}"),
                f"hydra.run.dir={_quote(run_dir)}"]
        _log(f"ragcite {label}: {n:,} cases ...")
        run = run_ragcite(args, self.work, name, self.args.timeout)
        metrics = _read_json(run_dir / "metrics.json")
        n_cases = int(metrics["n_cases"])
        return {"n_cases": n_cases, "wall_s": round(run.wall_s, 3),
                "peak_rss_mb": round(run.peak_rss_mb, 1),
                "cases_per_s": round(n_cases / run.wall_s, 1),
                "stages_s": stage_breakdown(run, run_dir, metrics),
                "context_f1": metrics["metrics"].get("context_f1"),
                "run_dir": str(run_dir)}

    def e2e(self, n: int) -> dict[str, Any]:
        """The ``e2e`` part at one size: a run, its stages and its targets."""
        rec = self.single_run(n, "e2e")
        applies = n == E2E_TARGET_N
        ok = (rec["wall_s"] < E2E_MAX_S and rec["peak_rss_mb"] < E2E_MAX_RSS_MB
              if applies else None)
        rec["target"] = {"n_cases": E2E_TARGET_N, "max_wall_s": E2E_MAX_S,
                         "max_peak_rss_mb": E2E_MAX_RSS_MB, "applies": applies}
        rec["passed"] = ok
        self.table.add("e2e", "ragcite run (ngram, MLflow, HTML report)", rec["n_cases"],
                       rec["wall_s"], rec["cases_per_s"], peak_rss_mb=rec["peak_rss_mb"],
                       target=f"< {E2E_MAX_S:g} s, < {E2E_MAX_RSS_MB / 1024:g} GB at 100k",
                       result=_mark(ok))
        for key, seconds in rec["stages_s"].items():
            if key == "score_s":  # issue 7: ngram scoring on both cores
                score_ok = seconds < SCORE_MAX_S if applies else None
                rec["score_target"] = {"max_score_s": SCORE_MAX_S, "applies": applies,
                                       "passed": score_ok}
                self.table.add("e2e", f"  {STAGE_LABELS[key]}", rec["n_cases"], seconds,
                               target=f"< {SCORE_MAX_S:g} s at 100k (strict: with writing)",
                               result=_mark(score_ok))
            else:
                self.table.add("e2e", f"  {STAGE_LABELS[key]}", rec["n_cases"], seconds)
        self.e2e_rows.append(rec)
        return rec

    def matchers(self, n: int) -> list[dict[str, Any]]:
        """The ``matchers`` part at one size, through ``bench_scoring.measure``."""
        path = bench_scoring.data_file(n, self.args.seed)
        out = []
        for stage, matcher in MATCHER_STAGES:
            if matcher.endswith(":numba") and importlib.util.find_spec("numba") is None:
                _log(f"bench_scoring {stage} {matcher}: skipped (numba not installed)")
                continue
            _log(f"bench_scoring {stage} {matcher}: {n:,} cases ...")
            raw = bench_scoring.measure(stage, matcher, path, self.args.repeat)
            seconds = float(raw["seconds"])
            rec: dict[str, Any] = {
                "stage": stage, "matcher": matcher, "n_cases": int(raw["n"]),
                "seconds": round(seconds, 4), "cases_per_s": round(raw["n"] / seconds, 1),
                "pairs": raw.get("pairs"),
                "pairs_per_s": (round(raw["pairs"] / seconds, 1) if "pairs" in raw else None),
                "rss_before_mb": round(raw["rss_before_mb"], 1),
                "peak_rss_mb": round(raw["peak_rss_mb"], 1)}
            rec["target"] = None
            target, ok = "", None
            applies = n == EVAL_TARGET_N
            if stage == "evaluate" and matcher == "ngram:numpy":  # issue 2, default install
                ok = (seconds < EVAL_MAX_S and rec["peak_rss_mb"] < EVAL_MAX_RSS_MB
                      if applies else None)
                rec["target"] = {"n_cases": EVAL_TARGET_N, "max_seconds": EVAL_MAX_S,
                                 "max_peak_rss_mb": EVAL_MAX_RSS_MB, "applies": applies}
                target = f"< {EVAL_MAX_S:g} s, < {EVAL_MAX_RSS_MB / 1024:g} GB at 100k"
            elif stage == "evaluate":  # issue 7: scoring alone, both cores (fast extra)
                ok = seconds < SCORE_MAX_S if applies else None
                rec["target"] = {"n_cases": EVAL_TARGET_N, "max_seconds": SCORE_MAX_S,
                                 "applies": applies}
                target = f"< {SCORE_MAX_S:g} s at 100k (scoring alone, both cores)"
            rec["passed"] = ok
            label = ("runner.evaluate" if stage == "evaluate" else "similarities") + f" {matcher}"
            self.table.add("matchers", label, rec["n_cases"], seconds, rec["cases_per_s"],
                           rec["pairs_per_s"], rec["peak_rss_mb"], target,
                           _mark(ok) if stage == "evaluate" else "")
            out.append(rec)
        return out

    def multirun(self, n: int) -> dict[str, Any]:
        """The ``multirun`` part: ``-m sweep=thresholds`` against a single run of `n` cases.

        Single runs and sweeps alternate (``--repeat`` of each): the machine's speed drifts by
        tens of percent within minutes, and measuring all singles first would compare two
        different machines. The ratio is the fastest sweep over the fastest single run.
        """
        path = bench_scoring.data_file(n, self.args.seed)
        run = None
        walls: list[float] = []
        singles: list[dict[str, Any]] = []
        for attempt in range(max(1, self.args.repeat)):
            suffix = f"-r{attempt + 1}" if attempt else ""
            singles.append(self._one_run(n, f"single-n{n}{suffix}", "single"))
            name = f"multirun-n{n}{suffix}"
            root = self._root(name)
            this_dir = root / "sweeps" / name
            args = ["-m", "sweep=thresholds", *self._common(path, root, f"cache-{name}"),
                    f"hydra.sweep.dir={_quote(this_dir)}"]
            _log(f"ragcite -m sweep=thresholds: {n:,} cases ...")
            this = run_ragcite(args, self.work, name, self.args.timeout)
            walls.append(round(this.wall_s, 3))
            if run is None or this.wall_s < run.wall_s:
                run, sweep_dir = this, this_dir
        assert run is not None
        single = min(singles, key=lambda r: r["wall_s"])
        single["wall_s_all"] = [r["wall_s"] for r in singles]
        source = "interleaved"
        summary = _read_json(sweep_dir / "sweep.json")
        jobs = []
        for job in summary["jobs"]:
            m = job["metrics"] or {}
            jobs.append({"dir": job["dir"], "threshold": (m.get("matcher") or {}).get("threshold"),
                         "n_cases": m.get("n_cases"), "timings_s": m.get("timings"),
                         "similarities_computed":
                             ((m.get("cache") or {}).get("computed") or {}).get("similarities")})
        n_cases = {j["n_cases"] for j in jobs}
        ratio = run.wall_s / single["wall_s"]
        rec: dict[str, Any] = {
            "n_cases": n_cases.pop() if len(n_cases) == 1 else None,
            "n_jobs": summary["n_jobs"], "failed": summary["failed"],
            "thresholds": [j["threshold"] for j in jobs],
            "single_s": single["wall_s"], "single_source": source,
            "single_s_all": single["wall_s_all"],
            "single_peak_rss_mb": single["peak_rss_mb"],
            "multirun_s": round(run.wall_s, 3), "multirun_s_all": walls,
            "multirun_peak_rss_mb": round(run.peak_rss_mb, 1),
            "ratio": round(ratio, 3), "max_ratio": MULTIRUN_MAX_RATIO,
            "passed": ratio < MULTIRUN_MAX_RATIO and not summary["failed"],
            "sweep_dir": str(sweep_dir), "jobs": jobs}
        label = "single run (alternating with the sweeps)"
        self.table.add("multirun", label, single["n_cases"], single["wall_s"],
                       single["cases_per_s"], peak_rss_mb=single["peak_rss_mb"])
        self.table.add("multirun", f"{rec['n_jobs']}-threshold multirun (sweep=thresholds)",
                       rec["n_cases"], run.wall_s, peak_rss_mb=run.peak_rss_mb,
                       target=f"< {MULTIRUN_MAX_RATIO:g}x single run",
                       result=f"{ratio:.2f}x {_mark(rec['passed'])}")
        return rec


def _log(message: str) -> None:
    print(f"[suite] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; ``--skip-*`` remove parts from ``--parts``."""
    parser = argparse.ArgumentParser(
        description="ragcite's benchmark suite: end to end, matchers and multirun in one table.")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000],
                        help="cases per synthetic dataset (default: 1000 10000 100000)")
    parser.add_argument("--multirun-size", type=int, default=10_000,
                        help="cases for the multirun part (default: 10000)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                        help="parts to run (default: all)")
    for part in PARTS:
        parser.add_argument(f"--skip-{part}", action="store_true", help=f"leave out {part}")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--data-dir", type=Path, default=bench_scoring.DATA_DIR,
                        help="where the synthetic datasets are made and reused "
                             "(default: bench/results/data)")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="put ragcite's outputs here and keep them (default: a temporary "
                             "folder, removed)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="best of this many: e2e runs, multirun sweeps and matcher child "
                             "processes (default: 1)")
    parser.add_argument("--fresh-store", action="store_true",
                        help="a new MLflow store for every run (default: one warm store)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds before a ragcite run is killed (default: 3600)")
    args = parser.parse_args(argv)
    args.parts = [p for p in PARTS if p in args.parts and not getattr(args, f"skip_{p}")]
    if any(n < 1 for n in [*args.sizes, args.multirun_size]):
        parser.error("sizes must be at least 1")
    if not args.parts:
        parser.error("no part left to run")
    return args


def run_suite(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Run the chosen parts, printing the table; returns the JSON report.

    Args:
        args: The parsed command line (:func:`parse_args`).
        work: The folder for ragcite's outputs.

    Returns:
        Machine, settings, targets, the records of each part and the table's rows.
    """
    # bench_scoring.data_file reads its module's DATA_DIR when called.
    bench_scoring.DATA_DIR = args.data_dir.resolve()
    sizes = list(dict.fromkeys(args.sizes))
    needed = [*sizes] if {"e2e", "matchers"} & set(args.parts) else []
    if "multirun" in args.parts:
        needed.append(args.multirun_size)
    for n in dict.fromkeys(needed):
        bench_scoring.data_file(n, args.seed)

    load = os.getloadavg()
    store = "fresh" if args.fresh_store else "warm"
    print(f"# ragcite benchmark suite: Python {platform.python_version()}, {os.cpu_count()} "
          f"CPU(s), load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; seed {args.seed}; "
          f"cases of 3 refs x 3 citations (~40 words); MLflow store {store}")
    table = Table()
    table.header()
    suite = Suite(args, work, table)
    report: dict[str, Any] = {
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "load_avg_start": [round(x, 2) for x in load], "seed": args.seed, "sizes": sizes,
        "multirun_size": args.multirun_size if "multirun" in args.parts else None,
        "parts": args.parts, "store": store, "command": ragcite_command(),
        "data_dir": str(bench_scoring.DATA_DIR),
        "targets": {"e2e": {"n_cases": E2E_TARGET_N, "max_wall_s": E2E_MAX_S,
                            "max_peak_rss_mb": E2E_MAX_RSS_MB},
                    "evaluate_ngram": {"n_cases": EVAL_TARGET_N, "max_seconds": EVAL_MAX_S,
                                       "max_peak_rss_mb": EVAL_MAX_RSS_MB},
                    "multirun": {"max_ratio": MULTIRUN_MAX_RATIO}},
        "store_creation_s": None, "e2e": [], "matchers": [], "multirun": None}
    if {"e2e", "multirun"} & set(args.parts):
        suite.warm_store()
        report["store_creation_s"] = _round(suite.store_creation_s)
    if "e2e" in args.parts:
        report["e2e"] = [suite.e2e(n) for n in sizes]
    if "matchers" in args.parts:
        report["matchers"] = [rec for n in sizes for rec in suite.matchers(n)]
    if "multirun" in args.parts:
        report["multirun"] = suite.multirun(args.multirun_size)
    report["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    report["table"] = table.rows
    print("* from the run folder's file times; the other stages are ragcite's own "
          "(metrics.json timings). Targets apply at 100,000 cases (n/a at other sizes), the "
          "multirun ratio at any size; ngram >= 10x RAGAS's non-LLM metrics is measured by "
          "bench_ragas.py in its own environment.")
    return report


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the suite, print the table and write the JSON.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        0, or 1 when a ragcite run failed.
    """
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ragcite-suite-") as tmp:
        work = (args.work_dir or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        try:
            report = run_suite(args, work)
        except (SuiteError, subprocess.CalledProcessError) as exc:
            detail = getattr(exc, "stderr", None) or ""
            print(f"suite: {exc}\n{detail[-3000:]}".rstrip(), file=sys.stderr)
            return 1
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

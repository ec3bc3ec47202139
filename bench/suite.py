"""The benchmark suite: ragcite's headline figures at several sizes, in one table.

Run from the repository root::

    .venv/bin/python bench/suite.py [--sizes 1000 10000 100000] [--multirun-sizes 10000]
        [--memory-size 100000 1000000] [--parts e2e matchers multirun memory]
        [--repeat 1] [--json out.json] [--seed 0]

Every size is a seeded synthetic dataset of ``bench/synth.py``, made once by
``bench_scoring.data_file`` into ``bench/results/data/`` (git-ignored; ``--data-dir``
elsewhere): 3 references and 3 stored citations of ~40 words per case, or for the ``memory``
part the ``small`` profile (1 reference and 1 citation of ~8 words). Parts (``--parts``, or
``--skip-e2e`` / ``--skip-matchers`` / ``--skip-multirun`` / ``--skip-memory``):

* ``e2e``: the real ``ragcite`` console script in a child process on the whole file —
  ``dataset=file model=precomputed matcher=ngram``, MLflow on the default store (sqlite under
  ``output_root``) and the HTML report, both defaults — with its wall time (start-up included)
  and its peak RSS (``ru_maxrss`` of that child from ``os.wait4``: the largest of it and the
  scoring workers it forked and reaped). Below each run, where its time went: ``load``,
  ``model`` and ``score`` as ragcite records them (``metrics.json`` → ``execution.timings``;
  ``score`` includes writing ``passages.parquet`` and ``cases.parquet``), the rest from the run
  folder's file times (marked ``*``) and what remains of the wall time (``other``).
* ``matchers``: ``bench_scoring.py``'s ``similarity`` stage for ``substring`` and ``ngram``
  (pairs/s and cases/s of the matcher alone), its ``evaluate`` stage for ``ngram`` (all of
  ``runner.evaluate``) and its ``evaluate_5t`` stage (``runner.evaluate`` deciding five
  thresholds from one pass), each in a fresh child process.
* ``multirun``: ``ragcite -m scoring.threshold=<K thresholds>`` (one job deciding K thresholds:
  K results, each tracked and reported) against a single run on the same data, for K = 5
  (0.1, 0.3, ..., 0.9) and K = 20 (0.05, 0.10, ..., 1.0), at each ``--multirun-sizes``. Single
  runs and sweeps alternate (``--repeat`` rounds of one single run and one sweep of each K; the
  fastest of each compared), so that the machine's drift in speed falls on all alike. Also the
  bytes each writes: its folder plus the MLflow artifacts it added under ``output_root``.
* ``memory``: ``ragcite`` with ``tracking=none report=none`` on ``small`` cases at each
  ``--memory-size`` (default 100,000 and 1,000,000): wall time and peak RSS
  (``--memory-with-outputs`` also runs each size with MLflow and the report).

The MLflow store is warm by default: one 1-case run creates it first (its time is printed as
``setup``), as after a user's first run; ``--fresh-store`` gives every run a new store instead.
Each run has its own cache folder, so nothing is read from an earlier run. Outputs go to a
temporary folder (``--work-dir`` keeps them); the multirun and memory parts delete each run's
outputs once measured (``--keep-outputs`` keeps them: a 20-threshold sweep of 100,000 cases
writes gigabytes). Targets, printed next to the figures: 100,000 cases end to end under 30 s
and 2 GB peak RSS; ``runner.evaluate`` with ``ngram`` on 100,000 cases under 8 s and 1 GB; a
5-threshold multirun under 1.5x a single run (aim 1.3x), a 20-threshold one under 2x; 1,000,000
small cases under 1.5 GB peak RSS, 100,000 under 1 GB. MB are MiB (KiB / 1024), GB GiB.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import importlib.util
import json
import os
import platform
import shutil
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

    def data_file(self, n: int, seed: int, profile: str = "standard") -> Path: ...

    def measure(self, stage: str, matcher: str, path: Path, repeat: int) -> dict[str, Any]: ...


# Imported by name (bench/ is not a package), so that `mypy bench/suite.py` checks this file and
# its use of bench_scoring against the protocol, not bench_scoring.py itself.
bench_scoring = cast(_BenchScoring, importlib.import_module("bench_scoring"))

PARTS = ("e2e", "matchers", "multirun", "memory", "fidelity")
FIDELITY_MAX_RATIO = 1.5  # issue 27: quote fidelity on, at most 1.5x the same run with it off

E2E_TARGET_N = 100_000
E2E_MAX_S = 30.0
E2E_MAX_RSS_MB = 2048.0
SCORE_MAX_S = 5.0  # the e2e run's scoring stage (one worker per CPU) at 100k
EVAL_TARGET_N = 100_000
EVAL_MAX_S = 8.0
EVAL_MAX_RSS_MB = 1024.0

MULTIRUN_THRESHOLDS: dict[int, tuple[float, ...]] = {
    5: (0.1, 0.3, 0.5, 0.7, 0.9),
    20: tuple(round(0.05 * i, 2) for i in range(1, 21)),
}
"""The multirun part's sweeps: K thresholds each (``-m scoring.threshold=...``)."""
MULTIRUN_MAX_RATIO: dict[int, float] = {5: 1.5, 20: 2.0}
"""Wall time of a K-threshold multirun over a single run: the target."""
MULTIRUN_AIM_RATIO: dict[int, float] = {5: 1.3}
"""... and what to aim for, where one was set (not a pass mark)."""

MEMORY_TARGETS_MB: dict[int, float] = {1_000_000: 1536.0, 100_000: 1024.0}
"""Peak RSS targets of the memory part by number of small cases (other sizes: none)."""

MATCHER_STAGES: tuple[tuple[str, str], ...] = (
    ("similarity", "substring"),
    ("similarity", "ngram:numpy"),
    ("similarity", "ngram:numba"),
    ("evaluate", "ngram:numpy"),
    ("evaluate_5t", "ngram:numpy"),
    ("evaluate", "ngram:numba"),
)
"""Matcher rows; ``ngram:numba`` (the compiled kernel) only where numba is installed."""

STAGE_LABELS: dict[str, str] = {
    "startup_s": "start-up: interpreter, imports, Hydra*",
    "tracker_check_s": "tracker check: MLflow import, store*",
    "load_s": "load",
    "model_s": "model (stored responses)",
    "score_s": "score + write passages/cases.jsonl",
    "other_s": "other: setup, aggregation, metrics.json",
    "report_s": "MLflow run open + report.html*",
    "tracking_exit_s": "MLflow logging + exit*",
}
"""The stages of an end-to-end run, in order of time; * = from the run folder's file times;
``other`` is what remains of the wall time (the job's steps ragcite does not time: building the
adapter and matcher, writing config.yaml, aggregating, writing metrics.json and job.json)."""

_COLUMNS: tuple[tuple[str, str, int, str], ...] = (
    ("part", "part", 8, "<"),
    ("measurement", "measurement", 44, "<"),
    ("n", "N", 9, ">"),
    ("seconds", "seconds", 8, ">"),
    ("cases_per_s", "cases/s", 9, ">"),
    ("pairs_per_s", "pairs/s", 10, ">"),
    ("peak_rss_mb", "peak RSS MB", 11, ">"),
    ("target", "target", 30, "<"),
    ("result", "result", 0, "<"),
)

SAMPLE_EVERY_S = 0.25
"""How often the process tree's proportional set size is sampled during a ragcite run."""


class SuiteError(RuntimeError):
    """A benchmarked command failed."""


@dataclass
class ChildRun:
    """One finished ``ragcite`` child process.

    Attributes:
        returncode: Its exit status.
        wall_s: Wall time from start to reaped, in seconds.
        peak_rss_mb: Its peak resident set size (``ru_maxrss`` from ``os.wait4``: the largest
            of the child and the processes it reaped, such as its scoring workers), in MiB.
        tree_peak_pss_mb: The highest sum of the proportional set sizes of the child and its
            live descendants, sampled every :data:`SAMPLE_EVERY_S` (shared pages counted once;
            None where ``/proc`` does not tell).
        started: Epoch seconds just before it was started.
        ended: Epoch seconds just after it was reaped.
        stderr_tail: The end of its standard error.
    """

    returncode: int
    wall_s: float
    peak_rss_mb: float
    tree_peak_pss_mb: float | None
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
                               "result": result, "at": time.strftime("%H:%M:%S"),
                               "load_avg_1m": round(os.getloadavg()[0], 2)}
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


def _mb(n_bytes: int) -> float:
    return n_bytes / (1024 * 1024)


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


def _descendants(pid: int) -> list[int]:
    """`pid` and its live descendants (``/proc/<pid>/task/<tid>/children``)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{p}/task/{tid}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
            except (OSError, ValueError):
                pass
    return out


def _pss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


class TreeSampler:
    """Samples the summed PSS of a process and its descendants in a thread, keeping the peak."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kib: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> TreeSampler:
        if os.path.exists(f"/proc/{self.pid}/smaps_rollup"):
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            values = [v for p in _descendants(self.pid) if (v := _pss_kib(p)) is not None]
            if values:
                total = sum(values)
                self.peak_kib = total if self.peak_kib is None else max(self.peak_kib, total)
            self._stop.wait(SAMPLE_EVERY_S)

    @property
    def peak_mb(self) -> float | None:
        return None if self.peak_kib is None else self.peak_kib / 1024


def run_ragcite(args: list[str], cwd: Path, name: str, timeout: float) -> ChildRun:
    """Run the ``ragcite`` console script and measure its wall time and peak memory.

    The child is reaped with ``os.wait4``, so the peak RSS is the child's own (or that of a
    process it reaped itself, whichever is larger), not this process's; the process tree's
    PSS is sampled beside it.

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
            with TreeSampler(proc.pid) as sampler:
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
    run = ChildRun(proc.returncode, wall, _rss_mb(usage.ru_maxrss), sampler.peak_mb, started,
                   ended, tail)
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


def _files(root: Path) -> dict[str, int]:
    """Every regular file under `root` (relative path → size in bytes); {} when missing."""
    out: dict[str, int] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                if not os.path.islink(path):
                    out[os.path.relpath(path, root)] = os.path.getsize(path)
            except OSError:
                pass
    return out


def tree_bytes(root: Path) -> int:
    """The summed size of the regular files under `root` (``du -b``-like, without folders)."""
    return sum(_files(root).values())


class Written:
    """What one ragcite run writes: its folder, and the MLflow artifacts it adds.

    Take a :meth:`before` snapshot of ``<output_root>/mlartifacts``, run, then :meth:`measure`.

    Args:
        root: The run's ``output_root``.
    """

    def __init__(self, root: Path) -> None:
        self.artifacts = root / "mlartifacts"
        self.db = root / "mlflow.db"
        self._before: dict[str, int] = {}
        self._db_before = 0
        self.new_artifacts: list[str] = []

    def before(self) -> None:
        """Snapshot the artifact store and the database size."""
        self._before = _files(self.artifacts)
        self._db_before = self.db.stat().st_size if self.db.exists() else 0

    def measure(self, folder: Path) -> dict[str, int]:
        """Bytes of `folder` and of the artifacts added since :meth:`before`.

        Returns:
            ``folder_bytes``, ``mlflow_artifact_bytes``, ``total_bytes`` (the two) and
            ``mlflow_db_growth_bytes`` (not in the total: sqlite grows by pages).
        """
        after = _files(self.artifacts)
        self.new_artifacts = [p for p in after if p not in self._before]
        art = sum(after[p] for p in self.new_artifacts)
        folder_bytes = tree_bytes(folder)
        db = self.db.stat().st_size if self.db.exists() else 0
        return {"folder_bytes": folder_bytes, "mlflow_artifact_bytes": art,
                "total_bytes": folder_bytes + art, "mlflow_db_growth_bytes": db - self._db_before}

    def remove(self, *folders: Path) -> None:
        """Delete `folders` and the artifacts added since :meth:`before` (once measured)."""
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        parents = set()
        for rel in self.new_artifacts:
            path = self.artifacts / rel
            path.unlink(missing_ok=True)
            parents.add(path.parent)
        for parent in sorted(parents, key=lambda p: len(p.parts), reverse=True):
            while parent != self.artifacts and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent


def stage_breakdown(run: ChildRun, run_dir: Path, metrics: dict[str, Any]) -> dict[str, float]:
    """Where an end-to-end run's wall time went.

    ``load_s``, ``model_s`` and ``score_s`` are ragcite's own (``metrics.json`` →
    ``execution.timings``). The file-time stages follow each other: the process start, Hydra's
    ``.hydra/overrides.yaml``, the job's start (``run.started_at``, after the tracker's check),
    ``job.json`` (the job's last file), ``report.html`` (after the MLflow run was opened), the
    process exit. ``other_s`` is what is left of the wall time: the job's steps between its
    start and ``job.json`` that ragcite does not time.

    Args:
        run: The finished child process.
        run_dir: Its run folder (one threshold: the job folder is the result folder).
        metrics: Its ``metrics.json``.

    Returns:
        Seconds per stage, keyed as :data:`STAGE_LABELS`, in that order (missing ones left out).
    """
    timings = (metrics.get("execution") or {}).get("timings") or {}
    info = metrics.get("run") or {}
    hydra_t = _mtime(run_dir / ".hydra" / "overrides.yaml")
    started_at = _epoch(info.get("started_at"))
    job_t = _mtime(run_dir / "job.json") or _mtime(run_dir / "metrics.json")
    report_t = _mtime(run_dir / "report.html")
    found: dict[str, float] = {}
    if hydra_t is not None:
        found["startup_s"] = hydra_t - run.started
        if started_at is not None:
            found["tracker_check_s"] = started_at - hydra_t
    for key in ("load_s", "model_s", "score_s"):
        if isinstance(timings.get(key), (int, float)):
            found[key] = float(timings[key])
    if report_t is not None and job_t is not None:
        found["report_s"] = report_t - job_t
    last = report_t if report_t is not None else job_t
    if last is not None:
        found["tracking_exit_s"] = run.ended - last
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
        self.store_creation_s: float | None = None

    def _root(self, name: str) -> Path:
        """The ``output_root`` of a run: shared (warm store) or its own (``--fresh-store``)."""
        return self.work / name if self.args.fresh_store else self.shared_root

    def _common(self, path: Path, root: Path, cache: str, tracking: str = "mlflow",
                report: str = "html") -> list[str]:
        return ["dataset=file", f"dataset.path={_quote(path.resolve())}", "model=precomputed",
                "matcher=ngram", f"tracking={tracking}", f"report={report}", "progress=false",
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

    def _one_run(self, n: int, name: str, label: str, profile: str = "standard",
                 tracking: str = "mlflow", report: str = "html",
                 discard: bool = False) -> dict[str, Any]:
        """One ``ragcite`` run on the `n`-case file: its times, memory and bytes written."""
        path = bench_scoring.data_file(n, self.args.seed, profile)
        root = self._root(name)
        run_dir = root / "runs" / name
        cache = f"cache-{name}"
        args = [*self._common(path, root, cache, tracking, report),
                f"hydra.run.dir={_quote(run_dir)}"]
        _log(f"ragcite {label}: {n:,} cases ...")
        written = Written(root)
        written.before()
        run = run_ragcite(args, self.work, name, self.args.timeout)
        metrics = _read_json(run_dir / "metrics.json")
        n_cases = int(metrics["n_cases"])
        rec = {"n_cases": n_cases, "wall_s": round(run.wall_s, 3),
               "peak_rss_mb": round(run.peak_rss_mb, 1),
               "tree_peak_pss_mb": _round(run.tree_peak_pss_mb, 1),
               "cases_per_s": round(n_cases / run.wall_s, 1),
               "stages_s": stage_breakdown(run, run_dir, metrics),
               "workers": (metrics.get("execution") or {}).get("workers"),
               "context_f1": metrics["metrics"].get("context_f1"),
               "bytes": written.measure(run_dir),
               "run_dir": str(run_dir)}
        if discard and not self.args.keep_outputs:
            written.remove(run_dir, root / cache)
        return rec

    def e2e(self, n: int) -> dict[str, Any]:
        """The ``e2e`` part at one size: the fastest of ``--repeat`` runs, its stages, targets.

        Each run has its own folder and empty cache; ``wall_s_all`` lists every run's time.
        """
        best: dict[str, Any] | None = None
        walls = []
        for attempt in range(max(1, self.args.repeat)):
            name = f"e2e-n{n}" + (f"-r{attempt + 1}" if attempt else "")
            rec = self._one_run(n, name, "e2e")
            walls.append(rec["wall_s"])
            if best is None or rec["wall_s"] < best["wall_s"]:
                best = rec
        assert best is not None
        rec = best
        rec["wall_s_all"] = walls
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
        return rec

    def fidelity(self, n: int, docs: int) -> dict[str, Any]:
        """The ``fidelity`` part: ``scoring.fidelity=auto`` against ``off`` on `n` cases quoting
        a `docs`-document knowledge base (``synth_kb.py``), ``tracking=none report=none`` (so
        the ratio is of loading, scoring and writing), alternating, the fastest of each."""
        from synth_kb import data_files

        cases, kb = data_files(self.args.data_dir.resolve(), n, docs, self.args.seed)
        walls: dict[str, list[float]] = {"off": [], "auto": []}
        counts: dict[str, Any] = {}
        for attempt in range(max(1, self.args.repeat)):
            for mode in walls:
                name = f"fidelity-{mode}-n{n}-r{attempt + 1}"
                root = self._root(name)
                run_dir = root / "runs" / name
                args = [*self._common(cases, root, f"cache-{name}", "none", "none"),
                        f"dataset.knowledge_base.path={_quote(kb)}", f"scoring.fidelity={mode}",
                        f"hydra.run.dir={_quote(run_dir)}"]
                _log(f"ragcite fidelity={mode}: {n:,} cases, {docs:,} documents ...")
                walls[mode].append(run_ragcite(args, self.work, name, self.args.timeout).wall_s)
                counts[mode] = _read_json(run_dir / "metrics.json").get("fidelity")
        ratio = min(walls["auto"]) / min(walls["off"])
        ok = ratio <= FIDELITY_MAX_RATIO
        for mode in walls:
            self.table.add("fidelity", f"ragcite run, scoring.fidelity={mode}, {docs:,} docs", n,
                           min(walls[mode]), n / min(walls[mode]),
                           target=f"<= {FIDELITY_MAX_RATIO}x off" if mode == "auto" else "",
                           result=f"{ratio:.2f}x {_mark(ok)}" if mode == "auto" else "")
        return {"n_cases": n, "documents": docs, "wall_s_all": walls, "ratio": round(ratio, 3),
                "max_ratio": FIDELITY_MAX_RATIO, "passed": ok, "fidelity": counts["auto"]}

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
                "thresholds": raw.get("thresholds"),
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
            if stage == "similarity":
                label = f"similarities {matcher}"
            elif stage == "evaluate_5t":
                label = f"runner.evaluate {matcher}, {len(raw['thresholds'])} thresholds"
            else:
                label = f"runner.evaluate {matcher}"
            self.table.add("matchers", label, rec["n_cases"], seconds, rec["cases_per_s"],
                           rec["pairs_per_s"], rec["peak_rss_mb"], target,
                           _mark(ok) if rec["target"] is not None else "")
            out.append(rec)
        return out

    def _sweep(self, n: int, k: int, name: str) -> dict[str, Any]:
        """One ``ragcite -m scoring.threshold=<k thresholds>`` on the `n`-case file."""
        path = bench_scoring.data_file(n, self.args.seed)
        root = self._root(name)
        sweep_dir = root / "sweeps" / name
        cache = f"cache-{name}"
        spec = ",".join(f"{t:g}" for t in MULTIRUN_THRESHOLDS[k])
        args = ["-m", f"scoring.threshold={spec}", *self._common(path, root, cache),
                f"hydra.sweep.dir={_quote(sweep_dir)}"]
        _log(f"ragcite -m scoring.threshold=<{k} thresholds>: {n:,} cases ...")
        written = Written(root)
        written.before()
        run = run_ragcite(args, self.work, name, self.args.timeout)
        summary = _read_json(sweep_dir / "sweep.json")
        timings: dict[str, Any] = {}
        results = []
        for entry in summary["jobs"]:
            m = entry["metrics"] or {}
            results.append({"dir": entry["dir"], "threshold": entry["threshold"],
                            "n_cases": m.get("n_cases"), "complete": entry["complete"]})
            timings.setdefault(entry["job"], (m.get("execution") or {}).get("timings"))
        rec = {"wall_s": round(run.wall_s, 3), "peak_rss_mb": round(run.peak_rss_mb, 1),
               "tree_peak_pss_mb": _round(run.tree_peak_pss_mb, 1),
               "n_jobs": summary["n_jobs"], "n_results": summary["n_results"],
               "failed": summary["failed"], "job_timings_s": timings, "results": results,
               "bytes": written.measure(sweep_dir), "sweep_dir": str(sweep_dir)}
        if not self.args.keep_outputs:
            written.remove(sweep_dir, root / cache)
        return rec

    def multirun(self, n: int) -> dict[str, Any]:
        """The ``multirun`` part at one size: K-threshold sweeps against a single run.

        ``--repeat`` rounds of a single run, then one sweep of each K: the machine's speed
        drifts by tens of percent within minutes, and measuring all singles first would compare
        two different machines. Each ratio is the fastest sweep over the fastest single run.
        """
        singles: list[dict[str, Any]] = []
        sweeps: dict[int, list[dict[str, Any]]] = {k: [] for k in MULTIRUN_THRESHOLDS}
        for attempt in range(max(1, self.args.repeat)):
            suffix = f"-r{attempt + 1}" if attempt else ""
            singles.append(self._one_run(n, f"single-n{n}{suffix}", "single", discard=True))
            for k in MULTIRUN_THRESHOLDS:
                sweeps[k].append(self._sweep(n, k, f"multirun-k{k}-n{n}{suffix}"))
        single = min(singles, key=lambda r: r["wall_s"])
        single_bytes = single["bytes"]["total_bytes"]
        rec: dict[str, Any] = {
            "n_cases": single["n_cases"],
            "single": {"wall_s": single["wall_s"], "wall_s_all": [r["wall_s"] for r in singles],
                       "peak_rss_mb": single["peak_rss_mb"],
                       "tree_peak_pss_mb": single["tree_peak_pss_mb"],
                       "cases_per_s": single["cases_per_s"], "stages_s": single["stages_s"],
                       "bytes": single["bytes"]},
            "sweeps": []}
        self.table.add("multirun", "single run (alternating with the sweeps)", single["n_cases"],
                       single["wall_s"], single["cases_per_s"],
                       peak_rss_mb=single["peak_rss_mb"])
        self.table.add("multirun", "  bytes written: folder + MLflow artifacts", single["n_cases"],
                       result=f"{_mb(single_bytes):,.1f} MB")
        for k, runs in sweeps.items():
            best = min(runs, key=lambda r: r["wall_s"])
            ratio = best["wall_s"] / single["wall_s"]
            max_ratio, aim = MULTIRUN_MAX_RATIO[k], MULTIRUN_AIM_RATIO.get(k)
            ok = (ratio < max_ratio and not best["failed"] and best["n_results"] == k)
            bytes_ratio = best["bytes"]["total_bytes"] / single_bytes if single_bytes else None
            sweep = {"k": k, "thresholds": list(MULTIRUN_THRESHOLDS[k]), **best,
                     "wall_s_all": [r["wall_s"] for r in runs], "ratio": round(ratio, 3),
                     "max_ratio": max_ratio, "aim_ratio": aim, "passed": ok,
                     "bytes_ratio": _round(bytes_ratio)}
            rec["sweeps"].append(sweep)
            jobs = f"{best['n_jobs']} job{'' if best['n_jobs'] == 1 else 's'}"
            target = f"< {max_ratio:g}x single run" + (f" (aim {aim:g}x)" if aim else "")
            self.table.add("multirun", f"{k}-threshold multirun: {jobs}, "
                           f"{best['n_results']} results", single["n_cases"], best["wall_s"],
                           peak_rss_mb=best["peak_rss_mb"], target=target,
                           result=f"{ratio:.2f}x {_mark(ok)}")
            self.table.add("multirun", "  bytes written: folder + MLflow artifacts",
                           single["n_cases"],
                           result=f"{_mb(best['bytes']['total_bytes']):,.1f} MB = "
                                  + (f"{bytes_ratio:.2f}x single" if bytes_ratio else "n/a"))
        return rec

    def memory(self, n: int) -> list[dict[str, Any]]:
        """The ``memory`` part at one size: small cases, without (and optionally with) the
        tracking and report outputs."""
        variants = [("none", "none")]
        if self.args.memory_with_outputs:
            variants.append(("mlflow", "html"))
        out = []
        for tracking, report in variants:
            best: dict[str, Any] | None = None
            walls = []
            for attempt in range(max(1, self.args.repeat)):
                name = f"memory-{tracking}-n{n}" + (f"-r{attempt + 1}" if attempt else "")
                rec = self._one_run(n, name, f"memory (tracking={tracking} report={report})",
                                    profile="small", tracking=tracking, report=report,
                                    discard=True)
                walls.append(rec["wall_s"])
                if best is None or rec["wall_s"] < best["wall_s"]:
                    best = rec
            assert best is not None
            limit = MEMORY_TARGETS_MB.get(n) if tracking == "none" else None
            ok = best["peak_rss_mb"] < limit if limit is not None else None
            rec = {"n_cases": best["n_cases"], "profile": "small", "tracking": tracking,
                   "report": report, "wall_s": best["wall_s"], "wall_s_all": walls,
                   "peak_rss_mb": best["peak_rss_mb"],
                   "tree_peak_pss_mb": best["tree_peak_pss_mb"],
                   "cases_per_s": best["cases_per_s"], "workers": best["workers"],
                   "stages_s": best["stages_s"], "bytes": best["bytes"],
                   "target": None if limit is None else {"max_peak_rss_mb": limit},
                   "passed": ok}
            out.append(rec)
            what = ("tracking=none report=none" if tracking == "none"
                    else "MLflow + HTML report")
            target = (", ".join(f"< {mb / 1024:g} GB at {_short(size)}"
                                for size, mb in sorted(MEMORY_TARGETS_MB.items()))
                      if tracking == "none" else "(no target)")
            self.table.add("memory", f"small cases, {what}", rec["n_cases"],
                           rec["wall_s"], rec["cases_per_s"], peak_rss_mb=rec["peak_rss_mb"],
                           target=target, result=_mark(ok) if tracking == "none" else "")
            if rec["tree_peak_pss_mb"] is not None:
                self.table.add("memory", "  process tree PSS (sampled)", rec["n_cases"],
                               peak_rss_mb=rec["tree_peak_pss_mb"])
        return out


def _short(n: int) -> str:
    """1000000 → ``1M``, 100000 → ``100k``."""
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k"


def _log(message: str) -> None:
    print(f"[suite] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; ``--skip-*`` remove parts from ``--parts``."""
    parser = argparse.ArgumentParser(
        description="ragcite's benchmark suite: end to end, matchers, multirun and memory in "
                    "one table.")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000],
                        help="cases per synthetic dataset of e2e and matchers "
                             "(default: 1000 10000 100000)")
    parser.add_argument("--multirun-sizes", "--multirun-size", dest="multirun_sizes", type=int,
                        nargs="+", default=[10_000],
                        help="cases for the multirun part, one or more sizes (default: 10000)")
    parser.add_argument("--memory-size", "--memory-sizes", dest="memory_sizes", type=int,
                        nargs="+", default=[100_000, 1_000_000],
                        help="small cases for the memory part, one or more sizes "
                             "(default: 100000 1000000)")
    parser.add_argument("--fidelity-size", type=int, default=100_000,
                        help="cases of the fidelity part (default 100000)")
    parser.add_argument("--fidelity-docs", type=int, default=10_000,
                        help="knowledge base documents of the fidelity part (default 10000)")
    parser.add_argument("--memory-with-outputs", action="store_true",
                        help="memory part: also run each size with MLflow and the report")
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
    parser.add_argument("--keep-outputs", action="store_true",
                        help="keep the outputs of the multirun and memory runs (default: each "
                             "deleted once measured)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="best of this many: e2e runs, memory runs, multirun rounds and "
                             "matcher child processes (default: 1)")
    parser.add_argument("--fresh-store", action="store_true",
                        help="a new MLflow store for every run (default: one warm store)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds before a ragcite run is killed (default: 3600)")
    args = parser.parse_args(argv)
    args.parts = [p for p in PARTS if p in args.parts and not getattr(args, f"skip_{p}")]
    if any(n < 1 for n in [*args.sizes, *args.multirun_sizes, *args.memory_sizes]):
        parser.error("sizes must be at least 1")
    if not args.parts:
        parser.error("no part left to run")
    return args


def _clock() -> str:
    return dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


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
    multirun_sizes = list(dict.fromkeys(args.multirun_sizes))
    memory_sizes = list(dict.fromkeys(args.memory_sizes))
    needed = [*sizes] if {"e2e", "matchers"} & set(args.parts) else []
    if "multirun" in args.parts:
        needed.extend(multirun_sizes)
    for n in dict.fromkeys(needed):
        bench_scoring.data_file(n, args.seed)
    if "memory" in args.parts:
        for n in memory_sizes:
            bench_scoring.data_file(n, args.seed, "small")

    load = os.getloadavg()
    store = "fresh" if args.fresh_store else "warm"
    started = _clock()
    print(f"# ragcite benchmark suite, {started}: Python {platform.python_version()}, "
          f"{os.cpu_count()} CPU(s), load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"seed {args.seed}; cases of 3 refs x 3 citations (~40 words), memory part 1 ref x 1 "
          f"citation (~8 words); MLflow store {store}")
    table = Table()
    table.header()
    suite = Suite(args, work, table)
    report: dict[str, Any] = {
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "started": started, "load_avg_start": [round(x, 2) for x in load], "seed": args.seed,
        "sizes": sizes,
        "multirun_sizes": multirun_sizes if "multirun" in args.parts else None,
        "memory_sizes": memory_sizes if "memory" in args.parts else None,
        "repeat": args.repeat, "parts": args.parts, "store": store,
        "command": ragcite_command(), "data_dir": str(bench_scoring.DATA_DIR),
        "targets": {"e2e": {"n_cases": E2E_TARGET_N, "max_wall_s": E2E_MAX_S,
                            "max_peak_rss_mb": E2E_MAX_RSS_MB},
                    "evaluate_ngram": {"n_cases": EVAL_TARGET_N, "max_seconds": EVAL_MAX_S,
                                       "max_peak_rss_mb": EVAL_MAX_RSS_MB},
                    "multirun": {str(k): {"thresholds": list(MULTIRUN_THRESHOLDS[k]),
                                          "max_ratio": MULTIRUN_MAX_RATIO[k],
                                          "aim_ratio": MULTIRUN_AIM_RATIO.get(k)}
                                 for k in MULTIRUN_THRESHOLDS},
                    "memory": {str(n): {"max_peak_rss_mb": mb}
                               for n, mb in MEMORY_TARGETS_MB.items()}},
        "store_creation_s": None, "e2e": [], "matchers": [], "multirun": [], "memory": [],
        "fidelity": None}
    if {"e2e", "multirun"} & set(args.parts) or args.memory_with_outputs:
        suite.warm_store()
        report["store_creation_s"] = _round(suite.store_creation_s)
    if "e2e" in args.parts:
        report["e2e"] = [suite.e2e(n) for n in sizes]
    if "matchers" in args.parts:
        report["matchers"] = [rec for n in sizes for rec in suite.matchers(n)]
    if "multirun" in args.parts:
        report["multirun"] = [suite.multirun(n) for n in multirun_sizes]
    if "memory" in args.parts:
        report["memory"] = [rec for n in memory_sizes for rec in suite.memory(n)]
    if "fidelity" in args.parts:
        report["fidelity"] = suite.fidelity(args.fidelity_size, args.fidelity_docs)
    report["finished"] = _clock()
    report["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    report["table"] = table.rows
    print("* from the run folder's file times; load, model and score are ragcite's own "
          "(metrics.json execution.timings); other is the rest of the wall time. Peak RSS is "
          "the largest single process (ru_maxrss; the forked scoring workers included); the "
          "process tree's summed PSS is sampled. The e2e and matcher targets apply at 100,000 "
          "cases (n/a at other sizes), the multirun ratios at any size, the memory targets at "
          "100,000 and 1,000,000 small cases. "
          f"Finished {report['finished']}, load average "
          f"{' '.join(f'{x:.2f}' for x in report['load_avg_end'])}.")
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

"""Writes that cannot complete, as real processes (issue 23, items 5 and 9): a full disk or a
read-only file system under the results is one line naming the file or folder and what is kept
(a small tmpfs, mounted where the tests run as root; skipped with the reason otherwise), and a
run killed while its report is written has no ``job.json``, so ``ragcite-compare`` refuses it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.bad_inputs.table import Row, check
from tests.conftest import only_run_dir, run_cli
from tests.helpers import wait_until

E = "ragcite: error: "
JOB = ("the files written before it are kept, and a job folder without job.json (a sweep "
       "without sweep.json) is incomplete")
COMPARED = "the report and the summary are each written whole or not at all"
BASE = ["tracking=none", "report=none", "progress=false"]


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Mount a tmpfs of a given size (read-only when asked) under the test's folder."""
    mounted: list[Path] = []

    def mount(size: str, read_only: bool = False) -> Path:
        if os.geteuid() != 0:
            pytest.skip("a full or read-only disk is a small tmpfs, which only root can mount")
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                               str(where)], capture_output=True, text=True, check=False)
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(where)
        if read_only:  # a chmod would not stop root; a read-only mount does
            subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", str(where)], check=True)


def test_a_read_only_output_root_is_one_line(disk: Callable[..., Path], tmp_path: Path) -> None:
    ro = disk("1m", read_only=True)
    row = Row("read-only, to make", [f"output_root={ro}/out"], 2,
              f"{E}output_root: cannot create {ro}/out: Read-only file system; give a folder "
              "that can be written")
    check(row, run_cli([*BASE, *row.args], tmp_path, timeout=120), tmp_path)
    row = Row("read-only, made", [f"output_root={ro}"], 2,  # the run's folder is Hydra's
              f"{E}cannot write {ro}/runs: Read-only file system; {JOB}")
    check(row, run_cli([*BASE, *row.args], tmp_path, timeout=120), tmp_path)


def test_a_disk_that_fills_while_results_are_written(disk: Callable[..., Path],
                                                      tmp_path: Path) -> None:
    """36 KB hold Hydra's files, the job's config and its log, not the demo's tables (about
    25 KB): the line names the job's folder (a buffered write names no file), and what was
    written stays, without metrics.json or job.json."""
    full = disk("36k")
    proc = run_cli([*BASE, f"output_root={full}/out", "cache.enabled=false"], tmp_path,
                   timeout=120)
    run = only_run_dir(full / "out")
    check(Row("full", [], 2, f"{E}cannot write {run}: No space left on device; {JOB}"), proc,
          tmp_path)
    assert (run / "config.yaml").is_file() and (run / ".hydra" / "config.yaml").is_file()
    assert not (run / "job.json").exists() and not (run / "metrics.json").exists()


def test_a_cache_that_fills_the_disk_names_its_database(disk: Callable[..., Path],
                                                        tmp_path: Path) -> None:
    full = disk("64k")
    proc = run_cli([*BASE, f"output_root={full}/out"], tmp_path, timeout=120)
    row = Row("full cache", [], 2,
              f"{E}cannot write {full}/out/cache/cache.sqlite: No space left on device; {JOB}")
    check(row, proc, tmp_path)
    assert not (only_run_dir(full / "out") / "job.json").exists()


def test_a_sweep_that_fills_the_disk_is_one_line_a_job(disk: Callable[..., Path],
                                                       tmp_path: Path) -> None:
    """Job 0 fills the disk with its passages; job 1 cannot even save its config (Hydra's
    buffered write names no file), nor the sweep its sweep.json: one line each, no traceback."""
    full = disk("64k")
    proc = run_cli(["-m", "matcher=ngram,substring", *BASE, f"output_root={full}/out",
                    "cache.enabled=false"], tmp_path, timeout=180)
    (sweep,) = (full / "out" / "sweeps").iterdir()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith(E)] == [
        f"{E}cannot write {sweep}/0_extractive_ngram: No space left on device; {JOB}",
        f"{E}cannot write the results: No space left on device; {JOB}"]
    assert not (sweep / "sweep.json").exists() and not list(sweep.glob("*/job.json"))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run of the demo (job.json written)."""
    root = tmp_path_factory.mktemp("finished")
    proc = run_cli([*BASE, "model=precomputed"], root)
    assert proc.returncode == 0, proc.stderr
    return only_run_dir(root / "outputs")


@pytest.mark.parametrize(("size", "read_only", "reason"), [
    ("1m", True, "Read-only file system"), ("16k", False, "No space left on device")])
def test_a_comparison_that_cannot_be_written(disk: Callable[..., Path], tmp_path: Path,
                                             finished_run: Path, size: str, read_only: bool,
                                             reason: str) -> None:
    where = disk(size, read_only)
    proc = run_cli([str(finished_run), str(finished_run), "--out", f"{where}/c.html"],
                   tmp_path, module="runner.reports.compare", timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"ragcite: error: cannot write {where}/c.html: {reason}; {COMPARED}"]
    assert os.listdir(where) == []  # no half-written report left behind


# --- item 9: job.json is the job's last file ------------------------------------------------------

BLOCKING = '''
from pathlib import Path


class Blocking:
    """Reports that write report.html, say so, then wait until the test opens the FIFO."""

    def __init__(self, **_):
        pass

    def render_run(self, result_dir, link):
        self.render_runs([result_dir], [link])

    def render_runs(self, result_dirs, links):
        for folder in result_dirs:
            Path(folder, "report.html").write_text("being written", encoding="utf-8")
        Path("rendering").write_text("yes", encoding="utf-8")
        with open("release", "rb") as fifo:
            fifo.read()

    def render_sweep(self, sweep_dir):
        pass
'''


def _blocked_run(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """A real run of the demo, stopped in its report stage: the report written, the reporter
    waiting on a FIFO. Returns the process and its run folder."""
    (tmp_path / "blocking_report.py").write_text(BLOCKING, encoding="utf-8")
    os.mkfifo(tmp_path / "release")
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    proc = subprocess.Popen([sys.executable, "-m", "runner.cli", *BASE, "model=precomputed",
                             "report._target_=blocking_report.Blocking"], cwd=tmp_path,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        wait_until((tmp_path / "rendering").exists, "the report stage", proc)
    except AssertionError:
        proc.kill()
        raise
    return proc, only_run_dir(tmp_path / "outputs")


def test_a_run_killed_while_reporting_has_no_job_json_and_is_refused(tmp_path: Path) -> None:
    proc, run = _blocked_run(tmp_path)
    try:
        assert (run / "report.html").read_text(encoding="utf-8") == "being written"
        assert (run / "metrics.json").is_file() and not (run / "job.json").exists()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert not (run / "job.json").exists()
    done = run_cli([str(run), str(run)], tmp_path, module="runner.reports.compare")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"ragcite: error: {run}: incomplete: no job.json lists this result folder (its "
        "job stopped before its last file); run the job again"]
    assert not (tmp_path / "outputs" / "compare").exists()  # refused before any report


def test_job_json_comes_after_the_report(tmp_path: Path) -> None:
    proc, run = _blocked_run(tmp_path)
    assert not (run / "job.json").exists()
    with open(tmp_path / "release", "wb") as fifo:  # let the reporter finish
        fifo.write(b"go")
    assert proc.wait(timeout=120) == 0, proc.communicate()[1]
    assert (run / "job.json").is_file()
    assert run_cli([str(run), str(run)], tmp_path,
                   module="runner.reports.compare").returncode == 0

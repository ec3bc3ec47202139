"""A run that succeeds says only what it did on stderr: the shipped datasets whose transforms
are functions (``_target_: runner.data.shapes...``) print no "Error getting class" line (Hydra's
get_class logs one for every target that is not a class)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import only_run_dir, run_cli

pytestmark = pytest.mark.slow

LEAN = ("tracking=none", "report=none", "progress=false")


def kinds(stderr: str) -> list[str]:
    """Each stderr line as its kind (the words before its figures or folder)."""
    known = ("Launching 2 jobs locally", "\t#0 : ", "\t#1 : ", "wrote ", "threshold 0.5: ",
             "results: ", "sweep: 2 results of 2 jobs in ")
    return [next((k for k in known if line.startswith(k)), line)
            for line in stderr.splitlines()]


def test_a_hotpotqa_run_prints_only_its_results(tmp_path: Path) -> None:
    proc = run_cli(["dataset=hotpotqa", "dataset.limit=3", *LEAN], tmp_path)
    assert proc.returncode == 0, proc.stderr
    folder = only_run_dir(tmp_path / "outputs")
    assert kinds(proc.stderr) == ["wrote ", "threshold 0.5: ", "results: "], proc.stderr
    assert proc.stderr.splitlines()[0] == f"wrote {folder}"


def test_an_expertqa_sweep_prints_only_its_jobs_and_results(tmp_path: Path) -> None:
    proc = run_cli(["-m", "dataset=expertqa", "model=precomputed",
                    "model.system=gpt4,bing_chat", "dataset.limit=3", *LEAN], tmp_path)
    assert proc.returncode == 0, proc.stderr
    job = ["wrote ", "threshold 0.5: ", "results: "]
    assert kinds(proc.stderr) == ["Launching 2 jobs locally", "\t#0 : ", *job, "\t#1 : ", *job,
                                  "sweep: 2 results of 2 jobs in "], proc.stderr

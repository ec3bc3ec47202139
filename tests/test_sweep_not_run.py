"""An interrupted sweep's ``sweep.json`` counts every job the sweeper launched: the one stopped
while it ran is incomplete, and those that never started are listed as not run, with their
overrides."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, read_json
from tests.helpers import FIXTURES, wait_until

ENV = {"PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
MODELS = "tests.tracking.fake_models"


@pytest.mark.slow
def test_an_interrupted_sweep_lists_the_jobs_that_never_ran(tmp_path: Path) -> None:
    out, marker = tmp_path / "out", tmp_path / "called"
    common = ["dataset=file", f"dataset.path={FIXTURES / 'seed_examples.jsonl'}",
              "model=python", "progress=false", "report=none", "tracking=none",
              f"output_root={out}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner.cli", "-m", *common,
         f"model.function={MODELS}.held,{MODELS}.stored,{MODELS}.marked"],
        cwd=tmp_path, env={**os.environ, **ENV, "RAGCITE_TEST_MARKER": str(marker)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(marker.exists, "job 0's model call", proc)  # it answers for a minute
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    (sweep,) = (out / "sweeps").iterdir()
    summary = read_json(sweep / "sweep.json")
    assert (summary["failed"], summary["n_jobs"], summary["n_results"]) == (True, 3, 0)
    assert summary["incomplete_jobs"] == ["0_python-held_ngram"]
    # Each job's overrides as Hydra spells them in a job's .hydra/overrides.yaml.
    spelled = [a.replace("progress=false", "progress=False") for a in common]
    assert summary["not_run"] == [
        {"num": 1, "overrides": [*spelled, f"model.function={MODELS}.stored"]},
        {"num": 2, "overrides": [*spelled, f"model.function={MODELS}.marked"]}]
    assert [j["job"] for j in summary["jobs"]] == ["0_python-held_ngram"]
    assert summary["jobs"][0]["overrides"] == [*spelled, f"model.function={MODELS}.held"]
    assert f"sweep: 0 results of 3 jobs, 1 incomplete, 2 not run in {sweep}" in err


def test_the_summary_lists_each_launched_job_without_a_folder_as_not_run(tmp_path: Path) -> None:
    from runner.redact import protect
    from runner.reports.sweep import build_context
    from runner.sweep import summarize

    secret = "sk-not-run-secret-0123456789"
    protect([secret])  # as the command line's secrets are
    (tmp_path / "1_b" / ".hydra").mkdir(parents=True)  # job 1 started; 0 and 2 never did
    planned = [["m=a"], ["m=b"], ["m=c", f"matcher.openai_api_key={secret}"]]
    summary = summarize(tmp_path, False, planned)
    assert summary["not_run"] == [{"num": 0, "overrides": ["m=a"]},
                                  {"num": 2, "overrides": ["m=c", "matcher.openai_api_key=***"]}]
    assert (summary["failed"], summary["n_jobs"], summary["incomplete_jobs"]) == (
        True, 3, ["1_b"])
    context = build_context(summary, tmp_path)  # the sweep report lists all three
    assert (context["n_jobs"], context["incomplete"]) == (
        3, ["1_b", "job 0: not run", "job 2: not run"])
